/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Deterministic random numbers for the engine (keys, nonces, connection ids,
 * source ports) and the fault stage: xoshiro256** seeded through splitmix64,
 * so a run is reproducible from its seed. Production drivers seed it from the
 * OS's entropy source. (The simulated fabric has its own, per-component
 * seeded generator: drivers/net/sim/mr_sim_rng.h.)
 */

#ifndef METAROCE_MR_RNG_H
#define METAROCE_MR_RNG_H

#include <cstdint>

namespace metaroce::transport {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) {
      seed += 0x9e3779b97f4a7c15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      w = z ^ (z >> 31);
    }
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  /** Uniform in [0, n), n > 0. */
  uint64_t Below(uint64_t n) { return Next() % n; }
  /** True with probability @p p (0 and 1 draw nothing). */
  bool Chance(double p) {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return static_cast<double>(Next() >> 11) * 0x1.0p-53 < p;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace metaroce::transport

#endif  // METAROCE_MR_RNG_H
