/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Internals of the fault stage: its random numbers and the packet edits it makes.

#ifndef METAROCE_PORT_FAULT_PRIVATE_H
#define METAROCE_PORT_FAULT_PRIVATE_H

#include <cstdint>
#include <span>

#include "mr_engine.h"
#include "mr_wire_frame.h"

namespace metaroce::port::fault {

/** xoshiro256** seeded through splitmix64: deterministic for a seed, no OS entropy. */
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next();
  /** Uniform in [0, n), n > 0. */
  uint64_t Below(uint64_t n) { return Next() % n; }
  /** True with probability @p p (0 and 1 draw nothing). */
  bool Chance(double p) {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return static_cast<double>(Next() >> 11) * 0x1.0p-53 < p;
  }

 private:
  uint64_t s_[4];
};

/** UDP source port of a packet; false if a frame's headers cannot be read. */
bool SourcePort(transport::Framing framing, std::span<const uint8_t> data,
                const wire::FrameInfo& addr, uint16_t* port);

/**
 * Sets CE on an ECT(0)/ECT(1) packet: the IPv4 TOS (header checksum updated) or
 * the IPv6 traffic class of a frame, or addr->ecn for kUdp. True if it changed.
 */
bool MarkCe(transport::Framing framing, std::span<uint8_t> data, wire::FrameInfo* addr);

/**
 * Flips one random bit of the MetaRoCE bytes (a frame's UDP checksum, when
 * present, is updated so that the MetaRoCE CRC is what catches it). False if
 * there are no such bytes.
 */
bool FlipBit(transport::Framing framing, std::span<uint8_t> data, Rng& rng);

}  // namespace metaroce::port::fault

#endif  // METAROCE_PORT_FAULT_PRIVATE_H
