/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Ethernet / IPv4 / IPv6 / UDP encapsulation (doc/spec.md section 2).

#include <arpa/inet.h>

#include <bit>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "mr_wire_codec.h"
#include "mr_wire_frame.h"
#include "mr_wire_layout_private.h"

namespace metaroce::wire {
namespace {

using namespace layout;

// One's-complement sum of 16-bit big-endian words (RFC 1071), not yet folded.
// Summed four bytes at a time in host order: the one's-complement sum is
// independent of byte order (RFC 1071 section 2(B)), so the folded host-order
// sum, byte-swapped, is the big-endian one.
[[gnu::always_inline]] inline uint64_t SumWords(const uint8_t* p, size_t len, uint64_t sum) {
  uint64_t acc = 0;
  for (; len >= 4; p += 4, len -= 4) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    acc += w;
  }
  if (len >= 2) {
    uint16_t w;
    std::memcpy(&w, p, 2);
    acc += w;
    p += 2;
    len -= 2;
  }
  if (len) {
    const uint8_t last[2] = {p[0], 0};  // an odd byte is the high half of a word
    uint16_t w;
    std::memcpy(&w, last, 2);
    acc += w;
  }
  acc = (acc & 0xffffffff) + (acc >> 32);  // at most 33 bits
  acc = (acc & 0xffff) + (acc >> 16);      // at most 18 bits
  acc = (acc & 0xffff) + (acc >> 16);      // at most 17 bits
  acc = (acc & 0xffff) + (acc >> 16);
  uint16_t folded = static_cast<uint16_t>(acc);
  if constexpr (std::endian::native == std::endian::little) folded = __builtin_bswap16(folded);
  return sum + folded;
}

uint16_t Fold(uint64_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// Sum of the UDP pseudo header (RFC 768 / RFC 8200 section 8.1).
uint64_t PseudoSum(const uint8_t* src, const uint8_t* dst, size_t addr_len, size_t udp_len) {
  uint64_t s = SumWords(src, addr_len, 0);
  s = SumWords(dst, addr_len, s);
  return s + kIpProtoUdp + udp_len;
}

bool IsIpv6ExtensionHeader(uint8_t nh) {
  switch (nh) {
    case 0:
    case 43:
    case 44:
    case 50:
    case 51:
    case 60:
    case 135:
    case 139:
    case 140:
    case 253:
    case 254: return true;
    default: return false;
  }
}

}  // namespace

IpAddr IpAddr::V6(const std::array<uint8_t, 16>& b) {
  IpAddr r;
  r.v6 = true;
  r.bytes = b;
  return r;
}

bool IpAddr::Parse(std::string_view text, IpAddr* out) {
  if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  const std::string s(text);
  uint8_t buf[16];
  if (inet_pton(AF_INET, s.c_str(), buf) == 1) {
    *out = V4(buf[0], buf[1], buf[2], buf[3]);
    return true;
  }
  if (inet_pton(AF_INET6, s.c_str(), buf) == 1) {
    std::array<uint8_t, 16> b;
    std::memcpy(b.data(), buf, 16);
    *out = V6(b);
    return true;
  }
  return false;
}

std::string IpAddr::ToString() const {
  char buf[INET6_ADDRSTRLEN];
  if (inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), buf, sizeof(buf)) == nullptr) return "?";
  return buf;
}

