/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <bit>
#include <cmath>

#include "mr_sim_stats.h"

namespace metaroce::sim {

int QueueHistogram::Index(uint64_t value) {
  if (value < kSubBuckets) return static_cast<int>(value);
  // Values in [2^e, 2^(e+1)) with e >= kSubBucketBits share kSubBuckets buckets.
  const int e = 63 - std::countl_zero(value);
  const int shift = e - kSubBucketBits;
  const auto sub = static_cast<int>((value >> shift) & (kSubBuckets - 1));
  return (e - kSubBucketBits + 1) * static_cast<int>(kSubBuckets) + sub;
}

uint64_t QueueHistogram::UpperBound(int index) {
  const auto sb = static_cast<int>(kSubBuckets);
  if (index < sb) return static_cast<uint64_t>(index);
  const int e = index / sb - 1 + kSubBucketBits;
  const int shift = e - kSubBucketBits;
  const auto sub = static_cast<uint64_t>(index % sb);
  const uint64_t lo = (uint64_t{1} << e) | (sub << shift);
  return lo + ((uint64_t{1} << shift) - 1);
}

uint64_t QueueHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  if (q < 0) q = 0;
  if (q > 1) q = 1;
  // Rank of the sample that must be covered (1-based), at least the first.
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; i++) {
    seen += buckets_[static_cast<size_t>(i)];
    if (seen >= rank) return UpperBound(i);
  }
  return UpperBound(kBuckets - 1);
}

const char* DropCauseName(DropCause c) {
  switch (c) {
    case DropCause::kQueueFull: return "queue_full";
    case DropCause::kLoss: return "loss";
    case DropCause::kBurstLoss: return "burst_loss";
    case DropCause::kBlackhole: return "blackhole";
    case DropCause::kCorrupt: return "corrupt";
    case DropCause::kNoRoute: return "no_route";
    case DropCause::kUnconnected: return "unconnected";
    case DropCause::kPfcHeadroom: return "pfc_headroom";
    case DropCause::kCount: break;
  }
  return "unknown";
}

double JainIndex(std::span<const double> x) {
  double sum = 0, sq = 0;
  for (double v : x) {
    sum += v;
    sq += v * v;
  }
  return sq == 0 ? 0 : sum * sum / (static_cast<double>(x.size()) * sq);
}

}  // namespace metaroce::sim
