/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861) frames: parsing, checking, building.
// Pure functions on byte spans; no EAL.

#include <algorithm>
#include <cstring>

#include "neigh_private.h"

namespace metaroce::dpdk {
namespace {

constexpr uint16_t kEtherTypeArp = 0x0806;
constexpr uint16_t kArpHwEthernet = 1;
constexpr uint16_t kArpOpRequest = 1;
constexpr uint16_t kArpOpReply = 2;
constexpr uint8_t kIpProtoIcmpv6 = 58;
constexpr uint8_t kIcmpv6Solicit = 135;
constexpr uint8_t kIcmpv6Advert = 136;
constexpr uint8_t kNdHopLimit = 255;  // RFC 4861: anything else crossed a router
constexpr uint8_t kNdOptSourceLinkAddr = 1;
constexpr uint8_t kNdOptTargetLinkAddr = 2;
constexpr uint8_t kNaFlagSolicited = 0x40;  // first byte of the NA flags word
constexpr uint8_t kNaFlagOverride = 0x20;

// Offsets in an untagged frame.
constexpr size_t kEthType = 12;
constexpr size_t kL3 = wire::kEthHeaderBytes;
// ARP: htype, ptype, hlen, plen, op, sha, spa, tha, tpa.
constexpr size_t kArpOp = kL3 + 6;
constexpr size_t kArpSha = kL3 + 8;
constexpr size_t kArpSpa = kL3 + 14;
constexpr size_t kArpTha = kL3 + 18;
constexpr size_t kArpTpa = kL3 + 24;
constexpr size_t kArpFrameBytes = kL3 + 28;
// IPv6 header, then ICMPv6 type, code, checksum, 4 bytes (reserved / NA flags), target, options.
constexpr size_t kIp6PayloadLen = kL3 + 4;
constexpr size_t kIp6NextHeader = kL3 + 6;
constexpr size_t kIp6HopLimit = kL3 + 7;
constexpr size_t kIp6Src = kL3 + 8;
constexpr size_t kIp6Dst = kL3 + 24;
constexpr size_t kIcmp = kL3 + wire::kIpv6HeaderBytes;
constexpr size_t kIcmpChecksum = kIcmp + 2;
constexpr size_t kNdFlags = kIcmp + 4;
constexpr size_t kNdTarget = kIcmp + 8;
constexpr size_t kNdOptions = kIcmp + 24;
constexpr size_t kNdOptionBytes = 8;  // one link-layer address option for Ethernet
constexpr size_t kNdFrameBytes = kNdOptions + kNdOptionBytes;
static_assert(kNdFrameBytes == kNeighFrameBytes);
static_assert(kArpFrameBytes < kMinEthFrameBytes && kMinEthFrameBytes <= kNeighFrameBytes);

uint16_t Get16(std::span<const uint8_t> f, size_t off) {
  return static_cast<uint16_t>(f[off] << 8 | f[off + 1]);
}

void Put16(std::span<uint8_t> f, size_t off, uint16_t v) {
  f[off] = static_cast<uint8_t>(v >> 8);
  f[off + 1] = static_cast<uint8_t>(v);
}

wire::MacAddr GetMac(std::span<const uint8_t> f, size_t off) {
  wire::MacAddr m;
  std::memcpy(m.bytes.data(), &f[off], 6);
  return m;
}

void PutMac(std::span<uint8_t> f, size_t off, const wire::MacAddr& m) {
  std::memcpy(&f[off], m.bytes.data(), 6);
}

wire::IpAddr GetIp6(std::span<const uint8_t> f, size_t off) {
  std::array<uint8_t, 16> b;
  std::memcpy(b.data(), &f[off], 16);
  return wire::IpAddr::V6(b);
}

// A MAC a neighbour may have: unicast and not all zero.
bool UsableMac(const wire::MacAddr& m) { return (m.bytes[0] & 1) == 0 && m != wire::MacAddr{}; }

// Ethernet header: to @p dst from @p src, ethertype @p type.
void PutEth(std::span<uint8_t> f, const wire::MacAddr& dst, const wire::MacAddr& src,
            uint16_t type) {
  PutMac(f, 0, dst);
  PutMac(f, 6, src);
  Put16(f, kEthType, type);
}

// One's-complement sum of @p n bytes from @p p, added to @p sum (RFC 1071).
uint32_t Sum(const uint8_t* p, size_t n, uint32_t sum) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n % 2 != 0) sum += static_cast<uint32_t>(p[n - 1] << 8);
  return sum;
}

