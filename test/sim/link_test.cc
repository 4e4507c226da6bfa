/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Hosts and links: serialisation and propagation to the picosecond, the NIC
// queue, OnTxReady, timers, callbacks and configuration errors.

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

constexpr uint64_t k100G = 100 * kBpsPerGbps;

struct Pair {
  Fabric fabric{1};
  Topology topo;
  Host* a = nullptr;
  Host* b = nullptr;

  explicit Pair(BackToBackConfig c = {}) {
    topo = Must(BuildBackToBack(fabric, c));
    a = topo.hosts[0];
    b = topo.hosts[1];
  }
};

BackToBackConfig Link100G(SimTime delay_ps, uint32_t tx_queue = kDefaultTxQueueFrames) {
  BackToBackConfig c;
  c.link.rate_bps = k100G;
  c.link.delay_ps = delay_ps;
  c.tx_queue_frames = tx_queue;
  return c;
}

TEST(Link, SingleFrameArrivesAfterSerialisationPlusPropagation) {
  Pair p(Link100G(1 * kPsPerUs));
  RecordingEndpoint ra(p.a), rb(p.b);
  const auto frame = MakeFrame({.src = p.a, .dst = p.b, .bytes = 1000});
  ASSERT_TRUE(p.a->Send(frame));
  EXPECT_TRUE(p.fabric.RunUntilIdle());
  ASSERT_EQ(rb.rx.size(), 1u);
  // (1000 + 20 overhead) bytes * 8 bits / 100 Gbit/s = 81.6 ns, then 1 us of fibre.
  EXPECT_EQ(rb.rx[0].time, 81'600 + 1'000'000);
  EXPECT_EQ(rb.rx[0].bytes, frame);
  EXPECT_EQ(p.fabric.Now(), 81'600 + 1'000'000);
  // The NIC slot frees when the last bit leaves.
  ASSERT_EQ(ra.tx_ready.size(), 1u);
  EXPECT_EQ(ra.tx_ready[0], 81'600);
  const PortStats& s = p.fabric.port_stats(p.a->port());
  EXPECT_EQ(s.tx_frames, 1u);
  EXPECT_EQ(s.tx_bytes, 1000u);
  EXPECT_EQ(s.delivered_frames, 1u);
  EXPECT_EQ(p.b->stats().rx_bytes, 1000u);
  EXPECT_EQ(p.fabric.frames_in_flight(), 0u);
}

TEST(Link, OverheadIsConfigurableAndShortFramesArePadded) {
  BackToBackConfig c = Link100G(0);
  c.link.overhead_bytes = 24;  // count the FCS too
  Pair p(c);
  RecordingEndpoint rb(p.b);
  const std::vector<uint8_t> tiny(40, 0xee);  // not even IP: a wire needs no parsing
  ASSERT_TRUE(p.a->Send(tiny));
  p.fabric.RunUntilIdle();
  ASSERT_EQ(rb.rx.size(), 1u);
  EXPECT_EQ(rb.rx[0].time, (60 + 24) * 80);  // padded to 60 bytes
}

TEST(Link, BackToBackFramesArePipelinedAtLineRate) {
  Pair p(Link100G(500 * kPsPerNs));
  RecordingEndpoint rb(p.b);
  for (uint32_t i = 0; i < 10; i++) {
    ASSERT_TRUE(p.a->Send(MakeFrame({.src = p.a, .dst = p.b, .bytes = 4000, .seq = i})));
  }
  p.fabric.RunUntilIdle();
  ASSERT_EQ(rb.rx.size(), 10u);
  const SimTime ser = SerializationPs(4020, k100G);
  for (size_t i = 0; i < 10; i++) {
    EXPECT_EQ(rb.rx[i].time, static_cast<SimTime>(i + 1) * ser + 500'000);
    EXPECT_EQ(testing::FrameSeq(rb.rx[i].bytes), i);
  }
}

TEST(Link, TxQueueIsBoundedAndOnTxReadyRefills) {
  Pair p(Link100G(0, 4));
  RecordingEndpoint ra(p.a), rb(p.b);
  EXPECT_EQ(p.a->TxQueueCapacity(), 4u);
  for (int i = 0; i < 4; i++) {
    ASSERT_TRUE(p.a->Send(MakeFrame({.src = p.a, .dst = p.b, .bytes = 1000})));
  }
  EXPECT_EQ(p.a->TxQueueFree(), 0u);
  EXPECT_FALSE(p.a->Send(MakeFrame({.src = p.a, .dst = p.b, .bytes = 1000})));
  EXPECT_EQ(p.a->stats().send_rejected, 1u);
  // Refill from OnTxReady: 100 more frames, the wire never idles.
  for (uint32_t i = 0; i < 100; i++) {
    ra.backlog.push_back(MakeFrame({.src = p.a, .dst = p.b, .bytes = 1000, .seq = i}));
  }
  p.fabric.RunUntil(SerializationPs(1020, k100G));
  EXPECT_EQ(ra.tx_ready.size(), 1u);
  EXPECT_EQ(p.a->TxQueueFree(), 0u);  // refilled at once
  p.fabric.RunUntilIdle();
  ASSERT_EQ(rb.rx.size(), 104u);
  EXPECT_EQ(rb.rx.back().time, 104 * SerializationPs(1020, k100G));
  EXPECT_EQ(p.a->stats().sent_frames, 104u);
}

TEST(Link, SendRejectsBadSizes) {
  Pair p;
  EXPECT_FALSE(p.a->Send({}));
  std::vector<uint8_t> huge(kMaxFrameBytes + 1);
  EXPECT_FALSE(p.a->Send(huge));
  EXPECT_EQ(p.a->stats().send_rejected, 2u);
}

TEST(Link, UnlinkedHostCannotSend) {
  Fabric f(1);
  HostConfig c;
  c.ipv4 = wire::IpAddr::V4(10, 1, 1, 1);
  Host* h = Must(f.AddHost(c));
  EXPECT_FALSE(h->Send(std::vector<uint8_t>(100)));
  EXPECT_EQ(h->line_rate_bps(), 0u);
}

TEST(Link, FramesWithoutEndpointAreCounted) {
  Pair p;
  ASSERT_TRUE(p.a->Send(MakeFrame({.src = p.a, .dst = p.b})));
  p.fabric.RunUntilIdle();
  EXPECT_EQ(p.b->stats().rx_no_endpoint, 1u);
  EXPECT_EQ(p.fabric.frames_in_flight(), 0u);
}

TEST(Link, EndpointMaySendFromOnFrame) {
  // A reflector: every frame is answered. The received bytes stay valid while
  // the reply is built (the pool may grow during the call).
  Pair p(Link100G(1 * kPsPerUs));
  RecordingEndpoint ra(p.a), rb(p.b);
  int replies = 0;
  rb.on_frame = [&](SimTime, std::span<const uint8_t> f) {
    std::vector<uint8_t> copy(f.begin(), f.end());
    for (int i = 0; i < 3; i++) ASSERT_TRUE(p.b->Send(copy));
    EXPECT_TRUE(std::equal(copy.begin(), copy.end(), f.begin(), f.end()));
    replies++;
  };
  ASSERT_TRUE(p.a->Send(MakeFrame({.src = p.a, .dst = p.b})));
  p.fabric.RunUntilIdle();
  EXPECT_EQ(replies, 1);
  EXPECT_EQ(ra.rx.size(), 3u);
}

TEST(Link, TraceRecordsOneFramesLife) {
  Pair p(Link100G(1 * kPsPerUs));
  RecordingEndpoint rb(p.b);
  std::vector<TraceRecord> trace;
  p.fabric.SetTraceObserver([&](const TraceRecord& r) { trace.push_back(r); });
  const auto frame = MakeFrame({.src = p.a, .dst = p.b, .bytes = 1000});
  ASSERT_TRUE(p.a->Send(frame));
  p.fabric.RunUntilIdle();
  ASSERT_EQ(trace.size(), 4u);
  const TraceKind want[] = {TraceKind::kSend, TraceKind::kEnqueue, TraceKind::kTxDone,
                            TraceKind::kDeliver};
  const SimTime at[] = {0, 0, 81'600, 1'081'600};
  for (size_t i = 0; i < 4; i++) {
    EXPECT_EQ(trace[i].kind, want[i]) << TraceKindName(trace[i].kind);
    EXPECT_EQ(trace[i].time, at[i]);
    EXPECT_EQ(trace[i].frame_id, 1u);
    EXPECT_EQ(trace[i].frame_hash, HashBytes(frame));
  }
  EXPECT_EQ(p.fabric.trace_records(), 4u);
  TraceHash h;
  for (const auto& r : trace) h.Add(r);
  EXPECT_EQ(h.value(), p.fabric.trace_hash());
}

TEST(Link, HostStreamsAreSeededPerHost) {
  Pair p1, p2;
  const uint64_t a1 = p1.a->rng().Next(), b1 = p1.b->rng().Next();
  EXPECT_NE(a1, b1);
  EXPECT_EQ(a1, p2.a->rng().Next());
  EXPECT_EQ(b1, p2.b->rng().Next());
  Fabric other(2);
  const Topology t = Must(BuildBackToBack(other, {}));
  EXPECT_NE(a1, t.hosts[0]->rng().Next());
}

// ---- Timers -------------------------------------------------------------------

TEST(Timer, FiresAtTheDeadline) {
  Pair p;
  RecordingEndpoint ra(p.a);
  p.a->SetTimer(5 * kPsPerUs);
  EXPECT_EQ(p.a->TimerDeadline(), 5 * kPsPerUs);
  EXPECT_TRUE(p.fabric.RunUntilIdle());
  EXPECT_EQ(ra.timer_fires, std::vector<SimTime>{5 * kPsPerUs});
  EXPECT_EQ(p.a->TimerDeadline(), kSimTimeNever);
  EXPECT_EQ(p.a->stats().timers_fired, 1u);
}

TEST(Timer, RearmingReplacesTheDeadline) {
  Pair p;
  RecordingEndpoint ra(p.a);
  p.a->SetTimer(5 * kPsPerUs);
  p.a->SetTimer(9 * kPsPerUs);  // later: replaces
  p.a->SetTimer(7 * kPsPerUs);  // earlier than the last, later than the first
  p.fabric.RunUntilIdle();
  EXPECT_EQ(ra.timer_fires, std::vector<SimTime>{7 * kPsPerUs});

  p.a->SetTimer(20 * kPsPerUs);
  p.a->SetTimer(12 * kPsPerUs);  // earlier: replaces
  p.fabric.RunUntilIdle();
  EXPECT_EQ(ra.timer_fires, (std::vector<SimTime>{7 * kPsPerUs, 12 * kPsPerUs}));
}

TEST(Timer, CancelledTimerNeitherFiresNorMovesTheClock) {
  Pair p;
  RecordingEndpoint ra(p.a);
  p.a->SetTimer(1 * kPsPerSec);
  p.fabric.RunUntil(1 * kPsPerUs);
  p.a->CancelTimer();
  EXPECT_TRUE(p.fabric.RunUntilIdle());
  EXPECT_TRUE(ra.timer_fires.empty());
  EXPECT_EQ(p.fabric.Now(), 1 * kPsPerUs);
}

TEST(Timer, PastDeadlineFiresNowAndPeriodicRearmWorks) {
  Pair p;
  RecordingEndpoint ra(p.a);
  p.fabric.RunUntil(10 * kPsPerUs);
  p.a->SetTimer(3 * kPsPerUs);
  p.fabric.RunUntil(10 * kPsPerUs);
  EXPECT_EQ(ra.timer_fires, std::vector<SimTime>{10 * kPsPerUs});
  ra.on_timer = [&](SimTime now) {
    if (ra.timer_fires.size() < 5) p.a->SetTimer(now + 2 * kPsPerUs);
  };
  p.a->SetTimer(11 * kPsPerUs);
  p.fabric.RunUntilIdle();
  EXPECT_EQ(ra.timer_fires, (std::vector<SimTime>{10 * kPsPerUs, 11 * kPsPerUs, 13 * kPsPerUs,
                                                  15 * kPsPerUs, 17 * kPsPerUs}));
}

TEST(Timer, ManyLaterRearmsKeepOneHeapEntry) {
  Pair p;
  RecordingEndpoint ra(p.a);
  for (int i = 1; i <= 10'000; i++) p.a->SetTimer(i * kPsPerUs);
  EXPECT_EQ(p.fabric.pending_events(), 1u);
  p.fabric.RunUntilIdle();
  EXPECT_EQ(ra.timer_fires, std::vector<SimTime>{10'000 * kPsPerUs});
}

// ---- Running ------------------------------------------------------------------

TEST(Run, RunUntilAdvancesTheClockAndCallbacksRunInOrder) {
  Pair p;
  std::vector<std::pair<SimTime, int>> ran;
  p.fabric.ScheduleCallback(3 * kPsPerUs, [&] { ran.emplace_back(p.fabric.Now(), 1); });
  p.fabric.ScheduleCallback(2 * kPsPerUs, [&] {
    ran.emplace_back(p.fabric.Now(), 2);
    p.fabric.ScheduleCallback(3 * kPsPerUs, [&] { ran.emplace_back(p.fabric.Now(), 3); });
  });
  p.fabric.RunUntil(2500 * kPsPerNs);
  EXPECT_EQ(p.fabric.Now(), 2500 * kPsPerNs);
  EXPECT_EQ(ran.size(), 1u);
  p.fabric.RunUntil(3 * kPsPerUs);  // events at exactly t run
  EXPECT_EQ(ran, (std::vector<std::pair<SimTime, int>>{
                     {2 * kPsPerUs, 2}, {3 * kPsPerUs, 1}, {3 * kPsPerUs, 3}}));
  EXPECT_TRUE(p.fabric.RunUntilIdle());
}

TEST(Run, RunUntilIdleStopsAtTheLimit) {
  Pair p;
  RecordingEndpoint ra(p.a);
  p.a->SetTimer(10 * kPsPerUs);
  EXPECT_FALSE(p.fabric.RunUntilIdle(5 * kPsPerUs));
  EXPECT_TRUE(ra.timer_fires.empty());
  EXPECT_TRUE(p.fabric.RunUntilIdle(10 * kPsPerUs));
  EXPECT_EQ(ra.timer_fires.size(), 1u);
}

// ---- Configuration errors -------------------------------------------------------

TEST(Config, HostErrorsNameTheField) {
  Fabric f(1);
  HostConfig c;
  c.name = "h";
  auto r = f.AddHost(c);  // no address
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("ipv4"), std::string::npos) << r.status();
  c.ipv4 = wire::IpAddr::V4(10, 0, 0, 1);
  c.tx_queue_frames = 0;
  r = f.AddHost(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tx_queue_frames"), std::string::npos) << r.status();
  c.tx_queue_frames = 8;
  ASSERT_TRUE(f.AddHost(c).ok());
  r = f.AddHost(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("already used"), std::string::npos) << r.status();
}

TEST(Config, LinkErrorsNameTheField) {
  Fabric f(1);
  HostConfig c;
  c.ipv4 = wire::IpAddr::V4(10, 0, 0, 1);
  Host* a = Must(f.AddHost(c));
  c.ipv4 = wire::IpAddr::V4(10, 0, 0, 2);
  Host* b = Must(f.AddHost(c));
  LinkConfig l;
  l.rate_bps = 0;
  auto r = f.Connect(NodeRef::OfHost(a->id()), NodeRef::OfHost(b->id()), l);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rate_bps"), std::string::npos) << r.status();
  l = {};
  l.delay_ps = -1;
  r = f.Connect(NodeRef::OfHost(a->id()), NodeRef::OfHost(b->id()), l);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("delay_ps"), std::string::npos) << r.status();
  ASSERT_TRUE(f.Connect(NodeRef::OfHost(a->id()), NodeRef::OfHost(b->id()), {}).ok());
  r = f.Connect(NodeRef::OfHost(a->id()), NodeRef::OfSwitch(0), {});
  ASSERT_FALSE(r.ok());
  r = f.Connect(NodeRef::OfSwitch(3), NodeRef::OfSwitch(4), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no switch"), std::string::npos) << r.status();
}

TEST(Config, PortQueueOnlyOnSwitchPorts) {
  Pair p;
  auto s = p.fabric.SetPortQueue(p.a->port(), {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tx_queue_frames"), std::string::npos) << s;
}

}  // namespace
}  // namespace metaroce::sim
