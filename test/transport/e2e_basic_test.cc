/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Two engines over the simulated fabric: each operation, byte for byte.

#include <numeric>
#include <random>

#include "gtest/gtest.h"
#include "mr_sim_engine_node.h"

namespace metaroce::testing {
namespace {

using namespace transport;

struct Side {
  std::unique_ptr<sim::EngineNode> node;
  uint32_t pd = 0, cq = 0, qpn = 0;
  std::vector<uint8_t> mem;
  MrInfo mr;
};

class TwoHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    auto topo = sim::BuildBackToBack(fabric_, sim::BackToBackConfig{});
    ASSERT_TRUE(topo.ok()) << topo.status();
    EngineConfig cfg;
    cfg.seed = 1;
    a_.node = std::make_unique<sim::EngineNode>(topo->hosts[0], cfg);
    cfg.seed = 2;
    b_.node = std::make_unique<sim::EngineNode>(topo->hosts[1], cfg);
    for (Side* s : {&a_, &b_}) {
      Engine& e = s->node->engine();
      s->pd = *e.AllocPd();
      s->cq = *e.CreateCq(4096);
      QpAttr qa;
      qa.pd = s->pd;
      qa.send_cq = qa.recv_cq = s->cq;
      s->qpn = *e.CreateQp(qa);
      s->mem.resize(8 << 20);
      auto mr =
          e.RegMr(s->pd, reinterpret_cast<uint64_t>(s->mem.data()), s->mem.size(), access::kAll);
      ASSERT_TRUE(mr.ok());
      s->mr = *mr;
    }
    ASSERT_TRUE(a_.node->engine().ConnectQp(a_.qpn, b_.node->Addr(), b_.qpn).ok());
    ASSERT_TRUE(b_.node->engine().ConnectQp(b_.qpn, a_.node->Addr(), a_.qpn).ok());
  }

  std::vector<Completion> RunUntilCompletions(Side& s, size_t want, sim::SimTime limit_ps) {
    std::vector<Completion> got;
    const sim::SimTime end = fabric_.Now() + limit_ps;
    while (got.size() < want && fabric_.Now() < end) {
      fabric_.RunUntil(fabric_.Now() + 10 * sim::kPsPerUs);
      Completion c[64];
      size_t n;
      while ((n = s.node->engine().PollCq(s.cq, c)) > 0) got.insert(got.end(), c, c + n);
    }
    return got;
  }

  uint64_t Addr(Side& s, size_t off) { return reinterpret_cast<uint64_t>(s.mem.data()) + off; }

  sim::Fabric fabric_{42};
  Side a_, b_;
};

TEST_F(TwoHosts, WriteOneMegabyte) {
  std::iota(a_.mem.begin(), a_.mem.begin() + (1 << 20), 0);
  SendWr wr;
  wr.wr_id = 7;
  wr.opcode = Opcode::kWrite;
  wr.sg.push_back({Addr(a_, 0), 1u << 20, a_.mr.lkey});
  wr.remote_addr = Addr(b_, 4096);
  wr.rkey = b_.mr.rkey;
  ASSERT_TRUE(a_.node->engine().PostSend(a_.node->NowNs(), a_.qpn, wr).ok());
  a_.node->Kick();
  auto done = RunUntilCompletions(a_, 1, 10 * sim::kPsPerMs);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess) << WcStatusName(done[0].status);
  EXPECT_EQ(done[0].wr_id, 7u);
  EXPECT_TRUE(std::equal(a_.mem.begin(), a_.mem.begin() + (1 << 20), b_.mem.begin() + 4096));
}

}  // namespace
}  // namespace metaroce::testing
