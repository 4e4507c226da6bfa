/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// One switch between hosts: queue build-up, drop-tail at the byte limit, ECN
// marking exactly above the threshold (IPv4 with a valid checksum, IPv6), and
// routing by destination address.

#include <cstdio>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gtest/gtest.h"
#include "mr_sim.h"
#include "sim_test_util.h"

namespace metaroce::sim {
namespace {

using testing::FrameSpec;
using testing::MakeFrame;
using testing::Must;
using testing::RecordingEndpoint;
using testing::Star;

constexpr uint64_t k100G = Star::kFastBps;
constexpr uint64_t k10G = Star::kSlowBps;

// The Star (sim_test_util.h) with links without delay: frames from A arrive
// every 81.6 ns and leave towards B every 816 ns, so the queue to B grows by
// one frame per arrival.

SwitchConfig Buffer(uint64_t bytes, uint64_t ecn = kEcnDisabled) {
  SwitchConfig sc;
  sc.port_buffer_bytes = bytes;
  sc.ecn_threshold_bytes = ecn;
  return sc;
}

TEST(Switch, QueueBuildsAndDropTailAtTheByteLimit) {
  Star s(Buffer(5000));
  RecordingEndpoint rb(s.b);
  for (uint32_t i = 0; i < 8; i++) {
    ASSERT_TRUE(s.a->Send(MakeFrame({.src = s.a, .dst = s.b, .bytes = 1000, .seq = i})));
  }
  s.fabric.RunUntilIdle();
  // Occupancy found on arrival: 0, 1000, ..., 4000 (accepted: 5000 bytes fit
  // exactly), then 5000 three times (dropped).
  const PortStats& st = s.fabric.port_stats(s.to_b);
  EXPECT_EQ(st.enqueued_frames, 5u);
  EXPECT_EQ(st.dropped(DropCause::kQueueFull), 3u);
  EXPECT_EQ(st.max_queue_bytes, 5000u);
  EXPECT_EQ(st.queue_bytes.count(), 8u);
  EXPECT_EQ(st.queue_bytes.Percentile(0.5),
            QueueHistogram::UpperBound(QueueHistogram::Index(3000)));
  EXPECT_GE(st.queue_bytes.Percentile(1.0), 5000u);
  EXPECT_EQ(s.fabric.total_drops(DropCause::kQueueFull), 3u);
  ASSERT_EQ(rb.rx.size(), 5u);
  const SimTime in = SerializationPs(1020, k100G);  // 81.6 ns
  const SimTime out = SerializationPs(1020, k10G);  // 816 ns
  for (uint32_t i = 0; i < 5; i++) {
    EXPECT_EQ(testing::FrameSeq(rb.rx[i].bytes), i);
    EXPECT_EQ(rb.rx[i].time, in + static_cast<SimTime>(i + 1) * out);
  }
}

TEST(Switch, OneByteLessBufferDropsOneMoreFrame) {
  Star s(Buffer(4999));
  RecordingEndpoint rb(s.b);
  for (uint32_t i = 0; i < 8; i++) {
    ASSERT_TRUE(s.a->Send(MakeFrame({.src = s.a, .dst = s.b, .bytes = 1000, .seq = i})));
  }
  s.fabric.RunUntilIdle();
  EXPECT_EQ(s.fabric.port_stats(s.to_b).dropped(DropCause::kQueueFull), 4u);
  EXPECT_EQ(s.fabric.port_stats(s.to_b).max_queue_bytes, 4000u);
  EXPECT_EQ(rb.rx.size(), 4u);
}

// Sends 6 frames of 1000 bytes from A to B; they find 0..5000 bytes queued.
// Returns the sequence numbers that arrived CE-marked (all must parse).
std::vector<uint32_t> MarkedSeqs(uint64_t threshold, bool v6, wire::Ecn ecn) {
  Star s(Buffer(1 << 20, threshold));
  RecordingEndpoint rb(s.b);
  for (uint32_t i = 0; i < 6; i++) {
    const auto f = MakeFrame(
        {.src = s.a, .dst = s.b, .bytes = 1000, .ecn = ecn, .dscp = 10, .v6 = v6, .seq = i});
    EXPECT_TRUE(s.a->Send(f));
  }
  s.fabric.RunUntilIdle();
  EXPECT_EQ(rb.rx.size(), 6u);
  std::vector<uint32_t> marked;
  for (const auto& rx : rb.rx) {
    wire::FrameInfo fi;
    wire::Packet p;
    // ParseFrame checks the IPv4 header checksum and, for IPv6, the UDP checksum.
    EXPECT_EQ(testing::ParseSimFrame(rx.bytes, &fi, &p), wire::ParseError::kOk);
    EXPECT_EQ(fi.dscp, 10);
    if (fi.ecn == wire::Ecn::kCe) {
      marked.push_back(p.data.psn);
    } else {
      EXPECT_EQ(fi.ecn, ecn);
    }
  }
  EXPECT_EQ(s.fabric.port_stats(s.to_b).ecn_marked, marked.size());
  return marked;
}

TEST(Switch, EcnMarksStrictlyAboveThresholdIpv4) {
  EXPECT_EQ(MarkedSeqs(3000, false, wire::Ecn::kEct0), (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(MarkedSeqs(2999, false, wire::Ecn::kEct0), (std::vector<uint32_t>{3, 4, 5}));
  EXPECT_EQ(MarkedSeqs(0, false, wire::Ecn::kEct1), (std::vector<uint32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(MarkedSeqs(kEcnDisabled, false, wire::Ecn::kEct0), std::vector<uint32_t>{});
}

// RED: A sends 1100 frames of 1000 bytes at 10x B's rate; each finds about
// 900 bytes more queued than the one before, up to 1 MB. None is marked at or
// below Kmin, all are above Kmax, and in between the marked share follows
// Pmax x (q - Kmin) / (Kmax - Kmin).
TEST(Switch, RedMarksOnARampBetweenKminAndKmax) {
  Star s(Buffer(1 << 20));
  PortQueueConfig q;
  q.buffer_bytes = 1 << 20;
  q.red = RedConfig{.min_bytes = 100'000, .max_bytes = 900'000, .max_prob = 0.5};
  ASSERT_TRUE(s.fabric.SetPortQueue(s.to_b, q).ok());
  std::unordered_map<uint64_t, uint64_t> found;  // frame id -> occupancy it found
  std::unordered_set<uint64_t> marked;
  s.fabric.SetTraceObserver([&](const TraceRecord& t) {
    if (t.component != s.to_b) return;
    if (t.kind == TraceKind::kEnqueue) found[t.frame_id] = t.arg;
    if (t.kind == TraceKind::kEcnMark) marked.insert(t.frame_id);
  });
  RecordingEndpoint ra(s.a), rb(s.b);
  for (uint32_t i = 0; i < 1100; i++) {
    ra.backlog.push_back(MakeFrame({.src = s.a, .dst = s.b, .bytes = 1000, .seq = i}));
  }
  ra.Pump();
  s.fabric.RunUntilIdle();
  ASSERT_EQ(rb.rx.size(), found.size());
  uint64_t below = 0, above = 0, above_marked = 0;
  uint64_t lower[2] = {0, 0}, upper[2] = {0, 0};  // {frames, marked} in each half of the ramp
  for (const auto& [id, occupancy] : found) {
    const bool m = marked.count(id) != 0;
    if (occupancy <= q.red.min_bytes) {
      below++;
      EXPECT_FALSE(m) << occupancy;
    } else if (occupancy > q.red.max_bytes) {
      above++;
      above_marked += m ? 1 : 0;
    } else {
      uint64_t* half = occupancy <= 500'000 ? lower : upper;
      half[0]++;
      half[1] += m ? 1 : 0;
    }
  }
  EXPECT_GT(below, 100u);
  EXPECT_GT(above, 50u);
  EXPECT_EQ(above_marked, above);
  // The ramp's mean probability is 0.125 over its lower half and 0.375 over its upper.
  ASSERT_GT(lower[0], 400u);
  ASSERT_GT(upper[0], 400u);
  const double lo = static_cast<double>(lower[1]) / static_cast<double>(lower[0]);
  const double hi = static_cast<double>(upper[1]) / static_cast<double>(upper[0]);
  std::printf("RED: marked %.3f of the lower half of the ramp, %.3f of the upper\n", lo, hi);
  EXPECT_NEAR(lo, 0.125, 0.05);
  EXPECT_NEAR(hi, 0.375, 0.07);
  EXPECT_EQ(s.fabric.port_stats(s.to_b).ecn_marked, marked.size());
}

TEST(Switch, RedSettingsAreCheckedWithWhatToFix) {
  PortQueueConfig q;
  q.red = RedConfig{.min_bytes = 10, .max_bytes = 5, .max_prob = 0.1};
  EXPECT_NE(Validate(q).message().find("Kmin"), std::string::npos) << Validate(q);
  q.red = RedConfig{.min_bytes = 5, .max_bytes = 10, .max_prob = 1.5};
  EXPECT_NE(Validate(q).message().find("max_prob"), std::string::npos) << Validate(q);
  q.red.max_prob = 1;
  EXPECT_TRUE(Validate(q).ok());
  Fabric f(1);
  LeafSpineConfig ls;
  ls.red = RedConfig{.min_bytes = 10, .max_bytes = 5, .max_prob = 0.1};
  EXPECT_EQ(BuildLeafSpine(f, ls).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Switch, EcnMarksStrictlyAboveThresholdIpv6) {
  EXPECT_EQ(MarkedSeqs(3000, true, wire::Ecn::kEct0), (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(MarkedSeqs(1000, true, wire::Ecn::kEct1), (std::vector<uint32_t>{2, 3, 4, 5}));
}

TEST(Switch, EcnNeverMarksNotEct) {
  EXPECT_EQ(MarkedSeqs(0, false, wire::Ecn::kNotEct), std::vector<uint32_t>{});
  EXPECT_EQ(MarkedSeqs(0, true, wire::Ecn::kNotEct), std::vector<uint32_t>{});
}

TEST(Switch, PerPortQueueOverride) {
  Star s(Buffer(1 << 20));
  PortQueueConfig q;
  q.buffer_bytes = 2000;
  ASSERT_TRUE(s.fabric.SetPortQueue(s.to_b, q).ok());
  RecordingEndpoint rb(s.b);
  for (uint32_t i = 0; i < 4; i++) {
    ASSERT_TRUE(s.a->Send(MakeFrame({.src = s.a, .dst = s.b, .bytes = 1000, .seq = i})));
  }
  s.fabric.RunUntilIdle();
  EXPECT_EQ(rb.rx.size(), 2u);
}

TEST(Switch, RoutesByDestinationAddressV4AndV6) {
  Star s(Buffer(1 << 20));
  RecordingEndpoint ra(s.a), rb(s.b), rc(s.c);
  ASSERT_TRUE(s.a->Send(MakeFrame({.src = s.a, .dst = s.c, .seq = 1})));
  ASSERT_TRUE(s.a->Send(MakeFrame({.src = s.a, .dst = s.b, .v6 = true, .seq = 2})));
  ASSERT_TRUE(s.c->Send(MakeFrame({.src = s.c, .dst = s.a, .v6 = true, .seq = 3})));
  s.fabric.RunUntilIdle();
  ASSERT_EQ(rc.rx.size(), 1u);
  EXPECT_EQ(testing::FrameSeq(rc.rx[0].bytes), 1u);
  ASSERT_EQ(rb.rx.size(), 1u);
  EXPECT_EQ(testing::FrameSeq(rb.rx[0].bytes), 2u);
  ASSERT_EQ(ra.rx.size(), 1u);
  EXPECT_EQ(testing::FrameSeq(ra.rx[0].bytes), 3u);
  EXPECT_EQ(s.fabric.FindHost(s.c->ipv6()), s.c);
}

TEST(Switch, UnknownDestinationIsDroppedAsNoRoute) {
  Star s(Buffer(1 << 20));
  RecordingEndpoint rb(s.b);
  FrameSpec spec{.src = s.a, .dst = s.b};
  auto frame = MakeFrame(spec);
  frame[wire::kEthHeaderBytes + 19] = 99;  // destination 10.0.0.99 (checksum irrelevant here)
  ASSERT_TRUE(s.a->Send(frame));
  ASSERT_TRUE(s.a->Send(std::vector<uint8_t>(80, 0x55)));  // not IP at all
  s.fabric.RunUntilIdle();
  EXPECT_EQ(s.fabric.switch_no_route_drops(s.sw), 2u);
  EXPECT_EQ(s.fabric.total_drops(DropCause::kNoRoute), 2u);
  EXPECT_TRUE(rb.rx.empty());
  EXPECT_EQ(s.fabric.frames_in_flight(), 0u);
}

TEST(Switch, ForwardingLatencyAddsToArrival) {
  SwitchConfig sc = Buffer(1 << 20);
  sc.forwarding_latency_ps = 300 * kPsPerNs;
  Star s(sc);
  RecordingEndpoint rc(s.c);
  ASSERT_TRUE(s.a->Send(MakeFrame({.src = s.a, .dst = s.c, .bytes = 1000})));
  s.fabric.RunUntilIdle();
  ASSERT_EQ(rc.rx.size(), 1u);
  EXPECT_EQ(rc.rx[0].time, 2 * SerializationPs(1020, k100G) + 300 * kPsPerNs);
}

}  // namespace
}  // namespace metaroce::sim
