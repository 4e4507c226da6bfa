/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The transmit pacer's token bucket, on a clock the test moves.

#include "gtest/gtest.h"
#include "mr_port_pacer.h"

namespace metaroce::port {
namespace {

constexpr transport::TimeNs kT0 = 1'000'000'000;

TEST(TxPacer, UnpacedIsAlwaysReady) {
  TxPacer p;
  EXPECT_FALSE(p.enabled());
  EXPECT_TRUE(p.Ready(kT0));
  p.Spend(1 << 30);
  EXPECT_TRUE(p.Ready(kT0));
}

TEST(TxPacer, ABurstOverdrawsAndTheDebtIsPaidAtTheRate) {
  TxPacer p(1'000'000'000, 64 * 1024);  // 1 GB/s: one byte per nanosecond
  ASSERT_TRUE(p.enabled());
  EXPECT_TRUE(p.Ready(kT0));       // a full bucket to start with
  p.Spend(64 * 1024 + 36 * 1024);  // 100 KiB: 36 KiB of debt
  EXPECT_FALSE(p.Ready(kT0));
  EXPECT_FALSE(p.Ready(kT0 + 36 * 1024));  // exactly paid back: not yet positive
  EXPECT_EQ(p.ReadyAt(), kT0 + 36 * 1024 + 1);
  EXPECT_TRUE(p.Ready(kT0 + 36 * 1024 + 1));
}

TEST(TxPacer, IdleTimeFillsTheBucketOnlyUpToTheBurst) {
  TxPacer p(1'000'000'000, 10'000);
  EXPECT_TRUE(p.Ready(kT0));
  p.Spend(10'000);
  EXPECT_FALSE(p.Ready(kT0));
  EXPECT_TRUE(p.Ready(kT0 + 1'000'000'000));  // a second idle: the bucket holds 10'000, not 1 GB
  p.Spend(10'000);
  EXPECT_FALSE(p.Ready(kT0 + 1'000'000'000));
}

TEST(TxPacer, AverageRateOverManySendsIsTheRate) {
  // A loop that sends 4 KiB whenever it may: over 100 ms at 100 MB/s it
  // sends 10 MB, plus at most one burst.
  TxPacer p(100'000'000, 64 * 1024);
  uint64_t sent = 0;
  for (transport::TimeNs t = kT0; t < kT0 + 100'000'000; t += 1'000) {
    while (p.Ready(t)) {
      p.Spend(4096);
      sent += 4096;
    }
  }
  EXPECT_GE(sent, 10'000'000u - 4096);
  EXPECT_LE(sent, 10'000'000u + 64 * 1024 + 4096);
}

TEST(TxPacer, TimeGoingBackIsIgnored) {
  TxPacer p(1'000'000'000, 1000);
  EXPECT_TRUE(p.Ready(kT0));
  p.Spend(2000);
  EXPECT_FALSE(p.Ready(kT0 - 500));
  EXPECT_TRUE(p.Ready(kT0 + 1001));
}

}  // namespace
}  // namespace metaroce::port
