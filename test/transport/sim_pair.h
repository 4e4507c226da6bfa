/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Two engines on the simulated fabric with one QP each, connected, and memory
// registered with chosen access: the fixture of the end-to-end rule and
// hardening tests. A side can be restarted (a new engine on the same host with
// the identical configuration, as a restarted process), given more QPs, or
// left unconnected until the test connects it.

#ifndef METAROCE_TEST_TRANSPORT_SIM_PAIR_H
#define METAROCE_TEST_TRANSPORT_SIM_PAIR_H

#include <algorithm>
#include <deque>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "mr_sim_engine_node.h"

namespace metaroce::testing {

class Pair {
 public:
  struct Options {
    bool leaf_spine = false;  ///< 2 leaves x `spines`, one host per leaf (else back to back)
    uint32_t spines = 4;
    /** > 1: that many leaf-spine planes; side i's engine has a port on planes_of[i] of them. */
    uint32_t planes = 1;
    uint32_t planes_of[2] = {0, 0};  ///< 0: all of them
    transport::EngineConfig cfg;
    size_t mem_bytes = 4 << 20;
    uint32_t access = transport::access::kAll;  ///< of side 1's region (side 0: everything)
    transport::QpAttr qp;
    uint64_t seed = 1;      ///< the fabric's; engine i gets seed * 10 + i
    bool connect_b = true;  ///< false: side 1's QP stays unconnected (Connect() it later)
  };

  explicit Pair(Options o) : opt_(o), fabric_(o.seed) {
    std::vector<sim::Host*> hosts[2];
    if (o.leaf_spine || o.planes > 1) {
      sim::LeafSpineConfig ls;
      ls.planes = o.planes;
      ls.leaves = 2;
      ls.spines = o.spines;
      ls.hosts_per_leaf = 1;
      auto t = sim::BuildLeafSpine(fabric_, ls);
      topo_ = *t;
      for (int i = 0; i < 2; i++) {
        const uint32_t n = o.planes_of[i] != 0 ? o.planes_of[i] : o.planes;
        for (uint32_t p = 0; p < n; p++) hosts[i].push_back(topo_.host(i, 0, p));
      }
    } else {
      topo_ = *sim::BuildBackToBack(fabric_, sim::BackToBackConfig{});
      hosts[0] = {topo_.hosts[0]};
      hosts[1] = {topo_.hosts[1]};
    }
    for (int i = 0; i < 2; i++) {
      side_[i].hosts = hosts[i];
      side_[i].host = hosts[i][0];
      side_[i].cfg = o.cfg;
      side_[i].cfg.seed = o.seed * 10 + i;
      Start(i);
    }
    EXPECT_TRUE(E(0).ConnectQp(side_[0].qpn, side_[1].node->Addr(), side_[1].qpn).ok());
    if (o.connect_b) {
      EXPECT_TRUE(E(1).ConnectQp(side_[1].qpn, side_[0].node->Addr(), side_[0].qpn).ok());
    }
  }

  transport::Engine& E(int i) { return side_[i].node->engine(); }
  uint64_t Base(int i) { return reinterpret_cast<uint64_t>(side_[i].mem.data()); }
  std::vector<uint8_t>& Mem(int i) { return side_[i].mem; }
  transport::MrInfo& Mr(int i) { return side_[i].mr; }
  uint32_t Qpn(int i) { return side_[i].qpn; }
  uint32_t Pd(int i) { return side_[i].pd; }
  uint32_t Cq(int i) { return side_[i].cq; }
  sim::Fabric& fabric() { return fabric_; }
  sim::Topology& topo() { return topo_; }
  sim::EngineNode& node(int i) { return *side_[i].node; }
  sim::Host* host(int i) { return side_[i].host; }

  absl::Status Post(int i, const transport::SendWr& wr) { return PostOn(i, side_[i].qpn, wr); }
  absl::Status PostOn(int i, uint32_t qpn, const transport::SendWr& wr) {
    auto st = E(i).PostSend(side_[i].node->NowNs(), qpn, wr);
    side_[i].node->Kick();
    return st;
  }

