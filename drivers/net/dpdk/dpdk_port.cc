/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Opening a dpdk port (pool, queues, MAC, start) and its burst functions.

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_udp.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dpdk_private.h"
#include "neigh_private.h"

namespace metaroce::dpdk {
namespace {

// Mbufs moved per rte_pktmbuf_alloc_bulk() / rte_eth_tx_burst() call.
constexpr uint16_t kChunk = 64;
// Mbufs each lcore's mempool cache keeps.
constexpr unsigned kPoolCache = 256;

std::mutex open_mu;
std::set<uint16_t> open_ports;  // ethdevs a DpdkPort of this process holds

absl::Status CallError(const char* call, uint16_t port, int rc) {
  return absl::InternalError(absl::StrCat("dpdk: ", call, " on port ", port,
                                          " failed: ", rte_strerror(rc < 0 ? -rc : rc)));
}

// Bytes of data room an mbuf needs for one frame of @p mtu: the frame with a
// VLAN tag's worth of slack, in whole KiB, at least the usual 2 KiB.
uint16_t DataRoom(uint32_t mtu) {
  const uint32_t frame = mtu + RTE_ETHER_HDR_LEN + 4;
  const uint32_t room = std::max<uint32_t>(2048, (frame + 1023) / 1024 * 1024);
  return static_cast<uint16_t>(room + RTE_PKTMBUF_HEADROOM);
}

// The pool of @p port for these settings: found again when the port is reopened
// (mbufs of an earlier user may still sit in a peer's rings, so pools are never freed).
absl::StatusOr<rte_mempool*> GetPool(uint16_t port, uint32_t mbufs, uint16_t room) {
  const std::string name = absl::StrCat("mr_p", port, "_", mbufs, "_", room);
  rte_mempool* mp = rte_mempool_lookup(name.c_str());
  if (mp != nullptr) return mp;
  mp = rte_pktmbuf_pool_create(name.c_str(), mbufs, kPoolCache, 0, room,
                               rte_eth_dev_socket_id(port));
  if (mp == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "dpdk: rte_pktmbuf_pool_create(", name, ", ", mbufs, " mbufs of ", room, " bytes) failed: ",
        rte_strerror(rte_errno), "; give fewer mbufs= or a smaller mtu=, or EAL more memory (-m)"));
  }
  return mp;
}

}  // namespace

absl::StatusOr<uint16_t> FindPort(const std::string& port) {
  uint16_t id = 0;
  bool found = false;
  if (!port.empty() && port.find_first_not_of("0123456789") == std::string::npos) {
    uint64_t v = 0;
    found = absl::SimpleAtoi(port, &v) && v <= 65535 &&
            rte_eth_dev_is_valid_port(static_cast<uint16_t>(v));
    id = static_cast<uint16_t>(v);
  } else {
    found = rte_eth_dev_get_port_by_name(port.c_str(), &id) == 0;
  }
  if (found) return id;
  std::vector<std::string> have;
  uint16_t p;
  RTE_ETH_FOREACH_DEV(p) {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(p, name);
    have.push_back(absl::StrCat(p, " (", name, ")"));
  }
  return absl::NotFoundError(absl::StrCat(
      "dpdk: port='", port, "': no such ethdev; ethdevs: ",
      have.empty() ? "none (give EAL a --vdev= or a NIC)" : absl::StrJoin(have, ", ")));
}

