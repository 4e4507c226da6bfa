/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "absl/strings/str_cat.h"
#include "protection_private.h"

namespace metaroce::transport {

absl::Status MrTable::Check(uint64_t addr, uint64_t len, uint32_t access) {
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
  return absl::OkStatus();
}

absl::StatusOr<MrInfo> MrTable::Register(uint32_t pd, uint64_t addr, uint64_t len,
                                         uint32_t access) {
  if (absl::Status s = Check(addr, len, access); !s.ok()) return s;
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

absl::StatusOr<MrInfo> MrTable::RegisterWithKeys(uint32_t pd, uint64_t addr, uint64_t len,
                                                 uint32_t access, const MrInfo& keys) {
  if (absl::Status s = Check(addr, len, access); !s.ok()) return s;
  const uint32_t idx = keys.lkey & (kMaxRegions - 1);
  if ((keys.rkey & (kMaxRegions - 1)) != idx || keys.lkey >> kIndexBits == 0 ||
      keys.rkey >> kIndexBits == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "keys 0x", absl::Hex(keys.lkey), "/0x", absl::Hex(keys.rkey), " were not made by RegMr"));
  }
  if (idx < regions_.size()) {
    if (regions_[idx].valid) {
      return absl::AlreadyExistsError(
          absl::StrCat("region slot ", idx, " of keys 0x", absl::Hex(keys.lkey), " is in use"));
    }
    std::erase(free_, idx);
  } else {
    // The slots skipped over are free for Register().
    for (uint32_t i = static_cast<uint32_t>(regions_.size()); i < idx; i++) free_.push_back(i);
    regions_.resize(idx + 1);
  }
  regions_[idx] = Region{true, pd, addr, len, access, keys.lkey, keys.rkey};
  return keys;
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
