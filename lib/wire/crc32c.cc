/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "isa-l/crc.h"
#include "mr_config.h"
#include "mr_crc32c.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace metaroce::wire {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;

// Slicing-by-8 tables: kTables[k][b] is the CRC of byte b followed by k zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPolyReflected : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++) {
    for (size_t k = 1; k < 8; k++) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

constexpr auto kTables = MakeTables();

uint32_t UpdatePortable(uint32_t c, const uint8_t* p, size_t len) {
  while (len >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    if constexpr (std::endian::native == std::endian::big) {
      lo = __builtin_bswap32(lo);
      hi = __builtin_bswap32(hi);
    }
    lo ^= c;
    c = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
        kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
  return c;
}

#if defined(__x86_64__)
// The crc32 instruction has a latency of three cycles but issues one per
// cycle: three independent streams over three blocks keep it busy, and the
// block CRCs are then joined with "extend by n zero bytes" tables (CRC is
// linear in its state: crc(s, A || B) = zeros_|B|(crc(s, A)) ^ crc(0, B)).
constexpr size_t kStreamBytes = 256;

struct ZeroTables {
  // t[k][b]: the state b << 8k extended by kStreamBytes (one) / 2 * kStreamBytes (two) zeros.
  std::array<std::array<uint32_t, 256>, 4> one{}, two{};
};

uint32_t ExtendZeros(uint32_t state, size_t n) {
  static constexpr uint8_t kZeros[2 * kStreamBytes] = {};
  return UpdatePortable(state, kZeros, n);
}

ZeroTables MakeZeroTables() {
  ZeroTables z;
  uint32_t basis1[32], basis2[32];
  for (int i = 0; i < 32; i++) {
    basis1[i] = ExtendZeros(1u << i, kStreamBytes);
    basis2[i] = ExtendZeros(1u << i, 2 * kStreamBytes);
  }
  for (int k = 0; k < 4; k++) {
    for (uint32_t b = 0; b < 256; b++) {
      uint32_t x1 = 0, x2 = 0;
      for (int j = 0; j < 8; j++) {
        if ((b >> j) & 1) {
          x1 ^= basis1[8 * k + j];
          x2 ^= basis2[8 * k + j];
        }
      }
      z.one[k][b] = x1;
      z.two[k][b] = x2;
    }
  }
  return z;
}

const ZeroTables kZeroTables = MakeZeroTables();

inline uint32_t Shift(const std::array<std::array<uint32_t, 256>, 4>& t, uint32_t c) {
  return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

__attribute__((target("sse4.2"), always_inline)) inline uint64_t Step8(uint64_t c,
                                                                       const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return _mm_crc32_u64(c, v);
}

__attribute__((target("sse4.2"))) uint32_t UpdateSse42(uint32_t c, const uint8_t* p, size_t len) {
  while (len >= 3 * kStreamBytes) {
    uint64_t a = c, b = 0, d = 0;
    for (size_t i = 0; i < kStreamBytes; i += 8) {
      uint64_t va, vb, vd;
      std::memcpy(&va, p + i, 8);
      std::memcpy(&vb, p + kStreamBytes + i, 8);
      std::memcpy(&vd, p + 2 * kStreamBytes + i, 8);
      a = _mm_crc32_u64(a, va);
      b = _mm_crc32_u64(b, vb);
      d = _mm_crc32_u64(d, vd);
    }
    c = Shift(kZeroTables.two, static_cast<uint32_t>(a)) ^
        Shift(kZeroTables.one, static_cast<uint32_t>(b)) ^ static_cast<uint32_t>(d);
    p += 3 * kStreamBytes;
    len -= 3 * kStreamBytes;
  }
  // A header-sized run is the usual case: 32 bytes a turn, then one step of
  // each smaller size (a byte loop for the tail cost ~35 instructions).
  uint64_t c64 = c;
  for (; len >= 32; len -= 32, p += 32) {
    c64 = Step8(Step8(Step8(Step8(c64, p), p + 8), p + 16), p + 24);
  }
  if (len & 16) {
    c64 = Step8(Step8(c64, p), p + 8);
    p += 16;
  }
  if (len & 8) {
    c64 = Step8(c64, p);
    p += 8;
  }
  c = static_cast<uint32_t>(c64);
  if (len & 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    c = _mm_crc32_u32(c, v);
    p += 4;
  }
  if (len & 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    c = _mm_crc32_u16(c, v);
    p += 2;
  }
  if (len & 1) c = _mm_crc32_u8(c, *p);
  return c;
}

// Zero (portable path) until initialised, so a CRC taken during static
// initialisation elsewhere is still correct.
const bool kHaveSse42 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}();
#else
constexpr bool kHaveSse42 = false;
#endif

// ISA-L picks its kernel for this CPU at run time (multibinary dispatch) and
// takes an int length: longer runs go in pieces.
uint32_t UpdateIsal(uint32_t c, const uint8_t* p, size_t len) {
  constexpr size_t kMaxPiece = size_t{1} << 30;
  while (len != 0) {
    const size_t n = std::min(len, kMaxPiece);
    // crc32_iscsi does not write through its (non-const) buffer pointer.
    c = crc32_iscsi(const_cast<uint8_t*>(p), static_cast<int>(n), c);
    p += n;
    len -= n;
  }
  return c;
}

uint32_t Update(uint32_t c, const uint8_t* p, size_t len) {
  if (len >= config::kCrc32cIsalMinBytes) return UpdateIsal(c, p, len);
#if defined(__x86_64__)
  if (kHaveSse42) return UpdateSse42(c, p, len);
#endif
  return UpdatePortable(c, p, len);
}

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t len) {
  if (len == 0) return crc;
  return ~Update(~crc, static_cast<const uint8_t*>(data), len);
}

uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t len) {
  if (len == 0) return crc;
  return ~UpdatePortable(~crc, static_cast<const uint8_t*>(data), len);
}

uint32_t Crc32c(const void* data, size_t len) {
  // Every packet's CRC, in one call below: Update()'s choice, inlined.
  const auto* p = static_cast<const uint8_t*>(data);
  if (len >= config::kCrc32cIsalMinBytes) return ~UpdateIsal(~0u, p, len);
#if defined(__x86_64__)
  if (kHaveSse42) return ~UpdateSse42(~0u, p, len);
#endif
  return ~UpdatePortable(~0u, p, len);
}

bool Crc32cIsAccelerated() { return kHaveSse42; }

}  // namespace metaroce::wire
