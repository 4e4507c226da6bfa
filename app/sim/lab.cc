/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <algorithm>
#include <array>

#include "absl/strings/str_format.h"
#include "stack.h"

namespace metaroce::mrsim {
namespace {

// Completions are taken and WRITEs posted every this often: a flow's depth
// of outstanding WRITEs covers the wait, and completion times are this
// precise.
constexpr sim::SimTime kStepPs = sim::kPsPerUs;
// The largest WRITE any experiment posts (a flow's msg_bytes is at most this).
constexpr uint64_t kMaxMsgBytes = 1 << 20;
// metaroce's receivers share their link less 2 %: the frames' preamble and
// gap, and room for ACKs (as the transport's incast tests).
constexpr uint64_t kRxCapacityPct = 98;
constexpr uint32_t kAckFrameBytes = 64;
constexpr uint32_t kDataFrameBytes = 4096 + 100;
// Payload per data packet, both protocols (their defaults).
constexpr uint64_t kMtuBytes = 4096;

}  // namespace

const char* ProtoName(Proto p) {
  switch (p) {
    case Proto::kMetaRoce: return "metaroce";
    case Proto::kRocePfc: return "rocev2-pfc";
    case Proto::kRoce: return "rocev2";
    case Proto::kCount: break;
  }
  return "?";
}

Lab::Lab(const Params& p, const LabConfig& c) : cfg_(c), fabric_(c.seed), step_ps_(kStepPs) {
  line_bps_ = p.gbps * sim::kBpsPerGbps;
  delay_ps_ = p.link_delay_ps;
}

Lab::~Lab() = default;

absl::StatusOr<std::unique_ptr<Lab>> Lab::Create(const Params& p, const LabConfig& c) {
  std::unique_ptr<Lab> lab(new Lab(p, c));
  sim::LeafSpineConfig ls;
  ls.leaves = p.leaves;
  ls.spines = p.spines;
  ls.hosts_per_leaf = p.hosts_per_leaf;
  ls.host_link.rate_bps = ls.fabric_link.rate_bps = lab->line_bps_;
  ls.host_link.delay_ps = ls.fabric_link.delay_ps = p.link_delay_ps;
  ls.pfc.enabled = c.proto == Proto::kRocePfc;
  ls.planes = c.planes != 0 ? c.planes : p.planes;
  if (c.site_link_delay_ps != 0) {
    if (p.leaves < 2)
      return absl::InvalidArgumentError("two sites need 2 leaves or more (--leaves)");
    ls.leaf_uplink_delay_ps.assign(p.leaves, 0);
    ls.leaf_uplink_delay_ps.back() = c.site_link_delay_ps;
    lab->site_delay_ps_ = c.site_link_delay_ps;
  }
  auto t = sim::BuildLeafSpine(lab->fabric_, ls);
  if (!t.ok()) return t.status();
  lab->topo_ = std::move(*t);
  if (c.loss > 0) {
    sim::FaultConfig f;
    if (c.burst_frames > 0) {
      // The bad state's share of frames is the loss: p_gb / (p_gb + p_bg).
      // The chain steps once per full data frame's time at line rate, so a
      // burst lasts burst_frames such times also on a link that idles (a
      // reverse path of ACKs; counted per frame, a burst there outlived a
      // millisecond of the transport's backed-off probes).
      f.burst_loss.enabled = true;
      f.burst_loss.step_ps =
          sim::SerializationPs(kDataFrameBytes + sim::kDefaultWireOverheadBytes, lab->line_bps_);
      f.burst_loss.p_bad_to_good = 1 / c.burst_frames;
      f.burst_loss.p_good_to_bad = c.loss * f.burst_loss.p_bad_to_good / (1 - c.loss);
    } else {
      f.loss_probability = c.loss;
    }
    if (auto st = lab->fabric_.SetAllLinkFaults(f); !st.ok()) return st;
  }
  // Both protocols are set up for the longest round trip as an operator of
  // a long link would: enough in flight for the line rate over it.
  const uint64_t long_rtt_ns =
      c.site_link_delay_ps == 0 ? 0 : lab->BaseRttPs(0, lab->hosts() - 1) / 1000;
  const uint64_t long_bdp_pkts = lab->line_bps_ / 8 * long_rtt_ns / 1'000'000'000 / kMtuBytes + 1;
  if (c.proto == Proto::kMetaRoce) {
    transport::EngineConfig ec;
    ec.rx_capacity_mbps = p.gbps * 1000 * kRxCapacityPct / 100 * lab->topo_.planes;
    if (long_rtt_ns != 0) {
      // More paths, each within its SACK's reach, and a connection window
      // that holds them.
      ec.num_paths = static_cast<uint16_t>(
          std::clamp<uint64_t>((long_bdp_pkts + ec.path_window_pkts - 1) / ec.path_window_pkts,
                               ec.num_paths, transport::kMaxPaths));
      ec.conn_window_pkts =
          static_cast<uint32_t>(std::max<uint64_t>(ec.conn_window_pkts, long_bdp_pkts));
    }
    lab->stack_ = MakeMetaRoceStack(lab->topo_, c.seed, kMaxMsgBytes, ec);
  } else {
    rocev2::Config rc;
    if (long_rtt_ns != 0) {
      // And a local ACK timeout (on the verbs grid, 4.096 us x 2^k) of at
      // least two of those round trips.
      uint64_t timeout_ns = 4096;
      while (timeout_ns < 2 * long_rtt_ns) timeout_ns *= 2;
      rc.ack_timeout_ns = std::max<uint64_t>(rc.ack_timeout_ns, timeout_ns);
      rc.window_pkts = static_cast<uint32_t>(std::max<uint64_t>(rc.window_pkts, long_bdp_pkts));
    }
    lab->stack_ = MakeRoceStack(lab->topo_, rc);
  }
  lab->flows_of_.resize(lab->hosts());
  lab->outstanding_of_.resize(lab->hosts());
  return lab;
}

sim::SimTime Lab::BaseRttPs(uint32_t a, uint32_t b) const {
  const uint32_t links = LeafOf(a) == LeafOf(b) ? 2 : 4;
  auto wire_ps = [this](uint32_t bytes) {
    return sim::SerializationPs(bytes + sim::kDefaultWireOverheadBytes, line_bps_);
  };
  sim::SimTime rtt = links * (2 * delay_ps_ + wire_ps(kDataFrameBytes) + wire_ps(kAckFrameBytes));
  const uint32_t last = hosts() / topo_.hosts_per_leaf - 1;
  if (site_delay_ps_ != 0 && LeafOf(a) != LeafOf(b) && (LeafOf(a) == last || LeafOf(b) == last)) {
    rtt += 2 * (site_delay_ps_ - delay_ps_);  // one of its four links is a long one
  }
  return rtt;
}

uint64_t Lab::BdpBytes(uint32_t a, uint32_t b) const {
  return static_cast<uint64_t>(static_cast<double>(BaseRttPs(a, b)) / 1e12 *
                               static_cast<double>(line_bps_) / 8);
}

sim::PortId Lab::DownlinkOf(uint32_t host, uint32_t plane) const {
  return fabric_.link(topo_.host_links[plane * hosts() + host]).port_b;
}

uint64_t Lab::DoneBytes() const {
  uint64_t n = 0;
  for (const FlowState& f : flows_) n += f.done;
  return n;
}

absl::StatusOr<uint32_t> Lab::AddFlow(const FlowSpec& f) {
  if (f.src >= hosts() || f.dst >= hosts() || f.src == f.dst) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flow %u -> %u: hosts are 0..%u and distinct", f.src, f.dst, hosts() - 1));
  }
  if (f.msg_bytes == 0 || f.msg_bytes > kMaxMsgBytes || f.depth == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "flow %u -> %u: messages of 1..%u bytes, depth >= 1", f.src, f.dst, kMaxMsgBytes));
  }
  if (outstanding_of_[f.src] + f.depth > kMaxHostOutstanding) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "host %u: more than %u WRITEs outstanding over its flows", f.src, kMaxHostOutstanding));
  }
  outstanding_of_[f.src] += f.depth;
  const auto index = static_cast<uint32_t>(flows_.size());
  if (auto st = stack_->Connect(index, f.src, f.dst, f.plane); !st.ok()) return st;
  FlowState& s = flows_.emplace_back();
  s.spec = f;
  flows_of_[f.src].push_back(index);
  return index;
}

