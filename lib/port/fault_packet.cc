/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Packet edits of the fault stage: reading the UDP source port, marking CE,
// flipping a bit, for whole frames and for UDP payloads.

#include <algorithm>

#include "fault_private.h"

namespace metaroce::port::fault {
namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86dd;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint8_t kProtoUdp = 17;

// Where the headers of a frame are.
struct Layout {
  size_t l3 = 0;
  bool v6 = false;
  size_t l4 = 0;       // UDP header
  size_t udp_end = 0;  // end of the UDP datagram
};

uint16_t Be16(std::span<const uint8_t> d, size_t off) {
  return static_cast<uint16_t>((d[off] << 8) | d[off + 1]);
}

void Put16(std::span<uint8_t> d, size_t off, uint16_t v) {
  d[off] = static_cast<uint8_t>(v >> 8);
  d[off + 1] = static_cast<uint8_t>(v);
}

bool Parse(std::span<const uint8_t> d, Layout* l) {
  if (d.size() < 14) return false;
  uint16_t type = Be16(d, 12);
  size_t off = 14;
  if (type == kEtherVlan) {
    if (d.size() < 18) return false;
    type = Be16(d, 16);
    off = 18;
  }
  l->l3 = off;
  if (type == kEtherIpv4) {
    if (d.size() < off + 20) return false;
    const size_t ihl = size_t{d[off] & 0x0fu} * 4;
    if (ihl < 20 || d.size() < off + ihl || d[off + 9] != kProtoUdp) return false;
    l->v6 = false;
    l->l4 = off + ihl;
  } else if (type == kEtherIpv6) {
    if (d.size() < off + 40 || d[off + 6] != kProtoUdp) return false;
    l->v6 = true;
    l->l4 = off + 40;
  } else {
    return false;
  }
  if (d.size() < l->l4 + 8) return false;
  const size_t udp_len = Be16(d, l->l4 + 4);
  if (udp_len < 8) return false;
  l->udp_end = std::min(d.size(), l->l4 + udp_len);
  return true;
}

// Ones'-complement sum of 16-bit words, folded.
uint16_t Fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

void Ipv4HeaderChecksum(std::span<uint8_t> d, size_t l3) {
  const size_t ihl = size_t{d[l3] & 0x0fu} * 4;
  Put16(d, l3 + 10, 0);
  uint32_t sum = 0;
  for (size_t i = 0; i < ihl; i += 2) sum += Be16(d, l3 + i);
  Put16(d, l3 + 10, static_cast<uint16_t>(~Fold(sum)));
}

}  // namespace

bool SourcePort(transport::Framing framing, std::span<const uint8_t> data,
                const wire::FrameInfo& addr, uint16_t* port) {
  if (framing == transport::Framing::kUdp) {
    *port = addr.src_port;
    return true;
  }
  Layout l;
  if (!Parse(data, &l)) return false;
  *port = Be16(data, l.l4);
  return true;
}

bool MarkCe(transport::Framing framing, std::span<uint8_t> data, wire::FrameInfo* addr) {
  auto ect = [](uint8_t ecn) { return ecn == 1 || ecn == 2; };
  if (framing == transport::Framing::kUdp) {
    if (!ect(static_cast<uint8_t>(addr->ecn))) return false;
    addr->ecn = wire::Ecn::kCe;
    return true;
  }
  Layout l;
  if (!Parse(data, &l)) return false;
  if (l.v6) {  // traffic class = low nibble of byte 0, high nibble of byte 1; ECN = bits 5..4
    if (!ect((data[l.l3 + 1] >> 4) & 3)) return false;
    data[l.l3 + 1] |= 0x30;
    return true;
  }
  if (!ect(data[l.l3 + 1] & 3)) return false;
  data[l.l3 + 1] |= 3;
  Ipv4HeaderChecksum(data, l.l3);
  return true;
}

bool FlipBit(transport::Framing framing, std::span<uint8_t> data, Rng& rng) {
  if (framing == transport::Framing::kUdp) {
    if (data.empty()) return false;
    const uint64_t bit = rng.Below(data.size() * 8);
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    return true;
  }
  Layout l;
  if (!Parse(data, &l) || l.udp_end <= l.l4 + 8) return false;
  const size_t payload = l.l4 + 8;
  const uint64_t bit = rng.Below((l.udp_end - payload) * 8);
  const size_t at = payload + bit / 8;
  // The checksummed 16-bit word holding that byte (words start at the UDP header).
  const size_t word = l.l4 + ((at - l.l4) & ~size_t{1});
  auto read_word = [&] {
    const uint8_t lo = word + 1 < l.udp_end ? data[word + 1] : 0;
    return static_cast<uint16_t>((data[word] << 8) | lo);
  };
  const uint16_t before = read_word();
  data[at] ^= static_cast<uint8_t>(1u << (bit % 8));
  const uint16_t after = read_word();
  const uint16_t csum = Be16(data, l.l4 + 6);
  if (csum != 0) {  // RFC 1624: HC' = ~(~HC + ~m + m')
    uint16_t c = static_cast<uint16_t>(
        ~Fold(uint32_t{static_cast<uint16_t>(~csum)} + static_cast<uint16_t>(~before) + after));
    if (c == 0) c = 0xffff;
    Put16(data, l.l4 + 6, c);
  }
  return true;
}

}  // namespace metaroce::port::fault
