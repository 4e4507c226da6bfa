/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "gtest/gtest.h"
#include "mr_wire_psn.h"

namespace metaroce::wire {
namespace {

TEST(SerialNumbers, CompareAcrossWrap) {
  EXPECT_TRUE(SeqLt(1, 2));
  EXPECT_TRUE(SeqLt(0xffffffffu, 0));
  EXPECT_TRUE(SeqLt(0xfffffff0u, 5));
  EXPECT_FALSE(SeqLt(5, 0xfffffff0u));
  EXPECT_TRUE(SeqLe(7, 7));
  EXPECT_FALSE(SeqLt(7, 7));
  EXPECT_EQ(SeqDiff(3, 0xfffffffeu), 5);
  EXPECT_EQ(SeqDiff(0xfffffffeu, 3), -5);
  // Just under half the space apart still orders correctly.
  EXPECT_TRUE(SeqLt(0, 0x7fffffffu));
}

TEST(SerialNumbers, SackBitCoversExactly256AboveCumulative) {
  uint32_t bit = 99;
  EXPECT_FALSE(SackBitFor(100, 100, &bit));  // the cumulative PSN itself is never in the bitmap
  EXPECT_FALSE(SackBitFor(100, 99, &bit));   // below: already covered cumulatively
  ASSERT_TRUE(SackBitFor(100, 101, &bit));
  EXPECT_EQ(bit, 0u);
  ASSERT_TRUE(SackBitFor(100, 356, &bit));
  EXPECT_EQ(bit, 255u);
  EXPECT_FALSE(SackBitFor(100, 357, &bit));
  // Across the wrap of the 32-bit space.
  ASSERT_TRUE(SackBitFor(0xffffff80u, 0x10, &bit));
  EXPECT_EQ(bit, 0x10u + 0x80u - 1);
  ASSERT_TRUE(SackBitFor(0xffffffffu, 0, &bit));
  EXPECT_EQ(bit, 0u);
}

}  // namespace
}  // namespace metaroce::wire
