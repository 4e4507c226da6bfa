/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Two net_ring ethdevs wired back to back, for tests that run the DPDK
// driver in one process without a NIC.

#ifndef METAROCE_TEST_COMMON_RING_PAIR_H
#define METAROCE_TEST_COMMON_RING_PAIR_H

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace metaroce::testing {

/**
 * Creates ethdevs net_ring_<a> and net_ring_<b> with @p queues queue pairs
 * each: what A transmits on queue q, B receives on queue q, and back. Rings
 * hold @p slots frames (a power of two). EAL must be up; names must be new.
 */
absl::Status MakeRingPair(const std::string& a, const std::string& b, uint16_t queues = 1,
                          unsigned slots = 4096);

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_COMMON_RING_PAIR_H
