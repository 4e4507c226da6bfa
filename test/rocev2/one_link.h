/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// One flow of WRITEs between two hosts back to back, faults on the data
// direction only (so every loss is a data packet's): the setup of the RoCEv2
// baseline's tests and of the side-by-side comparison with metaroce.

#ifndef METAROCE_TEST_ROCEV2_ONE_LINK_H
#define METAROCE_TEST_ROCEV2_ONE_LINK_H

#include "gtest/gtest.h"
#include "mr_sim_roce_node.h"

namespace metaroce::testing {

inline constexpr uint64_t kOneLinkMsgBytes = 1 << 20;
inline constexpr uint32_t kOneLinkDepth = 8;                        // WRITEs kept outstanding
inline constexpr sim::SimTime kOneLinkStepPs = 10 * sim::kPsPerUs;  // completions polled
inline constexpr sim::SimTime kOneLinkWarmupPs = 300 * sim::kPsPerUs;
inline constexpr sim::SimTime kOneLinkMeasurePs = 4 * sim::kPsPerMs;

/**
 * Sets @p faults on host 0's link towards host 1, then runs the fabric in
 * kOneLinkStepPs steps; @p poll is called after each and returns the payload
 * bytes completed so far. Returns Gbit/s of completions after the warm-up.
 */
template <typename Poll>
double OneLinkGbps(sim::Fabric& fabric, const sim::Topology& t, const sim::FaultConfig& faults,
                   Poll&& poll) {
  EXPECT_TRUE(fabric.SetLinkFaults(t.host_links[0], faults, sim::LinkDirection::kAtoB).ok());
  uint64_t at_warmup = 0, done = 0;
  for (sim::SimTime now = kOneLinkStepPs; now <= kOneLinkWarmupPs + kOneLinkMeasurePs;
       now += kOneLinkStepPs) {
    fabric.RunUntil(now);
    done = poll();
    if (now == kOneLinkWarmupPs) at_warmup = done;
  }
  return static_cast<double>(done - at_warmup) * 8 / (kOneLinkMeasurePs / 1e12) / 1e9;
}

struct RoceRun {
  double gbps = 0;  ///< completed payload over the measured time
  rocev2::Stats a, b;
};

/** The RoCEv2 baseline on that link: one QP, first PSN @p first_psn. */
inline RoceRun RoceOneLink(const sim::FaultConfig& faults, rocev2::Config cfg, uint64_t seed,
                           uint32_t first_psn = 0) {
  sim::Fabric fabric(seed);
  const sim::Topology t = *sim::BuildBackToBack(fabric, sim::BackToBackConfig{});
  sim::RoceNode a(t.hosts[0], cfg), b(t.hosts[1], cfg);
  const uint32_t qa = a.engine().CreateQp(), qb = b.engine().CreateQp();
  EXPECT_TRUE(a.engine()
                  .ConnectQp(qa, t.hosts[1]->ipv4(), t.hosts[1]->mac(), qb, 49152, first_psn, 0)
                  .ok());
  EXPECT_TRUE(b.engine()
                  .ConnectQp(qb, t.hosts[0]->ipv4(), t.hosts[0]->mac(), qa, 49153, 0, first_psn)
                  .ok());
  uint64_t posted = 0, done = 0;
  RoceRun r;
  r.gbps = OneLinkGbps(fabric, t, faults, [&] {
    rocev2::Completion c[16];
    size_t n;
    while ((n = a.engine().PollCq(c)) > 0) {
      for (size_t i = 0; i < n; i++) done += c[i].bytes;
    }
    for (; posted * kOneLinkMsgBytes < done + kOneLinkDepth * kOneLinkMsgBytes; posted++) {
      EXPECT_TRUE(a.engine().PostWrite(a.NowNs(), qa, posted, kOneLinkMsgBytes).ok());
    }
    a.Kick();
    return done;
  });
  r.a = a.engine().stats();
  r.b = b.engine().stats();
  return r;
}

/** The same with Bernoulli loss @p loss. */
inline RoceRun RoceOneLink(double loss, rocev2::Config cfg, uint64_t seed, uint32_t first_psn = 0) {
  sim::FaultConfig f;
  f.loss_probability = loss;
  return RoceOneLink(f, cfg, seed, first_psn);
}

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_ROCEV2_ONE_LINK_H
