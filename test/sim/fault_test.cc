/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Fault injection: Bernoulli and Gilbert-Elliott loss within statistical
// bounds, duplication, corruption and reordering observable at the receiver,
// blackhole with and without routing reconvergence, and config errors.

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "mr_sim.h"
#include "sim_test_util.h"

namespace metaroce::sim {
namespace {

using testing::FrameSeq;
using testing::MakeFrame;
using testing::Must;
using testing::RecordingEndpoint;

constexpr uint64_t k100G = 100 * kBpsPerGbps;

// Two hosts back to back, A sending `n` numbered frames as fast as the NIC
// takes them, with `faults` on the A->B direction.
struct Blast {
  Fabric fabric;
  Topology t;
  std::vector<std::vector<uint8_t>> sent;
  std::unique_ptr<RecordingEndpoint> ra, rb;

  Blast(uint64_t seed, const FaultConfig& faults, uint32_t n, size_t bytes = 200) : fabric(seed) {
    BackToBackConfig c;
    c.link.rate_bps = k100G;
    t = Must(BuildBackToBack(fabric, c));
    EXPECT_TRUE(fabric.SetLinkFaults(t.host_links[0], faults, LinkDirection::kAtoB).ok());
    ra = std::make_unique<RecordingEndpoint>(t.hosts[0]);
    rb = std::make_unique<RecordingEndpoint>(t.hosts[1]);
    for (uint32_t i = 0; i < n; i++) {
      sent.push_back(MakeFrame({.src = t.hosts[0], .dst = t.hosts[1], .bytes = bytes, .seq = i}));
      ra->backlog.push_back(sent.back());
    }
    ra->Pump();
    fabric.RunUntilIdle();
  }
  const PortStats& stats() const { return fabric.port_stats(t.hosts[0]->port()); }
};

// Lengths of runs of consecutive sequence numbers missing at the receiver.
std::vector<int> LossRuns(const Blast& b) {
  std::vector<bool> got(b.sent.size());
  for (const auto& rx : b.rb->rx) got[FrameSeq(rx.bytes)] = true;
  std::vector<int> runs;
  int run = 0;
  for (bool g : got) {
    if (!g) {
      run++;
    } else if (run > 0) {
      runs.push_back(run);
      run = 0;
    }
  }
  if (run > 0) runs.push_back(run);
  return runs;
}

double Mean(const std::vector<int>& v) {
  double s = 0;
  for (int x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

TEST(Faults, BernoulliLossWithinStatisticalBounds) {
  constexpr uint32_t kN = 20'000;
  constexpr double kP = 0.1;
  FaultConfig f;
  f.loss_probability = kP;
  Blast b(21, f, kN);
  const double lost = static_cast<double>(kN - b.rb->rx.size()) / kN;
  const double sigma = std::sqrt(kP * (1 - kP) / kN);
  EXPECT_NEAR(lost, kP, 5 * sigma);
  EXPECT_EQ(b.stats().dropped(DropCause::kLoss), kN - b.rb->rx.size());
  EXPECT_EQ(b.stats().tx_frames, kN);
  // Independent losses: runs are short (mean 1 / (1 - p) ~ 1.11).
  EXPECT_LT(Mean(LossRuns(b)), 1.3);
  // Survivors arrive intact and in order.
  uint32_t last = 0;
  for (const auto& rx : b.rb->rx) {
    const uint32_t seq = FrameSeq(rx.bytes);
    ASSERT_NE(seq, UINT32_MAX);
    EXPECT_TRUE(seq >= last);
    last = seq;
    EXPECT_EQ(rx.bytes, b.sent[seq]);
  }
}

TEST(Faults, GilbertElliottLossComesInBursts) {
  constexpr uint32_t kN = 100'000;
  FaultConfig f;
  f.burst_loss = {
      .enabled = true, .p_good_to_bad = 0.01, .p_bad_to_good = 0.2, .loss_good = 0, .loss_bad = 1};
  Blast b(22, f, kN);
  const double lost = static_cast<double>(kN - b.rb->rx.size()) / kN;
  EXPECT_NEAR(lost, 0.01 / 0.21, 0.01);  // stationary share of the bad state
  EXPECT_EQ(b.stats().dropped(DropCause::kBurstLoss), kN - b.rb->rx.size());
  EXPECT_EQ(b.stats().dropped(DropCause::kLoss), 0u);
  const double mean_burst = Mean(LossRuns(b));
  EXPECT_NEAR(mean_burst, 1 / 0.2, 0.7);  // geometric bursts, mean 1 / p_bad_to_good
}

// step_ps: the chain steps with time. At one frame's time per step, frames
// back to back see the same bursts as per frame; at a hundredth, each frame
// finds the chain 100 steps on, its state all but independent of the last
// frame's: the same share lost, in runs no longer than independent loss.
TEST(Faults, GilbertElliottStepsWithTimeWhenAsked) {
  constexpr uint32_t kN = 100'000;
  const SimTime frame_ps = SerializationPs(200 + kDefaultWireOverheadBytes, k100G);
  FaultConfig f;
  f.burst_loss = {.enabled = true,
                  .p_good_to_bad = 0.01,
                  .p_bad_to_good = 0.2,
                  .loss_good = 0,
                  .loss_bad = 1,
                  .step_ps = frame_ps};
  const double share = 0.01 / 0.21;
  Blast per_frame(22, f, kN);
  EXPECT_NEAR(static_cast<double>(kN - per_frame.rb->rx.size()) / kN, share, 0.01);
  EXPECT_NEAR(Mean(LossRuns(per_frame)), 1 / 0.2, 0.7);
  f.burst_loss.step_ps = frame_ps / 100;
  Blast fine(22, f, kN);
  EXPECT_NEAR(static_cast<double>(kN - fine.rb->rx.size()) / kN, share, 0.01);
  EXPECT_LT(Mean(LossRuns(fine)), 1.2);
  f.burst_loss.step_ps = -1;
  EXPECT_FALSE(Validate(f).ok());
}

TEST(Faults, DuplicatesAreIdenticalExtraCopies) {
  constexpr uint32_t kN = 10'000;
  FaultConfig f;
  f.duplicate_probability = 0.2;
  Blast b(23, f, kN);
  const uint64_t dups = b.stats().duplicated;
  EXPECT_NEAR(static_cast<double>(dups), 0.2 * kN, 5 * std::sqrt(0.16 * kN));
  EXPECT_EQ(b.rb->rx.size(), kN + dups);
  EXPECT_EQ(b.stats().delivered_frames, kN + dups);
  std::map<uint32_t, int> copies;
  for (const auto& rx : b.rb->rx) {
    const uint32_t seq = FrameSeq(rx.bytes);
    ASSERT_LT(seq, kN);
    EXPECT_EQ(rx.bytes, b.sent[seq]);
    copies[seq]++;
  }
  EXPECT_EQ(copies.size(), kN);
  uint64_t extra = 0;
  for (const auto& [seq, n] : copies) {
    EXPECT_LE(n, 2);
    extra += static_cast<uint64_t>(n - 1);
  }
  EXPECT_EQ(extra, dups);
}

// Positions (bit index) where two equal-length frames differ.
std::vector<size_t> DiffBits(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  std::vector<size_t> bits;
  for (size_t i = 0; i < a.size(); i++) {
    for (int k = 0; k < 8; k++) {
      if (((a[i] ^ b[i]) >> k) & 1) bits.push_back(i * 8 + static_cast<size_t>(k));
    }
  }
  return bits;
}

TEST(Faults, CorruptionFlipsExactlyOneBit) {
  constexpr uint32_t kN = 2000;
  FaultConfig f;
  f.corrupt_probability = 1;
  Blast b(24, f, kN, 1000);
  ASSERT_EQ(b.rb->rx.size(), kN);  // delivered, damaged
  EXPECT_EQ(b.stats().corrupted, kN);
  int unparseable = 0;
  std::set<size_t> offsets;
  for (uint32_t i = 0; i < kN; i++) {
    const auto bits = DiffBits(b.sent[i], b.rb->rx[i].bytes);
    ASSERT_EQ(bits.size(), 1u) << i;
    offsets.insert(bits[0] / 8);
    wire::FrameInfo fi;
    wire::Packet p;
    unparseable += testing::ParseSimFrame(b.rb->rx[i].bytes, &fi, &p) != wire::ParseError::kOk;
  }
  EXPECT_GT(offsets.size(), 500u);  // spread over the frame
  // Only the MAC addresses and the UDP source port are covered by no check.
  EXPECT_GT(unparseable, static_cast<int>(kN * 0.9));
}

TEST(Faults, ByteCorruptionChangesExactlyOneByte) {
  constexpr uint32_t kN = 1000;
  FaultConfig f;
  f.corrupt_probability = 0.5;
  f.corrupt_mode = CorruptMode::kByte;
  Blast b(25, f, kN, 300);
  ASSERT_EQ(b.rb->rx.size(), kN);
  uint64_t damaged = 0;
  for (uint32_t i = 0; i < kN; i++) {
    int differing = 0;
    for (size_t k = 0; k < b.sent[i].size(); k++) differing += b.sent[i][k] != b.rb->rx[i].bytes[k];
    ASSERT_LE(differing, 1);
    damaged += static_cast<uint64_t>(differing);
  }
  EXPECT_EQ(damaged, b.stats().corrupted);
  EXPECT_NEAR(static_cast<double>(damaged), 500, 5 * std::sqrt(250.0));
}

TEST(Faults, CorruptionCanBeDroppedLikeAnFcsError) {
  constexpr uint32_t kN = 5000;
  FaultConfig f;
  f.corrupt_probability = 0.3;
  f.corrupt_drop = true;
  Blast b(28, f, kN);
  const uint64_t dropped = b.stats().dropped(DropCause::kCorrupt);
  EXPECT_EQ(dropped, b.stats().corrupted);
  EXPECT_NEAR(static_cast<double>(dropped), 0.3 * kN, 5 * std::sqrt(0.21 * kN));
  EXPECT_EQ(b.rb->rx.size() + dropped, kN);
  for (const auto& rx : b.rb->rx) {
    const uint32_t seq = FrameSeq(rx.bytes);
    ASSERT_LT(seq, kN);
    EXPECT_EQ(rx.bytes, b.sent[seq]);  // what arrives is intact
  }
  EXPECT_STREQ(DropCauseName(DropCause::kCorrupt), "corrupt");
}

TEST(Faults, ReorderDelaysSomeFramesPastOthers) {
  constexpr uint32_t kN = 2000;
  FaultConfig f;
  f.reorder_probability = 0.3;
  f.reorder_max_delay_ps = 5 * kPsPerUs;
  Blast b(26, f, kN, 1000);
  ASSERT_EQ(b.rb->rx.size(), kN);  // nothing lost
  EXPECT_NEAR(static_cast<double>(b.stats().reordered), 0.3 * kN, 5 * std::sqrt(0.21 * kN));
  int out_of_order = 0;
  uint32_t highest = 0;
  std::set<uint32_t> seen;
  for (const auto& rx : b.rb->rx) {
    const uint32_t seq = FrameSeq(rx.bytes);
    ASSERT_TRUE(seen.insert(seq).second);
    if (seq < highest) out_of_order++;
    highest = std::max(highest, seq);
  }
  EXPECT_GT(out_of_order, 100);
  // Extra delay never exceeds the maximum: a frame lands at most 5 us late.
  const SimTime ser = SerializationPs(1020, k100G);
  for (const auto& rx : b.rb->rx) {
    const SimTime on_time =
        static_cast<SimTime>(FrameSeq(rx.bytes) + 1) * ser + kDefaultLinkDelayPs;
    EXPECT_GE(rx.time, on_time);
    EXPECT_LE(rx.time, on_time + 5 * kPsPerUs);
  }
}

TEST(Faults, OtherDirectionAndOtherLinksUntouched) {
  FaultConfig f;
  f.loss_probability = 1;
  Blast b(27, f, 10);
  EXPECT_TRUE(b.rb->rx.empty());
  ASSERT_TRUE(b.t.hosts[1]->Send(MakeFrame({.src = b.t.hosts[1], .dst = b.t.hosts[0]})));
  b.fabric.RunUntilIdle();
  EXPECT_EQ(b.ra->rx.size(), 1u);
}

TEST(Faults, ScopeSelectsLinks) {
  Fabric fab(3);
  LeafSpineConfig c;
  const Topology t = Must(BuildLeafSpine(fab, c));
  FaultConfig f;
  f.loss_probability = 1;
  ASSERT_TRUE(fab.SetAllLinkFaults(f, LinkScope::kSwitchLinks).ok());
  RecordingEndpoint same(t.host(0, 1)), other(t.host(1, 0));
  Host* src = t.host(0, 0);
  ASSERT_TRUE(src->Send(MakeFrame({.src = src, .dst = t.host(0, 1)})));
  ASSERT_TRUE(src->Send(MakeFrame({.src = src, .dst = t.host(1, 0)})));
  fab.RunUntilIdle();
  EXPECT_EQ(same.rx.size(), 1u);   // host links only
  EXPECT_EQ(other.rx.size(), 0u);  // crossed a lossy fabric link
  EXPECT_EQ(fab.total_drops(DropCause::kLoss), 1u);
}

TEST(Faults, ConfigErrorsNameTheField) {
  Fabric fab(1);
  const Topology t = Must(BuildBackToBack(fab, {}));
  struct Case {
    FaultConfig f;
    const char* want;
  };
  std::vector<Case> cases(6);
  cases[0].f.loss_probability = 1.5;
  cases[0].want = "loss_probability";
  cases[1].f.duplicate_probability = -0.1;
  cases[1].want = "duplicate_probability";
  cases[2].f.reorder_probability = 0.1;
  cases[2].want = "reorder_max_delay_ps";
  cases[3].f.reconverge_after_ps = kPsPerMs;
  cases[3].want = "blackhole_at_ps";
  cases[4].f.burst_loss = {.enabled = true, .p_good_to_bad = 0.1, .p_bad_to_good = 0};
  cases[4].want = "p_bad_to_good";
  cases[5].f.corrupt_probability = std::nan("");
  cases[5].want = "corrupt_probability";
  for (const Case& k : cases) {
    const absl::Status s = fab.SetLinkFaults(t.host_links[0], k.f);
    ASSERT_FALSE(s.ok()) << k.want;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(k.want), std::string::npos) << s;
  }
  EXPECT_FALSE(fab.SetLinkFaults(99, {}).ok());
}

// ---- Blackhole ----------------------------------------------------------------

constexpr int kSports = 32;
constexpr SimTime kSendGapPs = 1 * kPsPerUs;
constexpr SimTime kBlackholeAtPs = 100 * kPsPerUs;
constexpr SimTime kReconvergeAfterPs = 100 * kPsPerUs;
constexpr uint32_t kFrames = 400;  // one per microsecond

// Host (0,0) sends frame i at i us on source port i % kSports to host (1,0);
// the leaf1-spine0 link blackholes at 100 us.
struct BlackholeRun {
  Fabric fabric{31};
  Topology t;
  std::unique_ptr<RecordingEndpoint> tx, rx;
  std::vector<SimTime> route_changes;
  std::vector<bool> delivered;
  uint64_t spine0_delivered_at_301us = 0;

  PortId Spine0Down() const { return fabric.link(t.fabric_link(1, 0)).port_b; }

  BlackholeRun(SimTime reconverge_after, SimTime repair_at = kSimTimeNever) {
    LeafSpineConfig c;
    c.leaves = 2;
    c.spines = 2;
    c.hosts_per_leaf = 1;
    t = Must(BuildLeafSpine(fabric, c));
    FaultConfig f;
    f.blackhole_at_ps = kBlackholeAtPs;
    f.reconverge_after_ps = reconverge_after;
    EXPECT_TRUE(fabric.SetLinkFaults(t.fabric_link(1, 0), f).ok());
    if (repair_at != kSimTimeNever) {
      fabric.ScheduleCallback(
          repair_at, [this] { EXPECT_TRUE(fabric.SetLinkFaults(t.fabric_link(1, 0), {}).ok()); });
    }
    fabric.ScheduleCallback(301 * kPsPerUs, [this] {
      spine0_delivered_at_301us = fabric.port_stats(Spine0Down()).delivered_frames;
    });
    fabric.SetTraceObserver([this](const TraceRecord& r) {
      if (r.kind == TraceKind::kRouteChange) route_changes.push_back(r.time);
    });
    Host* src = t.host(0, 0);
    Host* dst = t.host(1, 0);
    tx = std::make_unique<RecordingEndpoint>(src);
    rx = std::make_unique<RecordingEndpoint>(dst);
    uint32_t next = 0;
    tx->on_timer = [&, src, dst, next](SimTime now) mutable {
      EXPECT_TRUE(src->Send(MakeFrame({.src = src,
                                       .dst = dst,
                                       .src_port = static_cast<uint16_t>(40000 + next % kSports),
                                       .seq = next})));
      if (++next < kFrames) src->SetTimer(now + kSendGapPs);
    };
    src->SetTimer(0);
    EXPECT_TRUE(fabric.RunUntilIdle());
    delivered.assign(kFrames, false);
    for (const auto& r : rx->rx) delivered[FrameSeq(r.bytes)] = true;
  }
  // Frames in [from, to) us that were lost.
  int LostBetween(uint32_t from, uint32_t to) const {
    int n = 0;
    for (uint32_t i = from; i < to; i++) n += !delivered[i];
    return n;
  }
  uint64_t BlackholeDrops() const { return fabric.total_drops(DropCause::kBlackhole); }
};

TEST(Blackhole, DropsOnlyThePathsThroughItThenReconverges) {
  BlackholeRun r(kReconvergeAfterPs);
  // A frame needs ~2 us to cross; allow 3 us around each change.
  EXPECT_EQ(r.LostBetween(0, 97), 0);
  EXPECT_EQ(r.LostBetween(203, kFrames), 0);
  const int lost = r.LostBetween(100, 197);
  EXPECT_GT(lost, 10);
  EXPECT_LT(lost, 87);
  EXPECT_EQ(static_cast<uint64_t>(r.LostBetween(0, kFrames)), r.BlackholeDrops());
  // Loss follows the source port: a port either lost every frame in the
  // blackhole window (its ECMP path used spine 0) or none.
  for (int sport = 0; sport < kSports; sport++) {
    std::set<bool> fates;
    for (uint32_t i = 100; i < 197; i++) {
      if (i % kSports == static_cast<uint32_t>(sport)) fates.insert(r.delivered[i]);
    }
    EXPECT_EQ(fates.size(), 1u) << "source port " << sport << " changed path";
  }
  EXPECT_EQ(r.route_changes, std::vector<SimTime>{kBlackholeAtPs + kReconvergeAfterPs});
  EXPECT_FALSE(r.fabric.link(r.t.fabric_link(1, 0)).routable);
}

TEST(Blackhole, WithoutReconvergenceLossContinues) {
  BlackholeRun r(kSimTimeNever);
  EXPECT_EQ(r.LostBetween(0, 97), 0);
  // Windows of two full cycles of the 32 source ports.
  const int early = r.LostBetween(128, 192);
  const int late = r.LostBetween(320, 384);
  EXPECT_GT(early, 10);
  EXPECT_EQ(early, late);  // same source ports, same paths, every 32 frames
  EXPECT_TRUE(r.route_changes.empty());
}

TEST(Blackhole, RepairPutsTheLinkBackIntoRouting) {
  BlackholeRun r(kReconvergeAfterPs, 300 * kPsPerUs);
  EXPECT_EQ(r.route_changes,
            (std::vector<SimTime>{kBlackholeAtPs + kReconvergeAfterPs, 300 * kPsPerUs}));
  EXPECT_TRUE(r.fabric.link(r.t.fabric_link(1, 0)).routable);
  EXPECT_EQ(r.LostBetween(203, kFrames), 0);
  // After the repair, spine 0 carries traffic again.
  EXPECT_GT(r.fabric.port_stats(r.Spine0Down()).delivered_frames, r.spine0_delivered_at_301us + 20);
}

}  // namespace
}  // namespace metaroce::sim
