/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Where a host pair's QPs live (app/metaroced/placement.h): both daemons
// must agree, whatever their shard counts, from the addresses and the QP
// numbers they exchange.

#include "placement.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "mr_transport.h"

namespace metaroce::daemon {
namespace {

std::vector<wire::IpAddr> Hosts() {
  std::vector<wire::IpAddr> v;
  for (uint8_t i = 1; i <= 40; i++) v.push_back(wire::IpAddr::V4(10, 1, i / 8, i));
  v.push_back(wire::IpAddr::V4(127, 0, 0, 1));
  std::array<uint8_t, 16> six{};
  six[0] = 0xfd;
  six[15] = 1;
  v.push_back(wire::IpAddr::V6(six));
  six[15] = 2;
  v.push_back(wire::IpAddr::V6(six));
  return v;
}

TEST(PlacementTest, BothEndsOfAPairHashItAlike) {
  for (const wire::IpAddr& a : Hosts()) {
    for (const wire::IpAddr& b : Hosts()) {
      EXPECT_EQ(PairHash(a, b), PairHash(b, a)) << a.ToString() << " " << b.ToString();
    }
  }
  // A convention between hosts: pinned, so that it cannot change unnoticed.
  EXPECT_EQ(PairHash(wire::IpAddr::V4(10, 0, 0, 1), wire::IpAddr::V4(10, 0, 0, 2)),
            0xa92b8864f82c96a2ull);
}

TEST(PlacementTest, AQpNumberTellsThePeerWhichShardHoldsTheQp) {
  const std::vector<wire::IpAddr> hosts = Hosts();
  for (uint16_t mine = 1; mine <= runtime::kMaxShards; mine++) {
    for (uint16_t theirs = 1; theirs <= runtime::kMaxShards; theirs++) {
      for (size_t i = 0; i + 1 < hosts.size(); i++) {
        const wire::IpAddr& me = hosts[i];
        const wire::IpAddr& peer = hosts[i + 1];
        // The peer numbers its QP for pair placement and puts it on its shard of the pair.
        const uint32_t qpn = 0x1234u << kQpnTagBits | PairQpnTag(theirs);
        const uint16_t held = PairShard(peer, me, theirs);
        ASSERT_LT(held, theirs);
        EXPECT_EQ(PeerShardOf(qpn, me, peer), held);
        ASSERT_LT(PairShard(me, peer, mine), mine);
        // A QP on an SRQ names its shard.
        for (uint16_t s = 0; s < theirs; s++) {
          EXPECT_EQ(PeerShardOf(0x99u << kQpnTagBits | FixedQpnTag(s), me, peer), s);
        }
      }
    }
  }
  // The largest number a daemon gives (registry.cc) fits the 24 bits of verbs.
  const uint32_t top = ((transport::kQpnSpace >> kQpnTagBits) - 1) << kQpnTagBits;
  EXPECT_LT(top | FixedQpnTag(runtime::kMaxShards - 1), 1u << 24);
}

TEST(PlacementTest, PairsSpreadOverTheShards) {
  const wire::IpAddr me = wire::IpAddr::V4(10, 0, 0, 1);
  std::array<int, 4> per{};
  for (int i = 0; i < 256; i++) {
    per[PairShard(me, wire::IpAddr::V4(10, 0, static_cast<uint8_t>(i / 250), i % 250 + 2), 4)]++;
  }
  for (const int n : per) {
    EXPECT_GT(n, 32);
    EXPECT_LT(n, 96);
  }
}

}  // namespace
}  // namespace metaroce::daemon
