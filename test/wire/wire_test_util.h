/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Helpers for wire tests: encode to a vector, edit fields of encoded bytes and
// re-seal the CRC so that a parse reaches the rule under test.

#ifndef METAROCE_TEST_WIRE_TEST_UTIL_H
#define METAROCE_TEST_WIRE_TEST_UTIL_H

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mr_wire.h"
#include "mr_wire_sample.h"

namespace metaroce::wire::testing {

inline std::vector<uint8_t> Encode(const Packet& p) {
  std::vector<uint8_t> out(EncodedBytes(p));
  auto n = EncodeDatagram(p, out);
  EXPECT_TRUE(n.ok()) << n.status();
  out.resize(n.ok() ? *n : 0);
  return out;
}

inline std::vector<uint8_t> EncodeWithFrame(const FrameInfo& f, const Packet& p) {
  std::vector<uint8_t> out(EncapBytes(f) + EncodedBytes(p));
  auto n = EncodeFrame(f, p, out);
  EXPECT_TRUE(n.ok()) << n.status();
  out.resize(n.ok() ? *n : 0);
  return out;
}

inline void Put16(std::vector<uint8_t>& b, size_t off, uint16_t v) {
  b[off] = static_cast<uint8_t>(v >> 8);
  b[off + 1] = static_cast<uint8_t>(v);
}

inline void Put32(std::vector<uint8_t>& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; i++) b[off + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

inline void Put64(std::vector<uint8_t>& b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; i++) b[off + i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}

/** Rewrites the CRC trailer of a datagram so only the edited field is wrong. */
inline void Reseal(std::vector<uint8_t>& b) {
  ASSERT_GE(b.size(), kCrcBytes);
  Put32(b, b.size() - kCrcBytes, Crc32c(b.data(), b.size() - kCrcBytes));
}

/** Inserts @p n bytes before the CRC, adjusts payload_len and reseals. */
inline void GrowRegion(std::vector<uint8_t>& b, size_t n, uint8_t fill = 0xab) {
  b.insert(b.end() - kCrcBytes, n, fill);
  const uint16_t len = static_cast<uint16_t>((b[10] << 8 | b[11]) + n);
  Put16(b, 10, len);
  Reseal(b);
}

inline ParseError Parse(const std::vector<uint8_t>& b, Packet* p = nullptr) {
  Packet scratch;
  return ParseDatagram(b, ParseOptions{}, p ? p : &scratch);
}

/** The sample packet called @p name (see mr_wire_sample.h). */
inline SamplePacket Sample(const std::string& name) {
  for (auto& s : SampleConversation()) {
    if (s.name == name) return s;
  }
  ADD_FAILURE() << "no sample " << name;
  return {};
}

}  // namespace metaroce::wire::testing

#endif  // METAROCE_TEST_WIRE_TEST_UTIL_H
