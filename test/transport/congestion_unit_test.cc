/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// ECN AIMD window arithmetic (lib/transport/congestion.cc) at its edges, and
// in one engine: a CE mark trims the path that saw it, and the next packets
// go to the paths that are clear.

#include "congestion_private.h"
#include "engine_unit_fixture.h"

namespace metaroce::transport::unit {
namespace {

constexpr uint32_t kMss = 4200;
constexpr TimeNs kRtt = 10'000;
constexpr CcLimits kLimits{kMss, 64 * kMss, kMss};

CcWindow Fresh(const CcLimits& l = kLimits) {
  CcWindow w;
  w.Reset(l);
  return w;
}

TEST(CcWindow, StartsAtItsMaximumAndAMarkedRoundTripHalvesIt) {
  CcWindow w = Fresh();
  EXPECT_EQ(w.cwnd, kLimits.max_bytes);
  w.OnAck(kLimits, 0, kRtt, 4 * kMss, 4, 1);
  EXPECT_EQ(w.cwnd, kLimits.max_bytes / 2);  // alpha starts at 1, as in DCTCP
  EXPECT_EQ(w.cuts, 1u);
}

TEST(CcWindow, ItIsCutAtMostOncePerRoundTrip) {
  CcWindow w = Fresh();
  w.OnAck(kLimits, 0, kRtt, kMss, 1, 1);
  const uint32_t after_one = w.cwnd;
  for (TimeNs t = 1; t < kRtt; t += kRtt / 8) w.OnAck(kLimits, t, kRtt, kMss, 1, 1);
  EXPECT_EQ(w.cwnd, after_one);  // marks of the same round trip: no second cut
  w.OnAck(kLimits, kRtt, kRtt, kMss, 1, 1);
  EXPECT_LT(w.cwnd, after_one);
  EXPECT_EQ(w.cuts, 2u);
}

TEST(CcWindow, AlphaFollowsTheMarkedFractionAndSetsTheCut) {
  CcWindow w = Fresh();
  // Round trips in which a quarter of the packets are marked.
  TimeNs t = 0;
  for (int round = 0; round < 200; round++, t += kRtt) {
    w.OnAck(kLimits, t, kRtt, 3 * kMss, 3, 0);
    w.OnAck(kLimits, t + 1, kRtt, kMss, 1, 1);
  }
  const double alpha = static_cast<double>(w.alpha) / CcWindow::kAlphaOne;
  EXPECT_NEAR(alpha, 0.25, 0.02);
  // A cut now takes alpha / 2 of the window (at the floor or not).
  w.cwnd = 32 * kMss;
  w.hold_until = 0;
  w.OnAck(kLimits, t, kRtt, kMss, 1, 1);
  EXPECT_NEAR(static_cast<double>(w.cwnd) / (32 * kMss), 1 - alpha / 2, 0.01);
}

TEST(CcWindow, AClearWindowOfAcknowledgementsAddsOneFullPacket) {
  CcWindow w = Fresh();
  w.cwnd = 10 * kMss;
  // A full window: each ACK's packet is replaced by a new one.
  w.inflight = 9 * kMss;
  for (int i = 0; i < 10; i++) w.OnAck(kLimits, i, kRtt, kMss, 1, 0);
  // +1 MSS per window acked (a little less: each step divides by the grown window).
  EXPECT_GE(w.cwnd, 10 * kMss + kMss * 9 / 10);
  EXPECT_LE(w.cwnd, 11 * kMss);
  // Never beyond the maximum.
  w.cwnd = kLimits.max_bytes - 1;
  w.OnAck(kLimits, 20, kRtt, 64 * kMss, 64, 0);
  EXPECT_EQ(w.cwnd, kLimits.max_bytes);
  // A tiny ACK still grows the window (by at least a byte): no stall at small sizes.
  w.cwnd = kMss;
  w.inflight = 0;
  w.OnAck(kLimits, 30, kRtt, 1, 1, 0);
  EXPECT_GT(w.cwnd, kMss);
}

TEST(CcWindow, AWindowThatIsNotInUseDoesNotGrow) {
  CcWindow w = Fresh();
  w.cwnd = 10 * kMss;
  w.inflight = 2 * kMss;  // the path sends less than its window allows
  for (int i = 0; i < 100; i++) w.OnAck(kLimits, i, kRtt, kMss, 1, 0);
  EXPECT_EQ(w.cwnd, 10 * kMss);
  w.inflight = 9 * kMss - 1;  // within a packet of full, counting what this ACK settled
  w.OnAck(kLimits, 200, kRtt, 1, 1, 0);
  EXPECT_EQ(w.cwnd, 10 * kMss + 1);
}

TEST(CcWindow, RoundTripsAtLeastHalfMarkedCountAsCongestedInARow) {
  CcWindow w = Fresh();
  TimeNs t = 0;
  auto round = [&](uint32_t pkts, uint32_t marked) {
    w.OnAck(kLimits, t, kRtt, pkts * kMss, pkts, marked);
    t += kRtt;
  };
  round(4, 2);
  round(4, 1);  // ends the half-marked round: one
  EXPECT_EQ(w.congested_rounds, 1u);
  round(4, 4);  // ends a quarter-marked round: the run breaks
  EXPECT_EQ(w.congested_rounds, 0u);
  round(4, 2);  // ends the all-marked round: one again
  EXPECT_EQ(w.congested_rounds, 1u);
  round(0, 0);  // ends the half-marked one: two
  EXPECT_EQ(w.congested_rounds, 2u);
  round(0, 0);  // an empty round trip says nothing
  EXPECT_EQ(w.congested_rounds, 2u);
}

TEST(CcWindow, NeverBelowOneFullPacketSoItAlwaysSends) {
  CcWindow w = Fresh();
  TimeNs t = 0;
  for (int i = 0; i < 100; i++, t += kRtt) w.OnAck(kLimits, t, kRtt, kMss, 1, 1);
  EXPECT_EQ(w.cwnd, kLimits.min_bytes);
  EXPECT_TRUE(w.HasRoom());  // nothing in flight: one packet may go
  w.inflight = kMss;
  EXPECT_FALSE(w.HasRoom());
  for (int i = 0; i < 10; i++) w.OnTimeout(kLimits);
  EXPECT_EQ(w.cwnd, kLimits.min_bytes);
}

TEST(CcWindow, APeersCountersCannotMarkMoreThanItAcknowledged) {
  CcWindow w = Fresh();
  w.OnAck(kLimits, 0, kRtt, 0, 0, 1'000'000);  // marks with nothing received: no cut
  EXPECT_EQ(w.cwnd, kLimits.max_bytes);
  w.OnAck(kLimits, kRtt, kRtt, kMss, 1, UINT32_MAX);  // counts as 1 of 1
  EXPECT_EQ(w.cwnd, kLimits.max_bytes / 2);
  EXPECT_LE(w.alpha, CcWindow::kAlphaOne);
}

TEST(CcWindow, TheLargestWindowsDoNotOverflow) {
  const CcLimits big{kMss, UINT32_MAX, 9200};
  CcWindow w = Fresh(big);
  w.cwnd = UINT32_MAX - 10;
  w.OnAck(big, 0, kRtt, UINT32_MAX, UINT32_MAX, 0);
  EXPECT_EQ(w.cwnd, UINT32_MAX);
  w.OnAck(big, 0, kRtt, UINT32_MAX, UINT32_MAX, UINT32_MAX);  // the same round trip: alpha 1
  EXPECT_EQ(w.cwnd, UINT32_MAX - UINT32_MAX / 2);
  // The round's counts (2 x UINT32_MAX packets) do not wrap: alpha moves by g / 2.
  w.OnAck(big, kRtt, kRtt, 1, 1, 0);
  EXPECT_NEAR(static_cast<double>(w.alpha) / CcWindow::kAlphaOne, 1 - 1.0 / 32, 0.002);
}

// ---- In the engine ----

class CongestionTest : public EngineUnitTest {};

TEST_F(CongestionTest, ACeMarkTrimsThePathThatSawItAndTheNextPacketsGoToTheClearOne) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_window_pkts = 8;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  const uint32_t start = Path(0).cwnd_bytes;
  ASSERT_GT(start, 0u);
  ASSERT_EQ(Path(1).cwnd_bytes, start);
  constexpr uint32_t kMsgs = 64;
  FillSource(kMsgs * kPayload);
  for (uint32_t i = 0; i < kMsgs; i++) {
    ASSERT_NO_FATAL_FAILURE(PostWrite(i, kPayload, uint64_t{i} * kPayload));
  }
  std::vector<Packet> out = Drain(now_);
  uint32_t sent[2] = {};
  for (const Packet& p : out) sent[p.path_id]++;
  ASSERT_EQ(sent[0], sent[1]);  // sprayed evenly while both are clear
  ASSERT_GE(sent[0], 8u);
  now_ += 10'000;
  // Path 0's receiver saw every packet marked; path 1's saw none.
  Packet a0 = Ack(0, sent[0]);
  a0.ack.rx_pkts = sent[0];
  a0.ack.ce_pkts = sent[0];
  a0.ack.ece = true;
  Feed(a0);
  Packet a1 = Ack(1, sent[1]);
  a1.ack.rx_pkts = sent[1];
  Feed(a1);
  EXPECT_EQ(Path(0).cwnd_bytes, start / 2);
  EXPECT_EQ(Path(0).cc_cuts, 1u);
  EXPECT_GE(Path(1).cwnd_bytes, start);
  EXPECT_EQ(Path(1).cc_cuts, 0u);
  uint32_t next[2] = {};
  for (const Packet& p : OfType(Drain(now_), PacketType::kWrite)) next[p.path_id]++;
  EXPECT_GT(next[1], next[0]);
  EXPECT_LE(next[0], sent[0] / 2 + 1);  // what half the window holds (and one over)
  EXPECT_GE(next[1], sent[1]);
}

TEST_F(CongestionTest, APathCongestedRoundAfterRoundWhileAnotherIsClearMovesToAFreshPort) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_window_pkts = 4;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  const uint16_t port0 = Path(0).src_port, port1 = Path(1).src_port;
  uint32_t rx[2] = {}, ce[2] = {}, psn[2] = {};
  FillSource(kPayload);
  uint64_t wr = 0;
  for (uint32_t round = 0; round <= config::kCcRepathRounds; round++) {
    for (int i = 0; i < 8; i++) ASSERT_NO_FATAL_FAILURE(PostWrite(wr++, kPayload));
    for (const Packet& p : OfType(Drain(now_), PacketType::kWrite)) psn[p.path_id] = p.data.psn + 1;
    now_ += 100'000;  // past a round trip (the RTT of these ACKs is 0: rto_initial_ns holds)
    for (uint16_t path : {0, 1}) {
      Packet a = Ack(path, psn[path]);
      rx[path] = psn[path];
      if (path == 0) ce[path] = rx[path];  // path 0: every packet marked; path 1: none
      a.ack.rx_pkts = rx[path];
      a.ack.ce_pkts = ce[path];
      Feed(a);
    }
    now_ += cfg.rto_initial_ns;
  }
  EXPECT_EQ(eng_->stats().cc_repaths, 1u);
  EXPECT_EQ(Path(0).repaths, 1u);
  EXPECT_NE(Path(0).src_port, port0);
  EXPECT_NE(Path(0).src_port, port1);
  EXPECT_EQ(Path(1).src_port, port1);
  EXPECT_EQ(Path(1).repaths, 0u);
}

TEST_F(CongestionTest, WithoutCongestionControlMarksChangeNoWindow) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_window_pkts = 8;
  cfg.congestion_control = false;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(32 * kPayload);
  for (uint32_t i = 0; i < 32; i++) {
    ASSERT_NO_FATAL_FAILURE(PostWrite(i, kPayload, uint64_t{i} * kPayload));
  }
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 16u);  // the packet windows: 8 per path
  Packet a0 = Ack(0, 8);
  a0.ack.rx_pkts = a0.ack.ce_pkts = 8;
  Feed(a0);
  EXPECT_EQ(Path(0).cc_cuts, 0u);
  EXPECT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 8u);
}

}  // namespace
}  // namespace metaroce::transport::unit