absl::StatusOr<std::unique_ptr<DpdkPort>> DpdkPort::Open(const DpdkArgs& args) {
  absl::StatusOr<uint16_t> id = FindPort(args.port);
  if (!id.ok()) return id.status();
  const uint16_t pid = *id;
  {
    std::lock_guard<std::mutex> lock(open_mu);
    if (!open_ports.insert(pid).second) {
      return absl::FailedPreconditionError(
          absl::StrCat("dpdk: port='", args.port, "': ethdev ", pid, " is already open"));
    }
  }
  std::unique_ptr<DpdkPort> p(new DpdkPort());
  p->port_id_ = pid;  // from here on the destructor gives the port back

  rte_eth_dev_info dev;
  int rc = rte_eth_dev_info_get(pid, &dev);
  if (rc != 0) return CallError("rte_eth_dev_info_get", pid, rc);
  if (args.queues > dev.max_rx_queues || args.queues > dev.max_tx_queues) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dpdk: queues='", args.queues, "' is not allowed: ethdev ", pid, " (", dev.driver_name,
        ") has at most ", dev.max_rx_queues, " rx and ", dev.max_tx_queues, " tx queues"));
  }
  // net_memif reports a 1500-byte MTU (max_rx_pktlen 1518) but chains its
  // descriptors: a longer frame crosses as a chain of memif buffers and, in
  // its default copy mode, arrives in one mbuf when the mbuf has room for it
  // (the pool is sized for mtu below). So its frames may be larger than the
  // MTU ethdev is configured with.
  const bool chains = std::string_view(dev.driver_name) == "net_memif";
  // Drivers that only state their largest frame leave max_mtu at UINT16_MAX.
  const uint32_t dev_max_mtu = std::min<uint32_t>(
      dev.max_mtu, dev.max_rx_pktlen - std::min<uint32_t>(dev.max_rx_pktlen,
                                                          RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN));
  if (args.mtu < dev.min_mtu || (args.mtu > dev_max_mtu && !chains)) {
    return absl::InvalidArgumentError(absl::StrCat("dpdk: mtu='", args.mtu,
                                                   "' is not allowed: ethdev ", pid, " takes ",
                                                   dev.min_mtu, "..", dev_max_mtu));
  }
  const uint16_t room = DataRoom(args.mtu);
  absl::StatusOr<rte_mempool*> pool = GetPool(pid, args.mbufs, room);
  if (!pool.ok()) return pool.status();
  p->pool_ = *pool;

  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof(conf));
  conf.rxmode.mtu = std::min(args.mtu, dev_max_mtu);
  if (args.csum_offload) {
    p->offloads_.ipv4_cksum = (dev.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
    // The UDP checksum needs the IPv4 one offloaded too (l3_len is set for both).
    p->offloads_.udp_cksum =
        p->offloads_.ipv4_cksum && (dev.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
    if (p->offloads_.ipv4_cksum) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
    if (p->offloads_.udp_cksum) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
  }
  rc = rte_eth_dev_configure(pid, args.queues, args.queues, &conf);
  if (rc != 0) return CallError("rte_eth_dev_configure", pid, rc);
  uint16_t rxd = kRxDescriptors;
  uint16_t txd = kTxDescriptors;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rxd, &txd);
  if (rc != 0) return CallError("rte_eth_dev_adjust_nb_rx_tx_desc", pid, rc);
  const int socket = rte_eth_dev_socket_id(pid);
  for (uint16_t q = 0; q < args.queues; q++) {
    rc = rte_eth_rx_queue_setup(pid, q, rxd, socket, nullptr, p->pool_);
    if (rc != 0) return CallError("rte_eth_rx_queue_setup", pid, rc);
    rc = rte_eth_tx_queue_setup(pid, q, txd, socket, nullptr);
    if (rc != 0) return CallError("rte_eth_tx_queue_setup", pid, rc);
    p->queues_.push_back(std::make_unique<Queue>());
  }

  rte_ether_addr mac;
  if (args.mac_auto) {
    rc = rte_eth_macaddr_get(pid, &mac);
    if (rc != 0) return CallError("rte_eth_macaddr_get", pid, rc);
    std::memcpy(p->info_.mac.bytes.data(), mac.addr_bytes, 6);
  } else {
    std::memcpy(mac.addr_bytes, args.mac.bytes.data(), 6);
    p->info_.mac = args.mac;
    // A PMD that cannot take the address must at least pass frames sent to it.
    if (rte_eth_dev_default_mac_addr_set(pid, &mac) != 0) {
      rc = rte_eth_promiscuous_enable(pid);
      if (rc != 0 && rc != -ENOTSUP) return CallError("rte_eth_promiscuous_enable", pid, rc);
    }
  }
  rc = rte_eth_dev_start(pid);
  if (rc != 0) return CallError("rte_eth_dev_start", pid, rc);
  p->started_ = true;
  p->DrainRx();

  p->info_.driver = "dpdk";
  p->info_.framing = transport::Framing::kEthernet;
  p->info_.ip = args.ip;
  p->info_.udp_port = args.udp_port;
  p->info_.num_queues = args.queues;
  p->info_.max_frame_bytes = args.mtu + RTE_ETHER_HDR_LEN;
  p->neigh_ = std::make_unique<Neigh>(pid, p->pool_, p->info_, args.neigh);
  return p;
}