absl::Status Lab::Chain(uint32_t flow, uint32_t after, uint64_t lead) {
  if (flow >= flows_.size() || after >= flows_.size() || flow == after) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "chain %u after %u: want two distinct flows of the %zu added", flow, after, flows_.size()));
  }
  flows_[flow].gate = after;
  flows_[flow].gate_lead = lead;
  return absl::OkStatus();
}

absl::StatusOr<sim::SimTime> Lab::Establish() {
  // Handshakes take a round trip or two; this is for a fabric that drops them.
  constexpr sim::SimTime kLimitPs = 100 * sim::kPsPerMs;
  for (uint32_t h = 0; h < hosts(); h++) stack_->Kick(h);  // the connects were outside an event
  while (!stack_->Connected()) {
    if (fabric_.Now() >= kLimitPs) {
      return absl::DeadlineExceededError("connections not up after 100 ms of simulated time");
    }
    fabric_.RunUntil(fabric_.Now() + step_ps_);
  }
  const sim::SimTime now = fabric_.Now();
  for (FlowState& f : flows_) f.spec.start_ps += now;
  return now;
}

void Lab::Post(FlowState& f, uint32_t index) {
  uint64_t limit = f.spec.bytes == 0 ? UINT64_MAX : f.spec.bytes;
  if (f.gate != FlowState::kNoGate) limit = std::min(limit, flows_[f.gate].done + f.gate_lead);
  while (!f.failed && f.outstanding < f.spec.depth && f.posted < limit) {
    const uint64_t n = std::min(f.spec.msg_bytes, limit - f.posted);
    if (!stack_->PostWrite(index, n).ok()) {
      f.failed = true;  // its QP is in error
      break;
    }
    f.posted += n;
    f.outstanding++;
  }
}

