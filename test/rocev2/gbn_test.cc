/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The RoCEv2 baseline on the simulated fabric: lossless line rate, and
// go-back-N goodput under random loss against the analytic curve
// (1 - p) / (1 + p W) that makes it a faithful baseline (issue #12).

#include <cmath>
#include <cstdio>
#include <memory>

#include "gtest/gtest.h"
#include "one_link.h"

namespace metaroce::testing {
namespace {

// The baseline with a window of @p window_pkts packets.
RoceRun RunOneQp(const sim::FaultConfig& f, uint32_t window_pkts, uint64_t seed,
                 uint32_t first_psn = 0) {
  rocev2::Config cfg;
  cfg.window_pkts = window_pkts;
  return RoceOneLink(f, cfg, seed, first_psn);
}

RoceRun RunOneQp(double loss, uint32_t window_pkts, uint64_t seed, uint32_t first_psn = 0) {
  rocev2::Config cfg;
  cfg.window_pkts = window_pkts;
  return RoceOneLink(loss, cfg, seed, first_psn);
}

double Analytic(double p, uint32_t w) { return (1 - p) / (1 + p * w); }

// Two hosts back to back, one QP each, connected; one direction of the
// link drops everything from the start.
struct BackToBackQps {
  sim::Fabric fabric;
  sim::Topology t;
  std::unique_ptr<sim::RoceNode> a, b;
  uint32_t qa = 0, qb = 0;
  BackToBackQps(uint64_t seed, const rocev2::Config& cfg, sim::LinkDirection dark_dir)
      : fabric(seed), t(*sim::BuildBackToBack(fabric, sim::BackToBackConfig{})) {
    a = std::make_unique<sim::RoceNode>(t.hosts[0], cfg);
    b = std::make_unique<sim::RoceNode>(t.hosts[1], cfg);
    qa = a->engine().CreateQp();
    qb = b->engine().CreateQp();
    EXPECT_TRUE(a->engine().ConnectQp(qa, t.hosts[1]->ipv4(), t.hosts[1]->mac(), qb, 49152).ok());
    EXPECT_TRUE(b->engine().ConnectQp(qb, t.hosts[0]->ipv4(), t.hosts[0]->mac(), qa, 49153).ok());
    sim::FaultConfig dark;
    dark.loss_probability = 1;
    EXPECT_TRUE(fabric.SetLinkFaults(t.host_links[0], dark, dark_dir).ok());
  }
};

TEST(RoceV2, LosslessRunsAtLineRateInOrder) {
  const RoceRun r = RunOneQp(0, 64, 1);
  // 400 Gbit/s; a 4 KiB packet carries 4096 of 4096 + 14 + 20 + 8 + 12 + 4 + 20 bytes
  // on the wire (a first one 16 more): about 97.3 % of line rate is payload.
  std::printf("lossless: %.1f Gbit/s, %lu data packets, %lu ACKs\n", r.gbps,
              static_cast<unsigned long>(r.a.tx_data_pkts),
              static_cast<unsigned long>(r.b.tx_acks));
  EXPECT_GT(r.gbps, 0.95 * 400 * 4096 / (4096 + 78));
  EXPECT_EQ(r.a.tx_resent_pkts, 0u);
  EXPECT_EQ(r.b.rx_out_of_order, 0u);
  EXPECT_EQ(r.b.tx_naks, 0u);
  EXPECT_EQ(r.a.go_backs_timeout, 0u);
}

// The baseline is faithful only if its loss behaviour is go-back-N's: each
// lost packet costs the window behind it again, so goodput relative to
// lossless follows (1 - p) / (1 + p W) (anchors.md: ~45 % at 1 % for W ~ 120).
TEST(RoceV2, GoBackNGoodputFollowsTheAnalyticCurve) {
  for (uint32_t w : {16u, 64u}) {
    const double lossless = RunOneQp(0, w, 1).gbps;
    for (double p : {0.001, 0.005, 0.01}) {
      const RoceRun r = RunOneQp(p, w, 2);
      const double ratio = r.gbps / lossless, want = Analytic(p, w);
      std::printf(
          "W %2u p %.3f: %.1f Gbit/s, %.3f of lossless, analytic %.3f (%+.1f %%); "
          "resent %.2f per loss, NAK go-backs %lu, timeouts %lu\n",
          w, p, r.gbps, ratio, want, 100 * (ratio / want - 1),
          static_cast<double>(r.a.tx_resent_pkts) /
              std::max<double>(1, static_cast<double>(r.a.go_backs_nak + r.a.go_backs_timeout)),
          static_cast<unsigned long>(r.a.go_backs_nak),
          static_cast<unsigned long>(r.a.go_backs_timeout));
      EXPECT_NEAR(ratio / want, 1.0, 0.15) << "W " << w << " p " << p;
      EXPECT_GT(r.a.go_backs_nak, 0u);
      EXPECT_GT(r.b.rx_out_of_order, 0u);  // packets after a gap are dropped, not kept
    }
  }
}

// 24-bit PSNs wrap: a QP that starts 1000 packets before the wrap loses and
// recovers across it exactly as one that starts at 0.
TEST(RoceV2, PsnsWrapAt24Bits) {
  const RoceRun at0 = RunOneQp(0.005, 32, 3, 0);
  const RoceRun wrap = RunOneQp(0.005, 32, 3, rocev2::kPsnMask - 1000);
  EXPECT_GT(wrap.a.tx_data_pkts, 2000u);  // well past the wrap
  EXPECT_EQ(wrap.a.tx_data_pkts, at0.a.tx_data_pkts);
  EXPECT_EQ(wrap.a.tx_resent_pkts, at0.a.tx_resent_pkts);
  EXPECT_EQ(wrap.a.completed_bytes, at0.a.completed_bytes);
  EXPECT_EQ(wrap.b.rx_duplicates, at0.b.rx_duplicates);
  EXPECT_GT(wrap.a.completed_bytes, 0u);
}

// A damaged frame fails its ICRC and is dropped like a lost one: the
// responder NAKs the gap and the WRITEs still complete.
TEST(RoceV2, DamagedFramesAreDroppedAndRecovered) {
  sim::FaultConfig f;
  f.corrupt_probability = 0.005;
  f.corrupt_drop = false;  // delivered damaged: the receiver must catch it
  const RoceRun r = RunOneQp(f, 32, 4);
  EXPECT_GT(r.b.rx_dropped, 0u);
  EXPECT_GT(r.a.go_backs_nak, 0u);
  EXPECT_GT(r.gbps, 0.8 * RunOneQp(0, 32, 4).gbps);
}

// A path that delivers nothing: each local ACK timeout goes back again, and
// after retry_count of them in a row the QP fails, as an RC QP with
// retry_cnt 7 does - the oldest WRITE with "retry exceeded", the rest flushed.
TEST(RoceV2, RetriesRunOutOnABlackholedPathAndTheQpFails) {
  const rocev2::Config cfg;
  BackToBackQps q(6, cfg, sim::LinkDirection::kAtoB);
  sim::Fabric& fabric = q.fabric;
  sim::RoceNode& a = *q.a;
  const uint32_t qa = q.qa;
  for (uint64_t i = 0; i < 3; i++) ASSERT_TRUE(a.engine().PostWrite(a.NowNs(), qa, i, 65536).ok());
  a.Kick();
  rocev2::Completion c[8];
  // retry_count + 1 timeouts of 100 us: nothing completes before the last.
  fabric.RunUntil(cfg.retry_count * cfg.ack_timeout_ns * sim::kPsPerNs);
  EXPECT_EQ(a.engine().PollCq(c), 0u);
  fabric.RunUntil((cfg.retry_count + 2) * cfg.ack_timeout_ns * sim::kPsPerNs);
  ASSERT_EQ(a.engine().PollCq(c), 3u);
  EXPECT_EQ(c[0].wr_id, 0u);
  EXPECT_EQ(c[0].status, rocev2::WcStatus::kRetryExceeded);
  EXPECT_EQ(c[1].status, rocev2::WcStatus::kFlushed);
  EXPECT_EQ(c[2].status, rocev2::WcStatus::kFlushed);
  const rocev2::Stats& s = a.engine().stats();
  EXPECT_EQ(s.go_backs_timeout, cfg.retry_count + 1);
  EXPECT_EQ(s.qp_errors, 1u);
  EXPECT_EQ(s.completed_bytes, 0u);
  EXPECT_FALSE(a.engine().PostWrite(a.NowNs(), qa, 9, 1).ok());
  const uint64_t sent = s.tx_data_pkts;
  fabric.RunUntil(10 * cfg.retry_count * cfg.ack_timeout_ns * sim::kPsPerNs);
  EXPECT_EQ(a.engine().stats().tx_data_pkts, sent);  // a QP in error sends nothing more
}

// Every ACK of a window is lost, the data all arrived. The local ACK timeout
// goes back to the oldest packet; the responder answers the first resend (a
// duplicate) with an ACK of everything it has, and that ACK counts although
// it names PSNs the requester has not resent yet (they were sent before): the
// requester stops resending when it comes back, as a NIC that checks
// ACKs against the PSNs it ever sent does. Before, such ACKs were dropped
// until the resends caught up, so the whole window went again, and a QP paced
// below the ACKs' pace never caught up and failed.
TEST(RoceV2, AnAckForPacketsSentBeforeAGoBackEndsTheResends) {
  rocev2::Config cfg;
  cfg.window_pkts = 512;
  BackToBackQps q(7, cfg, sim::LinkDirection::kBtoA);
  sim::Fabric& fabric = q.fabric;
  sim::RoceNode &a = *q.a, &b = *q.b;
  const uint32_t qa = q.qa;
  const sim::Topology& t = q.t;
  // One window of packets.
  const uint64_t bytes = uint64_t{cfg.window_pkts} * cfg.mtu_bytes / 2;
  for (uint64_t i = 0; i < 2; i++) ASSERT_TRUE(a.engine().PostWrite(a.NowNs(), qa, i, bytes).ok());
  a.Kick();
  fabric.RunUntil(cfg.ack_timeout_ns / 2 * sim::kPsPerNs);
  ASSERT_EQ(b.engine().stats().rx_accepted_pkts, cfg.window_pkts);  // all arrived, no ACK came
  ASSERT_EQ(a.engine().stats().tx_resent_pkts, 0u);
  ASSERT_TRUE(fabric.SetLinkFaults(t.host_links[0], sim::FaultConfig{}).ok());
  fabric.RunUntil(2 * cfg.ack_timeout_ns * sim::kPsPerNs);
  rocev2::Completion c[4];
  ASSERT_EQ(a.engine().PollCq(c), 2u);
  EXPECT_EQ(c[0].status, rocev2::WcStatus::kSuccess);
  EXPECT_EQ(c[1].status, rocev2::WcStatus::kSuccess);
  const rocev2::Stats& s = a.engine().stats();
  EXPECT_EQ(s.go_backs_timeout, 1u);
  // What the NIC had queued when the ACK came back, not the window.
  EXPECT_LT(s.tx_resent_pkts, cfg.window_pkts / 4) << s.tx_resent_pkts << " resent";
}

}  // namespace
}  // namespace metaroce::testing