DpdkPort::~DpdkPort() {
  DestroyFlows();
  for (auto& q : queues_) {
    if (q->num_held != 0) rte_pktmbuf_free_bulk(q->held.data(), q->num_held);
    q->num_held = 0;
    for (; q->backlog_count != 0; q->backlog_count--) {
      rte_pktmbuf_free(q->backlog[q->backlog_head]);
      q->backlog_head = (q->backlog_head + 1) % kTxBacklogPkts;
    }
  }
  if (started_) {
    DrainRx();
    rte_eth_dev_stop(port_id_);
  }
  std::lock_guard<std::mutex> lock(open_mu);
  open_ports.erase(port_id_);
}

void DpdkPort::DrainRx() {
  std::array<rte_mbuf*, kChunk> m;
  for (uint16_t q = 0; q < queues_.size(); q++) {
    for (int round = 0; round < 1024; round++) {
      const uint16_t n = rte_eth_rx_burst(port_id_, q, m.data(), kChunk);
      if (n == 0) break;
      rte_pktmbuf_free_bulk(m.data(), n);
    }
  }
}

void DpdkPort::SetChecksumOffload(rte_mbuf* m) const {
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  uint32_t l2 = RTE_ETHER_HDR_LEN;
  uint16_t type = static_cast<uint16_t>(f[12] << 8 | f[13]);
  if (type == RTE_ETHER_TYPE_VLAN && m->data_len >= l2 + 4) {
    type = static_cast<uint16_t>(f[16] << 8 | f[17]);
    l2 += 4;
  }
  if (type != RTE_ETHER_TYPE_IPV4 || m->data_len < l2 + sizeof(rte_ipv4_hdr)) return;
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(f + l2);
  const uint32_t l3 = static_cast<uint32_t>(ip->version_ihl & 0x0f) * 4;
  if (l3 < sizeof(rte_ipv4_hdr) || m->data_len < l2 + l3) return;
  m->l2_len = l2;
  m->l3_len = l3;
  m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
  ip->hdr_checksum = 0;
  if (offloads_.udp_cksum && ip->next_proto_id == IPPROTO_UDP &&
      m->data_len >= l2 + l3 + sizeof(rte_udp_hdr)) {
    m->ol_flags |= RTE_MBUF_F_TX_UDP_CKSUM;
    // The device adds the datagram to the pseudo-header sum written here.
    reinterpret_cast<rte_udp_hdr*>(f + l2 + l3)->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
  }
}

std::optional<TxOffloads> TxOffloadsOf(const port::Port& port) {
  const auto* p = dynamic_cast<const DpdkPort*>(&port);
  if (p == nullptr) return std::nullopt;
  return p->offloads();
}