namespace {

// The encapsulation's rules; @p then gets the UDP payload. A template, so
// that ParseFrame() ends in a tail call of ParseDatagram() as it did before
// ParseUdpFrame() shared this (a span handed back cost ~45 instructions a frame).
template <typename Then>
ParseError ParseEncap(std::span<const uint8_t> frame, const ParseOptions& opt, FrameInfo* info,
                      Then&& then) {
  const uint8_t* p = frame.data();
  size_t len = frame.size();
  if (len < kEthHeaderBytes) return ParseError::kEthTruncated;
  const auto eth = Load<EthHdr>(p);
  std::memcpy(info->eth_dst.bytes.data(), eth.dst, 6);
  std::memcpy(info->eth_src.bytes.data(), eth.src, 6);
  uint16_t ether_type = eth.ether_type.get();
  p += kEthHeaderBytes;
  len -= kEthHeaderBytes;
  info->has_vlan = false;
  info->vlan_tci = 0;
  if (ether_type == kEtherTypeVlan) {
    if (len < kVlanTagBytes) return ParseError::kEthTruncated;
    info->has_vlan = true;
    info->vlan_tci = Load<Be16>(p).get();
    ether_type = Load<Be16>(p + 2).get();
    p += kVlanTagBytes;
    len -= kVlanTagBytes;
  }

  size_t udp_len_avail = 0;  // bytes of the IP payload (UDP header onwards)
  uint64_t pseudo = 0;
  if (ether_type == kEtherTypeIpv4) {
    if (len < kIpv4HeaderBytes) return ParseError::kIpTruncated;
    const auto ip = Load<Ipv4Hdr>(p);
    if ((ip.version_ihl >> 4) != 4) return ParseError::kIpBadVersion;
    const size_t ihl = static_cast<size_t>(ip.version_ihl & 0xf) * 4;
    if (ihl < kIpv4HeaderBytes) return ParseError::kIpBadHeaderLength;
    if (len < ihl) return ParseError::kIpTruncated;
    const size_t total = ip.total_length.get();
    if (total < ihl) return ParseError::kIpBadLength;
    if (total > len) return ParseError::kIpTruncated;
    // Options are rare: the usual 20 bytes as five fixed adds, not a loop.
    const auto header_sum = [p, ihl] {
      return ihl == kIpv4HeaderBytes ? SumWords(p, kIpv4HeaderBytes, 0) : SumWords(p, ihl, 0);
    };
    if (opt.verify_ip_checksum && Fold(header_sum()) != 0xffff) {
      return ParseError::kIpBadChecksum;
    }
    if ((ip.frag.get() & 0x3fff) != 0) return ParseError::kIpFragment;  // MF or an offset
    if (ip.protocol != kIpProtoUdp) return ParseError::kIpNotUdp;
    info->src = IpAddr::V4(ip.src[0], ip.src[1], ip.src[2], ip.src[3]);
    info->dst = IpAddr::V4(ip.dst[0], ip.dst[1], ip.dst[2], ip.dst[3]);
    info->dscp = ip.tos >> 2;
    info->ecn = static_cast<Ecn>(ip.tos & 3);
    info->ttl = ip.ttl;
    info->flow_label = 0;
    info->ip_id = ip.id.get();
    udp_len_avail = total - ihl;
    p += ihl;
  } else if (ether_type == kEtherTypeIpv6) {
    if (len < kIpv6HeaderBytes) return ParseError::kIpTruncated;
    const auto ip = Load<Ipv6Hdr>(p);
    const uint32_t vtf = ip.ver_tc_flow.get();
    if ((vtf >> 28) != 6) return ParseError::kIpBadVersion;
    const size_t payload = ip.payload_length.get();
    if (payload > len - kIpv6HeaderBytes) return ParseError::kIpTruncated;
    if (ip.next_header != kIpProtoUdp) {
      return IsIpv6ExtensionHeader(ip.next_header) ? ParseError::kIpv6ExtensionHeader
                                                   : ParseError::kIpNotUdp;
    }
    info->src = IpAddr::V6(std::to_array(ip.src));
    info->dst = IpAddr::V6(std::to_array(ip.dst));
    const auto tc = static_cast<uint8_t>(vtf >> 20);
    info->dscp = tc >> 2;
    info->ecn = static_cast<Ecn>(tc & 3);
    info->ttl = ip.hop_limit;
    info->flow_label = vtf & 0xfffff;
    info->ip_id = 0;
    udp_len_avail = payload;
    p += kIpv6HeaderBytes;
  } else {
    return ParseError::kEthNotIp;
  }

  if (udp_len_avail < kUdpHeaderBytes) return ParseError::kUdpTruncated;
  const auto udp = Load<UdpHdr>(p);
  const size_t udp_len = udp.length.get();
  if (udp_len != udp_len_avail) return ParseError::kUdpBadLength;
  info->src_port = udp.src_port.get();
  info->dst_port = udp.dst_port.get();
  if (info->dst_port != opt.udp_port) return ParseError::kUdpWrongPort;
  const uint16_t csum = udp.checksum.get();
  if (opt.verify_udp_checksum && (csum != 0 || info->src.v6)) {
    const size_t alen = info->src.v6 ? 16 : 4;
    pseudo = PseudoSum(info->src.bytes.data(), info->dst.bytes.data(), alen, udp_len);
    if (csum == 0 || Fold(SumWords(p, udp_len, pseudo)) != 0xffff) {
      return ParseError::kUdpBadChecksum;
    }
  }
  return then(std::span<const uint8_t>(p + kUdpHeaderBytes, udp_len - kUdpHeaderBytes));
}

}  // namespace

