/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Ethernet / IPv4 / IPv6 / UDP encapsulation rules.

#include "gtest/gtest.h"
#include "wire_test_util.h"

namespace metaroce::wire {
namespace {

using namespace testing;

ParseError ParseF(const std::vector<uint8_t>& f, ParseOptions opt = {}) {
  FrameInfo fi;
  Packet p;
  return ParseFrame(f, opt, &fi, &p);
}

// Offsets in an untagged frame.
constexpr size_t kIp = kEthHeaderBytes;
constexpr size_t kUdp4 = kIp + kIpv4HeaderBytes;
constexpr size_t kUdp6 = kIp + kIpv6HeaderBytes;

// Recomputes the IPv4 header checksum after an edit.
void FixIpv4Checksum(std::vector<uint8_t>& f) {
  Put16(f, kIp + 10, 0);
  const size_t ihl = (f[kIp] & 0xf) * 4u;
  uint32_t s = 0;
  for (size_t i = 0; i < ihl; i += 2) s += f[kIp + i] << 8 | f[kIp + i + 1];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  Put16(f, kIp + 10, static_cast<uint16_t>(~s));
}

TEST(Frame, EveryTruncationLength) {
  for (const char* name : {"v4_write_first", "v6_ack_sack", "v6_write_first_vlan_ce"}) {
    const auto s = Sample(name);
    const auto full = EncodeWithFrame(s.frame, s.Get());
    const size_t eth = kEthHeaderBytes + (s.frame.has_vlan ? kVlanTagBytes : 0);
    for (size_t len = 0; len < full.size(); len++) {
      std::vector<uint8_t> cut(full.begin(), full.begin() + len);
      const ParseError want = len < eth ? ParseError::kEthTruncated : ParseError::kIpTruncated;
      ASSERT_EQ(ParseF(cut), want) << name << " length " << len;
    }
  }
}

TEST(Frame, EthernetPaddingIsIgnored) {
  const auto s = Sample("v4_nak_rnr");
  auto f = EncodeWithFrame(s.frame, s.Get());
  f.resize(f.size() + 18, 0);  // a NIC may pad short frames
  EXPECT_EQ(ParseF(f), ParseError::kOk);
}

TEST(Frame, Ipv4Rules) {
  const auto s = Sample("v4_send");
  const auto good = EncodeWithFrame(s.frame, s.Get());
  auto f = good;
  Put16(f, 12, 0x0806);  // ARP
  EXPECT_EQ(ParseF(f), ParseError::kEthNotIp);
  f = good;
  f[kIp] = 0x65;  // version 6 inside an IPv4 ethertype
  EXPECT_EQ(ParseF(f), ParseError::kIpBadVersion);
  f = good;
  f[kIp] = 0x44;  // IHL 16 bytes
  EXPECT_EQ(ParseF(f), ParseError::kIpBadHeaderLength);
  f = good;
  f[kIp + 11] ^= 1;
  EXPECT_EQ(ParseF(f), ParseError::kIpBadChecksum);
  ParseOptions no_ip;
  no_ip.verify_ip_checksum = false;
  EXPECT_EQ(ParseF(f, no_ip), ParseError::kOk);
  f = good;
  Put16(f, kIp + 6, 0x2000);  // more fragments
  FixIpv4Checksum(f);
  EXPECT_EQ(ParseF(f), ParseError::kIpFragment);
  Put16(f, kIp + 6, 0x0001);  // a later fragment
  FixIpv4Checksum(f);
  EXPECT_EQ(ParseF(f), ParseError::kIpFragment);
  f = good;
  f[kIp + 9] = 6;  // TCP
  FixIpv4Checksum(f);
  EXPECT_EQ(ParseF(f), ParseError::kIpNotUdp);
  f = good;
  Put16(f, kIp + 2, 19);  // total length shorter than the header
  FixIpv4Checksum(f);
  EXPECT_EQ(ParseF(f), ParseError::kIpBadLength);
}

TEST(Frame, Ipv4OptionsAreSkipped) {
  const auto s = Sample("v4_send");
  auto f = EncodeWithFrame(s.frame, s.Get());
  f.insert(f.begin() + kUdp4, {1, 1, 1, 0});  // NOP NOP NOP EOL
  f[kIp] = 0x46;
  Put16(f, kIp + 2, static_cast<uint16_t>((f[kIp + 2] << 8 | f[kIp + 3]) + 4));
  FixIpv4Checksum(f);
  EXPECT_EQ(ParseF(f), ParseError::kOk);
}

TEST(Frame, Ipv6Rules) {
  const auto s = Sample("v6_send");
  const auto good = EncodeWithFrame(s.frame, s.Get());
  auto f = good;
  f[kIp + 6] = 0;  // hop-by-hop options header
  EXPECT_EQ(ParseF(f), ParseError::kIpv6ExtensionHeader);
  f[kIp + 6] = 44;  // fragment header
  EXPECT_EQ(ParseF(f), ParseError::kIpv6ExtensionHeader);
  f[kIp + 6] = 58;  // ICMPv6
  EXPECT_EQ(ParseF(f), ParseError::kIpNotUdp);
  f = good;
  f[kIp] = 0x45;
  EXPECT_EQ(ParseF(f), ParseError::kIpBadVersion);
  f = good;
  f[kUdp6 + 6] ^= 0x10;  // UDP checksum
  EXPECT_EQ(ParseF(f), ParseError::kUdpBadChecksum);
  Put16(f, kUdp6 + 6, 0);  // IPv6 requires a UDP checksum
  EXPECT_EQ(ParseF(f), ParseError::kUdpBadChecksum);
}

TEST(Frame, UdpRules) {
  const auto s = Sample("v4_send");
  const auto good = EncodeWithFrame(s.frame, s.Get());
  auto f = good;
  Put16(f, kUdp4 + 2, 4791);  // RoCEv2's port is not ours
  EXPECT_EQ(ParseF(f), ParseError::kUdpWrongPort);
  ParseOptions other;
  other.udp_port = 4791;
  EXPECT_EQ(ParseF(f, other), ParseError::kOk);
  f = good;
  Put16(f, kUdp4 + 4, static_cast<uint16_t>((f[kUdp4 + 4] << 8 | f[kUdp4 + 5]) - 1));
  EXPECT_EQ(ParseF(f), ParseError::kUdpBadLength);
  f = good;
  Put16(f, kIp + 2, kIpv4HeaderBytes + 4);  // IP payload smaller than a UDP header
  FixIpv4Checksum(f);
  EXPECT_EQ(ParseF(f), ParseError::kUdpTruncated);
}

TEST(Frame, Ipv4UdpChecksumIsOptionalButCheckedWhenPresent) {
  const auto s = Sample("v4_write_last");
  auto plain = EncodeWithFrame(s.frame, s.Get());
  EXPECT_EQ(plain[kUdp4 + 6] | plain[kUdp4 + 7], 0);  // off by default, as RoCEv2
  std::vector<uint8_t> f(plain.size());
  EncodeOptions eo;
  eo.udp_checksum_ipv4 = true;
  ASSERT_TRUE(EncodeFrame(s.frame, s.Get(), f, eo).ok());
  EXPECT_NE(f[kUdp4 + 6] | f[kUdp4 + 7], 0);
  EXPECT_EQ(ParseF(f), ParseError::kOk);
  f[kUdp4 + 7] ^= 4;
  EXPECT_EQ(ParseF(f), ParseError::kUdpBadChecksum);
  ParseOptions no_udp;
  no_udp.verify_udp_checksum = false;
  EXPECT_EQ(ParseF(f, no_udp), ParseError::kOk);
}

// RFC 1071 one byte pair at a time: the reference the encoder's and parser's
// word-at-a-time sums must agree with, at every length (odd ones included).
uint16_t ReferenceSum(const uint8_t* p, size_t len, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < len; i += 2) sum += p[i] << 8 | p[i + 1];
  if (len % 2) sum += p[len - 1] << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

TEST(Frame, ChecksumsMatchRfc1071AtEveryLength) {
  for (const char* name : {"v4_send", "v6_send"}) {
    const auto s = Sample(name);
    const bool v6 = s.frame.src.v6;
    const size_t ip = kEthHeaderBytes + (s.frame.has_vlan ? kVlanTagBytes : 0);
    const size_t udp = ip + (v6 ? kIpv6HeaderBytes : kIpv4HeaderBytes);
    const size_t alen = v6 ? 16 : 4;
    for (uint32_t n = 1; n <= 67; n++) {
      std::vector<uint8_t> payload(n);
      for (uint32_t i = 0; i < n; i++) payload[i] = static_cast<uint8_t>(0xf1 - 7 * i);
      Packet p = s.Get();
      p.data.msg_len = n;
      p.data.msg_offset = 0;
      p.payload = payload;
      std::vector<uint8_t> f(EncapBytes(s.frame) + EncodedBytes(p));
      EncodeOptions eo;
      eo.udp_checksum_ipv4 = true;
      ASSERT_TRUE(EncodeFrame(s.frame, p, f, eo).ok()) << name << " payload " << n;
      const size_t udp_len = f.size() - udp;
      uint32_t pseudo = ReferenceSum(s.frame.src.bytes.data(), alen);
      pseudo += ReferenceSum(s.frame.dst.bytes.data(), alen);
      pseudo += 17 + static_cast<uint32_t>(udp_len);
      EXPECT_EQ(ReferenceSum(&f[udp], udp_len, pseudo), 0xffff) << name << " payload " << n;
      if (!v6) {
        EXPECT_EQ(ReferenceSum(&f[ip], kIpv4HeaderBytes), 0xffff) << "IPv4 header";
      }
      ASSERT_EQ(ParseF(f), ParseError::kOk) << name << " payload " << n;
      f[udp + udp_len - 1 - n % 5] ^= 0x21;  // one flipped byte anywhere in the datagram
      EXPECT_EQ(ParseF(f), ParseError::kUdpBadChecksum) << name << " payload " << n;
    }
  }
}

TEST(Frame, FieldsAreReported) {
  const auto s = Sample("v6_write_first_vlan_ce");
  const auto f = EncodeWithFrame(s.frame, s.Get());
  FrameInfo fi;
  Packet p;
  ASSERT_EQ(ParseFrame(f, ParseOptions{}, &fi, &p), ParseError::kOk);
  EXPECT_TRUE(fi.has_vlan);
  EXPECT_EQ(fi.vlan_tci, 0x6064);
  EXPECT_EQ(fi.ecn, Ecn::kCe);
  EXPECT_EQ(fi.dscp, 26);
  EXPECT_EQ(fi.flow_label, 0x12345u);
  EXPECT_EQ(fi.src.ToString(), "2001:db8::a");
  EXPECT_EQ(fi.src_port, 49152);

  const auto v4 = Sample("v4_conn_req");
  const auto f4 = EncodeWithFrame(v4.frame, v4.Get());
  ASSERT_EQ(ParseFrame(f4, ParseOptions{}, &fi, &p), ParseError::kOk);
  EXPECT_EQ(fi.src.ToString(), "192.0.2.10");
  EXPECT_EQ(fi.ip_id, 0x1234);
  EXPECT_EQ(f4[kIp + 6], 0x40);  // don't fragment
}

// The encapsulation alone, for other UDP protocols (the RoCEv2 baseline):
// what EncodeUdpFrame writes around a payload ParseUdpFrame gives back.
TEST(Frame, UdpFramesOfOtherProtocolsRoundTrip) {
  for (const char* name : {"v4_send", "v6_write_first_vlan_ce"}) {
    FrameInfo f = Sample(name).frame;
    f.dst_port = 4791;
    const std::vector<uint8_t> payload = {1, 2, 3, 4, 5, 6, 7};
    std::vector<uint8_t> buf(EncapBytes(f) + payload.size());
    std::copy(payload.begin(), payload.end(), buf.begin() + EncapBytes(f));
    auto n = EncodeUdpFrame(f, payload.size(), buf);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, buf.size());
    ParseOptions opt;
    opt.udp_port = 4791;
    FrameInfo got;
    std::span<const uint8_t> d;
    ASSERT_EQ(ParseUdpFrame(buf, opt, &got, &d), ParseError::kOk) << name;
    EXPECT_EQ(std::vector<uint8_t>(d.begin(), d.end()), payload);
    EXPECT_EQ(got.src, f.src);
    EXPECT_EQ(got.src_port, f.src_port);
    EXPECT_EQ(got.ecn, f.ecn);
    EXPECT_EQ(ParseUdpFrame(buf, ParseOptions{}, &got, &d), ParseError::kUdpWrongPort);
    // The payload must fit behind the headers.
    auto small = EncodeUdpFrame(f, payload.size() + 1, buf);
    ASSERT_FALSE(small.ok());
    EXPECT_EQ(small.status().code(), absl::StatusCode::kResourceExhausted);
  }
}

TEST(Frame, EncoderRejectsMixedFamiliesAndSmallBuffers) {
  auto s = Sample("v4_send");
  s.frame.dst = Sample("v6_send").frame.dst;
  std::vector<uint8_t> buf(2048);
  auto r = EncodeFrame(s.frame, s.Get(), buf);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  const auto ok = Sample("v4_send");
  r = EncodeFrame(ok.frame, ok.Get(), std::span<uint8_t>(buf.data(), 30));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
}

// The sender's fast path: a template built once and stamped per packet writes
// exactly the bytes EncodeUdpFrame() writes, for every encapsulation, ECN
// value, port, checksum choice and payload length (odd ones included).
TEST(Frame, EncapTemplateStampsWhatEncodeUdpFrameWrites) {
  uint32_t seed = 1;
  auto next = [&seed] { return seed = seed * 1103515245u + 12345u; };
  for (const char* name : {"v4_send", "v6_write_first_vlan_ce"}) {
    for (bool vlan : {false, true}) {
      for (bool udp_csum : {false, true}) {
        FrameInfo f = Sample(name).frame;
        f.has_vlan = vlan;
        f.vlan_tci = vlan ? 0x2005 : 0;
        f.ip_id = 0x4321;
        f.dscp = 26;
        EncodeOptions opt;
        opt.udp_checksum_ipv4 = udp_csum;
        EncapTemplate t;
        ASSERT_TRUE(t.Build(f, opt));
        ASSERT_EQ(t.bytes(), EncapBytes(f));
        for (size_t len :
             {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1501}, size_t{4132}}) {
          for (uint8_t ecn = 0; ecn < 4; ecn++) {
            f.ecn = static_cast<Ecn>(ecn);
            f.src_port = static_cast<uint16_t>(next() >> 8);
            std::vector<uint8_t> want(EncapBytes(f) + len), got(want.size(), 0xa5);
            for (size_t i = EncapBytes(f); i < want.size(); i++) want[i] = got[i] = next() >> 24;
            auto n = EncodeUdpFrame(f, len, want, opt);
            ASSERT_TRUE(n.ok()) << n.status();
            EXPECT_EQ(t.Stamp(f.src_port, f.ecn, len, got.data()), *n);
            ASSERT_EQ(got, want) << name << " vlan " << vlan << " csum " << udp_csum << " len "
                                 << len << " ecn " << int{ecn};
          }
        }
      }
    }
  }
}

TEST(Frame, EncapTemplateRefusesWhatTheEncoderRefuses) {
  FrameInfo f = Sample("v4_send").frame;
  f.dst = Sample("v6_send").frame.dst;
  EncapTemplate t;
  EXPECT_FALSE(t.Build(f));
  EXPECT_FALSE(t.built());
  f = Sample("v4_send").frame;
  ASSERT_TRUE(t.Build(f));
  f.dscp = 64;
  EXPECT_FALSE(t.Build(f));
  EXPECT_FALSE(t.built());
}

}  // namespace
}  // namespace metaroce::wire
