/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// libFuzzer target for the wire parser. Besides "no crash, no UB" it checks
// two properties: whatever parses re-encodes to an equivalent packet, and a
// parsed datagram re-encodes to exactly the input bytes (the encoding is
// canonical). Checksums are also skipped in one pass so the fuzzer reaches
// the field rules behind them.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mr_wire.h"

namespace {

using namespace metaroce::wire;

[[noreturn]] void Fail(const char* what, const Packet& p) {
  std::fprintf(stderr, "property violated: %s (type %s)\n", what,
               PacketTypeName(static_cast<uint8_t>(p.type)));
  std::abort();
}

void CheckDatagram(std::span<const uint8_t> in, const ParseOptions& opt) {
  Packet p;
  if (ParseDatagram(in, opt, &p) != ParseError::kOk) return;
  std::vector<uint8_t> out(EncodedBytes(p));
  auto n = EncodeDatagram(p, out);
  if (!n.ok()) Fail("a parsed datagram does not encode", p);
  if (*n != in.size()) Fail("re-encoded length differs", p);
  // Without CRC verification the input's trailer may be anything.
  const size_t cmp = opt.verify_crc ? in.size() : in.size() - kCrcBytes;
  if (std::memcmp(out.data(), in.data(), cmp) != 0) Fail("re-encoding is not canonical", p);
  Packet q;
  if (ParseDatagram(out, ParseOptions{}, &q) != ParseError::kOk || !Equivalent(p, q)) {
    Fail("re-encoded datagram does not parse back", p);
  }
}

void CheckFrame(std::span<const uint8_t> in, const ParseOptions& opt) {
  FrameInfo fi;
  Packet p;
  if (ParseFrame(in, opt, &fi, &p) != ParseError::kOk) return;
  std::vector<uint8_t> out(EncapBytes(fi) + EncodedBytes(p));
  auto n = EncodeFrame(fi, p, out);
  if (!n.ok()) Fail("a parsed frame does not encode", p);
  FrameInfo fi2;
  Packet q;
  if (ParseFrame({out.data(), *n}, opt, &fi2, &q) != ParseError::kOk || !Equivalent(p, q) ||
      fi2.src != fi.src || fi2.dst != fi.dst || fi2.src_port != fi.src_port || fi2.ecn != fi.ecn) {
    Fail("re-encoded frame does not parse back", p);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  ParseOptions strict;
  ParseOptions lax;
  lax.verify_crc = false;
  lax.verify_ip_checksum = false;
  lax.verify_udp_checksum = false;
  CheckDatagram(in, strict);
  CheckDatagram(in, lax);
  CheckFrame(in, strict);
  CheckFrame(in, lax);
  return 0;
}
