/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Planes end to end: two hosts with a port on each of two parallel leaf-spine
// fabrics. Traffic is spread over both; a plane that goes dark is given up
// whole with no QP error and nothing lost; a plane that comes back is used
// again; a one-plane peer is reached on plane 0 alone.

#include <cstdio>
#include <cstring>

#include "gtest/gtest.h"
#include "sim_pair.h"

namespace metaroce::testing {
namespace {

using namespace transport;

constexpr uint32_t kMsgBytes = 256 << 10;
constexpr uint32_t kSlots = 16;  ///< remote slots the WRITEs cycle over (4 MiB)

Pair::Options TwoPlanes(uint64_t seed) {
  Pair::Options o;
  o.planes = 2;
  o.spines = 2;
  o.seed = seed;
  o.cfg.num_paths = 8;
  o.mem_bytes = kSlots * kMsgBytes;
  return o;
}

/** Data packets side 0 sent on each plane so far. */
std::vector<uint64_t> PlaneTx(Pair& f) {
  std::vector<uint64_t> v;
  const std::vector<ConnInfo> conns = f.E(0).GetConnections();
  if (conns.empty()) return v;
  for (const PlaneInfo& p : conns[0].planes) v.push_back(p.tx_pkts);
  return v;
}

/**
 * Streams WRITEs from side 0 (kDepth outstanding) until @p total completed,
 * calling @p each every 10 us of simulated time. Returns false on a failed
 * completion (named in the test log).
 */
template <typename Fn>
bool Stream(Pair& f, uint32_t total, sim::SimTime limit, Fn each) {
  constexpr uint32_t kDepth = 8;
  for (size_t i = 0; i < kMsgBytes; i++) f.Mem(0)[i] = static_cast<uint8_t>(i * 7 + 3);
  uint32_t posted = 0, done = 0;
  const sim::SimTime end = f.fabric().Now() + limit;
  while (done < total && f.fabric().Now() < end) {
    while (posted < total && posted - done < kDepth) {
      EXPECT_TRUE(
          f.Post(0, f.Wr(Opcode::kWrite, 0, kMsgBytes, (posted % kSlots) * kMsgBytes, posted + 1))
              .ok());
      posted++;
    }
    f.fabric().RunUntil(f.fabric().Now() + 10 * sim::kPsPerUs);
    for (const Completion& c : f.Poll(0)) {
      if (c.status != WcStatus::kSuccess) {
        ADD_FAILURE() << "WRITE " << c.wr_id << " completed with " << WcStatusName(c.status);
        return false;
      }
      done++;
    }
    each();
  }
  EXPECT_EQ(done, total) << "only " << done << " WRITEs completed";
  return done == total;
}

void ExpectDelivered(Pair& f) {
  for (uint32_t s = 0; s < kSlots; s++) {
    EXPECT_EQ(std::memcmp(f.Mem(1).data() + s * kMsgBytes, f.Mem(0).data(), kMsgBytes), 0)
        << "slot " << s;
  }
}

void SetPlaneFaults(Pair& f, uint32_t plane, const sim::FaultConfig& faults) {
  for (sim::LinkId l : f.topo().PlaneLinks(plane)) {
    ASSERT_TRUE(f.fabric().SetLinkFaults(l, faults).ok());
  }
}

TEST(Planes, TrafficIsSpreadOverBothPlanes) {
  Pair f(TwoPlanes(3));
  ASSERT_TRUE(Stream(f, 64, 50 * sim::kPsPerMs, [] {}));
  ExpectDelivered(f);
  const std::vector<uint64_t> tx = PlaneTx(f);
  ASSERT_EQ(tx.size(), 2u);
  EXPECT_GT(tx[1], tx[0] / 2) << tx[0] << " vs " << tx[1];
  EXPECT_GT(tx[0], tx[1] / 2) << tx[0] << " vs " << tx[1];
  // Plane 1's frames crossed plane 1's fabric: its host link carried them.
  const sim::LinkInfo link = f.fabric().link(f.topo().PlaneLinks(1)[0]);
  EXPECT_GE(f.fabric().port_stats(link.port_a).tx_frames, tx[1]);
  const ConnInfo c = f.E(0).GetConnections()[0];
  for (const PathInfo& p : c.paths) {
    EXPECT_EQ(p.plane, p.path_id % 2);
    EXPECT_TRUE(p.active);
  }
}

TEST(Planes, ADarkPlaneFailsWholeAndTrafficMovesToTheOtherWithNoQpError) {
  Pair f(TwoPlanes(4));
  const sim::SimTime dark_at = 300 * sim::kPsPerUs;
  sim::FaultConfig dark;
  dark.blackhole_at_ps = dark_at;
  SetPlaneFaults(f, 1, dark);
  sim::SimTime failed_at = 0;
  std::vector<uint64_t> at_failure;
  TimeNs base_rtt = kNever;  // the smallest smoothed RTT of a path before the plane went dark
  std::vector<std::pair<sim::SimTime, uint64_t>> rx;  // the receiver's bytes every 10 us
  ASSERT_TRUE(Stream(f, 256, 200 * sim::kPsPerMs, [&] {
    if (failed_at == 0 && f.E(0).stats().plane_failures != 0) {
      failed_at = f.fabric().Now();
      at_failure = PlaneTx(f);
    }
    if (f.fabric().Now() < dark_at) {
      const std::vector<ConnInfo> conns = f.E(0).GetConnections();  // outlives the loop
      for (const PathInfo& p : conns[0].paths) {
        if (p.srtt_ns != 0) base_rtt = std::min(base_rtt, p.srtt_ns);
      }
    }
    rx.emplace_back(f.fabric().Now(), f.E(1).GetConnections()[0].rx_bytes);
  }));
  ExpectDelivered(f);
  const EngineStats& s = f.E(0).stats();
  EXPECT_EQ(s.plane_failures, 1u);
  EXPECT_EQ(s.conn_failures, 0u);
  EXPECT_EQ(f.E(0).GetQpState(f.Qpn(0)), QpState::kReady);
  ASSERT_NE(failed_at, 0u);
  // Given up whole in a few timeouts (rto_min is 100 us): not after a wait
  // for a stalled peer, which answered on plane 0 all along.
  EXPECT_LT(failed_at - dark_at, 2 * sim::kPsPerMs);
  EXPECT_GT(at_failure[1], 1000u);  // both planes carried data before
  const std::vector<uint64_t> end = PlaneTx(f);
  std::printf(
      "plane 1 dark at %.0f us, failed whole at %.0f us (%llu + %llu data packets by "
      "then), %llu + %llu at the end (%.0f us)\n",
      dark_at / 1e6, failed_at / 1e6, static_cast<unsigned long long>(at_failure[0]),
      static_cast<unsigned long long>(at_failure[1]), static_cast<unsigned long long>(end[0]),
      static_cast<unsigned long long>(end[1]), f.fabric().Now() / 1e6);
  // Throughput: both planes' before the dark, and back to plane 0's half of
  // it. Meta's figure is 10 round trips; here it is about 20 (doc/transport.md,
  // "Planes"): a path whose tail-loss probe went unanswered while other paths
  // delivered packets sent after its newest times out at once, what it held
  // goes on the paths that answer, and it carries one packet at a time until
  // heard. Before that rule the plane's paths waited for their RTOs (rto_min)
  // and backed off: 440 us, 86 round trips, with no data moving at all.
  auto gbps_at = [&](size_t i) {
    return (rx[i].second - rx[i - 1].second) * 8.0 / ((rx[i].first - rx[i - 1].first) / 1e3);
  };
  double before = 0;
  size_t n_before = 0;
  for (size_t i = 1; i < rx.size() && rx[i].first <= dark_at; i++) {
    if (rx[i].first <= 100 * sim::kPsPerUs) continue;  // the start
    before += gbps_at(i);
    n_before++;
  }
  ASSERT_NE(n_before, 0u);
  before /= n_before;
  // Back once no 10 us window of the 500 us after the dark (the stream runs
  // on well past them) falls below 90 % of half the rate before.
  sim::SimTime back_at = dark_at;
  double lowest = before;
  for (size_t i = 1; i < rx.size() && rx[i].first <= dark_at + 500 * sim::kPsPerUs; i++) {
    if (rx[i].first <= dark_at) continue;
    lowest = std::min(lowest, gbps_at(i));
    if (gbps_at(i) < 0.9 * 0.5 * before) back_at = rx[i].first;
  }
  ASSERT_LT(dark_at + 500 * sim::kPsPerUs, rx.back().first);
  ASSERT_NE(base_rtt, kNever);
  const double rtts = static_cast<double>(back_at - dark_at) / sim::kPsPerNs / base_rtt;
  std::printf(
      "%.0f Gbit/s on both planes; after the dark at least %.0f Gbit/s in every 10 us, at least "
      "90 %% of half the rate before %.0f us after it (%.1f round trips of %.1f us); plane "
      "failed %.1f round trips after the dark\n",
      before, lowest, (back_at - dark_at) / 1e6, rtts, base_rtt / 1e3,
      static_cast<double>(failed_at - dark_at) / sim::kPsPerNs / base_rtt);
  EXPECT_LE(rtts, 25.0);
  // Its silent paths are rerouted at once (failed and probed), so the
  // plane fails with its second: 13 round trips; 33 when they first waited
  // for their timeouts on the dark plane.
  EXPECT_LT(static_cast<double>(failed_at - dark_at) / sim::kPsPerNs / base_rtt, 20.0);
  EXPECT_GE(f.E(0).stats().silent_path_timeouts, config::kPlaneFailPaths);
  // Plane 0 carried the rest at close to its link's 400 Gbit/s.
  const double gbps = (end[0] - at_failure[0]) * 8.0 * f.E(0).GetConnections()[0].chunk_bytes /
                      ((f.fabric().Now() - failed_at) / 1e3);
  std::printf("plane 0 alone: %.0f Gbit/s of payload\n", gbps);
  EXPECT_GT(gbps, 0.75 * 400);
  const ConnInfo c = f.E(0).GetConnections()[0];
  EXPECT_FALSE(c.planes[1].up);
  EXPECT_EQ(c.planes[1].active_paths, 0u);
  EXPECT_EQ(c.planes[0].active_paths, 4u);
}

TEST(Planes, APlaneThatComesBackIsProbedAndUsedAgain) {
  Pair f(TwoPlanes(5));
  sim::FaultConfig dark;
  dark.blackhole_at_ps = 200 * sim::kPsPerUs;
  SetPlaneFaults(f, 1, dark);
  bool repaired = false;
  sim::SimTime repaired_at = 0, back_at = 0;
  std::vector<uint64_t> at_repair;
  ASSERT_TRUE(Stream(f, 2048, 500 * sim::kPsPerMs, [&] {
    if (!repaired && f.E(0).stats().plane_failures != 0) {
      SetPlaneFaults(f, 1, sim::FaultConfig{});
      repaired = true;
      repaired_at = f.fabric().Now();
      at_repair = PlaneTx(f);
    }
    if (repaired && back_at == 0 && f.E(0).stats().plane_recoveries != 0)
      back_at = f.fabric().Now();
  }));
  std::printf("plane 1 repaired at %.0f us, back at %.0f us\n", repaired_at / 1e6, back_at / 1e6);
  ExpectDelivered(f);
  ASSERT_TRUE(repaired);
  EXPECT_EQ(f.E(0).stats().plane_recoveries, 1u);
  // Its paths' probes had not backed off yet: back within a few probe intervals.
  EXPECT_LT(back_at - repaired_at, 5 * config::kPathProbeIntervalNs * sim::kPsPerNs);
  const ConnInfo c = f.E(0).GetConnections()[0];
  EXPECT_TRUE(c.planes[1].up);
  EXPECT_EQ(c.planes[1].active_paths, 4u);
  EXPECT_GT(PlaneTx(f)[1], at_repair[1] + 1000);
}

TEST(Planes, AOnePlanePeerIsReachedOnPlaneZeroAlone) {
  Pair::Options o = TwoPlanes(6);
  o.planes_of[1] = 1;
  Pair f(o);
  ASSERT_TRUE(Stream(f, 16, 50 * sim::kPsPerMs, [] {}));
  ExpectDelivered(f);
  for (int i = 0; i < 2; i++) EXPECT_EQ(f.E(i).GetConnections()[0].planes.size(), 1u);
  // Side 0's plane-1 port never sent a frame.
  const sim::LinkInfo link = f.fabric().link(f.topo().PlaneLinks(1)[0]);
  EXPECT_EQ(f.fabric().port_stats(link.port_a).tx_frames, 0u);
}

}  // namespace
}  // namespace metaroce::testing
