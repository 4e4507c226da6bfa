/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * A fault stage in front of any port: a lossy, reordering, duplicating,
 * ECN-marking, corrupting wire between the driver and the engine
 * (doc/udp-driver.md, "Fault injection"). Faults apply to received packets;
 * blackhole_port also drops transmitted ones. Deterministic for a seed.
 */

#ifndef METAROCE_MR_PORT_FAULT_H
#define METAROCE_MR_PORT_FAULT_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "mr_port.h"

namespace metaroce::port {

/** What to do to packets; every probability is per packet, 0..1. */
struct FaultSpec {
  /** drop=p: independent loss. */
  double drop = 0;
  /** burst=p:n: a run of burst_len = n drops starts with probability p. */
  double burst = 0;
  uint32_t burst_len = 1;
  /** reorder=p:k: the packet is held back behind reorder_depth = k later ones. */
  double reorder = 0;
  uint32_t reorder_depth = 1;
  /** dup=p: a second copy follows the packet. */
  double dup = 0;
  /** ecn=p: an ECT(0)/ECT(1) packet is marked CE. */
  double ecn = 0;
  /** corrupt=p: one random bit of the MetaRoCE bytes flips. */
  double corrupt = 0;
  /** blackhole_port=N: UDP source port N is dropped in both directions (0: off). */
  uint16_t blackhole_port = 0;
  /** seed=S: the stage's random numbers; queue q uses a stream derived from S and q. */
  uint64_t seed = 1;
};

/**
 * Parses "drop=0.01,burst=0.001:8,reorder=0.01:20,dup=0.01,ecn=0.05,
 * corrupt=0.001,blackhole_port=N,seed=S" (any subset, empty: no faults). An
 * unknown key, a key given twice or a bad value fails naming the key and what
 * is allowed.
 */
absl::StatusOr<FaultSpec> ParseFaultSpec(const std::string& spec);

/** What the fault stage did. */
struct FaultStats {
  uint64_t rx_in = 0;                 ///< packets the inner port received
  uint64_t rx_out = 0;                ///< packets handed on (duplicates included)
  uint64_t dropped = 0;               ///< by drop=
  uint64_t burst_dropped = 0;         ///< by burst=, all bursts together
  uint64_t bursts = 0;                ///< bursts started
  uint64_t reordered = 0;             ///< packets held back
  uint64_t reorder_idle_flushes = 0;  ///< held packets let go because the queue went quiet
  uint64_t duplicated = 0;            ///< extra copies made
  uint64_t ecn_marked = 0;            ///< ECT packets set to CE
  uint64_t corrupted = 0;             ///< packets with a flipped bit
  uint64_t blackholed_rx = 0;
  uint64_t blackholed_tx = 0;
  uint64_t unparsed = 0;  ///< frames whose headers it could not read (passed unchanged)
};

/** Consecutive empty polls of a queue after which held (reordered) packets are let go. */
inline constexpr uint32_t kReorderIdlePolls = 256;

/**
 * Wraps @p inner (any driver, Framing::kEthernet or kUdp) in a fault stage
 * configured by @p spec (see ParseFaultSpec()). The result reports the inner
 * port's info() and stats(); FaultStatsOf() gives the faults.
 */
absl::StatusOr<std::unique_ptr<Port>> WithFaults(std::unique_ptr<Port> inner,
                                                 const std::string& spec);

/** The same with a parsed spec. */
std::unique_ptr<Port> WithFaults(std::unique_ptr<Port> inner, const FaultSpec& spec);

/**
 * The counters of a port WithFaults() made, summed over its queues; nullopt
 * for any other port. Read them from the thread that polls the port.
 */
std::optional<FaultStats> FaultStatsOf(const Port& port);

}  // namespace metaroce::port

#endif  // METAROCE_MR_PORT_FAULT_H