  /** A work request of side 0 into side 1's region. */
  transport::SendWr Wr(transport::Opcode op, uint64_t local_off, uint32_t len, uint64_t remote_off,
                       uint64_t id = 1) {
    return WrFrom(0, op, local_off, len, remote_off, id);
  }
  /** A work request of side @p from into the other side's region. */
  transport::SendWr WrFrom(int from, transport::Opcode op, uint64_t local_off, uint32_t len,
                           uint64_t remote_off, uint64_t id = 1) {
    const int to = 1 - from;
    transport::SendWr wr;
    wr.wr_id = id;
    wr.opcode = op;
    if (len != 0) wr.sg.push_back({Base(from) + local_off, len, Mr(from).lkey});
    wr.remote_addr = Base(to) + remote_off;
    wr.rkey = Mr(to).rkey;
    return wr;
  }

  /** Drains side @p i's CQ; returns what it held (also kept for Wait()). */
  std::vector<transport::Completion> Poll(int i) {
    std::vector<transport::Completion> out;
    transport::Completion c[64];
    size_t n;
    while ((n = E(i).PollCq(side_[i].cq, c)) > 0) out.insert(out.end(), c, c + n);
    got_[i].insert(got_[i].end(), out.begin(), out.end());
    return out;
  }

  /** Runs until side @p i has @p want completions or @p limit_ps of simulated time passed. */
  std::vector<transport::Completion> Wait(int i, size_t want,
                                          sim::SimTime limit_ps = 50 * sim::kPsPerMs) {
    const sim::SimTime end = fabric_.Now() + limit_ps;
    while (got_[i].size() < want && fabric_.Now() < end) {
      fabric_.RunUntil(std::min(end, fabric_.Now() + 5 * sim::kPsPerUs));
      Poll(i);
    }
    return got_[i];
  }

  /** Another QP on side @p i (same PD, CQ and attributes), not connected. */
  uint32_t AddQp(int i) {
    transport::QpAttr qa = opt_.qp;
    qa.pd = side_[i].pd;
    qa.send_cq = qa.recv_cq = side_[i].cq;
    auto q = E(i).CreateQp(qa);
    EXPECT_TRUE(q.ok()) << q.status();
    return q.ok() ? *q : 0;
  }
  /** Connects side @p i's QP @p qpn to the other side's QP @p remote_qpn. */
  absl::Status Connect(int i, uint32_t qpn, uint32_t remote_qpn) {
    auto st = E(i).ConnectQp(qpn, side_[1 - i].node->Addr(), remote_qpn);
    side_[i].node->Kick();
    return st;
  }

  /**
   * The engine of side @p i dies: its host stops answering and the engine is
   * destroyed. Its memory stays readable as OldMem(i) (what the old
   * incarnation's peers wrote there).
   */
  void Kill(int i) {
    Side& s = side_[i];
    for (sim::Host* h : s.hosts) h->Attach(nullptr);
    s.node.reset();
    s.retired.push_back(std::move(s.mem));
    s.mem.clear();
    got_[i].clear();
  }
  /**
   * A new engine on side @p i's host with the identical EngineConfig (a
   * restarted process), set up as the first one was: PD, CQ, one QP (not
   * connected) and a fresh zeroed region.
   */
  void Restart(int i) {
    if (side_[i].node) Kill(i);
    Start(i);
  }
  /** The region of side @p i's previous incarnation. */
  std::vector<uint8_t>& OldMem(int i) { return side_[i].retired.back(); }

 private:
  struct Side {
    sim::Host* host = nullptr;      ///< plane 0
    std::vector<sim::Host*> hosts;  ///< a port per plane
    transport::EngineConfig cfg;
    std::unique_ptr<sim::EngineNode> node;
    uint32_t pd = 0, cq = 0, qpn = 0;
    std::vector<uint8_t> mem;
    std::deque<std::vector<uint8_t>> retired;  ///< regions of earlier incarnations
    transport::MrInfo mr;
  };

  void Start(int i) {
    Side& s = side_[i];
    s.node = std::make_unique<sim::EngineNode>(s.hosts, s.cfg);
    transport::Engine& e = s.node->engine();
    s.pd = *e.AllocPd();
    s.cq = *e.CreateCq(1 << 16);
    transport::QpAttr qa = opt_.qp;
    qa.pd = s.pd;
    qa.send_cq = qa.recv_cq = s.cq;
    s.qpn = *e.CreateQp(qa);
    s.mem.assign(opt_.mem_bytes, 0);
    s.mr = *e.RegMr(s.pd, Base(i), s.mem.size(), i == 1 ? opt_.access : transport::access::kAll);
    got_[i].clear();
  }

  Options opt_;
  sim::Fabric fabric_;
  sim::Topology topo_;
  Side side_[2];
  std::vector<transport::Completion> got_[2];
};

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_TRANSPORT_SIM_PAIR_H
