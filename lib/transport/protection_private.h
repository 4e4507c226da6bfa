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
  absl::Status Deregister(uint32_t lkey);
  /** Regions still registered in @p pd. */
  uint32_t CountInPd(uint32_t pd) const;

  /** Local access by lkey: the whole range inside one region of @p pd with @p need rights. */
  bool CheckLocal(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len, uint32_t need) const;

  /**
   * Remote access by rkey. Returns NakDetail::kNone when allowed, otherwise
   * why not (bad key, bounds, permission).
   */
  wire::NakDetail CheckRemote(uint32_t rkey, uint32_t pd, uint64_t addr, uint64_t len,
                              uint32_t need) const;

 private:
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

  const Region* Find(uint32_t key, bool remote) const;

  SecureRng* rng_;
  std::vector<Region> regions_;
  std::vector<uint32_t> free_;
};

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_PROTECTION_PRIVATE_H