ParseError ParseUdpFrame(std::span<const uint8_t> frame, const ParseOptions& opt, FrameInfo* info,
                         std::span<const uint8_t>* udp_payload) {
  return ParseEncap(frame, opt, info, [udp_payload](std::span<const uint8_t> d) {
    *udp_payload = d;
    return ParseError::kOk;
  });
}

ParseError ParseFrame(std::span<const uint8_t> frame, const ParseOptions& opt, FrameInfo* info,
                      Packet* out) {
  return ParseEncap(frame, opt, info,
                    [&opt, out](std::span<const uint8_t> d) { return ParseDatagram(d, opt, out); });
}

namespace {

// The encapsulation's own rules, and room for its headers: nullptr, or what is
// wrong (a Status made on every packet cost the send path ~40 instructions).
const char* CheckEncap(const FrameInfo& f, size_t out_bytes) {
  if (f.src.v6 != f.dst.v6) return "source and destination addresses differ in IP version";
  if (f.dscp > 63 || static_cast<uint8_t>(f.ecn) > 3 || f.flow_label > 0xfffff) {
    return "dscp, ecn or flow label out of range";
  }
  if (out_bytes < EncapBytes(f)) return "";  // no room: ResourceExhausted, said by the caller
  return nullptr;
}

absl::Status EncapError(const char* why, size_t out_bytes) {
  if (*why != 0) return absl::InvalidArgumentError(why);
  return absl::ResourceExhaustedError(
      absl::StrCat("buffer of ", out_bytes, " bytes cannot hold the headers"));
}

constexpr size_t kMaxUdpBytes = 0xffff - kIpv6HeaderBytes;

// Writes the headers in front of a checked UDP payload already in place (one
// of at most kMaxUdpBytes with its UDP header).
[[gnu::always_inline]] inline size_t WriteEncap(const FrameInfo& f, size_t udp_payload_bytes,
                                                std::span<uint8_t> out, const EncodeOptions& opt) {
  const size_t encap = EncapBytes(f);
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes;

  uint8_t* p = out.data();
  EthHdr eth;
  std::memcpy(eth.dst, f.eth_dst.bytes.data(), 6);
  std::memcpy(eth.src, f.eth_src.bytes.data(), 6);
  const uint16_t l3_type = f.src.v6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  eth.ether_type.set(f.has_vlan ? kEtherTypeVlan : l3_type);
  Store(p, eth);
  p += kEthHeaderBytes;
  if (f.has_vlan) {
    Be16 tci, type;
    tci.set(f.vlan_tci);
    type.set(l3_type);
    Store(p, tci);
    Store(p + 2, type);
    p += kVlanTagBytes;
  }
  const uint8_t tos = static_cast<uint8_t>(f.dscp << 2 | static_cast<uint8_t>(f.ecn));
  const uint8_t* src = f.src.bytes.data();
  const uint8_t* dst = f.dst.bytes.data();
  bool want_udp_csum = true;
  if (!f.src.v6) {
    Ipv4Hdr ip{};
    ip.version_ihl = 0x45;
    ip.tos = tos;
    ip.total_length.set(static_cast<uint16_t>(kIpv4HeaderBytes + udp_len));
    ip.id.set(f.ip_id);
    ip.frag.set(0x4000);  // don't fragment
    ip.ttl = f.ttl;
    ip.protocol = kIpProtoUdp;
    std::memcpy(ip.src, src, 4);
    std::memcpy(ip.dst, dst, 4);
    Store(p, ip);
    Be16 csum;
    csum.set(static_cast<uint16_t>(~Fold(SumWords(p, kIpv4HeaderBytes, 0))));
    Store(p + offsetof(Ipv4Hdr, checksum), csum);
    p += kIpv4HeaderBytes;
    want_udp_csum = opt.udp_checksum_ipv4;
  } else {
    Ipv6Hdr ip{};
    ip.ver_tc_flow.set(6u << 28 | static_cast<uint32_t>(tos) << 20 | f.flow_label);
    ip.payload_length.set(static_cast<uint16_t>(udp_len));
    ip.next_header = kIpProtoUdp;
    ip.hop_limit = f.ttl;
    std::memcpy(ip.src, src, 16);
    std::memcpy(ip.dst, dst, 16);
    Store(p, ip);
    p += kIpv6HeaderBytes;
  }
  UdpHdr udp{};
  udp.src_port.set(f.src_port);
  udp.dst_port.set(f.dst_port);
  udp.length.set(static_cast<uint16_t>(udp_len));
  Store(p, udp);
  if (want_udp_csum) {
    const size_t alen = f.src.v6 ? 16 : 4;
    uint16_t c =
        static_cast<uint16_t>(~Fold(SumWords(p, udp_len, PseudoSum(src, dst, alen, udp_len))));
    if (c == 0) c = 0xffff;  // zero means "no checksum" on the wire
    Be16 csum;
    csum.set(c);
    Store(p + offsetof(UdpHdr, checksum), csum);
  }
  return encap + udp_payload_bytes;
}

}  // namespace

