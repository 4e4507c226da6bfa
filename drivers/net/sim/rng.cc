/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "mr_sim_rng.h"

namespace metaroce::sim {

uint64_t DeriveSeed(uint64_t sim_seed, uint64_t component_id) {
  // Two rounds so that seeds differing in one bit, or ids differing in one
  // bit, give unrelated streams.
  uint64_t s = Mix64(sim_seed) ^ Mix64(component_id + 0x632be59bd9b4e019ULL);
  return SplitMix64(&s);
}

Rng::Rng(uint64_t seed) {
  uint64_t st = seed;
  for (auto& w : s_) w = SplitMix64(&st);
  // splitmix64 outputs are a bijection of distinct states: four zeros cannot occur.
}

uint64_t Rng::Below(uint64_t n) {
  // Range 0 would mean 2^64 (from Range(INT64_MIN, INT64_MAX)): every value.
  if (n == 0) return Next();
  unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(Next()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

}  // namespace metaroce::sim
