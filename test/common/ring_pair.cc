/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "ring_pair.h"

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_ring.h>
#pragma GCC diagnostic pop

#include <vector>

#include "absl/strings/str_cat.h"

namespace metaroce::testing {

absl::Status MakeRingPair(const std::string& a, const std::string& b, uint16_t queues,
                          unsigned slots) {
  std::vector<rte_ring*> ab(queues), ba(queues);
  for (uint16_t q = 0; q < queues; q++) {
    ab[q] = rte_ring_create(absl::StrCat("mr_", a, b, "_", q).c_str(), slots, SOCKET_ID_ANY,
                            RING_F_SP_ENQ | RING_F_SC_DEQ);
    ba[q] = rte_ring_create(absl::StrCat("mr_", b, a, "_", q).c_str(), slots, SOCKET_ID_ANY,
                            RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ab[q] == nullptr || ba[q] == nullptr) {
      return absl::InternalError(absl::StrCat("rte_ring_create: ", rte_strerror(rte_errno)));
    }
  }
  if (rte_eth_from_rings(a.c_str(), ba.data(), queues, ab.data(), queues, rte_socket_id()) < 0 ||
      rte_eth_from_rings(b.c_str(), ab.data(), queues, ba.data(), queues, rte_socket_id()) < 0) {
    return absl::InternalError(absl::StrCat("rte_eth_from_rings: ", rte_strerror(rte_errno)));
  }
  return absl::OkStatus();
}

}  // namespace metaroce::testing
