/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Data patterns: every message's bytes follow from (kind, qp, seq), so the
// receiver checks each byte without being told what was sent.

#include <cstring>

#include "perf.h"

namespace metaroce::perf {
namespace {

uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t MsgSeed(uint32_t kind, uint32_t qp, uint64_t seq) {
  return Mix((static_cast<uint64_t>(kind) << 56) ^ (static_cast<uint64_t>(qp) << 40) ^ seq);
}

// Word i of a message: cheap, and different for every (message, word).
inline uint64_t Word(uint64_t seed, uint64_t i) { return seed + i * 0x9e3779b97f4a7c15ull; }

}  // namespace

void FillPattern(uint8_t* p, uint32_t len, uint32_t kind, uint32_t qp, uint64_t seq) {
  const uint64_t s = MsgSeed(kind, qp, seq);
  uint32_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const uint64_t w = Word(s, i / 8);
    std::memcpy(p + i, &w, 8);
  }
  if (i < len) {
    const uint64_t w = Word(s, i / 8);
    std::memcpy(p + i, &w, len - i);
  }
}

bool CheckPattern(const uint8_t* p, uint32_t len, uint32_t kind, uint32_t qp, uint64_t seq) {
  const uint64_t s = MsgSeed(kind, qp, seq);
  uint32_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const uint64_t w = Word(s, i / 8);
    if (std::memcmp(p + i, &w, 8) != 0) return false;
  }
  if (i < len) {
    const uint64_t w = Word(s, i / 8);
    if (std::memcmp(p + i, &w, len - i) != 0) return false;
  }
  return true;
}

void FillReadRegion(uint8_t* p, uint64_t len, uint32_t qp) {
  const uint64_t s = MsgSeed(kKindRead, qp, 0);
  for (uint64_t i = 0; i < len; i += 8) {
    const uint64_t w = Word(s, i / 8);
    std::memcpy(p + i, &w, std::min<uint64_t>(8, len - i));
  }
}

bool CheckReadRegion(const uint8_t* p, uint32_t len, uint64_t offset, uint32_t qp) {
  const uint64_t s = MsgSeed(kKindRead, qp, 0);
  for (uint32_t i = 0; i < len; i++) {
    const uint64_t at = offset + i;
    const uint64_t w = Word(s, at / 8);
    if (p[i] != static_cast<uint8_t>(w >> (8 * (at % 8)))) return false;
  }
  return true;
}

uint32_t MixedSize(uint64_t seed, uint32_t kind, uint32_t qp, uint64_t seq, uint32_t max) {
  const uint64_t h = Mix(seed ^ MsgSeed(kind, qp, seq));
  // Half the messages small (1..256 bytes), half anywhere up to max: both the
  // one-packet and the many-packet paths get exercised.
  if ((h & 1) != 0) return 1 + static_cast<uint32_t>((h >> 8) % std::min<uint32_t>(max, 256));
  return 1 + static_cast<uint32_t>((h >> 8) % max);
}

}  // namespace metaroce::perf
