/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * The engine's random numbers (keys, nonces, connection ids, source ports):
 * xoshiro256** seeded through splitmix64 from EngineConfig::seed, so a run is
 * reproducible. Production drivers seed it from the OS's entropy source.
 */

#ifndef METAROCE_TRANSPORT_RNG_PRIVATE_H
#define METAROCE_TRANSPORT_RNG_PRIVATE_H

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

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_RNG_PRIVATE_H
