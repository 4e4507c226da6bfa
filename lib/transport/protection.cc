/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "absl/strings/str_cat.h"
#include "protection_private.h"

namespace metaroce::transport {

absl::StatusOr<MrInfo> MrTable::Register(uint32_t pd, uint64_t addr, uint64_t len,
                                         uint32_t access) {
  if ((access & ~access::kAll) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("unknown access bits 0x", absl::Hex(access)));
  }
  if ((access & (access::kRemoteWrite | access::kRemoteAtomic)) != 0 &&
      (access & access::kLocalWrite) == 0) {
    return absl::InvalidArgumentError(
        "remote write or atomic access needs local write access too (as in verbs)");
  }
  if (len == 0 || addr + len < addr) {
    return absl::InvalidArgumentError("memory region must be non-empty and not wrap");
  }
  uint32_t idx;
  if (!free_.empty()) {
    idx = free_.back();
    free_.pop_back();
  } else {
    if (regions_.size() >= kMaxRegions) {
      return absl::ResourceExhaustedError(absl::StrCat("at most ", kMaxRegions, " regions"));
    }
    idx = static_cast<uint32_t>(regions_.size());
    regions_.emplace_back();
  }
  auto tag = [this] { return static_cast<uint32_t>(1 + rng_->Below(0xffff)) << kIndexBits; };
  Region& r = regions_[idx];
  r = Region{true, pd, addr, len, access, idx | tag(), idx | tag()};
  return MrInfo{r.lkey, r.rkey};
}

absl::Status MrTable::Deregister(uint32_t lkey) {
  const Region* r = Find(lkey, false);
  if (r == nullptr)
    return absl::NotFoundError(absl::StrCat("no memory region with lkey 0x", absl::Hex(lkey)));
  const uint32_t idx = lkey & (kMaxRegions - 1);
  regions_[idx] = Region{};
  free_.push_back(idx);
  return absl::OkStatus();
}

uint32_t MrTable::CountInPd(uint32_t pd) const {
  uint32_t n = 0;
  for (const Region& r : regions_) n += r.valid && r.pd == pd;
  return n;
}

}  // namespace metaroce::transport
