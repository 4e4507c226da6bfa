/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A dpdk port's neighbour resolution: the table of neigh_table.cc behind a lock, hooked
// into RxBurst (ARP / NS / NA frames answered and consumed) and TxBurst (zero destination
// MACs filled in), and NeighStatsOf().

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#pragma GCC diagnostic pop
#include <time.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "neigh_private.h"

namespace metaroce::dpdk {
namespace {

// Every live Neigh, by the PortInfo of its port: NeighStatsOf() finds a port through a
// wrapper (the fault stage) whose info() is the wrapped port's.
std::mutex registry_mu;

absl::flat_hash_map<const port::PortInfo*, const Neigh*>& Registry() {
  static auto* ports = new absl::flat_hash_map<const port::PortInfo*, const Neigh*>();
  return *ports;
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

Neigh::Neigh(uint16_t port_id, rte_mempool* pool, const port::PortInfo& info,
             const std::vector<StaticNeigh>& statics)
    : port_id_(port_id),
      pool_(pool),
      info_(info),
      table_(info.ip, info.mac, statics),
      cache_(std::max<uint16_t>(info.num_queues, 1)) {
  std::lock_guard<std::mutex> lock(registry_mu);
  Registry()[&info_] = this;
}

Neigh::~Neigh() {
  std::lock_guard<std::mutex> lock(registry_mu);
  Registry().erase(&info_);
}

bool Neigh::OnRx(uint16_t queue, rte_mbuf* m) {
  const std::span<const uint8_t> frame(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
  if (!IsNeighFrame(frame)) return false;
  std::array<uint8_t, kNeighFrameBytes> reply;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    n = table_.OnFrame(frame, MonotonicNs(), reply);
    generation_.store(table_.generation(), std::memory_order_release);
  }
  rte_pktmbuf_free(m);
  if (n != 0) Send(queue, {reply.data(), n});
  return true;
}

bool Neigh::OnTx(uint16_t queue, std::span<uint8_t> frame, int64_t* now_ns) {
  static constexpr std::array<uint8_t, 6> kZeroMac{};
  if (frame.size() < kZeroMac.size() ||
      std::memcmp(frame.data(), kZeroMac.data(), kZeroMac.size()) != 0) {
    return true;  // the engine knew the MAC
  }
  wire::IpAddr dst;
  if (!FrameDestination(frame, &dst)) return true;  // not IP: sent as written
  if (*now_ns == 0) *now_ns = MonotonicNs();
  TxCache& c = cache_[queue];
  if (c.valid && c.ip == dst && *now_ns < c.valid_until_ns &&
      c.generation == generation_.load(std::memory_order_acquire)) {
    std::memcpy(frame.data(), c.mac.bytes.data(), 6);
    return true;
  }
  std::array<uint8_t, kNeighFrameBytes> request;
  NeighTable::Resolution r;
  uint64_t generation = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    r = table_.Resolve(dst, *now_ns, request);
    generation = table_.generation();
    generation_.store(generation, std::memory_order_release);
  }
  if (r.request_len != 0) Send(queue, {request.data(), r.request_len});
  if (!r.ok) {
    c.valid = false;
    return false;
  }
  c = TxCache{true, dst, r.mac, generation, r.valid_until_ns};
  std::memcpy(frame.data(), r.mac.bytes.data(), 6);
  return true;
}

void Neigh::Send(uint16_t queue, std::span<const uint8_t> frame) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m != nullptr) {
    char* d = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
    if (d != nullptr) {
      std::memcpy(d, frame.data(), frame.size());
      if (rte_eth_tx_burst(port_id_, queue, &m, 1) == 1) return;
    }
    rte_pktmbuf_free(m);
  }
  std::lock_guard<std::mutex> lock(mu_);
  table_.CountSendFailure();
}

NeighStats Neigh::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.stats();
}

std::optional<NeighStats> NeighStatsOf(const port::Port& port) {
  std::lock_guard<std::mutex> lock(registry_mu);
  auto it = Registry().find(&port.info());
  if (it == Registry().end()) return std::nullopt;
  return it->second->stats();
}

}  // namespace metaroce::dpdk
