/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Max-min water-filling of the receiver's inbound capacity (fair_share_private.h).

#include <algorithm>

#include "fair_share_private.h"
#include "mr_config.h"

namespace metaroce::transport {

namespace {

uint32_t Clamp(uint64_t mbps) {
  return static_cast<uint32_t>(std::clamp<uint64_t>(mbps, 1, UINT32_MAX));
}

}  // namespace

uint32_t FairShareMbps(uint64_t capacity_mbps, std::span<uint64_t> rates_mbps, uint64_t prev_mbps,
                       FairShareLimited* limited) {
  FairShareLimited none;
  FairShareLimited& lim = limited != nullptr ? *limited : none;
  lim = {};
  if (rates_mbps.empty()) return Clamp(capacity_mbps);
  std::sort(rates_mbps.begin(), rates_mbps.end());
  uint64_t remaining = capacity_mbps;
  uint64_t k = rates_mbps.size();
  for (uint64_t r : rates_mbps) {
    const uint64_t level = remaining / k;
    // This sender and every faster one take an equal part of what is left.
    // One held to the last share wants more, whatever the level now.
    const uint64_t held = prev_mbps != 0 ? std::min(level, prev_mbps) : level;
    if (r * 100 >= held * config::kFairShareLimitedPct) return Clamp(level);
    remaining -= std::min(r, remaining);
    k--;
    lim.senders++;
    lim.mbps += r;
  }
  // Every sender is limited elsewhere: each may grow by an equal part of
  // what is left. What is left to each (the level before 2026-12-06)
  // handed 8 senders still in slow start, measured at 40 of their 49
  // Gbit/s, 72 Gbit/s each of a 392 Gbit/s link: a 480 KB queue in mr-sim's
  // 8-sender incast.
  return Clamp(std::max(rates_mbps.back() + remaining / rates_mbps.size(),
                        capacity_mbps / rates_mbps.size()));
}

uint64_t ShareDrainMbps(uint64_t capacity_mbps, uint64_t all_bytes, uint64_t ce_bytes) {
  ce_bytes = std::min(ce_bytes, all_bytes);
  constexpr uint64_t kFrom = config::kFairShareDrainFromPct;
  if (100 * ce_bytes <= kFrom * all_bytes) return 0;
  // (f - from) / (1 - from) of the most, f the marked share; the product
  // fits: Mbit/s below 2^32 times 100 bytes of an interval below 2^40.
  const unsigned __int128 held = static_cast<unsigned __int128>(capacity_mbps) *
                                 (100 * ce_bytes - kFrom * all_bytes) / ((100 - kFrom) * all_bytes);
  return static_cast<uint64_t>(held >> config::kFairShareDrainShift);
}

}  // namespace metaroce::transport
