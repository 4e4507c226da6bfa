/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Topology builders and ECMP across a leaf-spine fabric.

#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "mr_sim.h"
#include "sim_test_util.h"

namespace metaroce::sim {
namespace {

using testing::MakeFrame;
using testing::Must;
using testing::RecordingEndpoint;

TEST(Topology, BackToBackAddresses) {
  Fabric f(1);
  const Topology t = Must(BuildBackToBack(f, {}));
  ASSERT_EQ(t.hosts.size(), 2u);
  EXPECT_EQ(t.hosts[0]->ipv4().ToString(), "10.0.0.1");
  EXPECT_EQ(t.hosts[1]->ipv4().ToString(), "10.0.0.2");
  EXPECT_EQ(t.hosts[1]->ipv6().ToString(), "fd00::2");
  EXPECT_EQ(t.hosts[0]->line_rate_bps(), kDefaultLinkRateBps);
  EXPECT_EQ(f.num_switches(), 0u);
  EXPECT_EQ(f.num_links(), 1u);
}

TEST(Topology, LeafSpineShapeAndAddressPlan) {
  Fabric f(1);
  LeafSpineConfig c;
  c.leaves = 3;
  c.spines = 4;
  c.hosts_per_leaf = 5;
  const Topology t = Must(BuildLeafSpine(f, c));
  EXPECT_EQ(f.num_hosts(), 15u);
  EXPECT_EQ(f.num_switches(), 7u);
  EXPECT_EQ(f.num_links(), 15u + 12u);
  EXPECT_EQ(t.host(2, 4)->ipv4().ToString(), "10.0.2.5");
  EXPECT_EQ(t.host(2, 4)->ipv6().ToString(), "fd00::2:5");
  EXPECT_EQ(t.host(2, 4)->name(), "leaf2-host4");
  EXPECT_EQ(t.host(1, 0)->mac(), LeafHostMac(1, 0));
  EXPECT_EQ(f.switch_name(t.spines[3]), "spine3");
  EXPECT_EQ(f.switch_ports(t.leaves[0]).size(), 5u + 4u);
  EXPECT_EQ(f.switch_ports(t.spines[0]).size(), 3u);
  const LinkInfo l = f.link(t.fabric_link(1, 2));
  EXPECT_EQ(l.node_a, NodeRef::OfSwitch(t.leaves[1]));
  EXPECT_EQ(l.node_b, NodeRef::OfSwitch(t.spines[2]));
  EXPECT_EQ(f.FindHost(LeafHostIpv6(0, 3)), t.host(0, 3));
}

TEST(Topology, PlanesAreParallelFabricsThatNeverMeet) {
  Fabric f(1);
  LeafSpineConfig c;
  c.planes = 3;
  c.leaves = 2;
  c.spines = 2;
  c.hosts_per_leaf = 2;
  const Topology t = Must(BuildLeafSpine(f, c));
  EXPECT_EQ(f.num_hosts(), 3u * 4u);
  EXPECT_EQ(f.num_switches(), 3u * 4u);
  EXPECT_EQ(t.host(1, 0)->ipv4().ToString(), "10.0.1.1");  // plane 0 as without planes
  EXPECT_EQ(t.host(1, 0)->name(), "leaf1-host0");
  EXPECT_EQ(t.host(1, 0, 2)->ipv4().ToString(), "10.2.1.1");
  EXPECT_EQ(t.host(1, 0, 2)->ipv6().ToString(), "fd00::2:1:1");
  EXPECT_EQ(t.host(1, 0, 2)->name(), "plane2-leaf1-host0");
  EXPECT_EQ(t.host(1, 0, 2)->mac(), LeafHostMac(1, 0, 2));
  EXPECT_EQ(f.switch_name(t.spines[t.spines_per_plane() + 1]), "plane1-spine1");
  const std::vector<LinkId> links = t.PlaneLinks(1);
  ASSERT_EQ(links.size(), 4u + 4u);
  EXPECT_EQ(f.link(links[0]).node_a, NodeRef::OfHost(t.host(0, 0, 1)->id()));
  EXPECT_EQ(links[4], t.fabric_link(0, 0, 1));
  // Plane 1 reaches plane 1 only: a frame for a plane-0 address finds no route.
  RecordingEndpoint same(t.host(1, 1, 1)), other(t.host(1, 1, 0));
  t.host(0, 0, 1)->Send(MakeFrame({.src = t.host(0, 0, 1), .dst = t.host(1, 1, 1)}));
  t.host(0, 0, 1)->Send(MakeFrame({.src = t.host(0, 0, 1), .dst = t.host(1, 1, 0)}));
  f.RunUntilIdle(kPsPerMs);
  EXPECT_EQ(same.rx.size(), 1u);
  EXPECT_EQ(other.rx.size(), 0u);
  EXPECT_EQ(f.total_drops(DropCause::kNoRoute), 1u);
}

// A leaf with long uplinks is a second site: only frames between the sites
// take the long links, and the other leaves' uplinks keep their delay.
TEST(Topology, ALeafWithLongUplinksIsASecondSite) {
  Fabric f(1);
  LeafSpineConfig c;
  c.leaves = 3;
  c.spines = 2;
  c.hosts_per_leaf = 2;
  c.leaf_uplink_delay_ps = {0, 0, kPsPerMs};
  const Topology t = Must(BuildLeafSpine(f, c));
  for (uint32_t s = 0; s < c.spines; s++) {
    EXPECT_EQ(f.link(t.fabric_link(0, s)).config.delay_ps, c.fabric_link.delay_ps);
    EXPECT_EQ(f.link(t.fabric_link(2, s)).config.delay_ps, kPsPerMs);
  }
  RecordingEndpoint near(t.host(1, 0)), far(t.host(2, 0)), local(t.host(2, 1));
  t.host(0, 0)->Send(MakeFrame({.src = t.host(0, 0), .dst = t.host(1, 0)}));
  t.host(0, 0)->Send(MakeFrame({.src = t.host(0, 0), .dst = t.host(2, 0)}));
  t.host(2, 0)->Send(MakeFrame({.src = t.host(2, 0), .dst = t.host(2, 1)}));
  f.RunUntilIdle(10 * kPsPerMs);
  ASSERT_EQ(near.rx.size(), 1u);
  ASSERT_EQ(far.rx.size(), 1u);
  ASSERT_EQ(local.rx.size(), 1u);
  EXPECT_LT(near.rx[0].time, 10 * kPsPerUs);
  EXPECT_GT(far.rx[0].time, kPsPerMs);
  EXPECT_LT(far.rx[0].time, kPsPerMs + 10 * kPsPerUs);
  EXPECT_LT(local.rx[0].time, 10 * kPsPerUs);
}

TEST(Topology, LeafSpineErrorsSayWhatToFix) {
  struct Case {
    LeafSpineConfig c;
    const char* want;
  };
  std::vector<Case> cases;
  cases.push_back({{.planes = 0}, "planes"});
  cases.push_back({{.planes = kMaxSimPlanes + 1}, "planes"});
  cases.push_back({{.leaves = 0}, "leaves"});
  cases.push_back({{.leaves = 300}, "leaves"});
  cases.push_back({{.spines = 0}, "spines"});
  cases.push_back({{.hosts_per_leaf = 255}, "hosts_per_leaf"});
  cases.push_back({{.host_tx_queue_frames = 0}, "host_tx_queue_frames"});
  LeafSpineConfig bad_rate;
  bad_rate.fabric_link.rate_bps = 0;
  cases.push_back({bad_rate, "fabric_link"});
  LeafSpineConfig too_many_delays;
  too_many_delays.leaf_uplink_delay_ps = {0, 0, 0};
  cases.push_back({too_many_delays, "leaf_uplink_delay_ps"});
  LeafSpineConfig bad_delay;
  bad_delay.leaf_uplink_delay_ps = {0, 2 * kPsPerSec};
  cases.push_back({bad_delay, "leaf_uplink_delay_ps[1]"});
  LeafSpineConfig bad_buffer;
  bad_buffer.port_buffer_bytes = 10;
  cases.push_back({bad_buffer, "port_buffer_bytes"});
  for (const Case& k : cases) {
    Fabric f(1);
    auto t = BuildLeafSpine(f, k.c);
    ASSERT_FALSE(t.ok()) << k.want;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(k.want), std::string::npos) << t.status();
  }
}

TEST(Topology, EcnThresholdScalesWithRate) {
  EXPECT_EQ(ScaledEcnThreshold(20'000, 400 * kBpsPerGbps), 80'000u);
  EXPECT_EQ(ScaledEcnThreshold(20'000, 25 * kBpsPerGbps), 5'000u);
  EXPECT_EQ(ScaledEcnThreshold(kEcnDisabled, 400 * kBpsPerGbps), kEcnDisabled);
}

// ---- ECMP -------------------------------------------------------------------

struct LeafSpine {
  Fabric fabric;
  Topology t;
  explicit LeafSpine(uint64_t seed, uint32_t spines = 4) : fabric(seed) {
    LeafSpineConfig c;
    c.leaves = 2;
    c.spines = spines;
    c.hosts_per_leaf = 2;
    t = Must(BuildLeafSpine(fabric, c));
  }
  // Frames each spine sent down towards leaf 1.
  std::vector<uint64_t> SpineCounts() const {
    std::vector<uint64_t> n;
    for (size_t s = 0; s < t.spines.size(); s++) {
      n.push_back(fabric.port_stats(fabric.link(t.fabric_link(1, s)).port_b).tx_frames);
    }
    return n;
  }
  // Index of the spine one frame with this source port crosses.
  int SpineOf(uint16_t sport) {
    const auto before = SpineCounts();
    Host* src = t.host(0, 0);
    Host* dst = t.host(1, 0);
    EXPECT_TRUE(src->Send(MakeFrame({.src = src, .dst = dst, .src_port = sport})));
    fabric.RunUntilIdle();
    const auto after = SpineCounts();
    int spine = -1;
    for (size_t s = 0; s < after.size(); s++) {
      if (after[s] != before[s]) {
        EXPECT_EQ(spine, -1) << "frame crossed two spines";
        spine = static_cast<int>(s);
      }
    }
    return spine;
  }
};

TEST(Ecmp, DistinctSourcePortsSpreadOverSpines) {
  LeafSpine ls(11);
  RecordingEndpoint rx(ls.t.host(1, 0));
  std::vector<int> per_spine(4);
  for (uint16_t sport = 49152; sport < 49152 + 400; sport++) {
    const int s = ls.SpineOf(sport);
    ASSERT_GE(s, 0);
    per_spine[s]++;
  }
  EXPECT_EQ(rx.rx.size(), 400u);
  // Expected 100 each; binomial sigma ~8.7: allow 5 sigma.
  for (int n : per_spine) EXPECT_NEAR(n, 100, 44);
}

TEST(Ecmp, OneSourcePortStaysOnOnePath) {
  LeafSpine ls(11);
  RecordingEndpoint rx(ls.t.host(1, 0));
  for (uint16_t sport : {1000, 2000, 3000, 4000}) {
    const int first = ls.SpineOf(sport);
    for (int i = 0; i < 50; i++) EXPECT_EQ(ls.SpineOf(sport), first) << sport;
  }
  // Frames sent back to back on one source port arrive in order.
  Host* src = ls.t.host(0, 0);
  RecordingEndpoint tx(src);
  for (uint32_t i = 0; i < 100; i++) {
    tx.backlog.push_back(MakeFrame({.src = src, .dst = ls.t.host(1, 0), .seq = i}));
  }
  tx.Pump();
  rx.rx.clear();
  ls.fabric.RunUntilIdle();
  ASSERT_EQ(rx.rx.size(), 100u);
  for (uint32_t i = 0; i < 100; i++) EXPECT_EQ(testing::FrameSeq(rx.rx[i].bytes), i);
}

TEST(Ecmp, SeedChangesTheMapping) {
  LeafSpine a(11), b(12);
  RecordingEndpoint ra(a.t.host(1, 0)), rb(b.t.host(1, 0));
  int same = 0;
  for (uint16_t sport = 1; sport <= 64; sport++) same += a.SpineOf(sport) == b.SpineOf(sport);
  EXPECT_LT(same, 40);  // ~16 expected by chance
  LeafSpine a2(11);
  RecordingEndpoint ra2(a2.t.host(1, 0));
  for (uint16_t sport = 1; sport <= 64; sport++) EXPECT_EQ(a2.SpineOf(sport), a.SpineOf(sport));
}

TEST(Ecmp, SameLeafTrafficStaysOnTheLeaf) {
  LeafSpine ls(3);
  RecordingEndpoint rx(ls.t.host(0, 1));
  Host* src = ls.t.host(0, 0);
  for (uint16_t sport = 1; sport <= 20; sport++) {
    ASSERT_TRUE(src->Send(MakeFrame({.src = src, .dst = ls.t.host(0, 1), .src_port = sport})));
  }
  ls.fabric.RunUntilIdle();
  EXPECT_EQ(rx.rx.size(), 20u);
  for (size_t s = 0; s < 4; s++) {
    EXPECT_EQ(ls.fabric.port_stats(ls.fabric.link(ls.t.fabric_link(0, s)).port_a).tx_frames, 0u);
  }
}

TEST(Ecmp, Ipv6FramesAreRoutedAndSpread) {
  LeafSpine ls(4);
  RecordingEndpoint rx(ls.t.host(1, 1));
  Host* src = ls.t.host(0, 0);
  for (uint16_t sport = 1; sport <= 200; sport++) {
    ASSERT_TRUE(
        src->Send(MakeFrame({.src = src, .dst = ls.t.host(1, 1), .src_port = sport, .v6 = true})));
    ls.fabric.RunUntilIdle();
  }
  EXPECT_EQ(rx.rx.size(), 200u);
  for (uint64_t n : ls.SpineCounts()) EXPECT_GT(n, 20u);
}

}  // namespace
}  // namespace metaroce::sim
