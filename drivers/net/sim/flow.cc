/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <cstring>

#include "flow_private.h"
#include "mr_sim_rng.h"
#include "mr_wire_defs.h"

namespace metaroce::sim {
namespace {

constexpr uint8_t kIpProtoTcp = 6;
constexpr size_t kIpv4TosOffset = 1;
constexpr size_t kIpv4ChecksumOffset = 10;
constexpr size_t kIpv4FragOffset = 6;
constexpr size_t kIpv4ProtoOffset = 9;
constexpr size_t kIpv4SrcOffset = 12;
constexpr size_t kIpv6NextHeaderOffset = 6;
constexpr size_t kIpv6SrcOffset = 8;

uint16_t Be16At(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

uint64_t Be64At(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | p[i];
  return v;
}

}  // namespace

FlowKey ParseFlowKey(std::span<const uint8_t> frame) {
  FlowKey k;
  const uint8_t* p = frame.data();
  const size_t n = frame.size();
  size_t off = wire::kEthHeaderBytes;
  if (n < off) return k;
  uint16_t type = Be16At(p + 12);
  if (type == wire::kEtherTypeVlan) {
    if (n < off + wire::kVlanTagBytes) return k;
    type = Be16At(p + off + 2);
    off += wire::kVlanTagBytes;
  }
  size_t l4 = 0;
  bool has_ports = false;
  if (type == wire::kEtherTypeIpv4) {
    if (n < off + wire::kIpv4HeaderBytes || (p[off] >> 4) != 4) return k;
    const size_t ihl = static_cast<size_t>(p[off] & 0xf) * 4;
    if (ihl < wire::kIpv4HeaderBytes) return k;
    k.l3 = L3Kind::kIpv4;
    k.protocol = p[off + kIpv4ProtoOffset];
    const uint8_t* s = p + off + kIpv4SrcOffset;
    k.src = wire::IpAddr::V4(s[0], s[1], s[2], s[3]);
    k.dst = wire::IpAddr::V4(s[4], s[5], s[6], s[7]);
    // Only the first fragment carries the L4 header.
    has_ports = (Be16At(p + off + kIpv4FragOffset) & 0x1fff) == 0;
    l4 = off + ihl;
  } else if (type == wire::kEtherTypeIpv6) {
    if (n < off + wire::kIpv6HeaderBytes || (p[off] >> 4) != 6) return k;
    k.l3 = L3Kind::kIpv6;
    k.protocol = p[off + kIpv6NextHeaderOffset];
    k.src.v6 = k.dst.v6 = true;
    std::memcpy(k.src.bytes.data(), p + off + kIpv6SrcOffset, 16);
    std::memcpy(k.dst.bytes.data(), p + off + kIpv6SrcOffset + 16, 16);
    has_ports = true;
    l4 = off + wire::kIpv6HeaderBytes;
  } else {
    return k;
  }
  k.l3_offset = static_cast<uint16_t>(off);
  if (has_ports && (k.protocol == wire::kIpProtoUdp || k.protocol == kIpProtoTcp) && n >= l4 + 4) {
    k.src_port = Be16At(p + l4);
    k.dst_port = Be16At(p + l4 + 2);
  }
  return k;
}

uint64_t FlowHash(const FlowKey& k) {
  uint64_t h = Mix64(static_cast<uint64_t>(k.l3) << 40 | static_cast<uint64_t>(k.protocol) << 32 |
                     static_cast<uint64_t>(k.src_port) << 16 | k.dst_port);
  h = Mix64(h ^ Be64At(k.src.bytes.data()));
  h = Mix64(h ^ Be64At(k.src.bytes.data() + 8));
  h = Mix64(h ^ Be64At(k.dst.bytes.data()));
  h = Mix64(h ^ Be64At(k.dst.bytes.data() + 8));
  return h;
}

EcnResult MarkCe(std::span<uint8_t> frame, L3Kind l3, uint16_t l3_offset) {
  uint8_t* ip = frame.data() + l3_offset;
  const auto ce = static_cast<uint8_t>(wire::Ecn::kCe);
  if (l3 == L3Kind::kIpv4) {
    if (frame.size() < l3_offset + wire::kIpv4HeaderBytes) return EcnResult::kNotEct;
    const uint8_t tos = ip[kIpv4TosOffset];
    const uint8_t ecn = tos & 3;
    if (ecn == ce) return EcnResult::kAlreadyCe;
    if (ecn == static_cast<uint8_t>(wire::Ecn::kNotEct)) return EcnResult::kNotEct;
    const uint16_t old_word = Be16At(ip);  // version/IHL and TOS
    ip[kIpv4TosOffset] = static_cast<uint8_t>(tos | ce);
    const uint16_t new_word = Be16At(ip);
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')
    uint32_t sum = static_cast<uint16_t>(~Be16At(ip + kIpv4ChecksumOffset));
    sum += static_cast<uint16_t>(~old_word);
    sum += new_word;
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    const auto csum = static_cast<uint16_t>(~sum);
    ip[kIpv4ChecksumOffset] = static_cast<uint8_t>(csum >> 8);
    ip[kIpv4ChecksumOffset + 1] = static_cast<uint8_t>(csum);
    return EcnResult::kMarked;
  }
  if (l3 == L3Kind::kIpv6) {
    if (frame.size() < l3_offset + wire::kIpv6HeaderBytes) return EcnResult::kNotEct;
    // Traffic class spans the low nibble of byte 0 and the high nibble of
    // byte 1; its two ECN bits are bits 5..4 of byte 1.
    const uint8_t ecn = (ip[1] >> 4) & 3;
    if (ecn == ce) return EcnResult::kAlreadyCe;
    if (ecn == static_cast<uint8_t>(wire::Ecn::kNotEct)) return EcnResult::kNotEct;
    ip[1] = static_cast<uint8_t>(ip[1] | ce << 4);
    return EcnResult::kMarked;
  }
  return EcnResult::kNotEct;
}

}  // namespace metaroce::sim
