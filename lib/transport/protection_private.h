/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * Memory regions and their keys. A key is a table index in the low 16 bits
 * and a random non-zero tag in the high 16 bits, so a peer cannot guess a
 * valid rkey from another, and a stale key of a deregistered region (whose
 * slot was reused) does not match. Every local and remote access is checked
 * here before any byte moves.
 */

#ifndef METAROCE_TRANSPORT_PROTECTION_PRIVATE_H
#define METAROCE_TRANSPORT_PROTECTION_PRIVATE_H

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_engine.h"
#include "mr_wire_defs.h"
#include "secure_rng_private.h"

namespace metaroce::transport {

class MrTable {
 public:
  explicit MrTable(SecureRng* rng) : rng_(rng) {}

  absl::StatusOr<MrInfo> Register(uint32_t pd, uint64_t addr, uint64_t len, uint32_t access);
  /** Register() with the keys another table gave the same region; their slot must be free. */
  absl::StatusOr<MrInfo> RegisterWithKeys(uint32_t pd, uint64_t addr, uint64_t len, uint32_t access,
                                          const MrInfo& keys);
  absl::Status Deregister(uint32_t lkey);
  /** Regions still registered in @p pd. */
  uint32_t CountInPd(uint32_t pd) const;

  // The checks are inline: every data packet makes one or two.

  /** Local access by lkey: the whole range inside one region of @p pd with @p need rights. */
  bool CheckLocal(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len, uint32_t need) const {
    const Region* r = Find(lkey, false);
    if (r == nullptr || r->pd != pd || (r->access & need) != need) return false;
    return addr >= r->addr && len <= r->len && addr - r->addr <= r->len - len;
  }

  /**
   * Remote access by rkey. Returns NakDetail::kNone when allowed, otherwise
   * why not (bad key, bounds, permission).
   */
  wire::NakDetail CheckRemote(uint32_t rkey, uint32_t pd, uint64_t addr, uint64_t len,
                              uint32_t need) const {
    const Region* r = Find(rkey, true);
    if (r == nullptr || r->pd != pd) return wire::NakDetail::kBadRkey;
    if ((r->access & need) != need) return wire::NakDetail::kNoPermission;
    if (addr < r->addr || len > r->len || addr - r->addr > r->len - len) {
      return wire::NakDetail::kOutOfBounds;
    }
    return wire::NakDetail::kNone;
  }

 private:
  static absl::Status Check(uint64_t addr, uint64_t len, uint32_t access);
  struct Region {
    bool valid = false;
    uint32_t pd = 0;
    uint64_t addr = 0;
    uint64_t len = 0;
    uint32_t access = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
  };
  static constexpr uint32_t kIndexBits = 16;
  static constexpr uint32_t kMaxRegions = 1u << kIndexBits;

  const Region* Find(uint32_t key, bool remote) const {
    const uint32_t idx = key & (kMaxRegions - 1);
    if (idx >= regions_.size()) return nullptr;
    const Region& r = regions_[idx];
    if (!r.valid || (remote ? r.rkey : r.lkey) != key) return nullptr;
    return &r;
  }

  SecureRng* rng_;
  std::vector<Region> regions_;
  std::vector<uint32_t> free_;
};

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_PROTECTION_PRIVATE_H
