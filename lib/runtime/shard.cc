/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// One shard's iteration: rx burst -> hand other shards' packets to their rings ->
// drain its own ring -> engine -> timers and tx burst. Everything here runs on the
// shard's own thread; the only shared state is the rte_rings.

#include <algorithm>
#include <cstring>

#include "runtime_private.h"

namespace metaroce::runtime {
namespace {}  // namespace

Shard::Shard() : st_(std::make_unique<ShardState>()) {}

Shard::~Shard() = default;

transport::PeerAddr Shard::address() const {
  const port::PortInfo& info = port_->info();
  return transport::PeerAddr{info.ip, info.mac, udp_port_};
}

size_t Shard::Poll() {
  size_t work = PollRx();
  ShareCapacity();
  work += PollTx();
  PublishIfDue();
  stats_.iterations.Add(1);
  if (work == 0) stats_.idle_polls.Add(1);
  return work;
}

void Shard::HandToShard(uint16_t to, const transport::TxSlot& t, const wire::FrameInfo& rx) {
  ShardState& st = *st_;
  void* d = nullptr;
  if (st.free->Dequeue(&d, 1) != 1) {
    stats_.handoff_drops.Add(1);  // every descriptor is in flight: the transport recovers it
    return;
  }
  auto* h = static_cast<Handoff*>(d);
  h->copy.assign(t.buf, t.buf + t.len);  // the transmit buffer goes back to the port
  h->data = h->copy;
  h->handle = nullptr;
  h->addr = rx;
  h->port = port_;
  if (rt_->shards_[to]->st_->inbound->Enqueue(&d, 1) != 1) {
    st.free->Enqueue(&d, 1);
    stats_.handoff_drops.Add(1);
    return;
  }
  stats_.handoffs_out.Add(1);
  stats_.handoff_copies.Add(1);
}

void Shard::ShareCapacity() {
  const uint16_t n = rt_->num_shards();
  if (capacity_mbps_ == 0 || n == 1) return;
  const ShardDemand mine = engine_->GetShareDemand();
  Runtime::ShareCount& own = rt_->share_counts_[index_];
  own.wanting.store(mine.wanting, std::memory_order_relaxed);
  own.limited.store(mine.limited, std::memory_order_relaxed);
  own.limited_mbps.store(mine.limited_mbps, std::memory_order_relaxed);
  ShardDemand all;
  for (uint16_t i = 0; i < n; i++) {
    const Runtime::ShareCount& s = rt_->share_counts_[i];
    all.wanting += s.wanting.load(std::memory_order_relaxed);
    all.limited += s.limited.load(std::memory_order_relaxed);
    all.limited_mbps += s.limited_mbps.load(std::memory_order_relaxed);
  }
  const uint64_t part = ShardCapacityMbps(rt_->cfg_.engine.rx_capacity_mbps, mine, all, n);
  if (part != capacity_mbps_ && engine_->SetRxCapacity(part)) capacity_mbps_ = part;
}

void Shard::PublishIfDue() {
  if (telemetry::Publisher* pub = st_->publisher.get(); pub != nullptr) {
    const transport::TimeNs now = Now();
    if (pub->Due(now)) pub->Publish(now, *engine_);
  }
}

void Shard::Deliver(transport::TimeNs now, std::span<const uint8_t> data,
                    const wire::FrameInfo& addr) {
  if (port_->info().framing == transport::Framing::kEthernet) {
    engine_->OnFrame(now, data);
  } else {
    engine_->OnDatagram(now, addr, data);
  }
}

int Shard::RxEventFd() {
  // One descriptor cannot stand for several planes' ports: such a shard is polled.
  return rt_->steer_in_software_ || ports_.size() > 1 ? -1 : port_->RxEventFd(queue_);
}

size_t Shard::PollRx() {
  size_t work = 0;
  for (int b = port::RxBurstsFor(&st_->tx_step, Now()); b > 0; b--) {
    const size_t n = PollRxBurst();
    work += n;
    if (n < kBurst) break;
  }
  return work;
}

size_t Shard::PollRxBurst() {
  size_t n = 0;
  for (port::Port* p : ports_) n += ReceiveBurst(p);
  return rt_->steer_in_software_ ? n + TakeHandoffs() : n;
}

size_t Shard::ReceiveBurst(port::Port* port) {
  ShardState& st = *st_;
  const uint16_t n = port->RxBurst(queue_, st.rx.data(), kBurst);
  const transport::TimeNs now = Now();
  const transport::Framing framing = port_->info().framing;
  const bool steer = rt_->steer_in_software_;
  const uint16_t num_shards = rt_->num_shards();
  const uint16_t base = rt_->base_udp_port_;

  uint64_t drops = 0;
  uint64_t copies = 0;
  for (uint16_t i = 0; i < n; i++) {
    const port::RxPacket& p = st.rx[i];
    const int to = steer ? ShardOf(framing, p, base, num_shards) : -1;
    if (to < 0 || to == index_) {
      Deliver(now, p.data, p.addr);
      continue;
    }
    // Another shard's packet: a descriptor of ours carries it there, with the
    // port's buffer when the port lets go of it, else with a copy.
    void* d = nullptr;
    if (st.free->Dequeue(&d, 1) != 1) {
      drops++;  // every descriptor is in flight: the transport recovers the loss
      continue;
    }
    auto* h = static_cast<Handoff*>(d);
    h->handle = port->DetachRx(queue_, i);
    if (h->handle != nullptr) {
      h->data = p.data;
    } else {
      h->copy.assign(p.data.begin(), p.data.end());  // capacity is reused after warm-up
      h->data = h->copy;
      copies++;
    }
    h->addr = p.addr;
    h->port = port;
    st.out[to][st.num_out[to]++] = h;
  }
  if (n != 0) stats_.rx_packets.Add(n);
  if (!steer) return n;

  // Pass the staged packets on; what a full ring refuses is dropped.
  uint64_t sent = 0;
  for (uint16_t to = 0; to < num_shards; to++) {
    const uint16_t k = st.num_out[to];
    if (k == 0) continue;
    st.num_out[to] = 0;
    Handoff** staged = st.out[to].data();
    const unsigned took =
        rt_->shards_[to]->st_->inbound->Enqueue(reinterpret_cast<void* const*>(staged), k);
    sent += took;
    for (unsigned j = took; j < k; j++) {
      Handoff* h = staged[j];
      if (h->handle != nullptr) port->ReleaseRx(h->handle);
      h->handle = nullptr;
      void* back = h;
      st.free->Enqueue(&back, 1);
      drops++;
    }
  }
  if (sent != 0) stats_.handoffs_out.Add(sent);
  if (copies != 0) stats_.handoff_copies.Add(copies);
  if (drops != 0) stats_.handoff_drops.Add(drops);
  return n;
}

size_t Shard::TakeHandoffs() {
  // Packets other shards passed to this one; descriptors go back to their owners.
  ShardState& st = *st_;
  const transport::TimeNs now = Now();
  const uint16_t num_shards = rt_->num_shards();
  std::array<void*, kBurst> in;
  const unsigned m = st.inbound->Dequeue(in.data(), kBurst);
  if (m == 0) return 0;
  std::array<std::array<void*, kBurst>, kMaxShards> back;
  std::array<uint16_t, kMaxShards> num_back{};
  for (unsigned j = 0; j < m; j++) {
    auto* h = static_cast<Handoff*>(in[j]);
    Deliver(now, h->data, h->addr);
    if (h->handle != nullptr) h->port->ReleaseRx(h->handle);
    h->handle = nullptr;
    back[h->owner][num_back[h->owner]++] = h;
  }
  for (uint16_t o = 0; o < num_shards; o++) {
    // Never short: a free ring holds every descriptor of its owner.
    if (num_back[o] != 0) rt_->shards_[o]->st_->free->Enqueue(back[o].data(), num_back[o]);
  }
  stats_.handoffs_in.Add(m);
  return m;
}

namespace {

// The shard of this runtime that @p s goes to (its address @p ip, UDP port
// @p base + shard), or -1: two QPs of one host connected to each other.
// Ethernet frames are untagged IPv4/IPv6 as the engine builds them; anything
// else is not ours.
int LocalShard(const transport::TxSlot& s, transport::Framing framing, const wire::IpAddr& ip,
               uint16_t base, uint16_t num_shards) {
  uint16_t port = 0;
  if (framing == transport::Framing::kUdp) {
    if (!(s.addr.dst == ip)) return -1;
    port = s.addr.dst_port;
  } else {
    const uint8_t* f = s.buf;
    const bool v6 = ip.v6;
    const size_t l3 = wire::kEthHeaderBytes;
    const size_t l4 = l3 + (v6 ? wire::kIpv6HeaderBytes : wire::kIpv4HeaderBytes);
    if (s.len < l4 + wire::kUdpHeaderBytes) return -1;
    const uint16_t type = static_cast<uint16_t>(f[12] << 8 | f[13]);
    if (type != (v6 ? 0x86dd : 0x0800)) return -1;
    const size_t dst_at = l3 + (v6 ? 24 : 16);
    if (std::memcmp(f + dst_at, ip.bytes.data(), v6 ? 16 : 4) != 0) return -1;
    port = static_cast<uint16_t>(f[l4 + 2] << 8 | f[l4 + 3]);
  }
  const uint16_t shard = static_cast<uint16_t>(port - base);
  return shard < num_shards ? shard : -1;
}

}  // namespace

size_t Shard::PollTx() {
  const transport::TimeNs now = Now();
  ShardState& st = *st_;
  // Packets to this host's own shards never go out: a port does not return
  // them (a NIC, af_packet) or only through the kernel's deferred softirq (UDP
  // loopback, milliseconds on a busy host). This shard's go straight back into
  // its engine, another shard's through its hand-off ring where shards share a
  // port (one port per shard: the kernel's).
  //
  // What a packet given back calls for (its ACK, a READ's response) leaves
  // and comes back in this poll too, a few rounds deep: left for the next
  // poll, it waited behind everything else the shard does (an application's
  // doorbells and completions, or a preemption) while the engine's timers
  // ran first and took that ACK, inside this very engine, for a lost packet.
  // One metaroced with two perftest programs on it: 253,000 tail-loss probes
  // and 35,000 timeouts in 3 s of ib_write_bw, 6 % of the data sent again.
  const transport::Framing framing = port_->info().framing;
  const uint16_t base = static_cast<uint16_t>(udp_port_ - index_);
  size_t sent = 0;
  for (uint32_t round = 0; round < kMaxLoopbackRounds; round++) {
    uint32_t looped = 0;
    sent += port::TxStep(ports_, queue_, *engine_, st.pacer, now, st.tx, &st.tx_step,
                         [&](transport::TxSlot& t) {
                           // This host on the packet's plane: the address of our port on it.
                           const wire::IpAddr& self = ports_[t.plane]->info().ip;
                           const int to = LocalShard(t, framing, self, base, rt_->num_shards());
                           if (to < 0 || (to != index_ && !rt_->steer_in_software_)) return;
                           wire::FrameInfo rx = t.addr;
                           rx.src = self;
                           if (to != index_) {
                             HandToShard(static_cast<uint16_t>(to), t, rx);
                           } else {
                             Deliver(now, {t.buf, t.len}, rx);
                             stats_.looped_back.Add(1);
                             looped++;
                           }
                           t.len = 0;  // not sent
                         });
    if (looped == 0) break;
  }
  if (sent != 0) stats_.tx_packets.Add(sent);
  return sent;
}

}  // namespace metaroce::runtime
