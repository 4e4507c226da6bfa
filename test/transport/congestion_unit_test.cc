/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// ECN AIMD window arithmetic (lib/transport/congestion.cc) at its edges, and
// in one engine: a CE mark trims the path that saw it, and the next packets
// go to the paths that are clear.

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "congestion_private.h"
#include "engine_unit_fixture.h"
#include "fair_share_private.h"

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

TEST(CcWindow, AWindowThePacerHoldsBackIsInUse) {
  // Window pacing keeps inflight below the window while data waits; that
  // is use, or a paced window (and the pacer's rate) would never grow.
  CcWindow w = Fresh();
  w.cwnd = 10 * kMss;
  w.inflight = 2 * kMss;
  w.OnAck(kLimits, 0, kRtt, kMss, 1, 0, 0, /*held=*/true);
  EXPECT_GT(w.cwnd, 10 * kMss);
}

TEST(CcWindow, AnRttAboveTheDelayTargetCutsByItsExcessOncePerRoundTrip) {
  constexpr TimeNs kTarget = 100'000;
  CcWindow w = Fresh();
  // 150 us against 100: a cut of 0.8 x 50 / 150 (205 / 256 x 1 / 3 = 68 / 256).
  const uint32_t start = w.cwnd;
  w.OnAck(kLimits, 0, 150'000, kMss, 1, 0, kTarget);
  EXPECT_EQ(w.cwnd, start - static_cast<uint32_t>(uint64_t{start} * 68 >> 8));
  EXPECT_EQ(w.cuts, 1u);
  EXPECT_EQ(w.delay_cuts, 1u);
  // Within that round trip no second cut, and no growth while above the target.
  const uint32_t once = w.cwnd;
  w.inflight = once;
  for (TimeNs t = 1; t < 150'000; t += 10'000) w.OnAck(kLimits, t, 150'000, kMss, 1, 0, kTarget);
  EXPECT_EQ(w.cwnd, once);
  // A far larger RTT cuts by half at most.
  w.OnAck(kLimits, 150'000, 10 * kTarget, kMss, 1, 0, kTarget);
  EXPECT_EQ(w.cwnd, once - once / 2);
  EXPECT_EQ(w.delay_cuts, 2u);
  // At or below the target, or with no target, the window grows as before.
  const uint32_t low = w.cwnd;
  w.inflight = low;
  w.OnAck(kLimits, 2'000'000, kTarget, kMss, 1, 0, kTarget);
  w.OnAck(kLimits, 2'000'001, 10 * kTarget, kMss, 1, 0, 0);
  EXPECT_GT(w.cwnd, low);
  EXPECT_EQ(w.delay_cuts, 2u);
}

TEST(CcWindow, DelayCutsNeverGoBelowOneFullPacket) {
  CcWindow w = Fresh();
  for (TimeNs t = 0; t < 100 * kRtt; t += kRtt) w.OnAck(kLimits, t, 10 * kRtt, kMss, 1, 0, kRtt);
  EXPECT_EQ(w.cwnd, kLimits.min_bytes);
  EXPECT_TRUE(w.HasRoom() || w.inflight >= w.cwnd);
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

TEST(CcWindow, SlowStartDoublesPerRoundTripUntilTheFirstMark) {
  constexpr CcLimits kSmall{kMss, 64 * kMss, kMss, 4 * kMss};
  CcWindow w = Fresh(kSmall);
  EXPECT_EQ(w.cwnd, 4 * kMss);
  EXPECT_TRUE(w.slow_start);
  // A round trip of a full window acknowledged: the window doubles.
  TimeNs t = 0;
  for (int round = 0; round < 3; round++, t += kRtt) {
    const uint32_t start = w.cwnd;
    for (uint32_t i = 0; i < start / kMss; i++) {
      w.inflight = w.cwnd - kMss;  // in use: the sender keeps it full
      w.OnAck(kSmall, t + i, kRtt, kMss, 1, 0);
    }
    EXPECT_EQ(w.cwnd, 2 * start) << "round " << round;
  }
  EXPECT_EQ(w.cwnd, 32 * kMss);
  // Never beyond the maximum.
  w.inflight = w.cwnd;
  w.OnAck(kSmall, t, kRtt, 64 * kMss, 64, 0);
  EXPECT_EQ(w.cwnd, kSmall.max_bytes);
  // The first mark ends it: a cut, then one packet per round trip.
  w = Fresh(kSmall);
  w.OnAck(kSmall, 0, kRtt, kMss, 1, 1);
  EXPECT_FALSE(w.slow_start);
  EXPECT_EQ(w.cwnd, 2 * kMss);
  w.inflight = w.cwnd - kMss;
  w.OnAck(kSmall, 2 * kRtt, kRtt, kMss, 1, 0);
  EXPECT_LT(w.cwnd, 3 * kMss);
  // So do a delay cut and a timeout.
  w = Fresh(kSmall);
  w.OnAck(kSmall, 0, 2 * kRtt, kMss, 1, 0, kRtt);
  EXPECT_FALSE(w.slow_start);
  w = Fresh(kSmall);
  w.OnTimeout(kSmall);
  EXPECT_FALSE(w.slow_start);
  // A window started at its maximum has nothing to search for.
  EXPECT_FALSE(Fresh().slow_start);
}

TEST(CcWindow, SlowStartGrowsOnlyAWindowInUse) {
  constexpr CcLimits kSmall{kMss, 64 * kMss, kMss, 4 * kMss};
  CcWindow w = Fresh(kSmall);
  w.inflight = 0;  // an application sending one packet at a time
  for (int i = 0; i < 100; i++) w.OnAck(kSmall, i, kRtt, kMss, 1, 0);
  EXPECT_EQ(w.cwnd, 4 * kMss);
  EXPECT_TRUE(w.slow_start);
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

// ---- The receiver's fair share ----

uint32_t Share(uint64_t capacity, std::vector<uint64_t> rates, uint64_t prev = 0) {
  return FairShareMbps(capacity, rates, prev);
}

TEST(FairShare, NoSenderGetsEverythingOneGetsEverything) {
  EXPECT_EQ(Share(100'000, {}), 100'000u);
  EXPECT_EQ(Share(100'000, {0}), 100'000u);
  EXPECT_EQ(Share(100'000, {100'000}), 100'000u);
  EXPECT_EQ(Share(100'000, {250'000}), 100'000u);  // measured over a burst: still the capacity
}

TEST(FairShare, SendersThatWantMoreSplitItEqually) {
  EXPECT_EQ(Share(100'000, std::vector<uint64_t>(8, 12'500)), 12'500u);
  EXPECT_EQ(Share(100'000, std::vector<uint64_t>(8, 40'000)), 12'500u);
  // Thousands of senders: the share is still exact, and never 0 (0 means "no limit").
  EXPECT_EQ(Share(100'000, std::vector<uint64_t>(4000, 25)), 25u);
  EXPECT_EQ(Share(1'000, std::vector<uint64_t>(4000, 1)), 1u);
}

TEST(FairShare, ASenderLimitedElsewhereKeepsItsRateAndTheRestIsShared) {
  // One sender uses 10 of a 100 share: the other two split the 90 left.
  EXPECT_EQ(Share(100'000, {10'000, 50'000, 50'000}), 45'000u);
  // A new sender measured at almost nothing, the others held to the last
  // share: they split what is left, and the newcomer may grow to it.
  EXPECT_EQ(Share(100'000, {1'000, 33'000, 33'000}, 33'333), 49'500u);
  // Without knowing they were held, they look limited elsewhere too: each
  // may grow by an equal part of the 33 left.
  EXPECT_EQ(Share(100'000, {1'000, 33'000, 33'000}), 44'000u);
  // A sender held to the level measures a little under it: still wanting more.
  EXPECT_EQ(Share(100'000, {45'000, 50'000}), 50'000u);
}

TEST(FairShare, TheSendersLimitedElsewhereAreCountedWithWhatTheyUse) {
  // For water-filling across runtime shards (runtime::ShardCapacityMbps).
  std::vector<uint64_t> rates = {45'000, 5'000, 45'000, 5'000};
  FairShareLimited lim;
  EXPECT_EQ(FairShareMbps(100'000, rates, 0, &lim), 45'000u);
  EXPECT_EQ(lim.senders, 2u);
  EXPECT_EQ(lim.mbps, 10'000u);
  rates = {10'000, 20'000};
  // Both limited: the faster one's 20 plus half of the 70 left.
  EXPECT_EQ(FairShareMbps(100'000, rates, 0, &lim), 55'000u);
  EXPECT_EQ(lim.senders, 2u);
  EXPECT_EQ(lim.mbps, 30'000u);
  rates = {};
  FairShareMbps(100'000, rates, 0, &lim);
  EXPECT_EQ(lim.senders, 0u);
  EXPECT_EQ(lim.mbps, 0u);
}

TEST(FairShare, WhenEverySenderIsLimitedElsewhereEachMayGrow) {
  // Two senders at 10 each of 100: each may grow by half of the 80 left, so
  // that both together fit (80 each, what is left to each, was twice the
  // link; 8 senders still in slow start, all measured limited, overran a
  // 400 Gbit/s link by half).
  EXPECT_EQ(Share(100'000, {10'000, 10'000}), 50'000u);
  EXPECT_EQ(Share(100'000, {10'000, 30'000}), 60'000u);
  // Eight at 40 of 392 (an equal share 49): 40 + 72 / 8 = 49, not 72.
  EXPECT_EQ(Share(392'000, std::vector<uint64_t>(8, 40'000)), 49'000u);
  // Senders that stopped (rate 0) leave their shares to the one held to its share.
  EXPECT_EQ(Share(100'000, {0, 0, 0, 25'000}, 25'000), 100'000u);
  EXPECT_EQ(Share(100'000, {0, 0, 0, 50'000}, 25'000), 100'000u);
}

TEST(FairShare, TheCapacityCanBeChangedOnlyWhereHintsAreOn) {
  ProcessMemory mem;
  EngineConfig cfg = BaseConfig();
  auto off = Engine::Create(cfg, &mem);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE((*off)->SetRxCapacity(50'000));  // no hints: stays off
  EXPECT_EQ((*off)->GetShareInfo().capacity_mbps, 0u);
  cfg.rx_capacity_mbps = 100'000;
  auto on = Engine::Create(cfg, &mem);
  ASSERT_TRUE(on.ok());
  EXPECT_EQ((*on)->GetShareInfo().capacity_mbps, 100'000u);
  EXPECT_TRUE((*on)->SetRxCapacity(25'000));
  EXPECT_EQ((*on)->GetShareInfo().capacity_mbps, 25'000u);
  EXPECT_FALSE((*on)->SetRxCapacity(0));
  EXPECT_FALSE((*on)->SetRxCapacity(uint64_t{UINT32_MAX} + 1));
  EXPECT_EQ((*on)->GetShareInfo().capacity_mbps, 25'000u);
  EXPECT_EQ((*on)->ShareSenders(), 0u);
}

TEST(FairShare, TheReceiverDrainsItsQueueOnlyWhileMostArrivalsComeMarked) {
  // Up to three quarters marked: a busy link's jitter crossing the
  // threshold (32 paced senders at 96 % of the link), nothing held back.
  static_assert(config::kFairShareDrainFromPct == 75);
  EXPECT_EQ(ShareDrainMbps(100'000, 1000, 0), 0u);
  EXPECT_EQ(ShareDrainMbps(100'000, 1000, 500), 0u);
  EXPECT_EQ(ShareDrainMbps(100'000, 1000, 750), 0u);
  EXPECT_EQ(ShareDrainMbps(100'000, 0, 0), 0u);  // nothing arrived
  // Then (f - 3/4) / (1/4) of capacity >> kFairShareDrainShift, all of it
  // when every byte came marked.
  const uint64_t most = 100'000 >> config::kFairShareDrainShift;
  EXPECT_EQ(ShareDrainMbps(100'000, 1000, 1000), most);
  EXPECT_EQ(ShareDrainMbps(100'000, 1000, 875), most / 2);
  EXPECT_EQ(ShareDrainMbps(100'000, 1000, 5000), most);  // more marked than arrived: all
  // The largest figures: Mbit/s near 2^32, bytes of a long interval.
  EXPECT_EQ(ShareDrainMbps(UINT32_MAX, uint64_t{1} << 40, uint64_t{1} << 40),
            uint64_t{UINT32_MAX} >> config::kFairShareDrainShift);
}

TEST(FairShare, TheLargestFiguresDoNotOverflow) {
  EXPECT_EQ(Share(UINT32_MAX, {UINT64_MAX / 200, 0}), UINT32_MAX);
  EXPECT_EQ(Share(uint64_t{UINT32_MAX} * 4, {}), UINT32_MAX);  // clamped to the wire field
  EXPECT_EQ(Share(UINT32_MAX, std::vector<uint64_t>(2, UINT32_MAX)), UINT32_MAX / 2);
}

// ---- In the engine ----

class CongestionTest : public EngineUnitTest {
 protected:
  static constexpr uint64_t kCapacityMbps = 100'000;
  /** The engine as a receiver that hints: kCapacityMbps of inbound capacity. */
  /**
   * The WRITE packets of a new connection's first window of @p window_pkts
   * over @p paths paths (a message of four windows, stopped by the window).
   */
  /** The four WRITE packets of two WRITEs of two packets each, posted together. */
  std::vector<Packet> TwoTwoPacketWrites(uint64_t first_wr_id) {
    FillSource(4 * kPayload);
    PostWrite(first_wr_id, 2 * kPayload);
    PostWrite(first_wr_id + 1, 2 * kPayload, 2 * kPayload);
    if (HasFatalFailure()) return {};
    std::vector<Packet> out = OfType(Drain(now_), PacketType::kWrite);
    EXPECT_EQ(out.size(), 4u);
    return out;
  }
  std::vector<Packet> FirstWindow(uint16_t paths, uint32_t window_pkts) {
    EngineConfig cfg = BaseConfig();
    cfg.num_paths = paths;
    cfg.initial_window_bytes = window_pkts * kPayload;
    Start(cfg);
    if (HasFatalFailure()) return {};
    PostWrite(1, 4 * window_pkts * kPayload);
    if (HasFatalFailure()) return {};
    std::vector<Packet> out = OfType(Drain(now_), PacketType::kWrite);
    EXPECT_GE(out.size(), window_pkts / 2);
    EXPECT_LT(out.size(), 4 * window_pkts);  // the window stopped it
    return out;
  }
  void StartHinting() {
    EngineConfig cfg = BaseConfig();
    cfg.rx_capacity_mbps = kCapacityMbps;
    ASSERT_NO_FATAL_FAILURE(Start(cfg));
  }
  /** The peer sends one small WRITE every 10 us for @p span, on path 0. */
  void FeedWritesFor(TimeNs span) {
    for (const TimeNs end = now_ + span; now_ < end; now_ += 10'000, feed_psn_++) {
      FeedWrite(0, feed_psn_, feed_psn_, feed_psn_);
    }
  }
  uint32_t feed_psn_ = 0;  ///< the next PSN (and MSN) FeedWritesFor sends
  /**
   * The engine of @p cfg with a QP connected to the peer, which has not
   * answered: the engine's one CONN_REQ into @p req.
   */
  void StartRequesting(const EngineConfig& cfg, std::vector<Packet>* req) {
    ASSERT_NO_FATAL_FAILURE(CreateEngine(cfg));
    ASSERT_TRUE(eng_->ConnectQp(qpn_, {PeerIp(), PeerMac(), wire::kDefaultUdpPort}, kPeerQpn).ok());
    *req = OfType(Drain(now_), PacketType::kConnReq);
    ASSERT_EQ(req->size(), 1u);
  }
  /** The engine's full packet (the largest header stack over max_payload) in bytes: the pacer's
   * random phase is at most its time. */
  uint32_t FullPacketBytes() const { return EnginePeer::Impl(*eng_).path_cc.mss_bytes; }
  /** Two paths of @p window packets each. */
  static EngineConfig TwoPaths(uint32_t window = 8) {
    EngineConfig cfg = BaseConfig();
    cfg.num_paths = 2;
    cfg.path_window_pkts = window;
    return cfg;
  }
  /** @p n one-packet WRITEs, ids from @p first, from successive source chunks. */
  void PostWrites(uint64_t first, uint32_t n) {
    FillSource(size_t{n} * kPayload);
    for (uint32_t i = 0; i < n; i++) {
      ASSERT_NO_FATAL_FAILURE(PostWrite(first + i, kPayload, uint64_t{i} * kPayload));
    }
  }
  /**
   * kCcRepathRounds + 1 round trips of 8 WRITEs on two paths of @p cfg, every
   * packet of path 0 CE-marked, none of path 1's; the PROBEs sent meanwhile
   * and their source ports into @p probes.
   */
  void CongestPathZero(const EngineConfig& cfg, std::vector<std::pair<Packet, uint16_t>>* probes) {
    uint32_t rx[2] = {}, ce[2] = {}, psn[2] = {};
    for (uint32_t round = 0; round <= config::kCcRepathRounds; round++) {
      ASSERT_NO_FATAL_FAILURE(PostWrites(8 * round, 8));
      std::vector<wire::FrameInfo> info;
      const std::vector<Packet> out = Drain(now_, &info);
      for (size_t i = 0; i < out.size(); i++) {
        if (out[i].type == PacketType::kWrite) psn[out[i].path_id] = out[i].data.psn + 1;
        if (out[i].type == PacketType::kProbe) probes->emplace_back(out[i], info[i].src_port);
      }
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
    std::vector<wire::FrameInfo> info;
    const std::vector<Packet> out = Drain(now_, &info);
    for (size_t i = 0; i < out.size(); i++) {
      if (out[i].type == PacketType::kProbe) probes->emplace_back(out[i], info[i].src_port);
    }
  }
};

TEST_F(CongestionTest, ACeMarkTrimsThePathThatSawItAndTheNextPacketsGoToTheClearOne) {
  ASSERT_NO_FATAL_FAILURE(Start(TwoPaths()));
  const uint32_t start = Path(0).cwnd_bytes;
  ASSERT_GT(start, 0u);
  ASSERT_EQ(Path(1).cwnd_bytes, start);
  ASSERT_NO_FATAL_FAILURE(PostWrites(0, 64));
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

// The same where neither window fills (what the pacer lets a path carry is
// far below its window, as on any fast fabric): the mark still moves the
// next packets, because paths are sprayed in proportion to their windows.
// In plain turns nothing moved until the path's window was cut below its
// share of the flight: mr-sim's permutation held 700 KB queues on the
// spines for tens of microseconds.
TEST_F(CongestionTest, ACeMarkMovesPacketsOffThePathEvenWhereNoWindowFills) {
  ASSERT_NO_FATAL_FAILURE(Start(TwoPaths(64)));
  ASSERT_NO_FATAL_FAILURE(PostWrites(0, 8));
  uint32_t sent[2] = {};
  for (const Packet& p : OfType(Drain(now_), PacketType::kWrite)) sent[p.path_id]++;
  ASSERT_EQ(sent[0], 4u);
  ASSERT_EQ(sent[1], 4u);
  now_ += 10'000;
  Packet a0 = Ack(0, sent[0]);
  a0.ack.rx_pkts = a0.ack.ce_pkts = sent[0];
  a0.ack.ece = true;
  Feed(a0);
  Packet a1 = Ack(1, sent[1]);
  a1.ack.rx_pkts = sent[1];
  Feed(a1);
  ASSERT_EQ(Path(0).cwnd_bytes, Path(1).cwnd_bytes / 2);
  // Twelve more, nothing in flight: both windows hold them all.
  ASSERT_NO_FATAL_FAILURE(PostWrites(8, 12));
  uint32_t next[2] = {};
  for (const Packet& p : OfType(Drain(now_), PacketType::kWrite)) next[p.path_id]++;
  EXPECT_EQ(next[0] + next[1], 12u);
  EXPECT_EQ(next[1], 2 * next[0]);  // as their windows: 2 to 1
  EXPECT_EQ(Path(0).inflight, next[0]);
}

// The receiver acknowledges a path every ack_every_pkts (4) packets, or after
// ack_delay_ns (longer than a data-center round trip). A first window of
// 16 packets over 8 paths puts 2 on each, under that count: before, only
// the packet that closed the window asked for its ACK, each of the others
// was held, and the window sat still for most of a round trip (in mr-sim's
// 8-sender incast it sent for 1 us and waited 5).
TEST_F(CongestionTest, EveryPacketOfAThinWindowAsksForItsAckAtOnce) {
  const std::vector<Packet> out = FirstWindow(8, 16);
  for (size_t i = 0; i < out.size(); i++) {
    EXPECT_NE(out[i].flags & wire::flags::kAckReq, 0) << i;
  }
}

// A window that gives every path the receiver's count or more (64 packets
// over 4 paths: 16 a path) leaves its ACKs to that count: no packet asks,
// not even the one that closes it.
TEST_F(CongestionTest, AThickWindowLeavesItsAcksToTheReceiversCount) {
  const std::vector<Packet> out = FirstWindow(4, 64);
  for (size_t i = 0; i < out.size(); i++) {
    EXPECT_EQ(out[i].flags & wire::flags::kAckReq, 0) << i;
  }
}

// Small messages sent together ask for one ACK, on the last packet of the
// burst: each asked for its own, which cost an ACK per path per poll (0.40
// ACKs per data packet in memif's 64 B write_bw, 0.27 now).
TEST_F(CongestionTest, OnlyTheLastMessageOfABurstAsksForItsAck) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 4;
  cfg.initial_window_bytes = 64 * kPayload;  // thick: the window's own rule does not ask
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(8 * kPayload);
  for (uint32_t i = 0; i < 8; i++) ASSERT_NO_FATAL_FAILURE(PostWrite(i, kPayload, i * kPayload));
  const std::vector<Packet> out = OfType(Drain(now_), PacketType::kWrite);
  ASSERT_EQ(out.size(), 8u);
  for (const Packet& p : out) {
    EXPECT_EQ((p.flags & wire::flags::kAckReq) != 0, p.data.msn == 7) << p.data.msn;
  }
  // A message of several packets asks on its last one even with more behind
  // it: its ACK is one in many packets, and without it mr-sim's slowest flow
  // under 10 % loss on one spine came later in every seed (gray, 4 seeds).
  for (const Packet& p : TwoTwoPacketWrites(8)) {
    EXPECT_EQ((p.flags & wire::flags::kAckReq) != 0, p.data.msg_offset == kPayload)
        << p.data.msn << " " << p.data.msg_offset;
  }
}

// The receiver's side of it: an ACK_REQ asks for every path's ACK, so the
// burst's packets on other paths are not held for ack_delay_ns; and one of
// them that arrives after the request, sent before it, is acknowledged at
// once. A packet sent after the request is held as usual.
TEST_F(CongestionTest, AnAckRequestIsAnsweredOnEveryPathThatHoldsAnAck) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  const auto write = [&](uint16_t path, uint32_t psn, uint32_t msn, int64_t sent_ns, bool ask) {
    Packet w = SmallWrite(path, psn, psn, msn);
    w.data.tx_ts_ns = static_cast<uint32_t>(now_ + sent_ns);
    w.flags = ask ? wire::flags::kAckReq : 0;
    return w;
  };
  const auto acked_paths = [&] {
    std::vector<uint16_t> paths;
    for (const Packet& a : OfType(Drain(now_), PacketType::kAck)) paths.push_back(a.path_id);
    std::sort(paths.begin(), paths.end());
    return paths;
  };
  for (uint16_t path = 0; path < 3; path++) Feed(write(path, 0, path, 0, false));
  EXPECT_TRUE(acked_paths().empty());  // held: fewer than ack_every_pkts each
  Feed(write(3, 0, 3, 0, true));
  EXPECT_EQ(acked_paths(), (std::vector<uint16_t>{0, 1, 2, 3}));
  Feed(write(0, 1, 4, -1, false));  // sent before the request, on a slower path
  EXPECT_EQ(acked_paths(), (std::vector<uint16_t>{0}));
  Feed(write(1, 1, 5, 1, false));  // sent after it
  EXPECT_TRUE(acked_paths().empty());
  now_ += BaseConfig().ack_delay_ns;
  EXPECT_EQ(acked_paths(), (std::vector<uint16_t>{1}));
}

TEST_F(CongestionTest, APathCongestedRoundAfterRoundWhileAnotherIsClearMovesToAFreshPort) {
  const EngineConfig cfg = TwoPaths(4);
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  const uint16_t port0 = Path(0).src_port, port1 = Path(1).src_port;
  std::vector<std::pair<Packet, uint16_t>> probes;
  ASSERT_NO_FATAL_FAILURE(CongestPathZero(cfg, &probes));
  EXPECT_TRUE(probes.empty());  // no path was rerouted: the move is not probed first
  EXPECT_EQ(eng_->stats().cc_repath_probes, 0u);
  EXPECT_EQ(eng_->stats().cc_repaths, 1u);
  EXPECT_EQ(Path(0).repaths, 1u);
  EXPECT_NE(Path(0).src_port, port0);
  EXPECT_NE(Path(0).src_port, port1);
  EXPECT_EQ(Path(1).src_port, port1);
  EXPECT_EQ(Path(1).repaths, 0u);
}

TEST_F(CongestionTest, SoonAfterARerouteAPlbMoveProbesItsNewPortFirst) {
  const EngineConfig cfg = TwoPaths(4);
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  const uint16_t port0 = Path(0).src_port, port1 = Path(1).src_port;
  // A path of this connection fell silent alone just now: the fabric has a
  // dead route (config::kPlbCarefulNs).
  EnginePeer::Conn(*eng_, eng_conn_)->last_reroute_at = now_;
  std::vector<std::pair<Packet, uint16_t>> probes;
  ASSERT_NO_FATAL_FAILURE(CongestPathZero(cfg, &probes));
  ASSERT_LT(now_, config::kPlbCarefulNs);
  // Path 0 stays on its port, and a probe tries a fresh one.
  EXPECT_EQ(eng_->stats().cc_repath_probes, 1u);
  EXPECT_EQ(eng_->stats().cc_repaths, 0u);
  EXPECT_EQ(Path(0).src_port, port0);
  ASSERT_EQ(probes.size(), 1u);
  const auto [probe, port] = probes[0];
  EXPECT_EQ(probe.path_id, 0);
  EXPECT_NE(port, port0);
  EXPECT_NE(port, port1);
  Packet reply;
  reply.type = PacketType::kProbeReply;
  reply.dst_conn_id = eng_conn_;
  reply.path_id = 0;
  // A reply with the probe's number but another time (a keep-alive's) is not
  // its answer.
  reply.probe = probe.probe;
  reply.probe.ts_ns++;
  Feed(reply);
  EXPECT_EQ(Path(0).src_port, port0);
  // Its answer moves the path there.
  reply.probe = probe.probe;
  Feed(reply);
  EXPECT_EQ(Path(0).src_port, port);
  EXPECT_EQ(Path(0).repaths, 1u);
  EXPECT_EQ(eng_->stats().cc_repaths, 1u);
  EXPECT_EQ(Path(1).src_port, port1);
}

TEST_F(CongestionTest, EveryAckCarriesTheSendersShareOfTheReceiversCapacity) {
  EngineConfig cfg = BaseConfig();
  cfg.rx_capacity_mbps = 100'000;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  // The peer sends: its first ACKs carry its share, the whole capacity (it is the only sender).
  for (uint32_t i = 0; i < 4; i++) FeedWrite(0, i, 0, i);
  Packet ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.rate_hint_mbps, 100'000u);
  // It keeps sending, at 1 KiB per 10 us (about 0.9 Gbit/s): each interval
  // measures it as limited elsewhere, and its share stays the whole capacity.
  for (uint32_t i = 4; i < 40; i++) {
    now_ += 10'000;
    FeedWrite(0, i, i, i);
  }
  ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.rate_hint_mbps, 100'000u);
  EXPECT_EQ(eng_->GetConnections()[0].rate_hint_mbps, 100'000u);
  // What a runtime's shards share the host's capacity by: one sender, limited elsewhere.
  const Engine::ShareDemand d = eng_->GetShareDemand();
  EXPECT_EQ(d.wanting, 0u);
  EXPECT_EQ(d.limited, 1u);
  const ShareInfo si = eng_->GetShareInfo();
  ASSERT_EQ(si.senders.size(), 1u);
  EXPECT_GT(si.senders[0].measured_mbps, 0u);
  EXPECT_EQ(d.limited_mbps, si.senders[0].measured_mbps);
  // Silent for a while, it is no longer a sender: no hint (no limit).
  now_ += 1'000'000;
  Feed(Ack(0, 0));  // any packet; the engine has nothing to acknowledge
  Drain(now_);
  Packet late = SmallWrite(0, 40, 40, 40);
  late.flags = wire::flags::kAckReq;
  now_ += 1;
  Feed(late);
  EXPECT_EQ(OnlyAck(Drain(now_)).ack.rate_hint_mbps, 100'000u);  // a sender again
}

// A sender's first interval says nothing of its demand (it may have
// started late in it, or in slow start): 8 new senders read as limited
// elsewhere raised the level to 4x their share (doc/congestion.md).
TEST_F(CongestionTest, ANewSendersFirstIntervalSaysNothingOfItsDemand) {
  ASSERT_NO_FATAL_FAILURE(StartHinting());
  // A slow sender over the first interval and into the next.
  FeedWritesFor(config::kFairShareIntervalNs + 10'000);
  Engine::ShareDemand d = eng_->GetShareDemand();
  EXPECT_EQ(d.wanting, 1u);
  EXPECT_EQ(d.limited, 0u);
  // Measured over a whole interval, its rate is what it wants.
  FeedWritesFor(config::kFairShareIntervalNs);
  d = eng_->GetShareDemand();
  EXPECT_EQ(d.wanting, 0u);
  EXPECT_EQ(d.limited, 1u);
}

// A sender is held to its share for two intervals from its listing, and is
// listed once an interval: twice the interval that its packet starts, which
// grows with the senders (here one sender at 1 Gbit/s: eight full packets'
// time, far above kFairShareIntervalNs). Twice the interval that ended left
// the sender whose packet ended it unheld before the next one, and its ACKs
// said "no limit" (mr-sim incast, 127 senders: 2 BDPs at the receiver).
TEST_F(CongestionTest, TheSenderWhosePacketEndsAnIntervalIsHeldToItsShareForAllOfTheNext) {
  EngineConfig cfg = BaseConfig();
  cfg.rx_capacity_mbps = 1'000;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FeedWritesFor(1);  // listed in the first interval
  now_ += config::kFairShareIntervalNs;
  FeedWritesFor(1);  // ends it: measured, and listed in the next
  now_ += 3 * config::kFairShareIntervalNs;
  Packet w = SmallWrite(0, feed_psn_, feed_psn_, feed_psn_);
  w.flags = wire::flags::kAckReq;
  Feed(w);
  EXPECT_EQ(OnlyAck(Drain(now_)).ack.rate_hint_mbps, 1'000u);
}

// The last chunk sent with nothing queued behind it says IDLE, to a peer
// that announced it takes the flag (an older one would drop the packet for
// its flags): the first message's last chunk, with the second queued
// behind it, does not.
TEST_F(CongestionTest, TheLastChunkWithNothingQueuedBehindItSaysIdleToAPeerThatTakesIt) {
  for (const bool takes : {false, true}) {
    SCOPED_TRACE(takes);
    peer_open_caps_ = takes ? wire::caps::kIdle : 0;
    ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
    const std::vector<Packet> out = TwoTwoPacketWrites(1);
    ASSERT_EQ(out.size(), 4u);
    for (const Packet& p : out) {
      const bool last_of_all = p.data.msn == 1 && p.data.msg_offset == kPayload;
      EXPECT_EQ((p.flags & wire::flags::kIdle) != 0, takes && last_of_all)
          << p.data.msn << " " << p.data.msg_offset;
    }
  }
}

// A sender whose packet says IDLE is off the senders at once, not at the
// end of the interval (for up to two intervals its part stayed unused while
// the others were held to theirs), and once a fifth of those the level was
// computed over have gone, the level is computed again over the others.
TEST_F(CongestionTest, ASenderThatSaysIdleIsCountedOutAtOnce) {
  ASSERT_NO_FATAL_FAILURE(StartHinting());
  FeedWritesFor(2 * config::kFairShareIntervalNs);  // measured: the level's one sender
  ASSERT_EQ(eng_->GetShareInfo().measured, 1u);
  ASSERT_EQ(eng_->GetShareInfo().listed, 1u);
  Packet w = SmallWrite(0, feed_psn_, feed_psn_, feed_psn_);
  w.flags = wire::flags::kIdle;
  Feed(w);
  const ShareInfo si = eng_->GetShareInfo();
  EXPECT_EQ(si.listed, 1u);  // still held to its share, should it come back
  EXPECT_EQ(si.measured, 0u);
  EXPECT_EQ(si.level_mbps, kCapacityMbps);  // no one left to share with
  EXPECT_EQ(eng_->stats().share_reallocations, 1u);
  // Its next data counts it in again, as a new sender.
  now_ += 10'000;
  FeedWrite(0, feed_psn_ + 1, feed_psn_ + 1, feed_psn_ + 1);
  EXPECT_EQ(eng_->GetShareInfo().listed, 1u);
  // Out of the level now: going quiet and coming back within the interval
  // (one message at a time) computes nothing again.
  for (uint32_t k = 2; k < 6; k++) {
    now_ += 1'000;
    Packet again = SmallWrite(0, feed_psn_ + k, feed_psn_ + k, feed_psn_ + k);
    if (k % 2 == 0) again.flags = wire::flags::kIdle;
    Feed(again);
  }
  EXPECT_EQ(eng_->stats().share_reallocations, 1u);
}

// A sender that leaves in the receiver's first interval, before any level
// was computed, is told what any sender would be, never "no limit" (0):
// it would come back unpaced.
TEST_F(CongestionTest, ASenderThatSaysIdleBeforeAnyLevelIsStillToldAShare) {
  ASSERT_NO_FATAL_FAILURE(StartHinting());
  ASSERT_EQ(eng_->GetShareInfo().level_mbps, 0u);
  Packet w = SmallWrite(0, 0, 0, 0);
  w.flags = wire::flags::kIdle | wire::flags::kAckReq;
  Feed(w);
  EXPECT_EQ(OnlyAck(Drain(now_)).ack.rate_hint_mbps, kCapacityMbps);
}

// Nor does an interval that spans a silence: a sender that was limited
// elsewhere, then quiet for 1 ms, counts as wanting more when it comes back
// (restarting incasts were handed nearly the whole link otherwise).
TEST_F(CongestionTest, AnIntervalOverASilenceSaysNothingOfDemand) {
  ASSERT_NO_FATAL_FAILURE(StartHinting());
  FeedWritesFor(5 * config::kFairShareIntervalNs);
  ASSERT_EQ(eng_->GetShareDemand().limited, 1u);
  FeedWritesFor(1);  // the last packet before the silence
  now_ += 1'000'000;
  FeedWritesFor(1);  // ends the interval that spans it
  const Engine::ShareDemand d = eng_->GetShareDemand();
  EXPECT_EQ(d.wanting, 1u);
  EXPECT_EQ(d.limited, 0u);
}

// Arrivals that come CE-marked were queued on the way, most likely at this
// receiver's link: the sender counts as wanting its share, not as limited
// elsewhere, and the next allocation holds back what drains the queue.
TEST_F(CongestionTest, MarkedArrivalsCountAsWantingAndDrainTheQueue) {
  ASSERT_NO_FATAL_FAILURE(StartHinting());
  feed_ecn_ = wire::Ecn::kCe;
  FeedWritesFor(5 * config::kFairShareIntervalNs);
  const Engine::ShareDemand d = eng_->GetShareDemand();
  EXPECT_EQ(d.wanting, 1u);
  EXPECT_EQ(d.limited, 0u);
  const uint32_t level = eng_->GetShareInfo().level_mbps;
  EXPECT_EQ(level, kCapacityMbps - ShareDrainMbps(kCapacityMbps, 1, 1));
  EXPECT_EQ(OfType(Drain(now_), PacketType::kAck).back().ack.rate_hint_mbps, level);
}

// The receiver's share answers congestion at its link: marks do not cut the
// connection's window below what the hinted rate needs over the base RTT
// and the receiver's ACK hold, and a new sender takes that room at once.
TEST_F(CongestionTest, AHintKeepsRoomInTheConnectionsWindowForItsRate) {
  EngineConfig cfg = TwoPaths();
  cfg.initial_window_bytes = 8 * 1024;  // slow start from 8 KiB
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  ASSERT_NO_FATAL_FAILURE(PostWrites(0, 64));
  const uint32_t sent = static_cast<uint32_t>(OfType(Drain(now_), PacketType::kWrite).size());
  ASSERT_GE(sent, 2u);
  constexpr TimeNs kRtt = 10'000;
  constexpr uint32_t kHintMbps = 40'000;
  const uint64_t room = uint64_t{kHintMbps} * (kRtt + cfg.ack_delay_ns) / 8'000;
  ASSERT_LT(eng_->GetConnections()[0].cwnd_bytes, room);
  now_ += kRtt;
  // Every packet arrived marked, on both paths, with a hint of 40 Gbit/s.
  for (uint16_t path : {0, 1}) {
    Packet a = Ack(path, sent / 2);
    a.ack.echo_ts_ns = static_cast<uint32_t>(now_ - kRtt);
    a.ack.rx_pkts = sent / 2;
    a.ack.ce_pkts = sent / 2;
    a.ack.ece = true;
    a.ack.rate_hint_mbps = kHintMbps;
    Feed(a);
  }
  const ConnInfo c = eng_->GetConnections()[0];
  EXPECT_GE(c.cc_cuts, 1u);       // the marks cut it ...
  EXPECT_EQ(c.cwnd_bytes, room);  // ... but not below the hinted rate's room
}

TEST_F(CongestionTest, AHintPacesTheSenderToThatRate) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  ASSERT_NO_FATAL_FAILURE(PostWrites(0, 8));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 8u);  // no hint yet: the windows alone
  // An ACK with a hint of 8 Gbit/s: from now on one packet per its bytes x 8 / 8 Gbit/s.
  Packet a = Ack(0, 8);
  a.ack.rx_pkts = 8;
  a.ack.rate_hint_mbps = 8'000;
  Feed(a);
  EXPECT_EQ(eng_->GetConnections()[0].peer_hint_mbps, 8'000u);
  ASSERT_NO_FATAL_FAILURE(PostWrites(8, 32));
  const TimeNs start = now_;
  // Nothing in flight, the pacer idle: the first packet waits a random part
  // of a full packet's time (APacedSenderStartingAfterAnIdleSpellStartsAtARandomPhase),
  // which is a little longer than these WRITEs' frames. The phase follows the
  // engine's random incarnation: every bound here holds for any phase.
  uint32_t sent = static_cast<uint32_t>(OfType(Drain(now_), PacketType::kWrite).size());
  ASSERT_LE(sent, 2u);
  const TimeNs gap = frames_.back().size();  // bytes x 8000 / 8000 Mbit/s = ns
  const TimeNs phase_max = FullPacketBytes();
  ASSERT_GE(phase_max, gap);
  EXPECT_LE(eng_->NextDeadline(), start + phase_max);
  EXPECT_FALSE(eng_->HasPendingTx());
  // Over 20 gaps after the first, 20 packets: the rate is the hint's (one
  // more poll step, so that the 21st is due before the last poll whatever
  // the phase).
  for (now_ = start; now_ <= start + phase_max + 20 * gap + gap / 4; now_ += gap / 4) {
    sent += static_cast<uint32_t>(OfType(Drain(now_), PacketType::kWrite).size());
  }
  EXPECT_GE(sent, 21u);
  EXPECT_LE(sent, 22u);
  // A hint of 0 lifts the limit: the rest goes at once.
  Packet b = Ack(0, 8 + sent);
  b.ack.rx_pkts = 8 + sent;
  Feed(b);
  EXPECT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 32u - sent);
}

// The share a receiver gives in its opening paces a new sender from its
// first packet, before any ACK: 32 new senders' first round trip overflowed
// a 1 MB switch buffer when the first hint came with the first ACK
// (doc/congestion.md, "Incast with and without hints").
TEST_F(CongestionTest, TheShareInTheAcceptPacesTheRequesterFromItsFirstPacket) {
  peer_open_hint_mbps_ = 8'000;
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  EXPECT_EQ(eng_->GetConnections()[0].peer_hint_mbps, 8'000u);
  EXPECT_EQ(eng_->GetConnections()[0].pace_mbps, 8'000u);
  ASSERT_NO_FATAL_FAILURE(PostWrites(0, 8));
  // At most two at once (the pacer starts at a random phase within one
  // packet's time, and a poll may be a packet's time late), then one per
  // gap; without the hint all 8 go at once.
  EXPECT_LE(OfType(Drain(now_), PacketType::kWrite).size(), 2u);
  EXPECT_GT(eng_->NextDeadline(), now_);
}

// The engine as the responder: each new requester that reads hints is
// listed as a sender of the current interval when its request arrives, and
// the ACCEPT carries its equal part among the senders listed; a requester
// that does not read them (no kRateHint) gets none, the field being reserved
// to it. Every RETRY, REQ and ACCEPT advertises the bit.
TEST_F(CongestionTest, TheAcceptCarriesAnEqualPartAmongTheSendersThatAreComing) {
  ASSERT_NO_FATAL_FAILURE(StartHinting());
  EXPECT_NE(conn_req_.conn.capabilities & wire::caps::kRateHint, 0u);
  only_to_peer_ = false;
  auto open = [&](uint16_t port, bool reads_hints) {
    Packet req = PeerReq(0x3000 + port, 0x3000 + port, port);
    if (reads_hints) req.conn.capabilities = wire::caps::kRateHint;
    Feed(req);
    const std::vector<Packet> retry = OfType(Drain(now_), PacketType::kConnRetry);
    EXPECT_EQ(retry.size(), 1u);
    if (retry.empty()) return Packet{};
    EXPECT_NE(retry[0].conn.capabilities & wire::caps::kRateHint, 0u);
    req.conn.cookie = retry[0].conn.cookie;
    Feed(req);
    const std::vector<Packet> acc = OfType(Drain(now_), PacketType::kConnAccept);
    EXPECT_EQ(acc.size(), 1u);
    return acc.empty() ? Packet{} : acc[0];
  };
  // The first peer (Start's) sent no data: it is not a sender.
  Packet a = open(5001, true);
  EXPECT_NE(a.conn.capabilities & wire::caps::kRateHint, 0u);
  EXPECT_EQ(a.conn.rate_hint_mbps, kCapacityMbps);
  EXPECT_EQ(open(5002, true).conn.rate_hint_mbps, kCapacityMbps / 2);
  Packet legacy = open(5003, false);
  EXPECT_NE(legacy.conn.capabilities & wire::caps::kRateHint, 0u);
  EXPECT_EQ(legacy.conn.rate_hint_mbps, 0u);
  EXPECT_EQ(open(5004, true).conn.rate_hint_mbps, kCapacityMbps / 3);
  // The allocator sees them as the senders of this interval.
  EXPECT_EQ(eng_->GetShareInfo().listed, 3u);
  // Without a capacity, no hint in any opening.
  EngineConfig cfg = BaseConfig();
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  only_to_peer_ = false;
  EXPECT_EQ(open(5001, true).conn.rate_hint_mbps, 0u);
}

// New senders are told C, C/2, ... C/k in their openings as they come;
// each time the senders have grown by a quarter since the last telling
// (config::kFairSharePushStepPct), those told more than a quarter over the
// new equal part get it at once in an ACK of its own (which echoes no
// timestamp: its path has received nothing), not an RTT later with their
// data's ACK. At every doubling and over twice the part (before), 63
// senders opening together were told C/32 to C/63: 0.72 BDPs at the
// receiver in mr-sim's incast.
TEST_F(CongestionTest, SendersToldOverTheirPartHearItAtOnceAsTheSendersGrow) {
  static_assert(config::kFairSharePushStepPct == 25, "the openings below follow the 25 % steps");
  ASSERT_NO_FATAL_FAILURE(StartHinting());
  only_to_peer_ = false;
  std::vector<Packet> acc;
  std::map<uint16_t, std::vector<Packet>> pushed;  // opening -> the ACKs it caused
  for (uint16_t port = 5001; port <= 5007; port++) {
    Packet req = PeerReq(0x3000 + port, 0x3000 + port, port);
    req.conn.capabilities = wire::caps::kRateHint;
    std::vector<Packet> out = OpenAsPeer(req);
    for (const Packet& p : OfType(out, PacketType::kConnAccept)) acc.push_back(p);
    pushed[port] = OfType(out, PacketType::kAck);
  }
  ASSERT_EQ(acc.size(), 7u);
  for (size_t k = 0; k < acc.size(); k++) {
    EXPECT_EQ(acc[k].conn.rate_hint_mbps, kCapacityMbps / (k + 1)) << k;
  }
  auto told = [&](uint16_t port) {
    std::vector<std::pair<uint32_t, uint32_t>> v;  // (connection, hint)
    for (const Packet& a : pushed[port]) {
      EXPECT_EQ(a.ack.ack_delay_ns, wire::kAckNoEcho);
      EXPECT_EQ(a.ack.cum_psn, 0u);
      EXPECT_FALSE(a.ack.has_sack);
      v.emplace_back(a.dst_conn_id, a.ack.rate_hint_mbps);
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto c = [](uint16_t port) { return 0x3000u + port; };
  const uint32_t q4 = kCapacityMbps / 4, q7 = kCapacityMbps / 7;
  for (uint16_t port : {5001, 5002, 5003, 5005, 5006}) EXPECT_TRUE(pushed[port].empty()) << port;
  // The fourth: C, C/2 and C/3 are over 1.25 x C/4.
  using V = std::vector<std::pair<uint32_t, uint32_t>>;
  EXPECT_EQ(told(5004), (V{{c(5001), q4}, {c(5002), q4}, {c(5003), q4}}));
  // The fifth and sixth are within a quarter of the fourth; at the seventh,
  // C/4 and C/5 are over 1.25 x C/7, C/6 is not.
  EXPECT_EQ(told(5007),
            (V{{c(5001), q7}, {c(5002), q7}, {c(5003), q7}, {c(5004), q7}, {c(5005), q7}}));
  EXPECT_EQ(eng_->stats().share_pushes, 8u);
}

// The sender's side of such an ACK: the hint is taken, and no RTT sample
// (its echo is no packet's).
TEST_F(CongestionTest, AnAckThatEchoesNoTimestampGivesNoRttSample) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  Packet a = Ack(0, 0);
  a.ack.echo_ts_ns = 0;
  a.ack.ack_delay_ns = wire::kAckNoEcho;
  a.ack.rate_hint_mbps = 5'000;
  // The clock where an echo of 0 less that delay would read as an RTT of 0
  // (a sample: the RTO would drop from rto_initial to rto_min).
  now_ = wire::kAckNoEcho;
  Feed(a);
  EXPECT_EQ(eng_->GetConnections()[0].peer_hint_mbps, 5'000u);
  EXPECT_EQ(Path(0).rto_ns, cfg_.rto_initial_ns);
  // An ACK that echoes a packet does give one.
  Packet b = Ack(0, 0);
  b.ack.echo_ts_ns = static_cast<uint32_t>(now_ - 10'000);
  Feed(b);
  EXPECT_EQ(Path(0).srtt_ns, 10'000u);
}

// Both ends of a connection list each other when they open it (each
// opening carries a share). A peer listed so that acknowledges our data
// but sends none is most likely one that only receives: it leaves the
// allocation at that ACK instead of counting as a sender that wants more
// (it held the one real sender of each receiver of mr-sim's permutation to
// half the link, for the rest of the interval when it left at the
// interval's end). Not before the ACK: a peer that sends to us too starts
// when we do (an all-to-all), and its data arrives after our first packet
// left. One we do not send to is still counted: a new sender whose first
// packets wait in a queue.
TEST_F(CongestionTest, APeerListedForAnOpeningThatWeOnlySendToLeavesTheAllocation) {
  for (const bool we_send : {false, true}) {
    SCOPED_TRACE(we_send);
    EngineConfig cfg = BaseConfig();
    cfg.rx_capacity_mbps = kCapacityMbps;
    peer_open_hint_mbps_ = 0;
    ASSERT_NO_FATAL_FAILURE(Start(cfg));
    only_to_peer_ = false;
    // A second peer opens to us: listed as a sender of this interval.
    Packet req = PeerReq(0x4001, 0x4001, 5001);
    req.conn.capabilities = wire::caps::kRateHint;
    const std::vector<Packet> acc = OfType(OpenAsPeer(req), PacketType::kConnAccept);
    ASSERT_EQ(acc.size(), 1u);
    ASSERT_EQ(eng_->GetShareInfo().listed, 1u);
    if (we_send) {
      // A WRITE to it stays in flight (its peer never answers here).
      QpAttr qa;
      qa.pd = pd_;
      qa.send_cq = scq_;
      qa.recv_cq = rcq_;
      const uint32_t qpn = *eng_->CreateQp(qa);
      ASSERT_TRUE(eng_->ConnectQp(qpn, {PeerIp(), PeerMac(), 5001}, kPeerQpn + 1).ok());
      const uint32_t saved = qpn_;
      qpn_ = qpn;
      ASSERT_NO_FATAL_FAILURE(PostWrite(1, 64));
      qpn_ = saved;
      EXPECT_FALSE(OfType(Drain(now_), PacketType::kWrite).empty());
      // Its data may be on the way: still listed.
      EXPECT_EQ(eng_->GetShareInfo().listed, 1u);
      // It acknowledges ours, and sent none: the share it held is the others' at once.
      now_ += 10'000;
      Packet a = Ack(0, 1);
      a.dst_conn_id = acc[0].conn.src_conn_id;
      Feed(a);
    }
    EXPECT_EQ(eng_->GetShareInfo().listed, we_send ? 0u : 1u);
    // A third peer opens after the interval: the allocation is computed.
    now_ += 2 * config::kFairShareIntervalNs;
    Packet req3 = PeerReq(0x4002, 0x4002, 5002);
    req3.conn.capabilities = wire::caps::kRateHint;
    ASSERT_EQ(OfType(OpenAsPeer(req3), PacketType::kConnAccept).size(), 1u);
    EXPECT_EQ(eng_->GetShareInfo().measured, we_send ? 0u : 1u);
  }
}

// Both ends open at once: the peer's request establishes the connection
// (with the share it carried), and the peer's ACCEPT of our request comes
// after it with a newer share, which is the one to pace to (it was dropped:
// the 32 senders of the incast test then kept C/k for a round trip).
TEST_F(CongestionTest, AnAcceptAfterASimultaneousOpenBringsTheNewerShare) {
  std::vector<Packet> ours;
  ASSERT_NO_FATAL_FAILURE(StartRequesting(BaseConfig(), &ours));
  Packet req = PeerReq(kPeerConnId, kPeerIncarnation);
  req.conn.capabilities = wire::caps::kRateHint;
  req.conn.rate_hint_mbps = 20'000;
  ASSERT_EQ(OfType(OpenAsPeer(req), PacketType::kConnAccept).size(), 1u);
  ASSERT_EQ(eng_->GetConnections().size(), 1u);
  EXPECT_EQ(eng_->GetConnections()[0].peer_hint_mbps, 20'000u);
  Packet acc = PeerReq(kPeerConnId, kPeerIncarnation, wire::kDefaultUdpPort, ours[0].conn.nonce);
  acc.type = PacketType::kConnAccept;
  acc.dst_conn_id = ours[0].conn.src_conn_id;
  acc.conn.capabilities = wire::caps::kRateHint;
  acc.conn.rate_hint_mbps = 5'000;
  Feed(acc);
  EXPECT_EQ(eng_->GetConnections()[0].peer_hint_mbps, 5'000u);
  // One with another nonce is not the answer to our request: ignored.
  acc.conn.nonce ^= 1;
  acc.conn.rate_hint_mbps = 7'000;
  Feed(acc);
  EXPECT_EQ(eng_->GetConnections()[0].peer_hint_mbps, 5'000u);
}

// Pacers started by openings that arrive together would stay in step: the
// first packet waits a random part of one packet's time at the new rate,
// so that the senders' packets do not reach the receiver in bursts. The
// phase is drawn when the first data goes: drawn at the opening, it was
// spent by a sender whose data came later than one packet's time after it
// (the senders of mr-sim's incast open together and write a few
// microseconds later: 63 of them sent their first packets in the same
// instant, 1.6 BDPs at their receiver).
TEST_F(CongestionTest, APacerStartedByAnOpeningStartsAtARandomPhaseWhenItsFirstDataGoes) {
  // Data at once, and just over one full packet's time at 1 Gbit/s later.
  for (const bool later : {false, true}) {
    SCOPED_TRACE(later);
    std::set<TimeNs> waits;
    for (uint64_t seed = 1; seed <= 8; seed++) {
      EngineConfig cfg = BaseConfig();
      cfg.seed = seed;
      peer_open_hint_mbps_ = 1'000;
      ASSERT_NO_FATAL_FAILURE(Start(cfg));
      if (later) now_ += TimeNs{FullPacketBytes()} * 8 + 1;
      ASSERT_NO_FATAL_FAILURE(PostWrites(0, 1));
      const std::vector<Packet> now_out = OfType(Drain(now_), PacketType::kWrite);
      const TimeNs wait = now_out.empty() ? eng_->NextDeadline() - now_ : 0;
      // At most one full packet's time at 1 Gbit/s (the largest header stack over max_payload).
      EXPECT_LE(wait, TimeNs{FullPacketBytes()} * 8);
      waits.insert(wait);
    }
    EXPECT_GE(waits.size(), 4u);
  }
}

// The same for a paced connection that starts sending again after an idle
// spell: the QPs of a collective post together, and pacers that start in
// the same instant stay in step (32 senders built 1.1 BDPs at their
// receiver in mr-sim's incast, 0.15 with the phase). Every start after an
// idle spell draws its own phase; one still in its pacer's rhythm does not.
TEST_F(CongestionTest, APacedSenderStartingAfterAnIdleSpellStartsAtARandomPhase) {
  std::set<TimeNs> waits;
  for (uint64_t seed = 1; seed <= 8; seed++) {
    EngineConfig cfg = BaseConfig();
    cfg.seed = seed;
    ASSERT_NO_FATAL_FAILURE(Start(cfg));
    ASSERT_NO_FATAL_FAILURE(PostWrites(0, 1));
    ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
    Packet a = Ack(0, 1);
    a.ack.rx_pkts = 1;
    a.ack.rate_hint_mbps = 1'000;
    Feed(a);
    now_ += 1'000'000;  // idle
    ASSERT_NO_FATAL_FAILURE(PostWrites(1, 1));
    const TimeNs wait =
        OfType(Drain(now_), PacketType::kWrite).empty() ? eng_->NextDeadline() - now_ : 0;
    // At most one full packet's time at 1 Gbit/s (the largest header stack over max_payload).
    EXPECT_LE(wait, TimeNs{FullPacketBytes()} * 8);
    waits.insert(wait);
  }
  EXPECT_GE(waits.size(), 4u);
}

// The engine as the requester: a RETRY that advertises kRateHint makes the
// request that opens the connection carry the engine's share for the
// peer's data (an incast receiver that connects to its senders).
TEST_F(CongestionTest, ARequestAnsweringARetryCarriesOurShare) {
  EngineConfig cfg = BaseConfig();
  cfg.rx_capacity_mbps = kCapacityMbps;
  std::vector<Packet> req;
  ASSERT_NO_FATAL_FAILURE(StartRequesting(cfg, &req));
  EXPECT_EQ(req[0].conn.rate_hint_mbps, 0u);  // the peer's capabilities are not known yet
  for (const bool reads : {false, true}) {
    SCOPED_TRACE(reads);
    Packet retry = PeerReq(kPeerConnId, kPeerIncarnation);
    retry.type = PacketType::kConnRetry;
    retry.dst_conn_id = req[0].conn.src_conn_id;
    retry.conn.nonce = req[0].conn.nonce;
    retry.conn.cookie = 0x77;
    retry.conn.capabilities = reads ? wire::caps::kRateHint : 0;
    Feed(retry);
    std::vector<Packet> again = OfType(Drain(now_), PacketType::kConnReq);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].conn.cookie, 0x77u);
    EXPECT_EQ(again[0].conn.rate_hint_mbps, reads ? kCapacityMbps : 0u);
  }
}

TEST_F(CongestionTest, WindowPacingSpreadsTheWindowOverItsRoundTrip) {
  for (const uint32_t gain : {config::kCcPacingGainPct, 0u}) {
    SCOPED_TRACE(gain);
    EngineConfig cfg = BaseConfig();
    cfg.pacing_gain_pct = gain;
    cfg.initial_window_bytes = 0;  // no slow start: the pacer's share is gain, not the doubled one
    ASSERT_NO_FATAL_FAILURE(Start(cfg));
    ASSERT_NO_FATAL_FAILURE(PostWrites(0, 8));
    ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 8u);  // no RTT yet: no pacer
    // The ACK of all 8 after 10 us: the smoothed RTT is 10 us, and the
    // window (the path's, smaller than the connection's) paces at gain x window / RTT.
    now_ += kRtt;
    Packet a = Ack(0, 8);
    a.ack.echo_ts_ns = static_cast<uint32_t>(now_ - kRtt);
    a.ack.rx_pkts = 8;
    Feed(a);
    const ConnInfo ci = eng_->GetConnections()[0];
    const uint64_t window = std::min(Path(0).cwnd_bytes, ci.cwnd_bytes);
    EXPECT_EQ(ci.srtt_ns, kRtt);
    if (gain == 0) {
      EXPECT_EQ(ci.pace_mbps, 0u);
    } else {
      EXPECT_EQ(ci.pace_mbps, window * 8'000 * gain / 100 / kRtt);
    }
    // 64 packets have room in the path's window. Paced, half the window
    // goes at once (the pacer's credit after a pause), then one packet per gap.
    ASSERT_NO_FATAL_FAILURE(PostWrites(8, 64));
    const size_t burst = OfType(Drain(now_), PacketType::kWrite).size();
    if (gain == 0) {
      EXPECT_EQ(burst, 64u);
      eng_.reset();
      continue;
    }
    const uint64_t frame = frames_.back().size();
    EXPECT_GE(burst, (window >> config::kCcPacingBurstShift) / frame);
    EXPECT_LE(burst, (window >> config::kCcPacingBurstShift) / frame + 2);
    const TimeNs gap = frame * 8'000 / ci.pace_mbps;
    EXPECT_LE(eng_->NextDeadline(), now_ + gap);
    uint32_t sent = 0;
    const TimeNs start = now_;
    for (now_ = start + gap; now_ <= start + 10 * gap; now_ += gap / 4) {
      sent += static_cast<uint32_t>(OfType(Drain(now_), PacketType::kWrite).size());
    }
    EXPECT_GE(sent, 9u);
    EXPECT_LE(sent, 11u);
    eng_.reset();
  }
}

TEST_F(CongestionTest, QueueingDelayAboveTheTargetShrinksThePathThatSeesItWhereNothingMarks) {
  for (const TimeNs target : {TimeNs{100'000}, TimeNs{0}}) {
    SCOPED_TRACE(target);
    EngineConfig cfg = TwoPaths();
    cfg.cc_delay_target_ns = target;
    ASSERT_NO_FATAL_FAILURE(Start(cfg));
    const uint32_t start = Path(0).cwnd_bytes;
    ASSERT_NO_FATAL_FAILURE(PostWrites(0, 64));
    ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 16u);
    // The base: both paths answer in 10 us.
    now_ += 10'000;
    for (uint16_t path : {0, 1}) {
      Packet a = Ack(path, 2);
      a.ack.echo_ts_ns = static_cast<uint32_t>(now_ - 10'000);
      a.ack.rx_pkts = 2;
      Feed(a);
    }
    // Then path 0's ACKs take 400 us, unmarked; path 1's stay at 10 us.
    now_ += 400'000;
    for (uint32_t cum = 3; cum <= 8; cum++) {
      for (uint16_t path : {0, 1}) {
        Packet a = Ack(path, cum);
        a.ack.echo_ts_ns = static_cast<uint32_t>(now_ - (path == 0 ? 400'000 : 10'000));
        a.ack.rx_pkts = cum;
        Feed(a);
      }
    }
    if (target != 0) {
      // Its smoothed RTT passed base + target after three samples: cut once (one per round trip).
      EXPECT_LT(Path(0).cwnd_bytes, start);
      EXPECT_GE(Path(0).cwnd_bytes, start / 2);
      EXPECT_EQ(Path(0).cc_cuts, 1u);
      EXPECT_EQ(eng_->stats().cc_delay_cuts, 1u);
    } else {
      EXPECT_EQ(Path(0).cwnd_bytes, start);
      EXPECT_EQ(Path(0).cc_cuts, 0u);
      EXPECT_EQ(eng_->stats().cc_delay_cuts, 0u);
    }
    EXPECT_EQ(Path(1).cwnd_bytes, start);
    EXPECT_EQ(Path(1).cc_cuts, 0u);
    eng_.reset();
  }
}

TEST_F(CongestionTest, ConfigurationOutOfRangeIsRefusedWithWhatToFix) {
  EngineConfig cfg = BaseConfig();
  cfg.cc_delay_target_ns = cfg.rto_max_ns;
  auto e = Engine::Create(cfg, &mem_);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("cc_delay_target_ns must be below rto_max_ns"),
            std::string::npos)
      << e.status();
  cfg = BaseConfig();
  cfg.rx_capacity_mbps = uint64_t{UINT32_MAX} + 1;
  e = Engine::Create(cfg, &mem_);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("rx_capacity_mbps must be at most"), std::string::npos)
      << e.status();
  cfg = BaseConfig();
  cfg.pacing_gain_pct = 100;  // would hold the window below what it sends unpaced
  e = Engine::Create(cfg, &mem_);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("pacing_gain_pct must be 101..1000"), std::string::npos)
      << e.status();
}

TEST_F(CongestionTest, AHintBelowOnePacketPerRoundTripSendsOnePacketPerGapAndFailsNothing) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  ASSERT_NO_FATAL_FAILURE(PostWrites(0, 1));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
  // 1 Mbit/s: a 1 KiB packet every ~8.5 ms, far beyond the RTO and the message probe.
  now_ += 10'000;
  Packet a = Ack(0, 1, {}, 1);
  a.ack.rx_pkts = 1;
  a.ack.rate_hint_mbps = 1;
  Feed(a);
  ASSERT_NO_FATAL_FAILURE(PostWrites(1, 4));
  uint32_t psn = 1, sent = 0;
  for (int i = 0; i < 4 && sent < 4; i++) {
    const std::vector<Packet> out = OfType(Drain(now_), PacketType::kWrite);
    sent += static_cast<uint32_t>(out.size());
    ASSERT_LE(out.size(), 2u);                         // at most one packet's time early
    const TimeNs gap = frames_.back().size() * 8'000;  // bytes x 8000 / 1 Mbit/s = ns
    // Each is acknowledged 10 us later; nothing else is due before the next.
    now_ += 10'000;
    psn += static_cast<uint32_t>(out.size());
    Packet b = Ack(0, psn, {}, psn);
    b.ack.rx_pkts = psn;
    b.ack.rate_hint_mbps = 1;
    Feed(b);
    EXPECT_TRUE(OfType(Drain(now_ + gap / 2), PacketType::kWrite).empty());
    now_ += gap;
  }
  EXPECT_EQ(sent, 4u);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 0u);
  EXPECT_EQ(eng_->stats().msg_probes, 0u);
  EXPECT_EQ(eng_->stats().path_failures, 0u);
  EXPECT_EQ(PollAll(scq_).size(), 5u);
  for (const ConnInfo& c : eng_->GetConnections()) EXPECT_EQ(c.state, ConnInfo::State::kUp);
}

TEST_F(CongestionTest, WithoutCongestionControlMarksChangeNoWindow) {
  EngineConfig cfg = TwoPaths();
  cfg.congestion_control = false;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  ASSERT_NO_FATAL_FAILURE(PostWrites(0, 32));
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
