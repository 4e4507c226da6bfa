/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The runtime over DPDK in one process (EAL without hugepages): two net_ring ethdevs of
// two queues each, cross-connected so that queue q of one transmits into queue q of the
// other. net_ring has no rte_flow, so each runtime steers in software: a packet for shard
// 1 that arrives on queue 0 is handed over through shard 1's rte_ring. A QP between
// every pair of shards carries verified WRITE and SEND traffic, with zero-copy hand-off
// (mbufs detached from the port) and, behind a fault stage, with copies.

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_lcore.h>
#pragma GCC diagnostic pop
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mr_runtime.h"
#include "ring_ports.h"
#include "traffic.h"

namespace metaroce::testing {
namespace {

using runtime::Runtime;
using runtime::RuntimeConfig;

// Four busy threads (two runtimes of two shards) share two vCPUs with other builds.
constexpr uint32_t kYieldAfterIdlePolls = 64;

RuntimeConfig RingConfig(const char* port, int host, uint16_t lcores, const std::string& faults) {
  RuntimeConfig cfg = RingRuntimeConfig(port, host, lcores, faults);
  cfg.yield_after_idle_polls = kYieldAfterIdlePolls;
  return cfg;
}

uint64_t Sum(const Runtime& rt, const port::StatCounter runtime::ShardStats::*c) {
  uint64_t t = 0;
  for (uint16_t i = 0; i < rt.num_shards(); i++) t += (rt.shard(i).stats().*c).Get();
  return t;
}

struct Case {
  const char* name;
  const char* faults_b;
};

class RingEal : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status s = EalAndRingPorts();
    ASSERT_TRUE(s.ok()) << s;
  }
};

class RingRuntimes : public RingEal, public ::testing::WithParamInterface<Case> {};

TEST_P(RingRuntimes, SoftwareHandOffCarriesEveryQp) {
  const std::string faults_b = GetParam().faults_b;
  auto a = Runtime::Open(RingConfig(kRingPortA, 1, kRingQueues, ""));
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Runtime::Open(RingConfig(kRingPortB, 2, kRingQueues,
                                    faults_b.empty() ? "" : absl::StrCat(faults_b, ",seed=5")));
  ASSERT_TRUE(b.ok()) << b.status();
  for (Runtime* rt : {a->get(), b->get()}) {
    EXPECT_EQ(rt->steering(), Runtime::Steering::kSoftware);  // net_ring has no rte_flow
    for (uint16_t i = 0; i < kRingQueues; i++) {
      EXPECT_EQ(rt->shard(i).udp_port(), 4800 + i);
      EXPECT_EQ(rt->shard(i).queue(), i);
    }
  }

  auto t = Traffic::Setup(**a, **b, Traffic::Options{});
  ASSERT_TRUE(t.ok()) << t.status();
  absl::Status s = (*t)->Run();
  EXPECT_TRUE(s.ok()) << s;
  const std::vector<std::string> problems = (*t)->Problems();
  for (const std::string& p : problems) ADD_FAILURE() << p;
  if (!problems.empty()) std::printf("%s", (*t)->Report().c_str());

  // Queue q of one side feeds queue q of the other, so the QPs between shard 0 and shard
  // 1 arrive on the wrong queue on both sides and are handed over.
  for (Runtime* rt : {a->get(), b->get()}) {
    const bool copied = rt == b->get() && !faults_b.empty();  // the fault stage's own buffers
    const uint64_t out = Sum(*rt, &runtime::ShardStats::handoffs_out);
    const uint64_t in = Sum(*rt, &runtime::ShardStats::handoffs_in);
    EXPECT_GT(in, 0u);
    EXPECT_LE(in, out);  // the rest still sat in a ring when Run() returned
    // handoff_drops is not checked: a shard the loaded machine does not run for a while
    // lets its descriptors run out while its peers retransmit; the transport recovers.
    const uint64_t drops = Sum(*rt, &runtime::ShardStats::handoff_drops);
    const uint64_t copies = Sum(*rt, &runtime::ShardStats::handoff_copies);
    if (copied) {
      EXPECT_EQ(copies, out);
    } else {
      EXPECT_EQ(copies, 0u);  // mbufs detached from the port, not copied
    }
    for (uint16_t i = 0; i < kRingQueues; i++) {
      EXPECT_GT(rt->shard(i).stats().handoffs_in.Get(), 0u) << "shard " << i;
    }
    std::printf("%s: rx %llu tx %llu, handed over %llu (%llu copied, %llu dropped)\n",
                rt == a->get() ? "A" : "B",
                static_cast<unsigned long long>(Sum(*rt, &runtime::ShardStats::rx_packets)),
                static_cast<unsigned long long>(Sum(*rt, &runtime::ShardStats::tx_packets)),
                static_cast<unsigned long long>(out), static_cast<unsigned long long>(copies),
                static_cast<unsigned long long>(drops));
  }
  uint64_t parse_drops = 0;
  for (uint16_t i = 0; i < kRingQueues; i++) {
    for (uint64_t d : (*a)->shard(i).engine().stats().rx_parse_drops) parse_drops += d;
  }
  EXPECT_EQ(parse_drops, 0u);  // every frame reached the shard whose port it was sent to
  std::printf("%zu QPs, %.1f MB in %.1f ms\n", (*t)->num_qps(), (*t)->bytes() / 1e6,
              (*t)->seconds() * 1e3);
}

INSTANTIATE_TEST_SUITE_P(NetRing, RingRuntimes,
                         ::testing::Values(Case{"Clean", ""}, Case{"Drop1PercentOnB", "drop=0.01"}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(RingEal, TheClockIsTheTscInNanoseconds) {
  auto a = Runtime::Open(RingConfig(kRingPortA, 1, 1, ""));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->steering(), Runtime::Steering::kSinglePort);
  auto mono = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  };
  const int64_t m0 = mono();
  const int64_t t0 = static_cast<int64_t>((*a)->shard(0).Now());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int64_t m1 = mono();
  const int64_t t1 = static_cast<int64_t>((*a)->shard(0).Now());
  EXPECT_LT(std::abs(t0 - m0), 5'000'000);  // based on CLOCK_MONOTONIC at Open()
  // 200 ms on both clocks within 1 % (EAL's measure of the TSC rate).
  EXPECT_NEAR(static_cast<double>(t1 - t0), static_cast<double>(m1 - m0), 0.01 * (m1 - m0));
}

TEST_F(RingEal, ShardThreadsAreRegisteredLcores) {
  auto a = Runtime::Open(RingConfig(kRingPortA, 1, kRingQueues, ""));
  ASSERT_TRUE(a.ok()) << a.status();
  for (int run = 0; run < 2; run++) {  // unregistered at the end of a Run(), registered again
    std::vector<unsigned> ids(kRingQueues, LCORE_ID_ANY);
    absl::Status s = (*a)->Run([&](runtime::Shard& sh) {
      ids[sh.index()] = rte_lcore_id();
      return false;
    });
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_NE(ids[0], LCORE_ID_ANY);  // so the mbuf pool's per-lcore caches serve them
    EXPECT_NE(ids[1], LCORE_ID_ANY);
    EXPECT_NE(ids[0], ids[1]);
    EXPECT_NE(ids[0], rte_get_main_lcore());
  }
}

}  // namespace
}  // namespace metaroce::testing