bool DpdkPort::FlushBacklog(uint16_t queue, Queue& q) {
  uint64_t packets = 0, bytes = 0;
  while (q.backlog_count != 0) {
    const uint16_t run = static_cast<uint16_t>(
        std::min<uint32_t>({q.backlog_count, kTxBacklogPkts - q.backlog_head, kChunk}));
    rte_mbuf** first = q.backlog.data() + q.backlog_head;
    const uint16_t sent = rte_eth_tx_burst(port_id_, queue, first, run);
    for (uint16_t i = 0; i < sent; i++) bytes += first[i]->pkt_len;
    packets += sent;
    q.backlog_head = (q.backlog_head + sent) % kTxBacklogPkts;
    q.backlog_count -= sent;
    if (sent < run) break;
  }
  if (packets != 0) {
    q.tx_packets.Add(packets);
    q.tx_bytes.Add(bytes);
  }
  return q.backlog_count == 0;
}

uint16_t DpdkPort::AddToBacklog(Queue& q, rte_mbuf* const* m, uint16_t k) {
  uint16_t i = 0;
  for (; i < k && q.backlog_count < kTxBacklogPkts; i++) {
    q.backlog[(q.backlog_head + q.backlog_count) % kTxBacklogPkts] = m[i];
    q.backlog_count++;
  }
  if (i < k) {
    rte_pktmbuf_free_bulk(const_cast<rte_mbuf**>(m) + i, k - i);
    q.tx_errors.Add(k - i);
  }
  return i;
}

uint16_t DpdkPort::RxBurst(uint16_t queue, port::RxPacket* pkts, uint16_t n) {
  if (queue >= queues_.size()) return 0;
  Queue& q = *queues_[queue];
  if (q.backlog_count != 0) FlushBacklog(queue, q);
  if (q.num_held != 0) {
    rte_pktmbuf_free_bulk(q.held.data(), q.num_held);
    q.num_held = 0;
  }
  if (n == 0) return 0;
  const uint16_t got =
      rte_eth_rx_burst(port_id_, queue, q.held.data(), std::min<uint16_t>(n, kMaxRxBurst));
  uint16_t out = 0;
  uint64_t bytes = 0;
  uint64_t bad = 0;
  for (uint16_t i = 0; i < got; i++) {
    rte_mbuf* m = q.held[i];
    if (m->nb_segs != 1) {  // the engine parses contiguous frames only
      rte_pktmbuf_free(m);
      bad++;
      continue;
    }
    if (neigh_->OnRx(queue, m)) continue;  // ARP / NS / NA: answered here, never the engine's
    q.held[out] = m;
    port::RxPacket& p = pkts[out];
    p.data = {rte_pktmbuf_mtod(m, const uint8_t*), m->data_len};
    p.addr = wire::FrameInfo{};
    bytes += m->data_len;
    out++;
  }
  q.num_held = out;
  if (got != 0) {
    q.rx_packets.Add(out);
    q.rx_bytes.Add(bytes);
    if (bad != 0) q.rx_errors.Add(bad);
  }
  return out;
}

uint16_t DpdkPort::TxAlloc(uint16_t queue, transport::TxSlot* slots, uint16_t n) {
  if (queue >= queues_.size()) return 0;
  Queue& q = *queues_[queue];
  if (q.backlog_count != 0 && !FlushBacklog(queue, q) && q.backlog_count >= kTxBacklogPausePkts) {
    q.tx_no_buffer.Add(1);
    return 0;
  }
  uint16_t got = 0;
  std::array<rte_mbuf*, kChunk> m;
  bool dry = false;
  while (got < n && !dry) {
    uint16_t want = std::min<uint16_t>(n - got, kChunk);
    if (rte_pktmbuf_alloc_bulk(pool_, m.data(), want) != 0) {
      // All or nothing: take what is left one by one.
      uint16_t k = 0;
      while (k < want && (m[k] = rte_pktmbuf_alloc(pool_)) != nullptr) k++;
      dry = k < want;
      want = k;
    }
    for (uint16_t i = 0; i < want; i++) {
      transport::TxSlot& s = slots[got++];
      s.buf = rte_pktmbuf_mtod(m[i], uint8_t*);
      s.cap = rte_pktmbuf_tailroom(m[i]);
      s.len = 0;
      s.addr = wire::FrameInfo{};
      s.cookie = m[i];
    }
  }
  if (got < n) q.tx_no_buffer.Add(1);
  return got;
}