// The ICMPv6 checksum (pseudo-header of RFC 8200 8.1) of the @p len ICMPv6 bytes of an
// untagged IPv6 frame; over a message with a correct checksum field it is 0.
uint16_t Icmpv6Checksum(std::span<const uint8_t> f, size_t len) {
  uint32_t sum = Sum(&f[kIp6Src], 32, 0);
  sum += static_cast<uint32_t>(len >> 16) + static_cast<uint32_t>(len & 0xffff);
  sum += kIpProtoIcmpv6;
  sum = Sum(&f[kIcmp], len, sum);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

bool IsMulticast6(const wire::IpAddr& a) { return a.bytes[0] == 0xff; }

// An IPv6 ND frame with one link-layer option (@p opt_type) carrying @p mac: Ethernet to
// @p eth_dst, IPv6 from @p src to @p dst, ICMPv6 @p type with @p flags and @p target.
size_t BuildNd(std::span<uint8_t> out, const wire::MacAddr& eth_dst, const wire::MacAddr& mac,
               const wire::IpAddr& src, const wire::IpAddr& dst, uint8_t type, uint8_t flags,
               const wire::IpAddr& target, uint8_t opt_type) {
  if (out.size() < kNdFrameBytes || !src.v6 || !dst.v6 || !target.v6) return 0;
  std::span<uint8_t> f = out.first(kNdFrameBytes);
  std::fill(f.begin(), f.end(), 0);
  PutEth(f, eth_dst, mac, wire::kEtherTypeIpv6);
  f[kL3] = 0x60;  // version 6, traffic class 0, flow label 0
  Put16(f, kIp6PayloadLen, kNdFrameBytes - kIcmp);
  f[kIp6NextHeader] = kIpProtoIcmpv6;
  f[kIp6HopLimit] = kNdHopLimit;
  std::memcpy(&f[kIp6Src], src.bytes.data(), 16);
  std::memcpy(&f[kIp6Dst], dst.bytes.data(), 16);
  f[kIcmp] = type;
  f[kNdFlags] = flags;
  std::memcpy(&f[kNdTarget], target.bytes.data(), 16);
  f[kNdOptions] = opt_type;
  f[kNdOptions + 1] = kNdOptionBytes / 8;
  PutMac(f, kNdOptions + 2, mac);
  Put16(f, kIcmpChecksum, Icmpv6Checksum(f, kNdFrameBytes - kIcmp));
  return kNdFrameBytes;
}

size_t BuildArp(std::span<uint8_t> out, const wire::MacAddr& eth_dst, uint16_t op,
                const wire::MacAddr& sha, const wire::IpAddr& spa, const wire::MacAddr& tha,
                const wire::IpAddr& tpa) {
  if (out.size() < kMinEthFrameBytes || spa.v6 || tpa.v6) return 0;
  std::span<uint8_t> f = out.first(kMinEthFrameBytes);
  std::fill(f.begin(), f.end(), 0);
  PutEth(f, eth_dst, sha, kEtherTypeArp);
  Put16(f, kL3, kArpHwEthernet);
  Put16(f, kL3 + 2, wire::kEtherTypeIpv4);
  f[kL3 + 4] = 6;
  f[kL3 + 5] = 4;
  Put16(f, kArpOp, op);
  PutMac(f, kArpSha, sha);
  std::memcpy(&f[kArpSpa], spa.bytes.data(), 4);
  PutMac(f, kArpTha, tha);
  std::memcpy(&f[kArpTpa], tpa.bytes.data(), 4);
  return kMinEthFrameBytes;
}

NeighParse ParseArp(std::span<const uint8_t> f, NeighMsg* msg) {
  if (f.size() < kArpFrameBytes || Get16(f, kL3) != kArpHwEthernet ||
      Get16(f, kL3 + 2) != wire::kEtherTypeIpv4 || f[kL3 + 4] != 6 || f[kL3 + 5] != 4) {
    return NeighParse::kMalformed;
  }
  const uint16_t op = Get16(f, kArpOp);
  if (op != kArpOpRequest && op != kArpOpReply) return NeighParse::kMalformed;
  NeighMsg m;
  m.op = op == kArpOpRequest ? NeighOp::kArpRequest : NeighOp::kArpReply;
  m.eth_src = GetMac(f, 6);
  m.sender_mac = GetMac(f, kArpSha);
  m.sender_ip = wire::IpAddr::V4(f[kArpSpa], f[kArpSpa + 1], f[kArpSpa + 2], f[kArpSpa + 3]);
  m.target_ip = wire::IpAddr::V4(f[kArpTpa], f[kArpTpa + 1], f[kArpTpa + 2], f[kArpTpa + 3]);
  if (!UsableMac(m.sender_mac)) return NeighParse::kMalformed;
  *msg = m;
  return NeighParse::kOk;
}

NeighParse ParseNd(std::span<const uint8_t> f, NeighMsg* msg) {
  if (f.size() < kNdOptions) return NeighParse::kMalformed;
  const size_t len = Get16(f, kIp6PayloadLen);  // ICMPv6 bytes (no extension headers)
  if ((f[kL3] >> 4) != 6 || len < kNdOptions - kIcmp || len > f.size() - kIcmp ||
      f[kIp6HopLimit] != kNdHopLimit || f[kIcmp + 1] != 0 || Icmpv6Checksum(f, len) != 0) {
    return NeighParse::kMalformed;
  }
  NeighMsg m;
  m.op = f[kIcmp] == kIcmpv6Solicit ? NeighOp::kSolicit : NeighOp::kAdvert;
  m.eth_src = GetMac(f, 6);
  m.target_ip = GetIp6(f, kNdTarget);
  const wire::IpAddr src = GetIp6(f, kIp6Src);
  if (IsMulticast6(m.target_ip) || IsMulticast6(src)) return NeighParse::kMalformed;
  const uint8_t want = m.op == NeighOp::kSolicit ? kNdOptSourceLinkAddr : kNdOptTargetLinkAddr;
  bool have_link = false;
  const size_t end = kIcmp + len;
  for (size_t off = kNdOptions; off < end;) {
    if (off + 2 > end) return NeighParse::kMalformed;
    const size_t opt_len = size_t{f[off + 1]} * 8;
    if (opt_len == 0 || off + opt_len > end) return NeighParse::kMalformed;
    if (f[off] == want && opt_len >= 8) {
      m.sender_mac = GetMac(f, off + 2);
      have_link = true;
    }
    off += opt_len;
  }
  if (m.op == NeighOp::kSolicit) {
    m.sender_ip = src;
    m.dad = src.IsUnspecified();
    if (m.dad && have_link) return NeighParse::kMalformed;  // RFC 4861 7.1.1
  } else {
    m.sender_ip = m.target_ip;
  }
  if (!have_link) m.sender_mac = m.eth_src;
  if (!m.dad && !UsableMac(m.sender_mac)) return NeighParse::kMalformed;
  *msg = m;
  return NeighParse::kOk;
}

}  // namespace

