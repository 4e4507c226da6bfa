/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The fault stage: a Port decorator that damages what the inner port receives.

#include <deque>
#include <vector>

#include "fault_private.h"
#include "mr_port_fault.h"

namespace metaroce::port {
namespace {

class FaultPort final : public Port {
 public:
  FaultPort(std::unique_ptr<Port> inner, const FaultSpec& spec);

  const PortInfo& info() const override { return inner_->info(); }
  uint16_t RxBurst(uint16_t queue, RxPacket* pkts, uint16_t n) override;
  uint16_t TxAlloc(uint16_t queue, transport::TxSlot* slots, uint16_t n) override {
    return inner_->TxAlloc(queue, slots, n);
  }
  uint16_t TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) override;
  PortStats stats() const override { return inner_->stats(); }
  // Rules act in the device, before the stage. DetachRx() is not forwarded: the
  // stage hands out its own copies, which the next RxBurst() recycles.
  absl::StatusOr<bool> SteerUdpDstPort(uint16_t udp_port, uint16_t queue) override {
    return inner_->SteerUdpDstPort(udp_port, queue);
  }
  // Packets the stage holds back or still has to hand out wake no descriptor.
  int RxEventFd(uint16_t queue) override {
    const Queue& q = queues_[queue];
    return q.ready.empty() && q.held.empty() ? inner_->RxEventFd(queue) : -1;
  }
  FaultStats fault_stats() const;

 private:
  // A packet copy the stage owns: received, held back or duplicated.
  struct Copy {
    std::vector<uint8_t> bytes;
    wire::FrameInfo addr;
  };
  struct Held {
    uint32_t copy;
    uint32_t left;  // later packets still to pass it
  };
  struct Queue {
    explicit Queue(uint64_t seed) : rng(seed) {}
    fault::Rng rng;
    FaultStats st;
    uint32_t burst_left = 0;
    uint32_t idle_polls = 0;
    std::vector<Copy> copies;
    std::vector<uint32_t> free;  // unused entries of copies
    std::deque<uint32_t> ready;  // to hand out, in order
    std::vector<Held> held;
    std::vector<uint32_t> lent;  // handed out by the last RxBurst
    std::vector<RxPacket> in;
  };

  // A free entry of q.copies (grows it when none is free).
  uint32_t Slot(Queue& q);
  uint32_t NewCopy(Queue& q, const RxPacket& p);
  uint32_t Duplicate(Queue& q, uint32_t c);
  void Process(Queue& q, const RxPacket& p);
  // Queues @p copy for delivery; @p passing: a new packet that held ones wait for.
  void Emit(Queue& q, uint32_t copy, bool passing);
  uint16_t Deliver(Queue& q, RxPacket* pkts, uint16_t n);