uint16_t DpdkPort::TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) {
  Queue* q = queue < queues_.size() ? queues_[queue].get() : nullptr;
  uint16_t sent_total = 0;
  uint16_t waiting = 0;
  uint64_t bytes = 0;
  uint64_t bad = 0;
  std::array<rte_mbuf*, kChunk> m;
  std::array<uint32_t, kChunk> len;
  int64_t now_ns = 0;  // read by the neighbour code when it first needs it
  for (uint16_t base = 0; base < n; base += kChunk) {
    const uint16_t count = std::min<uint16_t>(n - base, kChunk);
    uint16_t k = 0;
    for (uint16_t i = 0; i < count; i++) {
      transport::TxSlot& s = slots[base + i];
      auto* mb = static_cast<rte_mbuf*>(s.cookie);
      if (mb == nullptr) {  // not a buffer of ours: nothing to give back
        if (s.len != 0) bad++;
        continue;
      }
      if (s.len == 0) {  // returned unused
        rte_pktmbuf_free(mb);
        continue;
      }
      if (q == nullptr || s.buf != rte_pktmbuf_mtod(mb, uint8_t*) ||
          s.len > rte_pktmbuf_tailroom(mb)) {
        rte_pktmbuf_free(mb);
        bad++;
        continue;
      }
      if (!neigh_->OnTx(queue, {s.buf, s.len}, &now_ns)) {  // unresolved: counted there
        rte_pktmbuf_free(mb);
        continue;
      }
      mb->data_len = static_cast<uint16_t>(s.len);
      mb->pkt_len = s.len;
      if (offloads_.ipv4_cksum) SetChecksumOffload(mb);
      len[k] = s.len;
      m[k++] = mb;
    }
    uint16_t sent = 0;
    if (q != nullptr && k != 0) {
      // Frames waiting from an earlier burst go first; what the ring does not
      // take now waits behind them.
      if (q->backlog_count == 0 || FlushBacklog(queue, *q)) {
        sent = rte_eth_tx_burst(port_id_, queue, m.data(), k);
      }
      waiting += AddToBacklog(*q, m.data() + sent, k - sent);
    }
    for (uint16_t i = 0; i < sent; i++) bytes += len[i];
    sent_total += sent;
  }
  if (q == nullptr) {  // any thread may get this wrong: no queue's counters
    wrong_queue_tx_.fetch_add(bad, std::memory_order_relaxed);
    return 0;
  }
  if (sent_total != 0) {
    q->tx_packets.Add(sent_total);
    q->tx_bytes.Add(bytes);
  }
  if (bad != 0) q->tx_errors.Add(bad);
  return sent_total + waiting;  // the waiting ones go at the next burst call
}

port::PortStats DpdkPort::stats() const {
  port::PortStats s;
  s.tx_errors = wrong_queue_tx_.load(std::memory_order_relaxed);
  for (const auto& q : queues_) {
    s.rx_packets += q->rx_packets.Get();
    s.rx_bytes += q->rx_bytes.Get();
    s.rx_errors += q->rx_errors.Get();
    s.tx_packets += q->tx_packets.Get();
    s.tx_bytes += q->tx_bytes.Get();
    s.tx_errors += q->tx_errors.Get();
    s.tx_no_buffer += q->tx_no_buffer.Get();
  }
  return s;
}

absl::StatusOr<std::unique_ptr<port::Port>> OpenDpdkPort(const DpdkArgs& args) {
  absl::Status eal = InitEal(args.eal);
  if (!eal.ok()) return eal;
  absl::StatusOr<std::unique_ptr<DpdkPort>> p = DpdkPort::Open(args);
  if (!p.ok()) return p.status();
  return std::unique_ptr<port::Port>(std::move(*p));
}

}  // namespace metaroce::dpdk
