/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <cmath>

#include "absl/strings/str_cat.h"
#include "mr_sim_config.h"

namespace metaroce::sim {
namespace {

absl::Status CheckProbability(double p, const char* field) {
  if (!std::isfinite(p) || p < 0 || p > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", p, ": set a probability between 0 and 1"));
  }
  return absl::OkStatus();
}

bool IsZero(const wire::IpAddr& a) {
  for (uint8_t b : a.bytes) {
    if (b != 0) return false;
  }
  return true;
}

}  // namespace

absl::Status Validate(const HostConfig& c) {
  if (c.ipv4.v6 || IsZero(c.ipv4)) {
    return absl::InvalidArgumentError(
        absl::StrCat("host '", c.name, "': ipv4 must be a non-zero IPv4 address (IpAddr::V4)"));
  }
  if (!c.ipv6.v6 && !IsZero(c.ipv6)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host '", c.name, "': ipv6 must be an IPv6 address (IpAddr::V6) or left all zero"));
  }
  if (c.tx_queue_frames == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("host '", c.name, "': tx_queue_frames must be at least 1"));
  }
  return absl::OkStatus();
}

uint64_t PfcHeadroomBytes(const LinkConfig& link, SimTime to_upstream_ps,
                          SimTime from_upstream_ps) {
  const auto round_trip = static_cast<unsigned __int128>(to_upstream_ps + from_upstream_ps);
  const auto in_flight =
      static_cast<uint64_t>(round_trip * link.rate_bps / kBitsPerByte / kPsPerSec);
  return in_flight + 2 * (kPfcMaxFrameBytes + link.overhead_bytes) + kPfcPauseFrameBytes +
         link.overhead_bytes;
}

absl::Status Validate(const PfcConfig& c) {
  if (!c.enabled) return absl::OkStatus();
  if (c.xoff_bytes < kMinWireFrameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("pfc: xoff_bytes is ", c.xoff_bytes,
                                                   "; set at least ", kMinWireFrameBytes,
                                                   " (one frame)"));
  }
  if (c.xon_bytes >= c.xoff_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("pfc: xon_bytes (", c.xon_bytes, ") must be below xoff_bytes (", c.xoff_bytes,
                     "): resuming at or above the pause threshold pauses again at once"));
  }
  if (c.headroom_bytes != 0 && c.headroom_bytes < kMinWireFrameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("pfc: headroom_bytes is ", c.headroom_bytes,
                                                   "; set 0 (computed per link) or at least ",
                                                   kMinWireFrameBytes));
  }
  return absl::OkStatus();
}

absl::Status Validate(const SwitchConfig& c) {
  if (c.port_buffer_bytes < kMinWireFrameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("switch '", c.name, "': port_buffer_bytes is ",
                                                   c.port_buffer_bytes, "; set at least ",
                                                   kMinWireFrameBytes, " (one frame)"));
  }
  if (c.forwarding_latency_ps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("switch '", c.name, "': forwarding_latency_ps must not be negative"));
  }
  if (auto s = Validate(c.pfc); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("switch '", c.name, "': ", s.message()));
  }
  return absl::OkStatus();
}

absl::Status Validate(const RedConfig& c) {
  if (c.max_prob == 0) return absl::OkStatus();
  if (!(c.max_prob > 0 && c.max_prob <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("red: max_prob is ", c.max_prob, "; set it in (0, 1], or 0 for no RED"));
  }
  if (c.min_bytes > c.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("red: min_bytes (", c.min_bytes,
                                                   ") is above max_bytes (", c.max_bytes,
                                                   "); Kmin must not exceed Kmax"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const PortQueueConfig& c) {
  if (c.buffer_bytes < kMinWireFrameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer_bytes is ", c.buffer_bytes, "; set at least ", kMinWireFrameBytes));
  }
  return Validate(c.red);
}

absl::Status Validate(const LinkConfig& c) {
  if (c.rate_bps == 0) {
    return absl::InvalidArgumentError("link rate_bps is 0: set the line rate in bits/s");
  }
  if (c.rate_bps > 100'000 * kBpsPerGbps) {
    return absl::InvalidArgumentError(
        absl::StrCat("link rate_bps is ", c.rate_bps, ": at most 100 Tbit/s (units are bits/s)"));
  }
  if (c.delay_ps < 0 || c.delay_ps > kPsPerSec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "link delay_ps is ", c.delay_ps, ": set 0..1 s in picoseconds (use kPsPerNs etc.)"));
  }
  if (c.overhead_bytes > 1024) {
    return absl::InvalidArgumentError(absl::StrCat("link overhead_bytes is ", c.overhead_bytes,
                                                   ": expected ~20 (preamble + IFG)"));
  }
  return absl::OkStatus();
}

absl::Status Validate(const FaultConfig& c) {
  if (auto s = CheckProbability(c.loss_probability, "loss_probability"); !s.ok()) return s;
  if (auto s = CheckProbability(c.corrupt_probability, "corrupt_probability"); !s.ok()) return s;
  if (auto s = CheckProbability(c.duplicate_probability, "duplicate_probability"); !s.ok()) {
    return s;
  }
  if (auto s = CheckProbability(c.reorder_probability, "reorder_probability"); !s.ok()) return s;
  const GilbertElliottConfig& g = c.burst_loss;
  if (auto s = CheckProbability(g.p_good_to_bad, "burst_loss.p_good_to_bad"); !s.ok()) return s;
  if (auto s = CheckProbability(g.p_bad_to_good, "burst_loss.p_bad_to_good"); !s.ok()) return s;
  if (auto s = CheckProbability(g.loss_good, "burst_loss.loss_good"); !s.ok()) return s;
  if (auto s = CheckProbability(g.loss_bad, "burst_loss.loss_bad"); !s.ok()) return s;
  if (g.step_ps < 0) {
    return absl::InvalidArgumentError("burst_loss.step_ps must not be negative (0: per frame)");
  }
  if (g.enabled && g.p_bad_to_good == 0 && g.p_good_to_bad > 0) {
    return absl::InvalidArgumentError(
        "burst_loss.p_bad_to_good is 0: the link would never leave the bad state; set it > 0");
  }
  if (c.reorder_max_delay_ps < 0) {
    return absl::InvalidArgumentError("reorder_max_delay_ps must not be negative");
  }
  if (c.reorder_probability > 0 && c.reorder_max_delay_ps == 0) {
    return absl::InvalidArgumentError(
        "reorder_probability > 0 needs reorder_max_delay_ps > 0 (the extra delay)");
  }
  if (c.blackhole_at_ps < 0) {
    return absl::InvalidArgumentError("blackhole_at_ps must not be negative");
  }
  if (c.reconverge_after_ps < 0) {
    return absl::InvalidArgumentError("reconverge_after_ps must not be negative");
  }
  if (c.reconverge_after_ps != kSimTimeNever && c.blackhole_at_ps == kSimTimeNever) {
    return absl::InvalidArgumentError(
        "reconverge_after_ps is set but blackhole_at_ps is not: set the blackhole time too");
  }
  return absl::OkStatus();
}

}  // namespace metaroce::sim