  std::unique_ptr<Port> inner_;
  FaultSpec spec_;
  transport::Framing framing_;
  std::vector<Queue> queues_;
};

FaultPort::FaultPort(std::unique_ptr<Port> inner, const FaultSpec& spec)
    : inner_(std::move(inner)), spec_(spec), framing_(inner_->info().framing) {
  const uint16_t nq = std::max<uint16_t>(inner_->info().num_queues, 1);
  queues_.reserve(nq);
  for (uint16_t i = 0; i < nq; i++) queues_.emplace_back(spec.seed * 0x9e3779b97f4a7c15ull + i);
}

uint32_t FaultPort::Slot(Queue& q) {
  if (!q.free.empty()) {
    const uint32_t i = q.free.back();
    q.free.pop_back();
    return i;
  }
  q.copies.emplace_back();
  return static_cast<uint32_t>(q.copies.size() - 1);
}

uint32_t FaultPort::NewCopy(Queue& q, const RxPacket& p) {
  const uint32_t i = Slot(q);
  q.copies[i].bytes.assign(p.data.begin(), p.data.end());  // capacity is reused
  q.copies[i].addr = p.addr;
  return i;
}

uint32_t FaultPort::Duplicate(Queue& q, uint32_t c) {
  const uint32_t i = Slot(q);  // may move q.copies: index after it
  q.copies[i].bytes.assign(q.copies[c].bytes.begin(), q.copies[c].bytes.end());
  q.copies[i].addr = q.copies[c].addr;
  return i;
}

void FaultPort::Emit(Queue& q, uint32_t copy, bool passing) {
  q.ready.push_back(copy);
  if (!passing) return;
  size_t keep = 0;
  for (Held& h : q.held) {
    if (--h.left == 0) {
      q.ready.push_back(h.copy);
    } else {
      q.held[keep++] = h;
    }
  }
  q.held.resize(keep);
}

void FaultPort::Process(Queue& q, const RxPacket& p) {
  FaultStats& st = q.st;
  st.rx_in++;
  uint16_t src_port = 0;
  const bool parsed = fault::SourcePort(framing_, p.data, p.addr, &src_port);
  if (!parsed) st.unparsed++;
  if (parsed && spec_.blackhole_port != 0 && src_port == spec_.blackhole_port) {
    st.blackholed_rx++;
    return;
  }
  if (q.burst_left > 0) {
    q.burst_left--;
    st.burst_dropped++;
    return;
  }
  if (q.rng.Chance(spec_.burst)) {
    st.bursts++;
    st.burst_dropped++;
    q.burst_left = spec_.burst_len - 1;
    return;
  }
  if (q.rng.Chance(spec_.drop)) {
    st.dropped++;
    return;
  }
  const uint32_t c = NewCopy(q, p);
  Copy& copy = q.copies[c];
  if (q.rng.Chance(spec_.corrupt) && fault::FlipBit(framing_, copy.bytes, q.rng)) st.corrupted++;
  if (q.rng.Chance(spec_.ecn) && fault::MarkCe(framing_, copy.bytes, &copy.addr)) st.ecn_marked++;
  const bool dup = q.rng.Chance(spec_.dup);
  if (q.rng.Chance(spec_.reorder)) {
    st.reordered++;
    q.held.push_back({c, spec_.reorder_depth});
  } else {
    Emit(q, c, /*passing=*/true);
  }
  if (dup) {
    st.duplicated++;
    Emit(q, Duplicate(q, c), /*passing=*/false);
  }
}

uint16_t FaultPort::Deliver(Queue& q, RxPacket* pkts, uint16_t n) {
  uint16_t out = 0;
  while (out < n && !q.ready.empty()) {
    const uint32_t c = q.ready.front();
    q.ready.pop_front();
    pkts[out].data = q.copies[c].bytes;
    pkts[out].addr = q.copies[c].addr;
    q.lent.push_back(c);
    out++;
  }
  q.st.rx_out += out;
  return out;
}

uint16_t FaultPort::RxBurst(uint16_t queue, RxPacket* pkts, uint16_t n) {
  if (queue >= queues_.size()) return inner_->RxBurst(queue, pkts, n);
  Queue& q = queues_[queue];
  for (uint32_t c : q.lent) q.free.push_back(c);
  q.lent.clear();
  uint16_t out = Deliver(q, pkts, n);
  if (out == n) return out;
  q.in.resize(n);
  const uint16_t m = inner_->RxBurst(queue, q.in.data(), n - out);
  for (uint16_t i = 0; i < m; i++) Process(q, q.in[i]);
  if (m > 0) {
    q.idle_polls = 0;
  } else if (!q.held.empty() && ++q.idle_polls >= kReorderIdlePolls) {
    // A quiet link: let held packets go rather than turn the reorder into a loss.
    for (const Held& h : q.held) q.ready.push_back(h.copy);
    q.st.reorder_idle_flushes += q.held.size();
    q.held.clear();
    q.idle_polls = 0;
  }
  return out + Deliver(q, pkts + out, n - out);
}

uint16_t FaultPort::TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) {
  uint16_t holed = 0;
  if (spec_.blackhole_port != 0) {
    for (uint16_t i = 0; i < n; i++) {
      transport::TxSlot& s = slots[i];
      uint16_t src_port = 0;
      if (s.len == 0 || !fault::SourcePort(framing_, {s.buf, s.len}, s.addr, &src_port) ||
          src_port != spec_.blackhole_port) {
        continue;
      }
      s.len = 0;  // the inner port takes the buffer back unsent
      holed++;
    }
    if (queue < queues_.size()) queues_[queue].st.blackholed_tx += holed;
  }
  return static_cast<uint16_t>(inner_->TxBurst(queue, slots, n) + holed);
}

FaultStats FaultPort::fault_stats() const {
  FaultStats t;
  for (const Queue& q : queues_) {
    const FaultStats& s = q.st;
    t.rx_in += s.rx_in;
    t.rx_out += s.rx_out;
    t.dropped += s.dropped;
    t.burst_dropped += s.burst_dropped;
    t.bursts += s.bursts;
    t.reordered += s.reordered;
    t.reorder_idle_flushes += s.reorder_idle_flushes;
    t.duplicated += s.duplicated;
    t.ecn_marked += s.ecn_marked;
    t.corrupted += s.corrupted;
    t.blackholed_rx += s.blackholed_rx;
    t.blackholed_tx += s.blackholed_tx;
    t.unparsed += s.unparsed;
  }
  return t;
}

}  // namespace

std::unique_ptr<Port> WithFaults(std::unique_ptr<Port> inner, const FaultSpec& spec) {
  return std::make_unique<FaultPort>(std::move(inner), spec);
}

absl::StatusOr<std::unique_ptr<Port>> WithFaults(std::unique_ptr<Port> inner,
                                                 const std::string& spec) {
  if (inner == nullptr) return absl::InvalidArgumentError("faults: no port to wrap");
  absl::StatusOr<FaultSpec> f = ParseFaultSpec(spec);
  if (!f.ok()) return f.status();
  return WithFaults(std::move(inner), *f);
}

std::optional<FaultStats> FaultStatsOf(const Port& port) {
  const auto* f = dynamic_cast<const FaultPort*>(&port);
  if (f == nullptr) return std::nullopt;
  return f->fault_stats();
}

}  // namespace metaroce::port
