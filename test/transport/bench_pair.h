/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Two engines back to back in-process, and the engine-cost loop over them:
// figures 2 (bench_cost.cc) and 3 (bench_state.cc).

#ifndef METAROCE_TEST_TRANSPORT_BENCH_PAIR_H
#define METAROCE_TEST_TRANSPORT_BENCH_PAIR_H

#include <array>
#include <memory>

#include "bench_common.h"
#include "engine_peer.h"
#include "mr_config.h"
#include "mr_wire.h"

namespace metaroce::bench {

constexpr tr::TimeNs kStepNs = 100;  // synthetic clock advance per round

class Pair {
 public:
  static constexpr size_t kSlots = 32;
  static constexpr size_t kSlotBytes = 9216;

  explicit Pair(uint16_t paths) {
    tr::EngineConfig cfg;
    cfg.num_paths = paths;
    cfg.framing = tr::Framing::kEthernet;
    cfg.local_ip = wire::IpAddr::V4(10, 0, 0, 1);
    cfg.local_mac = wire::MacAddr{{2, 0, 0, 0, 0, 1}};
    cfg.seed = 11;
    addr_a_ = {cfg.local_ip, cfg.local_mac, cfg.udp_port};
    a_ = Must(tr::Engine::Create(cfg, &mem_), "Engine::Create");
    cfg.local_ip = wire::IpAddr::V4(10, 0, 0, 2);
    cfg.local_mac = wire::MacAddr{{2, 0, 0, 0, 0, 2}};
    cfg.seed = 12;
    addr_b_ = {cfg.local_ip, cfg.local_mac, cfg.udp_port};
    b_ = Must(tr::Engine::Create(cfg, &mem_), "Engine::Create");
    buf_a_.resize(kSlots * kSlotBytes);
    buf_b_.resize(kSlots * kSlotBytes);
    for (size_t i = 0; i < kSlots; i++) {
      sa_[i].buf = buf_a_.data() + i * kSlotBytes;
      sa_[i].cap = kSlotBytes;
      sb_[i].buf = buf_b_.data() + i * kSlotBytes;
      sb_[i].cap = kSlotBytes;
    }
    pd_a_ = Must(a_->AllocPd(), "AllocPd");
    pd_b_ = Must(b_->AllocPd(), "AllocPd");
    cq_a_ = Must(a_->CreateCq(1 << 16), "CreateCq");
    cq_b_ = Must(b_->CreateCq(1 << 16), "CreateCq");
  }

  tr::Engine& a() { return *a_; }
  tr::Engine& b() { return *b_; }
  uint32_t cq_a() const { return cq_a_; }
  uint32_t pd_a() const { return pd_a_; }
  tr::TimeNs now() const { return now_; }

  /** Creates a QP on each engine (not connected); returns A's. */
  uint32_t AddQpPair(uint32_t max_send_wr) {
    tr::QpAttr at;
    at.max_send_wr = max_send_wr;
    at.pd = pd_a_;
    at.send_cq = at.recv_cq = cq_a_;
    qa_.push_back(Must(a_->CreateQp(at), "CreateQp"));
    at.pd = pd_b_;
    at.send_cq = at.recv_cq = cq_b_;
    qb_.push_back(Must(b_->CreateQp(at), "CreateQp"));
    return qa_.back();
  }

  /** Connects every QP pair and runs until both sides are established. */
  void Connect() {
    for (size_t i = 0; i < qa_.size(); i++) {
      MustOk(a_->ConnectQp(qa_[i], addr_b_, qb_[i]), "ConnectQp");
      MustOk(b_->ConnectQp(qb_[i], addr_a_, qa_[i]), "ConnectQp");
    }
    for (int i = 0; i < 1000; i++) {
      Round();
      if (tr::EnginePeer::Established(*a_, addr_b_.ip) &&
          tr::EnginePeer::Established(*b_, addr_a_.ip)) {
        Round();  // let the CONN_ACCEPT's echo settle
        return;
      }
    }
    Die("back-to-back engines did not connect");
  }

  /** One round: A's packets to B, B's packets (ACKs) to A. */
  void Round() {
    now_ += kStepNs;
    const size_t n = a_->PollTx(now_, sa_);
    for (size_t i = 0; i < n; i++) b_->OnFrame(now_, {sa_[i].buf, sa_[i].len});
    const size_t m = b_->PollTx(now_, sb_);
    for (size_t i = 0; i < m; i++) a_->OnFrame(now_, {sb_[i].buf, sb_[i].len});
  }

