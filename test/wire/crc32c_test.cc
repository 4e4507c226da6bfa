/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <rte_hash_crc.h>

#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "mr_config.h"
#include "mr_crc32c.h"

namespace metaroce::wire {
namespace {

// Check values from RFC 3720 appendix B.4 (iSCSI), as integers.
TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  std::vector<uint8_t> v(32, 0x00);
  EXPECT_EQ(Crc32c(v.data(), v.size()), 0x8A9136AAu);
  std::fill(v.begin(), v.end(), 0xff);
  EXPECT_EQ(Crc32c(v.data(), v.size()), 0x62A8AB43u);
  for (size_t i = 0; i < 32; i++) v[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(v.data(), v.size()), 0x46DD794Eu);
  for (size_t i = 0; i < 32; i++) v[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Crc32c(v.data(), v.size()), 0x113FDB5Cu);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
}

TEST(Crc32c, ExtendEqualsWholeAndPortableEqualsAccelerated) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(9000 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (int iter = 0; iter < 500; iter++) {
    const size_t off = rng() % 16;  // every alignment
    const size_t len = rng() % 9000;
    const size_t cut = len ? rng() % len : 0;
    const uint8_t* p = buf.data() + off;
    const uint32_t whole = Crc32c(p, len);
    EXPECT_EQ(Crc32cExtend(Crc32c(p, cut), p + cut, len - cut), whole);
    EXPECT_EQ(Crc32cExtendPortable(0, p, len), whole) << "len " << len << " off " << off;
  }
}

// Every short length at every alignment: the accelerated path's tail steps
// (4, 2 and 1 bytes) in each combination.
TEST(Crc32c, ShortRunsMatchThePortableCode) {
  std::mt19937 rng(11);
  std::vector<uint8_t> buf(64 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t off = 0; off < 16; off++) {
    for (size_t len = 0; len <= 64; len++) {
      const uint8_t* p = buf.data() + off;
      EXPECT_EQ(Crc32c(p, len), Crc32cExtendPortable(0, p, len)) << "len " << len << " off " << off;
    }
  }
}

// Both sides of the switch to ISA-L, and a CRC extended across it.
TEST(Crc32c, AgreesAcrossTheIsalThreshold) {
  std::mt19937 rng(3);
  std::vector<uint8_t> buf(2 * config::kCrc32cIsalMinBytes + 8);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len = config::kCrc32cIsalMinBytes - 9; len <= config::kCrc32cIsalMinBytes + 9;
       len++) {
    const uint32_t whole = Crc32c(buf.data(), len);
    EXPECT_EQ(Crc32cExtendPortable(0, buf.data(), len), whole) << len;
    for (size_t cut : {size_t{1}, len / 2, len - 1}) {
      EXPECT_EQ(Crc32cExtend(Crc32c(buf.data(), cut), buf.data() + cut, len - cut), whole)
          << len << " cut " << cut;
    }
  }
}

// DPDK's rte_hash_crc computes the same polynomial without the final
// inversion; our trailer must match what a DPDK dataplane (or a NIC) computes.
TEST(Crc32c, MatchesDpdkHashCrc) {
  std::mt19937 rng(11);
  std::vector<uint8_t> buf(4096);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t len : {1u, 7u, 8u, 63u, 64u, 1500u, 4096u}) {
    EXPECT_EQ(Crc32c(buf.data(), len), ~rte_hash_crc(buf.data(), len, 0xffffffffu)) << len;
  }
}

}  // namespace
}  // namespace metaroce::wire
