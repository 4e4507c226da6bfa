/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// N RoCEv2 senders into one receiver under one leaf at 100 Gbit/s: the
// receiver's link is the bottleneck. The one setup of the DCQCN and PFC
// tests.

#ifndef METAROCE_TEST_ROCEV2_INTO_ONE_H
#define METAROCE_TEST_ROCEV2_INTO_ONE_H

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "one_link.h"

namespace metaroce::testing {

inline constexpr uint64_t kIntoOneGbps = 100;

struct IntoOneConfig {
  uint32_t senders = 2;
  rocev2::Config engine;  ///< every host's (DCQCN on by default)
  sim::PfcConfig pfc;     ///< the leaf's (off: lossy)
  sim::RedConfig red;     ///< the leaf's marking (off: its step threshold)
  uint64_t port_buffer_bytes = sim::kDefaultPortBufferBytes;
  sim::SimTime stagger_ps = 0;            ///< sender i starts at i x this
  uint64_t msg_bytes = kOneLinkMsgBytes;  ///< each WRITE (kOneLinkDepth outstanding)
  sim::SimTime run_ps = 20 * sim::kPsPerMs;
  sim::SimTime tail_ps = 5 * sim::kPsPerMs;  ///< the measured end of the run
};

struct IntoOneRun {
  std::vector<double> gbps;  ///< each sender's completed payload in the tail
  std::vector<rocev2::Stats> sender;
  std::vector<rocev2::QpRate> rate;
  rocev2::Stats receiver;
  uint64_t switch_drops = 0;       ///< every cause
  uint32_t qp_errors = 0;          ///< QPs whose retries ran out (kRetryExceeded)
  uint64_t pauses = 0;             ///< PFC pauses that took effect at the senders' NICs
  sim::SimTime max_paused_ps = 0;  ///< the most a sender's NIC was paused
  double Total() const {
    double t = 0;
    for (double g : gbps) t += g;
    return t;
  }
  double Jain() const { return sim::JainIndex(gbps); }
};

/**
 * Hosts 0..n-1 each keep kOneLinkDepth WRITEs of msg_bytes posted to
 * host n, one QP each, from their start on.
 */
inline IntoOneRun RunIntoOne(const IntoOneConfig& c) {
  sim::Fabric fabric(5);
  sim::LeafSpineConfig ls;
  ls.leaves = 1;
  ls.spines = 1;
  ls.hosts_per_leaf = c.senders + 1;
  ls.host_link.rate_bps = ls.fabric_link.rate_bps = kIntoOneGbps * sim::kBpsPerGbps;
  ls.port_buffer_bytes = c.port_buffer_bytes;
  ls.pfc = c.pfc;
  ls.red = c.red;
  const sim::Topology t = *sim::BuildLeafSpine(fabric, ls);
  std::vector<std::unique_ptr<sim::RoceNode>> senders;
  for (uint32_t i = 0; i < c.senders; i++) {
    senders.push_back(std::make_unique<sim::RoceNode>(t.host(0, i), c.engine));
  }
  sim::RoceNode r(t.host(0, c.senders), c.engine);
  std::vector<uint32_t> qp;
  for (uint32_t i = 0; i < c.senders; i++) {
    qp.push_back(senders[i]->engine().CreateQp());
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
  std::vector<uint64_t> posted(c.senders), done(c.senders), at_tail(c.senders);
  std::vector<bool> failed(c.senders);
  IntoOneRun out;
  for (sim::SimTime now = kOneLinkStepPs; now <= c.run_ps; now += kOneLinkStepPs) {
    fabric.RunUntil(now);
    for (uint32_t i = 0; i < c.senders; i++) {
      if (now < i * c.stagger_ps) continue;
      rocev2::Engine& e = senders[i]->engine();
      rocev2::Completion wc[16];
      size_t n;
      while ((n = e.PollCq(wc)) > 0) {
        for (size_t k = 0; k < n; k++) {
          if (wc[k].status == rocev2::WcStatus::kSuccess) {
            done[i] += wc[k].bytes;
          } else if (!failed[i]) {
            failed[i] = true;  // its retries ran out: the QP is in error, posts no more
            out.qp_errors++;
          }
        }
      }
      for (; !failed[i] && posted[i] * c.msg_bytes < done[i] + kOneLinkDepth * c.msg_bytes;
           posted[i]++) {
        EXPECT_TRUE(e.PostWrite(senders[i]->NowNs(), qp[i], posted[i], c.msg_bytes).ok());
      }
      senders[i]->Kick();
      if (now == c.run_ps - c.tail_ps) at_tail[i] = done[i];
    }
  }
  for (uint32_t i = 0; i < c.senders; i++) {
    out.gbps.push_back(static_cast<double>(done[i] - at_tail[i]) * 8 / (c.tail_ps / 1e12) / 1e9);
    out.sender.push_back(senders[i]->engine().stats());
    out.rate.push_back(senders[i]->engine().Rate(qp[i]));
    const sim::PortStats& nic = fabric.port_stats(t.host(0, i)->port());
    out.pauses += nic.pfc_pauses_received;
    out.max_paused_ps = std::max(out.max_paused_ps, nic.pfc_paused_ps);
  }
  out.receiver = r.engine().stats();
  for (size_t k = 0; k < static_cast<size_t>(sim::DropCause::kCount); k++) {
    out.switch_drops += fabric.total_drops(static_cast<sim::DropCause>(k));
  }
  return out;
}

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_ROCEV2_INTO_ONE_H
