/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Encapsulation of a MetaRoCE packet: Ethernet (optional 802.1Q tag), IPv4 or
 * IPv6, UDP. The DPDK path parses and builds whole frames; socket drivers get
 * the addresses from the kernel and use only the UDP payload.
 */

#ifndef METAROCE_MR_WIRE_FRAME_H
#define METAROCE_MR_WIRE_FRAME_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "mr_wire_defs.h"

namespace metaroce::wire {

/** An Ethernet MAC address. */
struct MacAddr {
  std::array<uint8_t, 6> bytes{};
  friend bool operator==(const MacAddr&, const MacAddr&) = default;
};

/** An IPv4 or IPv6 address. IPv4 uses the first 4 bytes; the rest are zero. */
struct IpAddr {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};

  /** IPv4 from four octets (a.b.c.d). Inline: every parsed frame makes two. */
  static IpAddr V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    IpAddr r;
    r.bytes[0] = a;
    r.bytes[1] = b;
    r.bytes[2] = c;
    r.bytes[3] = d;
    return r;
  }
  /** IPv6 from 16 bytes in network order. */
  static IpAddr V6(const std::array<uint8_t, 16>& b);
  /** Text form: dotted quad or RFC 5952 IPv6. */
  std::string ToString() const;
  /** Parses a dotted quad or an IPv6 address (optionally in brackets); false if it is neither. */
  static bool Parse(std::string_view text, IpAddr* out);
  /** True for 0.0.0.0 and ::. */
  bool IsUnspecified() const { return *this == (v6 ? V6({}) : V4(0, 0, 0, 0)); }
  friend bool operator==(const IpAddr&, const IpAddr&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const IpAddr& a) {
    return H::combine(std::move(h), a.v6, a.bytes);
  }
};

/** Everything below the MetaRoCE header: what a parsed frame came with, or how to build one. */
struct FrameInfo {
  MacAddr eth_dst;
  MacAddr eth_src;
  bool has_vlan = false;
  uint16_t vlan_tci = 0;  ///< PCP, DEI and VLAN id, as on the wire
  IpAddr src;             ///< src.v6 selects IPv4 or IPv6 (dst must match)
  IpAddr dst;
  uint8_t dscp = 0;         ///< upper six bits of TOS / traffic class
  Ecn ecn = Ecn::kEct0;     ///< lower two bits of TOS / traffic class
  uint8_t ttl = 64;         ///< IPv4 TTL or IPv6 hop limit
  uint32_t flow_label = 0;  ///< IPv6 only (20 bits)
  uint16_t ip_id = 0;       ///< IPv4 identification
  uint16_t src_port = 0;    ///< UDP source port: the path's ECMP entropy
  uint16_t dst_port = kDefaultUdpPort;
};

/** Bytes of Ethernet + IP + UDP headers of a frame of this IP version, with or without a VLAN tag.
 */
constexpr size_t EncapBytes(bool v6, bool has_vlan) {
  return kEthHeaderBytes + (has_vlan ? kVlanTagBytes : 0) +
         (v6 ? kIpv6HeaderBytes : kIpv4HeaderBytes) + kUdpHeaderBytes;
}

/** Bytes of Ethernet + IP + UDP headers that a frame built from @p f has. */
constexpr size_t EncapBytes(const FrameInfo& f) { return EncapBytes(f.src.v6, f.has_vlan); }

}  // namespace metaroce::wire

#endif  // METAROCE_MR_WIRE_FRAME_H
