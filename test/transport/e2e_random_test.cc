/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Random mixes of every operation between engines over the simulated fabric,
// under loss, reordering, duplication, corruption and a blackholed link,
// checked byte for byte and rule by rule (workload.h).

#include "gtest/gtest.h"
#include "workload.h"

namespace metaroce::testing {
namespace {

using namespace transport;

struct Scenario {
  const char* name;
  sim::FaultConfig faults;
  bool leaf_spine = true;
  uint32_t hosts = 2;
};

sim::FaultConfig Loss(double p) {
  sim::FaultConfig f;
  f.loss_probability = p;
  return f;
}

WorkloadResult RunScenario(const Scenario& sc, uint64_t seed, WorkloadConfig wc,
                           sim::SimTime limit_ps = 2 * sim::kPsPerSec) {
  sim::Fabric fabric(seed);
  std::vector<sim::Host*> hosts;
  if (sc.leaf_spine) {
    sim::LeafSpineConfig ls;
    ls.leaves = 2;
    ls.spines = 4;
    ls.hosts_per_leaf = (sc.hosts + 1) / 2;
    ls.host_link.rate_bps = 100 * sim::kBpsPerGbps;
    ls.fabric_link.rate_bps = 100 * sim::kBpsPerGbps;
    auto t = sim::BuildLeafSpine(fabric, ls);
    if (!t.ok()) return WorkloadResult{false, std::string(t.status().message())};
    // Alternate leaves so traffic crosses the spines.
    for (uint32_t i = 0; i < sc.hosts; i++) hosts.push_back(t->host(i % 2, i / 2));
  } else {
    auto t = sim::BuildBackToBack(fabric, sim::BackToBackConfig{});
    if (!t.ok()) return WorkloadResult{false, std::string(t.status().message())};
    hosts = t->hosts;
  }
  if (auto st = fabric.SetAllLinkFaults(sc.faults); !st.ok()) {
    return WorkloadResult{false, std::string(st.message())};
  }
  std::vector<std::unique_ptr<sim::EngineNode>> nodes;
  std::vector<sim::EngineNode*> raw;
  for (size_t i = 0; i < hosts.size(); i++) {
    EngineConfig cfg;
    cfg.seed = seed * 1000 + i;
    nodes.push_back(std::make_unique<sim::EngineNode>(hosts[i], cfg));
    raw.push_back(nodes.back().get());
  }
  wc.seed = seed;
  Workload w(&fabric, raw, wc);
  return w.Run(limit_ps);
}

class Faults : public ::testing::TestWithParam<Scenario> {};

TEST_P(Faults, RandomMixIsDeliveredExactly) {
  WorkloadConfig wc;
  wc.ops_per_qp = 60;
  wc.big_msg_bytes = 1 << 20;
  for (uint64_t seed : {1, 2, 3}) {
    const WorkloadResult r = RunScenario(GetParam(), seed, wc);
    ASSERT_TRUE(r.error.empty()) << GetParam().name << " seed " << seed << ": " << r.error;
    ASSERT_TRUE(r.finished);
    EXPECT_EQ(r.ops_completed, 2u * wc.qps_per_pair * wc.ops_per_qp);
  }
}

Scenario Named(const char* name, sim::FaultConfig f) { return Scenario{name, f}; }

sim::FaultConfig Reorder() {
  sim::FaultConfig f;
  f.reorder_probability = 0.2;
  f.reorder_max_delay_ps = 20 * sim::kPsPerUs;
  return f;
}
sim::FaultConfig Duplicate() {
  sim::FaultConfig f;
  f.duplicate_probability = 0.05;
  return f;
}
sim::FaultConfig Corrupt() {
  sim::FaultConfig f;
  f.corrupt_probability = 0.02;
  return f;
}
sim::FaultConfig Everything() {
  sim::FaultConfig f = Reorder();
  f.loss_probability = 0.01;
  f.duplicate_probability = 0.02;
  f.corrupt_probability = 0.01;
  return f;
}

INSTANTIATE_TEST_SUITE_P(Sim, Faults,
                         ::testing::Values(Named("lossless", {}), Named("loss_0_1", Loss(0.001)),
                                           Named("loss_1", Loss(0.01)), Named("loss_5", Loss(0.05)),
                                           Named("loss_10", Loss(0.10)),
                                           Named("reorder", Reorder()),
                                           Named("duplicate", Duplicate()),
                                           Named("corrupt", Corrupt()),
                                           Named("everything", Everything())),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Topologies, BackToBackAndFourHosts) {
  WorkloadConfig wc;
  wc.ops_per_qp = 40;
  Scenario b2b{"b2b", Loss(0.01), false, 2};
  WorkloadResult r = RunScenario(b2b, 7, wc);
  ASSERT_TRUE(r.error.empty()) << r.error;
  Scenario four{"four", Loss(0.01), true, 4};
  r = RunScenario(four, 8, wc);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.ops_completed, 4u * 3 * wc.qps_per_pair * wc.ops_per_qp);
}

}  // namespace
}  // namespace metaroce::testing