absl::StatusOr<size_t> EncodeFrame(const FrameInfo& f, const Packet& pkt, std::span<uint8_t> out,
                                   const EncodeOptions& opt) {
  if (const char* why = CheckEncap(f, out.size()); why != nullptr) {
    return EncapError(why, out.size());
  }
  auto body = EncodeDatagram(pkt, out.subspan(EncapBytes(f)), opt);
  if (!body.ok()) return body.status();
  if (kUdpHeaderBytes + *body > kMaxUdpBytes) {
    return absl::InvalidArgumentError("datagram too large for one IP packet");
  }
  return WriteEncap(f, *body, out, opt);
}

absl::StatusOr<size_t> EncodeUdpFrame(const FrameInfo& f, size_t udp_payload_bytes,
                                      std::span<uint8_t> out, const EncodeOptions& opt) {
  if (const char* why = CheckEncap(f, out.size()); why != nullptr) {
    return EncapError(why, out.size());
  }
  if (out.size() - EncapBytes(f) < udp_payload_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("buffer of ", out.size(),
                                                     " bytes cannot hold the headers and ",
                                                     udp_payload_bytes, " bytes of payload"));
  }
  if (kUdpHeaderBytes + udp_payload_bytes > kMaxUdpBytes) {
    return absl::InvalidArgumentError("datagram too large for one IP packet");
  }
  return WriteEncap(f, udp_payload_bytes, out, opt);
}

