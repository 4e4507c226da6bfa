/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Deterministic random numbers. Every component that needs randomness owns one
 * Rng (xoshiro256**) seeded from the simulation seed and the component's stable
 * id through splitmix64 (DeriveSeed()), so adding draws in one component never
 * shifts the stream of another. No global state.
 */

#ifndef METAROCE_MR_SIM_RNG_H
#define METAROCE_MR_SIM_RNG_H

#include <array>
#include <cstdint>

namespace metaroce::sim {

/** One step of splitmix64: advances @p state and returns the next output. */
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/** Stateless 64-bit finaliser (the splitmix64 output function); a bijection. */
constexpr uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/** Kinds of component, the high half of a component id (stable: part of every seed). */
enum class ComponentKind : uint32_t {
  kFabric = 1,   ///< the simulation itself
  kHost = 2,     ///< a host (its Rng is the endpoint's to use)
  kSwitch = 3,   ///< a switch (its seed salts the ECMP hash)
  kChannel = 4,  ///< one direction of a link (fault injection), indexed by egress port
  kUser = 5,     ///< free for tests and workloads
  kMark = 6,     ///< a switch port's RED marking draws, indexed by port
};

/** Stable 64-bit component id: kind in the high 32 bits, index in the low 32. */
constexpr uint64_t ComponentId(ComponentKind kind, uint32_t index) {
  return static_cast<uint64_t>(kind) << 32 | index;
}

/** Seed of a component's stream from the simulation seed and the component id. */
uint64_t DeriveSeed(uint64_t sim_seed, uint64_t component_id);

/** xoshiro256** (Blackman and Vigna): small, fast, good statistical quality. */
class Rng {
 public:
  /** Seeds the 256-bit state from @p seed with splitmix64 (never all zero). */
  explicit Rng(uint64_t seed = 0);

  /** Next 64 random bits. */
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

  /** Uniform double in [0, 1) with 53 random bits. */
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  /** True with probability @p p (p <= 0: never, p >= 1: always; draws once either way). */
  bool Bernoulli(double p) { return NextDouble() < p; }

  /**
   * Uniform integer in [0, n) without modulo bias (Lemire's multiply-shift with
   * rejection). @p n == 0 stands for 2^64 (any value).
   */
  uint64_t Below(uint64_t n);

  /** Uniform integer in [lo, hi] (inclusive); requires lo <= hi. */
  int64_t Range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Below(static_cast<uint64_t>(hi - lo) + 1));
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_{};
};

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_RNG_H
