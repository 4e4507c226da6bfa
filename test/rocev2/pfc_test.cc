/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The RoCEv2 baseline with and without PFC under incast (issue #12: "PFC
// pauses under incast for the baseline"): 8 senders into one receiver
// through a leaf of 256 KB port buffers, without DCQCN so that the switch
// alone decides. Without PFC the go-back-N windows overflow the buffer, every
// loss resends a window, and the QPs whose retries run out fail; with it the
// leaf pauses the senders, nothing is lost and the link stays full.

#include <cstdio>

#include "gtest/gtest.h"
#include "into_one.h"

namespace metaroce::testing {
namespace {

IntoOneRun EightIntoOne(bool pfc) {
  IntoOneConfig c;
  c.senders = 8;
  c.engine.dcqcn = false;
  c.port_buffer_bytes = 256 * 1024;
  c.pfc.enabled = pfc;
  c.msg_bytes = 64 * 1024;  // completions fine enough to tell 8 senders' shares apart
  c.run_ps = 6 * sim::kPsPerMs;
  c.tail_ps = 4 * sim::kPsPerMs;
  return RunIntoOne(c);
}

uint64_t GoBacks(const IntoOneRun& r) {
  uint64_t n = 0;
  for (const rocev2::Stats& s : r.sender) n += s.go_backs_nak + s.go_backs_timeout;
  return n;
}

TEST(Pfc, PausesTheSendersOfAnIncastAndNothingIsLost) {
  const IntoOneRun lossy = EightIntoOne(false);
  const IntoOneRun lossless = EightIntoOne(true);
  for (const auto& [name, r] :
       {std::pair{"without PFC", &lossy}, std::pair{"with PFC", &lossless}}) {
    std::printf(
        "8 RoCEv2 senders into one, %s: %.1f Gbit/s (Jain %.3f), switch drops %lu, go-backs %lu, "
        "QPs failed %u, pauses %lu, a sender paused at most %.2f of the run\n",
        name, r->Total(), r->Jain(), static_cast<unsigned long>(r->switch_drops),
        static_cast<unsigned long>(GoBacks(*r)), r->qp_errors,
        static_cast<unsigned long>(r->pauses),
        static_cast<double>(r->max_paused_ps) / (6 * sim::kPsPerMs));
  }
  EXPECT_GT(lossy.switch_drops, 100u);
  EXPECT_GT(GoBacks(lossy), 10u);
  EXPECT_GT(lossy.qp_errors, 0u);
  EXPECT_LT(lossy.Jain(), 0.5);
  EXPECT_EQ(lossy.pauses, 0u);

  EXPECT_EQ(lossless.switch_drops, 0u);
  EXPECT_EQ(lossless.qp_errors, 0u);
  EXPECT_EQ(GoBacks(lossless), 0u);
  EXPECT_GT(lossless.pauses, 8u);
  // Each sender gets an eighth of the link, so it is paused most of the time.
  EXPECT_GT(lossless.max_paused_ps, 6 * sim::kPsPerMs / 2);
  EXPECT_GT(lossless.Total(), 0.95 * kIntoOneGbps * 4096 / 4168);  // payload of full frames
  EXPECT_GE(lossless.Jain(), 0.99);
}

}  // namespace
}  // namespace metaroce::testing
