/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Which shard holds a host pair's QPs (doc/daemon.md, "Connections, same host,
// shards"): every QP between two hosts lives on one shard at each end, so the
// pair has one connection and one congestion controller whatever the
// applications' shards. Both daemons compute the same hash of the pair; each
// takes it modulo its own shard count, and learns the peer's shard count from
// the low bits of the peer's QP numbers (which may instead name a shard).

#ifndef METAROCE_APP_METAROCED_PLACEMENT_H
#define METAROCE_APP_METAROCED_PLACEMENT_H

#include <algorithm>
#include <cstdint>

#include "mr_runtime.h"
#include "mr_wire_frame.h"

namespace metaroce::daemon {

/**
 * The low bits of a QP number tell a peer which shard holds it. Below bit
 * kQpnShardBits: the daemon's shard count minus one (the QP is on its host
 * pair's shard), or with kQpnFixedShard set, the index of the shard that
 * holds it whatever the pair (a QP on an SRQ lives on the SRQ's shard).
 */
inline constexpr uint8_t kQpnShardBits = 4;
inline constexpr uint32_t kQpnFixedShard = 1u << kQpnShardBits;
inline constexpr uint8_t kQpnTagBits = kQpnShardBits + 1;
static_assert((1u << kQpnShardBits) >= runtime::kMaxShards);

/** The tag of a QP that goes to its host pair's shard, on a daemon of @p shards shards. */
constexpr uint32_t PairQpnTag(uint16_t shards) { return uint32_t{shards} - 1; }
/** The tag of a QP that lives on shard @p shard. */
constexpr uint32_t FixedQpnTag(uint16_t shard) { return kQpnFixedShard | shard; }

/**
 * A hash of the unordered pair {@p a, @p b}, the same on both hosts: FNV-1a
 * (64 bits) over the lesser address then the greater, each as its family
 * byte (4 or 6) and its 16 address bytes.
 */
inline uint64_t PairHash(const wire::IpAddr& a, const wire::IpAddr& b) {
  auto key = [](const wire::IpAddr& x) {
    std::array<uint8_t, 17> k{};
    k[0] = x.v6 ? 6 : 4;
    std::copy(x.bytes.begin(), x.bytes.end(), k.begin() + 1);
    return k;
  };
  const auto ka = key(a), kb = key(b);
  const bool a_first = ka <= kb;
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto* k : {a_first ? &ka : &kb, a_first ? &kb : &ka}) {
    for (const uint8_t byte : *k) {
      h ^= byte;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

/** The shard, of @p shards, that holds the QPs between @p self and @p peer. */
inline uint16_t PairShard(const wire::IpAddr& self, const wire::IpAddr& peer, uint16_t shards) {
  return static_cast<uint16_t>(PairHash(self, peer) % shards);
}

/** The shard of @p peer's daemon that holds its QP @p qpn, which talks to @p self. */
inline uint16_t PeerShardOf(uint32_t qpn, const wire::IpAddr& self, const wire::IpAddr& peer) {
  const uint32_t low = qpn & ((1u << kQpnShardBits) - 1);
  if ((qpn & kQpnFixedShard) != 0) return static_cast<uint16_t>(low);
  return PairShard(self, peer, static_cast<uint16_t>(low + 1));
}

}  // namespace metaroce::daemon

#endif  // METAROCE_APP_METAROCED_PLACEMENT_H
