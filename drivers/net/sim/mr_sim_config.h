/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Configuration of the simulated fabric's parts: hosts, switches, links and
 * fault injection, with every default in one place and the reason for it.
 * Fabric checks each config when it is applied and returns InvalidArgument
 * naming the field to fix.
 */

#ifndef METAROCE_MR_SIM_CONFIG_H
#define METAROCE_MR_SIM_CONFIG_H

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "mr_sim_time.h"
#include "mr_wire_frame.h"

namespace metaroce::sim {

/** Preamble (7) + start delimiter (1) + minimum inter-frame gap (12). Frames carry no FCS. */
inline constexpr uint32_t kDefaultWireOverheadBytes = 20;
/** Ethernet minimum frame without FCS; shorter frames are padded on the wire. */
inline constexpr uint32_t kMinWireFrameBytes = 60;
/** Largest frame a host may send: 64 KiB IP datagram plus Ethernet and VLAN headers. */
inline constexpr size_t kMaxFrameBytes = 65536 + 18;
/** NIC tx ring: enough to keep a 400G link busy between engine wake-ups, small enough to pace. */
inline constexpr uint32_t kDefaultTxQueueFrames = 64;
/** Per-port switch buffer: about one 400G x 10 us BDP (the design's base RTT). */
inline constexpr uint64_t kDefaultPortBufferBytes = 1 << 20;
/** ECN threshold meaning "never mark". */
inline constexpr uint64_t kEcnDisabled = UINT64_MAX;
/** Default link: 400 Gbit/s, the design's default speed. */
inline constexpr uint64_t kDefaultLinkRateBps = 400 * kBpsPerGbps;
/** Default propagation: about 100 m of fibre (5 ns/m). */
inline constexpr SimTime kDefaultLinkDelayPs = 500 * kPsPerNs;

/** One host: addresses and its NIC's transmit queue. The line rate comes from its link. */
struct HostConfig {
  std::string name;   ///< for messages and stats; empty: "host<id>"
  wire::MacAddr mac;  ///< the NIC's MAC (not checked by the fabric)
  wire::IpAddr ipv4;  ///< must be IPv4 (v6 == false); unique in the fabric
  wire::IpAddr ipv6;  ///< must be IPv6 (v6 == true), or all zero for none
  uint32_t tx_queue_frames = kDefaultTxQueueFrames;  ///< NIC tx slots, incl. the frame on the wire
};

/**
 * Largest frame PFC headroom is computed for: a 9000-byte MTU plus
 * Ethernet, VLAN and FCS, the jumbo frames RDMA fabrics run.
 */
inline constexpr uint64_t kPfcMaxFrameBytes = 9216;
/** A PAUSE frame: the Ethernet minimum, 64 bytes with its FCS. */
inline constexpr uint64_t kPfcPauseFrameBytes = 64;
/**
 * XOFF: an ingress port whose frames hold more than this in the switch
 * pauses its upstream. 64 KiB, 5 us of a 100 Gbit/s link: static lossless
 * thresholds of RoCE switches run tens of KB per ingress, above the ECN
 * threshold (so that marks act first on a queue fed by one or two ports)
 * and low enough that an incast's ingresses together stay within a
 * shared buffer of a few MB.
 */
inline constexpr uint64_t kDefaultPfcXoffBytes = 64 * 1024;
/** XON: resumed at or below this, two jumbo frames under XOFF (hysteresis, no pause storms). */
inline constexpr uint64_t kDefaultPfcXonBytes = kDefaultPfcXoffBytes - 2 * kPfcMaxFrameBytes;

/**
 * Priority flow control (IEEE 802.1Qbb) at a switch's ingress ports, every
 * frame in one lossless class. With it on, a frame is admitted by its
 * ingress port's account, not by the output port's buffer limit: an ingress
 * above xoff_bytes sends PAUSE upstream (it takes effect there after the
 * frame on the wire and the link delay; the upstream port finishes its
 * frame and stops), the frames still arriving go into the headroom, and at
 * xon_bytes or below it sends the resume. A frame that finds its ingress's
 * headroom used up too is dropped (DropCause::kPfcHeadroom): the headroom was
 * too small for the link.
 */
struct PfcConfig {
  bool enabled = false;
  uint64_t xoff_bytes = kDefaultPfcXoffBytes;  ///< pause the upstream above this
  uint64_t xon_bytes = kDefaultPfcXonBytes;    ///< resume it at or below this
  /**
   * Bytes an ingress may take above xoff_bytes. 0: computed per link, what
   * arrives while the pause travels: the link's round trip of delay at its
   * rate, plus a frame on the wire at each end and the PAUSE itself.
   */
  uint64_t headroom_bytes = 0;
};

/** One output-queued switch. Buffer and ECN apply to every port (see also Fabric::SetPortQueue). */
struct SwitchConfig {
  std::string name;                                      ///< empty: "switch<id>"
  uint64_t port_buffer_bytes = kDefaultPortBufferBytes;  ///< drop-tail limit per output port
  /** Mark CE when the output queue holds more than this many bytes at enqueue. */
  uint64_t ecn_threshold_bytes = kEcnDisabled;
  /** Store-and-forward pipeline latency, added to each frame's arrival at this switch. */
  SimTime forwarding_latency_ps = 0;
  PfcConfig pfc;  ///< off: lossy, drop-tail at port_buffer_bytes
};

/**
 * RED-style ECN marking (as RoCE switches configure it for DCQCN): a frame
 * finding the queue at or below min_bytes is not marked, above max_bytes it
 * always is, and in between with probability max_prob x (q - min) / (max -
 * min), q the occupancy it finds (instantaneous, as DCQCN and DCTCP
 * deployments use). Off while max_prob is 0; then the step threshold
 * (ecn_threshold_bytes) applies.
 */
struct RedConfig {
  uint64_t min_bytes = 0;  ///< Kmin
  uint64_t max_bytes = 0;  ///< Kmax
  double max_prob = 0;     ///< Pmax, in (0, 1]; 0: off
  bool enabled() const { return max_prob > 0; }
};

/** Per output port queue settings (a switch port's buffer and ECN marking). */
struct PortQueueConfig {
  uint64_t buffer_bytes = kDefaultPortBufferBytes;  ///< drop-tail limit
  uint64_t ecn_threshold_bytes = kEcnDisabled;      ///< mark above this occupancy
  RedConfig red;                                    ///< on: replaces the step threshold
};

/** A full-duplex link; both directions share rate, delay and overhead. */
struct LinkConfig {
  uint64_t rate_bps = kDefaultLinkRateBps;              ///< serialisation rate of both end ports
  SimTime delay_ps = kDefaultLinkDelayPs;               ///< propagation delay, each direction
  uint32_t overhead_bytes = kDefaultWireOverheadBytes;  ///< added to every frame's wire size
};

/** Gilbert-Elliott two-state loss: bursts of loss while in the bad state. */
struct GilbertElliottConfig {
  bool enabled = false;      ///< off: no draws, no burst loss
  double p_good_to_bad = 0;  ///< per step, chance to enter the bad state
  double p_bad_to_good = 1;  ///< per step, chance to leave it (mean burst = 1 / this steps)
  double loss_good = 0;      ///< loss probability in the good state
  double loss_bad = 1;       ///< loss probability in the bad state
  /**
   * 0: the chain steps once per frame, so a burst lasts so many frames
   * however long the link idles between them. Else it also steps once per
   * step_ps of time between frames (a frame's time at line rate, say): a
   * burst then lasts so long, and a link that carries a frame now and then
   * (ACKs, probes) leaves it as soon as a busy one, as a noisy lane does.
   */
  SimTime step_ps = 0;
};

/** How a corrupted frame is damaged. */
enum class CorruptMode : uint8_t {
  kBit,   ///< flip one random bit
  kByte,  ///< replace one random byte by a different random value
};

/**
 * Faults of one link direction, all off by default. Applied in this order to
 * each frame as it leaves the sending port: blackhole, Bernoulli loss,
 * Gilbert-Elliott loss, corruption, duplication, reordering delay (drawn
 * separately for the copy). Each direction draws from its own seeded stream.
 */
struct FaultConfig {
  double loss_probability = 0;      ///< Bernoulli: each frame independently lost
  GilbertElliottConfig burst_loss;  ///< bursty loss
  double corrupt_probability = 0;   ///< frame damaged in one bit/byte
  CorruptMode corrupt_mode = CorruptMode::kBit;
  /**
   * false: the damaged frame is delivered (the receiver's checksums and CRC
   * must catch it). true: the receiving port's FCS check drops it
   * (DropCause::kCorrupt), as real Ethernet does for damage on the wire.
   */
  bool corrupt_drop = false;
  double duplicate_probability = 0;  ///< a second copy is delivered too
  double reorder_probability = 0;    ///< frame delayed by extra time, so later frames pass it
  SimTime reorder_max_delay_ps = 0;  ///< extra delay uniform in [1, this] ps
  /** From this time on every frame entering or still on the link is dropped. */
  SimTime blackhole_at_ps = kSimTimeNever;
  /**
   * Routing reconverges this long after blackhole_at_ps: every switch stops
   * choosing the link (both directions). kSimTimeNever: routes never change.
   */
  SimTime reconverge_after_ps = kSimTimeNever;
};

/** Which direction(s) of a link a fault config applies to. Direction A->B is from Link end a. */
enum class LinkDirection : uint8_t { kBoth, kAtoB, kBtoA };

/**
 * PFC headroom an ingress needs on a link of @p link with one-way delays
 * @p to_upstream_ps (the PAUSE's way) and @p from_upstream_ps (the data's):
 * what the upstream sends before the PAUSE takes effect - the round trip at
 * the link's rate, a largest frame on the wire at each end, and the PAUSE.
 */
uint64_t PfcHeadroomBytes(const LinkConfig& link, SimTime to_upstream_ps, SimTime from_upstream_ps);

/** Checks a config; the message names the field to fix. */
absl::Status Validate(const HostConfig& c);
absl::Status Validate(const SwitchConfig& c);     ///< @copydoc Validate(const HostConfig&)
absl::Status Validate(const PfcConfig& c);        ///< @copydoc Validate(const HostConfig&)
absl::Status Validate(const RedConfig& c);        ///< @copydoc Validate(const HostConfig&)
absl::Status Validate(const PortQueueConfig& c);  ///< @copydoc Validate(const HostConfig&)
absl::Status Validate(const LinkConfig& c);       ///< @copydoc Validate(const HostConfig&)
absl::Status Validate(const FaultConfig& c);      ///< @copydoc Validate(const HostConfig&)

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_CONFIG_H
