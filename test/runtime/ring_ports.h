/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// EAL without hugepages and two net_ring ethdevs of kRingQueues queues each,
// cross-connected: queue q of one transmits into queue q of the other. Shared by
// the runtime's ring test and its benchmark.

#ifndef METAROCE_TEST_RUNTIME_RING_PORTS_H
#define METAROCE_TEST_RUNTIME_RING_PORTS_H

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "mr_runtime.h"

namespace metaroce::testing {

/** Queues of each ring port (the most lcores a runtime on them may have). */
inline constexpr uint16_t kRingQueues = 2;
/** The two ports (rte_eth_from_rings() names them net_ring_<name>). */
inline constexpr const char* kRingPortA = "net_ring_rta";
inline constexpr const char* kRingPortB = "net_ring_rtb";

/** Initialises EAL and creates the ports, once per process; every later call returns the same. */
absl::Status EalAndRingPorts();

/**
 * A runtime configuration on ring port @p port as host @p host (10.7.0.<host>,
 * MAC 02:00:00:00:07:0<host>, shard ports from 4800) with @p lcores shards.
 */
runtime::RuntimeConfig RingRuntimeConfig(const char* port, int host, uint16_t lcores,
                                         const std::string& faults, uint32_t mtu = 1500);

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_RUNTIME_RING_PORTS_H
