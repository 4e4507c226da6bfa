/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The dpdk driver's Port: one ethdev, one mbuf pool, per-queue receive state and counters.

#ifndef METAROCE_NET_DPDK_DPDK_PRIVATE_H
#define METAROCE_NET_DPDK_DPDK_PRIVATE_H

#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include "mr_net_dpdk.h"
#include "mr_port_driver.h"

struct rte_flow;
struct rte_mbuf;
struct rte_mempool;

namespace metaroce::dpdk {

class Neigh;  // neigh_private.h

using Counter = port::StatCounter;

/** What one queue owns: the mbufs of its last RxBurst() and its counters. */
/**
 * Frames a full transmit ring did not take wait here, in order, and go first
 * at the next burst call on the queue, instead of being dropped: a ring that
 * is full for a moment (a peer process descheduled, a NIC at line rate) is
 * back-pressure, not loss.
 */
inline constexpr uint32_t kTxBacklogPkts = 512;
/** With this many frames waiting, TxAlloc() hands out no buffers: the engine keeps the rest. */
inline constexpr uint32_t kTxBacklogPausePkts = 128;

struct Queue {
  std::array<rte_mbuf*, kMaxRxBurst> held{};  ///< received mbufs, freed at the next RxBurst()
  uint16_t num_held = 0;
  std::array<rte_mbuf*, kTxBacklogPkts> backlog{};  ///< ring: frames waiting for the device
  uint32_t backlog_head = 0, backlog_count = 0;
  Counter rx_packets, rx_bytes, rx_errors;
  Counter tx_packets, tx_bytes, tx_errors, tx_no_buffer;
};

/**
 * A dpdk port: a started ethdev with queues() rx/tx queue pairs, every rx
 * queue fed from one pool that also serves TxAlloc(). Burst calls on one queue
 * come from one thread; stats() from any.
 */
class DpdkPort final : public port::Port {
 public:
  /** Configures and starts the ethdev of @p args; EAL must be up. */
  static absl::StatusOr<std::unique_ptr<DpdkPort>> Open(const DpdkArgs& args);
  /** Frees the held mbufs and stops the ethdev (the pool stays for a later Open()). */
  ~DpdkPort() override;

  const port::PortInfo& info() const override { return info_; }
  uint16_t RxBurst(uint16_t queue, port::RxPacket* pkts, uint16_t n) override;
  uint16_t TxAlloc(uint16_t queue, transport::TxSlot* slots, uint16_t n) override;
  uint16_t TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) override;
  port::PortStats stats() const override;
  const TxOffloads& offloads() const { return offloads_; }
  // Steering (flow.cc): rte_flow rules by UDP destination port, and handing a
  // received mbuf to another thread (DetachRx() takes it out of the queue's held
  // mbufs, which RxBurst() keeps index for index with the packets it returned).
  absl::StatusOr<bool> SteerUdpDstPort(uint16_t udp_port, uint16_t queue) override;
  void* DetachRx(uint16_t queue, uint16_t index) override;
  void ReleaseRx(void* handle) override;

 private:
  DpdkPort() = default;
  // Frees every mbuf waiting on the receive queues (stale frames of an earlier user).
  void DrainRx();
  // Asks the device to fill in the checksums of an IPv4 frame (offloads_).
  void SetChecksumOffload(rte_mbuf* m) const;
  // Hands waiting frames of queue @p queue to the device; true when none is left.
  bool FlushBacklog(uint16_t queue, Queue& q);
  // Queues @p k frames behind the backlog; frees (and counts) what does not fit; returns how many
  // it took.
  uint16_t AddToBacklog(Queue& q, rte_mbuf* const* m, uint16_t k);
  // Removes the rules SteerUdpDstPort() installed (flow.cc).
  void DestroyFlows();

  port::PortInfo info_;
  uint16_t port_id_ = 0;
  bool started_ = false;
  rte_mempool* pool_ = nullptr;
  std::vector<std::unique_ptr<Queue>> queues_;
  TxOffloads offloads_;                      ///< negotiated at Open()
  std::atomic<uint64_t> wrong_queue_tx_{0};  ///< slots given to TxBurst() on a queue we lack
  std::vector<rte_flow*> flows_;             ///< rules of SteerUdpDstPort()
  std::unique_ptr<Neigh> neigh_;             ///< ARP / ND (neigh.cc): answers, fills MACs
};

/** Resolves "3" or "net_ring0" to an ethdev port id; the error lists the ports there are. */
absl::StatusOr<uint16_t> FindPort(const std::string& port);

}  // namespace metaroce::dpdk

#endif  // METAROCE_NET_DPDK_DPDK_PRIVATE_H