  /**
   * Gives each engine @p n more connections of its paths, each with one QP,
   * to peers that then go silent: a host's idle connections. They stay quiet
   * for the measurement (the first keep-alive is due after
   * config::kKeepaliveNs of silence, far beyond a row's synthetic time).
   */
  void AddIdleConnections(uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
      for (int side = 0; side < 2; side++) {
        tr::Engine& e = side == 0 ? *a_ : *b_;
        const tr::PeerAddr& self = side == 0 ? addr_a_ : addr_b_;
        tr::EngineConfig cfg;
        cfg.num_paths = kNumPaths;
        cfg.framing = tr::Framing::kEthernet;
        cfg.local_ip =
            wire::IpAddr::V4(10, static_cast<uint8_t>(1 + side), static_cast<uint8_t>(i / 250),
                             static_cast<uint8_t>(1 + i % 250));
        cfg.local_mac = wire::MacAddr{{2, 1, 0, static_cast<uint8_t>(side),
                                       static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)}};
        cfg.seed = 1000 + 2 * i + side;
        const tr::PeerAddr peer_addr{cfg.local_ip, cfg.local_mac, cfg.udp_port};
        auto peer = Must(tr::Engine::Create(cfg, &mem_), "Engine::Create");
        tr::QpAttr at;
        at.pd = Must(peer->AllocPd(), "AllocPd");
        at.send_cq = at.recv_cq = Must(peer->CreateCq(64), "CreateCq");
        const uint32_t peer_qp = Must(peer->CreateQp(at), "CreateQp");
        at.pd = side == 0 ? pd_a_ : pd_b_;
        at.send_cq = at.recv_cq = side == 0 ? cq_a_ : cq_b_;
        const uint32_t own_qp = Must(e.CreateQp(at), "CreateQp");
        MustOk(e.ConnectQp(own_qp, peer_addr, peer_qp), "ConnectQp");
        MustOk(peer->ConnectQp(peer_qp, self, own_qp), "ConnectQp");
        bool up = false;
        for (int r = 0; r < 100 && !up; r++) {
          now_ += kStepNs;
          const size_t k = e.PollTx(now_, sa_);
          for (size_t j = 0; j < k; j++) peer->OnFrame(now_, {sa_[j].buf, sa_[j].len});
          const size_t m = peer->PollTx(now_, sb_);
          for (size_t j = 0; j < m; j++) e.OnFrame(now_, {sb_[j].buf, sb_[j].len});
          up = tr::EnginePeer::Established(e, peer_addr.ip) &&
               tr::EnginePeer::Established(*peer, self.ip);
        }
        if (!up) Die("an idle connection did not come up");
      }
    }
    // Past the handshakes' own timers (an RTO at most): idle from here on.
    now_ += 2 * config::kRtoInitialNs;
    Round();
  }

  const std::vector<uint32_t>& qa() const { return qa_; }
  const std::vector<uint32_t>& qb() const { return qb_; }
  const tr::PeerAddr& addr_b() const { return addr_b_; }
  const tr::PeerAddr& addr_a() const { return addr_a_; }

  tr::MrInfo RegA(const std::vector<uint8_t>& v) {
    return Must(a_->RegMr(pd_a_, Addr(v), v.size(), tr::access::kAll), "RegMr");
  }
  tr::MrInfo RegB(const std::vector<uint8_t>& v) {
    return Must(b_->RegMr(pd_b_, Addr(v), v.size(), tr::access::kAll), "RegMr");
  }

 private:
  tr::ProcessMemory mem_;  // before the engines: they use it until destroyed
  std::unique_ptr<tr::Engine> a_, b_;
  tr::PeerAddr addr_a_, addr_b_;
  uint32_t pd_a_ = 0, pd_b_ = 0, cq_a_ = 0, cq_b_ = 0;
  std::vector<uint32_t> qa_, qb_;
  std::vector<uint8_t> buf_a_, buf_b_;
  std::array<tr::TxSlot, kSlots> sa_{}, sb_{};
  tr::TimeNs now_ = 1'000'000;
};

/** Engine state that traffic grows (pools and rings are never shrunk). */
struct BusyState {
  size_t msg_slots = 0;     ///< A's connection: TxMsg pool size
  size_t msg_bytes = 0;     ///< its heap (capacity x sizeof(TxMsg) + chunk bitmaps)
  size_t window_slots = 0;  ///< B's largest per-QP receive window ring
  size_t window_bytes = 0;  ///< its heap
  size_t sq_bytes = 0;      ///< A's largest send queue deque (libstdc++ estimate)
};

struct CostRow {
  std::string name;
  uint32_t msg_bytes = 0;
  uint32_t payload = 0;  ///< bytes per data packet
  uint32_t qps = 0, depth = 0, signal_every = 0;
  uint32_t conns = 1;  ///< connections per engine: the busy one and conns - 1 idle ones
  uint32_t paths = 0;  ///< of each connection
  double seconds = 0, cpu_seconds = 0;
  uint64_t data_pkts = 0, acks = 0, frames = 0, retx = 0, msgs = 0;
  double pps = 0, ns_per_pkt = 0, acks_per_pkt = 0, payload_gbps = 0;
};

/**
 * One engine-cost row: @p qps QPs of @p depth outstanding WRITEs of
 * @p msg_bytes (one in @p signal_every signaled) on one connection, while each
 * engine holds @p conns - 1 idle ones, all of @p paths paths; for @p seconds
 * of CPU time (or --rounds rounds). With @p busy, what the traffic grew
 * (figure 3).
 */
CostRow RunCost(const char* name, uint32_t msg_bytes, uint32_t qps, uint32_t depth,
                uint32_t signal_every, double seconds, BusyState* busy = nullptr,
                uint32_t conns = 1, uint16_t paths = kNumPaths);

/** What the traffic of a RunCost row grew (bench_state.cc). */
void FillBusy(Pair& p, BusyState* busy);

}  // namespace metaroce::bench

#endif  // METAROCE_TEST_TRANSPORT_BENCH_PAIR_H
