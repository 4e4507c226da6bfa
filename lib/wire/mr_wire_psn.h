/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Serial-number arithmetic (RFC 1982) for the 32-bit PSN, MSN and timestamp
 * fields, which wrap. Two values compare correctly while they are less than
 * 2^31 apart.
 */

#ifndef METAROCE_MR_WIRE_PSN_H
#define METAROCE_MR_WIRE_PSN_H

#include <cstdint>

#include "mr_wire_defs.h"

namespace metaroce::wire {

/** a comes before b in serial order. */
constexpr bool SeqLt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
/** a comes before or equals b. */
constexpr bool SeqLe(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }
/** Signed distance from a to b (b - a). */
constexpr int32_t SeqDiff(uint32_t b, uint32_t a) { return static_cast<int32_t>(b - a); }

/** True if the SACK bitmap of an ACK with cumulative PSN @p cum covers @p psn; *bit is its index.
 */
constexpr bool SackBitFor(uint32_t cum, uint32_t psn, uint32_t* bit) {
  const uint32_t d = psn - cum - 1;
  if (d >= kSackBits) return false;
  *bit = d;
  return true;
}

}  // namespace metaroce::wire

#endif  // METAROCE_MR_WIRE_PSN_H
