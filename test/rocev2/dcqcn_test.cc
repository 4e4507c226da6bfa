/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// DCQCN in the RoCEv2 baseline: two senders into one receiver through a
// switch that marks CE (issue #12: "DCQCN converges two flows to a fair share").

#include <cstdio>
#include <vector>

#include "gtest/gtest.h"
#include "one_link.h"

namespace metaroce::testing {
namespace {

constexpr uint64_t kGbps = 1'000'000'000;
constexpr sim::SimTime kRunPs = 20 * sim::kPsPerMs;
constexpr sim::SimTime kTailPs = 5 * sim::kPsPerMs;          // the measured end of the run
constexpr sim::SimTime kSecondStartsPs = 3 * sim::kPsPerMs;  // sender 1 joins sender 0 then

struct IncastRun {
  double gbps[2] = {0, 0};  ///< each sender's completed payload in the last kTailPs
  rocev2::Stats sender[2], receiver;
  rocev2::QpRate rate[2];
  uint64_t switch_drops = 0;
};

// Hosts 0 and 1 each keep kOneLinkDepth WRITEs posted to host 2, all under
// one leaf at 100 Gbit/s: host 2's link is the bottleneck. Host 1 starts
// kSecondStartsPs later, when host 0 has the link to itself.
IncastRun TwoIntoOne(bool dcqcn) {
  sim::Fabric fabric(5);
  sim::LeafSpineConfig ls;
  ls.leaves = 1;
  ls.spines = 1;
  ls.hosts_per_leaf = 3;
  ls.host_link.rate_bps = ls.fabric_link.rate_bps = 100 * kGbps;
  const sim::Topology t = *sim::BuildLeafSpine(fabric, ls);
  rocev2::Config cfg;
  cfg.dcqcn = dcqcn;
  RoceSimNode s0(t.host(0, 0), cfg), s1(t.host(0, 1), cfg), r(t.host(0, 2), cfg);
  RoceSimNode* senders[2] = {&s0, &s1};
  uint32_t qp[2];
  for (int i = 0; i < 2; i++) {
    qp[i] = senders[i]->engine().CreateQp();
    const uint32_t rq = r.engine().CreateQp();
    EXPECT_TRUE(senders[i]
                    ->engine()
                    .ConnectQp(qp[i], r.host()->ipv4(), r.host()->mac(), rq,
                               static_cast<uint16_t>(49152 + i))
                    .ok());
    EXPECT_TRUE(r.engine()
                    .ConnectQp(rq, senders[i]->host()->ipv4(), senders[i]->host()->mac(), qp[i],
                               static_cast<uint16_t>(50000 + i))
                    .ok());
  }
  uint64_t posted[2] = {0, 0}, done[2] = {0, 0}, at_tail[2] = {0, 0};
  for (sim::SimTime now = kOneLinkStepPs; now <= kRunPs; now += kOneLinkStepPs) {
    fabric.RunUntil(now);
    for (int i = 0; i < 2; i++) {
      if (i == 1 && now < kSecondStartsPs) continue;
      rocev2::Engine& e = senders[i]->engine();
      rocev2::Completion c[16];
      size_t n;
      while ((n = e.PollCq(c)) > 0) {
        for (size_t k = 0; k < n; k++) done[i] += c[k].bytes;
      }
      for (; posted[i] * kOneLinkMsgBytes < done[i] + kOneLinkDepth * kOneLinkMsgBytes;
           posted[i]++) {
        EXPECT_TRUE(e.PostWrite(senders[i]->NowNs(), qp[i], posted[i], kOneLinkMsgBytes).ok());
      }
      senders[i]->Kick();
      if (now == kRunPs - kTailPs) at_tail[i] = done[i];
    }
  }
  IncastRun out;
  for (int i = 0; i < 2; i++) {
    out.gbps[i] = static_cast<double>(done[i] - at_tail[i]) * 8 / (kTailPs / 1e12) / 1e9;
    out.sender[i] = senders[i]->engine().stats();
    out.rate[i] = senders[i]->engine().Rate(qp[i]);
  }
  out.receiver = r.engine().stats();
  out.switch_drops = fabric.total_drops(sim::DropCause::kQueueFull);
  return out;
}

double Jain(double a, double b) { return (a + b) * (a + b) / (2 * (a * a + b * b)); }

TEST(Dcqcn, TwoFlowsIntoOneReceiverShareItFairly) {
  for (bool dcqcn : {false, true}) {
    const IncastRun r = TwoIntoOne(dcqcn);
    std::printf(
        "DCQCN %s: %.1f + %.1f Gbit/s (Jain %.3f), switch drops %lu, CE %lu, CNPs %lu, "
        "go-backs %lu + %lu, rates %.0f / %.0f Mbit/s, alpha %.3f / %.3f\n",
        dcqcn ? "on " : "off", r.gbps[0], r.gbps[1], Jain(r.gbps[0], r.gbps[1]),
        static_cast<unsigned long>(r.switch_drops),
        static_cast<unsigned long>(r.receiver.rx_ce_pkts),
        static_cast<unsigned long>(r.receiver.tx_cnps),
        static_cast<unsigned long>(r.sender[0].go_backs_nak + r.sender[0].go_backs_timeout),
        static_cast<unsigned long>(r.sender[1].go_backs_nak + r.sender[1].go_backs_timeout),
        r.rate[0].rate_mbps, r.rate[1].rate_mbps, r.rate[0].alpha, r.rate[1].alpha);
    const double marked =
        static_cast<double>(r.receiver.rx_ce_pkts) / static_cast<double>(r.receiver.rx_data_pkts);
    if (!dcqcn) {
      // Window-limited senders keep the switch queue above the marking threshold.
      EXPECT_EQ(r.receiver.tx_cnps, 0u);
      EXPECT_GT(marked, 0.5);
      continue;
    }
    EXPECT_GT(r.receiver.tx_cnps, 0u);
    EXPECT_EQ(r.sender[0].rx_cnps + r.sender[1].rx_cnps, r.receiver.tx_cnps);
    EXPECT_LT(marked, 0.02);  // the rates, not the windows, hold the queue down
    // The late sender has its share: equal rates, equal goodput.
    EXPECT_NEAR(r.rate[0].rate_mbps, r.rate[1].rate_mbps, 0.05 * 100'000);
    EXPECT_GE(Jain(r.gbps[0], r.gbps[1]), 0.9);
    EXPECT_GT(r.gbps[0] + r.gbps[1], 75.0);  // of the 97 the link carries (80.6 measured)
  }
}

}  // namespace
}  // namespace metaroce::testing