bool EncapTemplate::Build(const FrameInfo& f, const EncodeOptions& opt) {
  bytes_ = 0;
  if (CheckEncap(f, hdr_.size()) != nullptr) return false;
  FrameInfo g = f;
  g.src_port = 0;
  g.ecn = Ecn::kNotEct;
  EncodeOptions no_csum = opt;
  no_csum.udp_checksum_ipv4 = false;
  const size_t n = EncapBytes(f);
  WriteEncap(g, 0, hdr_, no_csum);
  v6_ = f.src.v6;
  udp_csum_ = v6_ || opt.udp_checksum_ipv4;
  ip_off_ = static_cast<uint8_t>(n - kUdpHeaderBytes - (v6_ ? kIpv6HeaderBytes : kIpv4HeaderBytes));
  uint8_t* ip = hdr_.data() + ip_off_;
  uint8_t* udp = hdr_.data() + n - kUdpHeaderBytes;
  // The per-packet fields start at zero; Stamp() adds them into the sums.
  std::memset(udp + offsetof(UdpHdr, length), 0, 2);
  std::memset(udp + offsetof(UdpHdr, checksum), 0, 2);
  if (v6_) {
    std::memset(ip + offsetof(Ipv6Hdr, payload_length), 0, 2);
  } else {
    std::memset(ip + offsetof(Ipv4Hdr, total_length), 0, 2);
    std::memset(ip + offsetof(Ipv4Hdr, checksum), 0, 2);
    ip_sum_ = static_cast<uint32_t>(SumWords(ip, kIpv4HeaderBytes, 0));
  }
  const size_t alen = v6_ ? 16 : 4;
  pseudo_sum_ = static_cast<uint32_t>(PseudoSum(f.src.bytes.data(), f.dst.bytes.data(), alen, 0));
  bytes_ = static_cast<uint8_t>(n);
  return true;
}

size_t EncapTemplate::Stamp(uint16_t src_port, Ecn ecn, size_t udp_payload_bytes,
                            uint8_t* out) const {
  // A constant length per case, so that each copy is a few moves, not a call.
  constexpr size_t kV4 = EncapBytes(false, false), kV4Vlan = EncapBytes(false, true);
  constexpr size_t kV6 = EncapBytes(true, false), kV6Vlan = EncapBytes(true, true);
  switch (bytes_) {
    case kV4: std::memcpy(out, hdr_.data(), kV4); break;
    case kV4Vlan: std::memcpy(out, hdr_.data(), kV4Vlan); break;
    case kV6: std::memcpy(out, hdr_.data(), kV6); break;
    case kV6Vlan: std::memcpy(out, hdr_.data(), kV6Vlan); break;
    default: std::memcpy(out, hdr_.data(), bytes_); break;
  }
  const size_t udp_len = kUdpHeaderBytes + udp_payload_bytes;
  const auto ecn_bits = static_cast<uint8_t>(ecn);
  uint8_t* ip = out + ip_off_;
  if (v6_) {
    ip[1] |= static_cast<uint8_t>(ecn_bits << 4);  // traffic class bits 1..0 of 7..0 at bit 20
    Be16 len;
    len.set(static_cast<uint16_t>(udp_len));
    Store(ip + offsetof(Ipv6Hdr, payload_length), len);
  } else {
    ip[1] |= ecn_bits;
    const auto total = static_cast<uint16_t>(kIpv4HeaderBytes + udp_len);
    Be16 len, csum;
    len.set(total);
    Store(ip + offsetof(Ipv4Hdr, total_length), len);
    // ECN is the low byte of the header's first word, the length its second word.
    csum.set(static_cast<uint16_t>(~Fold(uint64_t{ip_sum_} + ecn_bits + total)));
    Store(ip + offsetof(Ipv4Hdr, checksum), csum);
  }
  uint8_t* udp = out + bytes_ - kUdpHeaderBytes;
  Be16 port, len;
  port.set(src_port);
  len.set(static_cast<uint16_t>(udp_len));
  Store(udp + offsetof(UdpHdr, src_port), port);
  Store(udp + offsetof(UdpHdr, length), len);
  if (udp_csum_) {
    auto c = static_cast<uint16_t>(~Fold(SumWords(udp, udp_len, uint64_t{pseudo_sum_} + udp_len)));
    if (c == 0) c = 0xffff;  // zero means "no checksum" on the wire
    Be16 csum;
    csum.set(c);
    Store(udp + offsetof(UdpHdr, checksum), csum);
  }
  return bytes_ + udp_payload_bytes;
}

}  // namespace metaroce::wire