void Lab::Run(sim::SimTime until_ps, sim::SimTime sample_ps) {
  std::array<Done, 256> done;
  if (sample_ps != 0 && next_sample_ps_ == 0) next_sample_ps_ = fabric_.Now() + sample_ps;
  for (;;) {
    const sim::SimTime now = std::min(until_ps, fabric_.Now() + step_ps_);
    fabric_.RunUntil(now);
    bool all_finished = true, any_sized = false;
    for (uint32_t h = 0; h < hosts(); h++) {
      if (flows_of_[h].empty()) continue;
      size_t n;
      while ((n = stack_->Poll(h, done)) > 0) {
        for (size_t i = 0; i < n; i++) {
          FlowState& f = flows_[done[i].flow];
          f.outstanding--;
          if (!done[i].ok) {
            f.failed = true;
            continue;
          }
          f.done += done[i].bytes;
          if (f.spec.bytes != 0 && f.done == f.spec.bytes) f.end_ps = now;
        }
      }
      bool posted = false;
      for (uint32_t i : flows_of_[h]) {
        FlowState& f = flows_[i];
        if (f.spec.start_ps > now) {
          all_finished = false;
          continue;
        }
        const uint64_t before = f.posted;
        Post(f, i);
        posted |= f.posted != before;
        if (f.spec.bytes != 0) {
          any_sized = true;
          all_finished &= f.Finished();
        }
      }
      if (posted) stack_->Kick(h);
    }
    if (sample_ps != 0) {
      for (; next_sample_ps_ <= now; next_sample_ps_ += sample_ps) {
        for (FlowState& f : flows_) f.done_at.push_back(f.done);
      }
    }
    if (now >= until_ps || (any_sized && all_finished)) break;
  }
}

Totals Lab::totals() const {
  Totals t;
  stack_->Count(&t);
  for (const FlowState& f : flows_) t.qp_errors += f.failed;
  for (size_t k = 0; k < static_cast<size_t>(sim::DropCause::kCount); k++) {
    t.drops += fabric_.total_drops(static_cast<sim::DropCause>(k));
  }
  for (sim::PortId p = 0; p < fabric_.num_ports(); p++) {
    const sim::PortStats& s = fabric_.port_stats(p);
    t.pfc_pauses += s.pfc_pauses_received;
    t.ecn_marked += s.ecn_marked;
  }
  t.events = fabric_.events_processed();
  return t;
}

}  // namespace metaroce::mrsim
