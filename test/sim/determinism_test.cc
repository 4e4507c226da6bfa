/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Same seed and inputs give the same trace hash (and the same deliveries);
// another seed gives another. Run under loss, reordering, duplication and
// corruption, with queues building up, so every random stream is exercised.

#include <vector>

#include "gtest/gtest.h"
#include "mr_sim.h"
#include "sim_test_util.h"
#include "sim_workload.h"

namespace metaroce::sim {
namespace {

using testing::Must;
using testing::StartWorkload;
using testing::WorkloadConfig;

struct Outcome {
  uint64_t trace_hash = 0;
  uint64_t trace_records = 0;
  std::vector<uint64_t> digests;
  uint64_t sent = 0, received = 0;
  uint64_t lost = 0, dups = 0, reordered = 0, corrupted = 0, marked = 0, queue_drops = 0;
};

Outcome RunFabric(uint64_t seed, uint32_t leaves, uint32_t spines, uint32_t hosts_per_leaf,
                  SimTime duration) {
  Fabric fabric(seed);
  LeafSpineConfig c;
  c.leaves = leaves;
  c.spines = spines;
  c.hosts_per_leaf = hosts_per_leaf;
  c.host_link.rate_bps = 100 * kBpsPerGbps;
  c.fabric_link.rate_bps = 100 * kBpsPerGbps;
  c.port_buffer_bytes = 64 * 1024;
  const Topology t = Must(BuildLeafSpine(fabric, c));
  FaultConfig f;
  f.loss_probability = 0.01;
  f.reorder_probability = 0.1;
  f.reorder_max_delay_ps = 2 * kPsPerUs;
  f.duplicate_probability = 0.02;
  f.corrupt_probability = 0.005;
  EXPECT_TRUE(fabric.SetAllLinkFaults(f).ok());
  WorkloadConfig w;
  w.stop_at_ps = duration;
  w.mean_gap_ps = 150 * kPsPerNs;  // ~ line rate on average: queues build and drop
  auto eps = StartWorkload(t.hosts, w);
  EXPECT_TRUE(fabric.RunUntilIdle());

  Outcome o;
  o.trace_hash = fabric.trace_hash();
  o.trace_records = fabric.trace_records();
  for (const auto& ep : eps) {
    o.digests.push_back(ep->digest);
    o.sent += ep->tx_frames;
    o.received += ep->rx_frames;
  }
  for (PortId p = 0; p < fabric.num_ports(); p++) {
    const PortStats& s = fabric.port_stats(p);
    o.dups += s.duplicated;
    o.reordered += s.reordered;
    o.corrupted += s.corrupted;
    o.marked += s.ecn_marked;
  }
  o.lost = fabric.total_drops(DropCause::kLoss);
  o.queue_drops = fabric.total_drops(DropCause::kQueueFull);
  // Conservation: every frame sent or copied was delivered or dropped.
  uint64_t drops = 0;
  for (int cause = 0; cause < static_cast<int>(DropCause::kCount); cause++) {
    drops += fabric.total_drops(static_cast<DropCause>(cause));
  }
  EXPECT_EQ(o.sent + o.dups, o.received + drops);
  EXPECT_EQ(fabric.frames_in_flight(), 0u);
  return o;
}

void ExpectSame(const Outcome& a, const Outcome& b) {
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  EXPECT_EQ(a.trace_records, b.trace_records);
  EXPECT_EQ(a.digests, b.digests);
  EXPECT_EQ(a.received, b.received);
  EXPECT_EQ(a.lost, b.lost);
  EXPECT_EQ(a.dups, b.dups);
}

TEST(Determinism, SameSeedSameTraceDifferentSeedDifferentTrace) {
  constexpr SimTime kDuration = 100 * kPsPerUs;
  const Outcome a = RunFabric(1234, 2, 2, 2, kDuration);
  // The run exercised every fault and the queues.
  EXPECT_GT(a.sent, 2000u);
  EXPECT_GT(a.lost, 0u);
  EXPECT_GT(a.dups, 0u);
  EXPECT_GT(a.reordered, 0u);
  EXPECT_GT(a.corrupted, 0u);
  EXPECT_GT(a.marked, 0u);
  EXPECT_GT(a.queue_drops, 0u);
  // Another fabric in between shares no state with this one.
  const Outcome other = RunFabric(99, 2, 2, 2, kDuration);
  const Outcome b = RunFabric(1234, 2, 2, 2, kDuration);
  ExpectSame(a, b);
  EXPECT_NE(other.trace_hash, a.trace_hash);
  const Outcome c = RunFabric(1235, 2, 2, 2, kDuration);
  EXPECT_NE(c.trace_hash, a.trace_hash);
  EXPECT_NE(c.digests, a.digests);
}

TEST(Determinism, TraceHashSeesEveryEvent) {
  // A run cut short differs from the full run: the hash covers time too.
  const Outcome a = RunFabric(5, 2, 2, 1, 20 * kPsPerUs);
  const Outcome b = RunFabric(5, 2, 2, 1, 21 * kPsPerUs);
  EXPECT_NE(a.trace_hash, b.trace_hash);
}

TEST(DeterminismLong, LargerFabricRepeats) {
  // Heavier: 8 leaves x 4 spines x 8 hosts for 1 ms of simulated time.
  const Outcome a = RunFabric(77, 8, 4, 8, 1 * kPsPerMs);
  const Outcome b = RunFabric(77, 8, 4, 8, 1 * kPsPerMs);
  ExpectSame(a, b);
  EXPECT_GT(a.sent, 100'000u);
}

}  // namespace
}  // namespace metaroce::sim
