/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Steering for the multi-lcore runtime (doc/runtime.md): rte_flow rules that send a UDP
// destination port to one receive queue, and received mbufs handed to another thread.

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_byteorder.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_mbuf.h>
#pragma GCC diagnostic pop

#include <cstring>

#include "absl/strings/str_cat.h"
#include "dpdk_private.h"
#include "mr_log.h"

namespace metaroce::dpdk {

absl::StatusOr<bool> DpdkPort::SteerUdpDstPort(uint16_t udp_port, uint16_t queue) {
  if (queue >= queues_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("dpdk: steering to queue ", queue, " of port ",
                                                   port_id_, ", which has ", queues_.size()));
  }
  rte_flow_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.ingress = 1;
  rte_flow_item_udp udp_spec;
  rte_flow_item_udp udp_mask;
  std::memset(&udp_spec, 0, sizeof(udp_spec));
  std::memset(&udp_mask, 0, sizeof(udp_mask));
  udp_spec.hdr.dst_port = rte_cpu_to_be_16(udp_port);
  udp_mask.hdr.dst_port = 0xffff;
  rte_flow_item pattern[4];
  std::memset(pattern, 0, sizeof(pattern));
  pattern[0].type = RTE_FLOW_ITEM_TYPE_ETH;  // any Ethernet header, any addresses
  pattern[1].type = info_.ip.v6 ? RTE_FLOW_ITEM_TYPE_IPV6 : RTE_FLOW_ITEM_TYPE_IPV4;
  pattern[2].type = RTE_FLOW_ITEM_TYPE_UDP;
  pattern[2].spec = &udp_spec;
  pattern[2].mask = &udp_mask;
  pattern[3].type = RTE_FLOW_ITEM_TYPE_END;
  rte_flow_action_queue to_queue;
  std::memset(&to_queue, 0, sizeof(to_queue));
  to_queue.index = queue;
  rte_flow_action actions[2];
  std::memset(actions, 0, sizeof(actions));
  actions[0].type = RTE_FLOW_ACTION_TYPE_QUEUE;
  actions[0].conf = &to_queue;
  actions[1].type = RTE_FLOW_ACTION_TYPE_END;

  rte_flow_error err;
  std::memset(&err, 0, sizeof(err));
  const int rc = rte_flow_validate(port_id_, &attr, pattern, actions, &err);
  if (rc != 0) {
    // No rte_flow (net_ring, net_memif, net_af_packet: ENOSYS) or not this rule: the
    // caller steers in software.
    MR_LOG(INFO, "dpdk: port %u cannot steer UDP destination port %u to queue %u with rte_flow: %s",
           port_id_, udp_port, queue, err.message != nullptr ? err.message : rte_strerror(-rc));
    return false;
  }
  rte_flow* flow = rte_flow_create(port_id_, &attr, pattern, actions, &err);
  if (flow == nullptr) {
    return absl::InternalError(absl::StrCat(
        "dpdk: rte_flow_create (UDP destination port ", udp_port, " to queue ", queue, ") on port ",
        port_id_, " failed after validating: ", rte_strerror(rte_errno),
        err.message != nullptr ? ": " : "", err.message != nullptr ? err.message : ""));
  }
  flows_.push_back(flow);
  return true;
}

void DpdkPort::DestroyFlows() {
  for (rte_flow* f : flows_) {
    rte_flow_error err;
    rte_flow_destroy(port_id_, f, &err);
  }
  flows_.clear();
}

void* DpdkPort::DetachRx(uint16_t queue, uint16_t index) {
  if (queue >= queues_.size()) return nullptr;
  Queue& q = *queues_[queue];
  if (index >= q.num_held) return nullptr;
  rte_mbuf* m = q.held[index];
  q.held[index] = nullptr;  // rte_pktmbuf_free_bulk() skips it at the next RxBurst()
  return m;
}

void DpdkPort::ReleaseRx(void* handle) {
  if (handle != nullptr) rte_pktmbuf_free(static_cast<rte_mbuf*>(handle));
}

}  // namespace metaroce::dpdk