bool IsNeighFrame(std::span<const uint8_t> frame) {
  if (frame.size() < kEthType + 2) return false;
  const uint16_t type = Get16(frame, kEthType);
  if (type == kEtherTypeArp) return true;
  return type == wire::kEtherTypeIpv6 && frame.size() > kIcmp &&
         frame[kIp6NextHeader] == kIpProtoIcmpv6 &&
         (frame[kIcmp] == kIcmpv6Solicit || frame[kIcmp] == kIcmpv6Advert);
}

NeighParse ParseNeighFrame(std::span<const uint8_t> frame, NeighMsg* msg) {
  if (!IsNeighFrame(frame)) return NeighParse::kNotNeigh;
  return Get16(frame, kEthType) == kEtherTypeArp ? ParseArp(frame, msg) : ParseNd(frame, msg);
}

size_t BuildArpRequest(const wire::MacAddr& mac, const wire::IpAddr& ip, const wire::IpAddr& target,
                       const wire::MacAddr* to, std::span<uint8_t> out) {
  const wire::MacAddr broadcast{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
  return BuildArp(out, to != nullptr ? *to : broadcast, kArpOpRequest, mac, ip, wire::MacAddr{},
                  target);
}

size_t BuildArpReply(const wire::MacAddr& mac, const wire::IpAddr& ip, const wire::MacAddr& to_mac,
                     const wire::IpAddr& to_ip, std::span<uint8_t> out) {
  return BuildArp(out, to_mac, kArpOpReply, mac, ip, to_mac, to_ip);
}

size_t BuildNeighSolicit(const wire::MacAddr& mac, const wire::IpAddr& ip,
                         const wire::IpAddr& target, const wire::MacAddr* to,
                         std::span<uint8_t> out) {
  if (to != nullptr) {
    return BuildNd(out, *to, mac, ip, target, kIcmpv6Solicit, 0, target, kNdOptSourceLinkAddr);
  }
  // Solicited-node group ff02::1:ffXX:XXXX and its MAC 33:33:ff:XX:XX:XX (RFC 4291, 2464).
  std::array<uint8_t, 16> group = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
  std::copy(target.bytes.begin() + 13, target.bytes.end(), group.begin() + 13);
  const wire::MacAddr group_mac{
      {0x33, 0x33, 0xff, target.bytes[13], target.bytes[14], target.bytes[15]}};
  return BuildNd(out, group_mac, mac, ip, wire::IpAddr::V6(group), kIcmpv6Solicit, 0, target,
                 kNdOptSourceLinkAddr);
}

size_t BuildNeighAdvert(const wire::MacAddr& mac, const wire::IpAddr& ip,
                        const wire::MacAddr& to_mac, const wire::IpAddr& to_ip, bool solicited,
                        std::span<uint8_t> out) {
  const uint8_t flags = kNaFlagOverride | (solicited ? kNaFlagSolicited : 0);
  return BuildNd(out, to_mac, mac, ip, to_ip, kIcmpv6Advert, flags, ip, kNdOptTargetLinkAddr);
}

bool FrameDestination(std::span<const uint8_t> frame, wire::IpAddr* dst) {
  if (frame.size() < kEthType + 2) return false;
  size_t l3 = kL3;
  uint16_t type = Get16(frame, kEthType);
  if (type == wire::kEtherTypeVlan) {
    if (frame.size() < kEthType + 6) return false;
    type = Get16(frame, kEthType + 4);
    l3 += 4;
  }
  if (type == wire::kEtherTypeIpv4 && frame.size() >= l3 + wire::kIpv4HeaderBytes) {
    const uint8_t* d = &frame[l3 + 16];
    *dst = wire::IpAddr::V4(d[0], d[1], d[2], d[3]);
    return true;
  }
  if (type == wire::kEtherTypeIpv6 && frame.size() >= l3 + wire::kIpv6HeaderBytes) {
    *dst = GetIp6(frame, l3 + 24);
    return true;
  }
  return false;
}

}  // namespace metaroce::dpdk
