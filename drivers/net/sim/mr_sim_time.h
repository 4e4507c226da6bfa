/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Simulated time: a signed 64-bit count of picoseconds since the start of the
 * simulation (range about 106 days), and the unit constants to build it.
 */

#ifndef METAROCE_MR_SIM_TIME_H
#define METAROCE_MR_SIM_TIME_H

#include <cstdint>
#include <limits>

namespace metaroce::sim {

/** Simulated time in picoseconds. */
using SimTime = int64_t;

inline constexpr SimTime kPsPerNs = 1000;              ///< picoseconds per nanosecond
inline constexpr SimTime kPsPerUs = 1000 * kPsPerNs;   ///< picoseconds per microsecond
inline constexpr SimTime kPsPerMs = 1000 * kPsPerUs;   ///< picoseconds per millisecond
inline constexpr SimTime kPsPerSec = 1000 * kPsPerMs;  ///< picoseconds per second

/** "No time": an unarmed timer, a fault that never starts. Later than any real event. */
inline constexpr SimTime kSimTimeNever = std::numeric_limits<SimTime>::max();

inline constexpr uint64_t kBitsPerByte = 8;
inline constexpr uint64_t kBpsPerGbps = 1'000'000'000;  ///< bits/s per Gbit/s

/**
 * Time to clock @p wire_bytes onto a link of @p rate_bps, rounded up to a whole
 * picosecond (exact for rates that divide 8e12, e.g. 1/10/25/40/100/200/400/800 Gbit/s).
 * @param wire_bytes bytes on the wire, including any preamble/IFG overhead
 * @param rate_bps   line rate in bits per second; must be > 0
 */
constexpr SimTime SerializationPs(uint64_t wire_bytes, uint64_t rate_bps) {
  // bits * 1e12 fits in 64 bits for any frame below 2 MB.
  const uint64_t num = wire_bytes * kBitsPerByte * static_cast<uint64_t>(kPsPerSec);
  return static_cast<SimTime>((num + rate_bps - 1) / rate_bps);
}

static_assert(SerializationPs(1, 400 * kBpsPerGbps) == 20, "400G: 20 ps per byte");
static_assert(SerializationPs(1000, 100 * kBpsPerGbps) == 80 * kPsPerNs, "100G: 80 ns per kB");

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_TIME_H
