/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// MetaRoCE header encode/parse: round trips, hand-written layouts from
// doc/spec.md, and one test per rejection rule.

#include <set>

#include "gtest/gtest.h"
#include "wire_test_util.h"

namespace metaroce::wire {
namespace {

using namespace testing;

// ---- Round trips ----------------------------------------------------------

TEST(Codec, EverySampleRoundTripsAsDatagram) {
  std::set<PacketType> seen;
  for (const auto& s : SampleConversation()) {
    SCOPED_TRACE(s.name);
    const Packet in = s.Get();
    const auto bytes = Encode(in);
    ASSERT_EQ(bytes.size(), EncodedBytes(in));
    Packet out;
    ASSERT_EQ(Parse(bytes, &out), ParseError::kOk);
    EXPECT_TRUE(Equivalent(in, out));
    seen.insert(in.type);
  }
  // The sample set covers every packet type.
  for (int t = 0; t < 256; t++) {
    if (ClassOf(static_cast<uint8_t>(t)) != PacketClass::kInvalid) {
      EXPECT_TRUE(seen.count(static_cast<PacketType>(t))) << PacketTypeName(t);
    }
  }
}

// The engine's encoder writes what EncodeDatagram() writes, and says 0 when
// the buffer is one byte short.
TEST(Codec, TrustedEncodingMatchesTheCheckedOne) {
  for (const auto& s : SampleConversation()) {
    SCOPED_TRACE(s.name);
    const Packet in = s.Get();
    const auto bytes = Encode(in);
    std::vector<uint8_t> buf(bytes.size() + 8, 0xee);
    ASSERT_EQ(EncodeTrusted(in, buf), bytes.size());
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), buf.begin()));
    EXPECT_EQ(EncodeTrusted(in, std::span<uint8_t>(buf.data(), bytes.size() - 1)), 0u);
  }
}

TEST(Codec, EveryTypeRoundTripsOverIpv4AndIpv6Frames) {
  int v4 = 0, v6 = 0;
  for (const auto& s : SampleConversation()) {
    SCOPED_TRACE(s.name);
    const auto frame = EncodeWithFrame(s.frame, s.Get());
    FrameInfo fi;
    Packet out;
    ASSERT_EQ(ParseFrame(frame, ParseOptions{}, &fi, &out), ParseError::kOk);
    EXPECT_TRUE(Equivalent(s.Get(), out));
    EXPECT_EQ(fi.src, s.frame.src);
    EXPECT_EQ(fi.dst, s.frame.dst);
    EXPECT_EQ(fi.src_port, s.frame.src_port);
    EXPECT_EQ(fi.dst_port, s.frame.dst_port);
    EXPECT_EQ(fi.ecn, s.frame.ecn);
    EXPECT_EQ(fi.dscp, s.frame.dscp);
    EXPECT_EQ(fi.has_vlan, s.frame.has_vlan);
    EXPECT_EQ(fi.eth_src, s.frame.eth_src);
    (s.frame.src.v6 ? v6 : v4)++;
  }
  EXPECT_GE(v4, 18);  // at least one per packet type
  EXPECT_GE(v6, 18);
}

TEST(Codec, SackBitmapEdgesSurvive) {
  Packet p;
  p.type = PacketType::kAck;
  p.dst_conn_id = 1;
  p.ack.cum_psn = 0xfffffff0u;  // the bitmap spans the PSN wrap
  p.ack.has_sack = true;
  p.ack.sack = {1ull, 0, 0, 1ull << 63};  // bits 0 and 255
  const auto b = Encode(p);
  Packet out;
  ASSERT_EQ(Parse(b, &out), ParseError::kOk);
  EXPECT_EQ(out.ack.sack[0], 1ull);
  EXPECT_EQ(out.ack.sack[3], 1ull << 63);
  EXPECT_EQ(out.ack.cum_psn, 0xfffffff0u);
}

TEST(Codec, ZeroLengthMessageAndLargestPayload) {
  Packet p;
  p.type = PacketType::kWrite;
  p.dst_conn_id = 9;
  p.data.stream_id = 3;
  p.data.src_stream = 4;
  p.data.rkey = 1;
  const auto empty = Encode(p);
  EXPECT_EQ(Parse(empty), ParseError::kOk);

  // The last packet of the longest message (2 GiB).
  std::vector<uint8_t> big(kMaxPayloadBytes, 0x5a);
  p.data.msg_len = kMaxMessageBytes;
  p.data.msg_offset = kMaxMessageBytes - kMaxPayloadBytes;
  p.payload = big;
  const auto b = Encode(p);
  Packet out;
  ASSERT_EQ(Parse(b, &out), ParseError::kOk);
  EXPECT_EQ(out.payload.size(), kMaxPayloadBytes);
  EXPECT_EQ(out.data.msg_offset + out.payload.size(), kMaxMessageBytes);
}

TEST(Codec, PayloadAlreadyInPlaceIsNotCopied) {
  const auto s = Sample("v4_write_last");
  const Packet normal = s.Get();
  const auto want = Encode(normal);
  std::vector<uint8_t> out(want.size());
  // Gather the payload straight into its final position, as the engine does.
  const size_t off = PayloadOffset(normal.type);
  std::copy(s.payload.begin(), s.payload.end(), out.begin() + off);
  Packet p = normal;
  p.payload = {out.data() + off, s.payload.size()};
  auto n = EncodeDatagram(p, out);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < out.size(); i++) ASSERT_EQ(out[i], want[i]) << "byte " << i;
}

// ---- Layouts written by hand from doc/spec.md ------------------------------
// clang-format off

std::vector<uint8_t> WithCrc(std::vector<uint8_t> b) {
  b.resize(b.size() + kCrcBytes);
  Reseal(b);
  return b;
}

void ExpectLayout(const Packet& p, const std::vector<uint8_t>& want) {
  const auto got = Encode(p);
  EXPECT_EQ(got, want);
  Packet back;
  ASSERT_EQ(Parse(want, &back), ParseError::kOk);
  EXPECT_TRUE(Equivalent(p, back));
}

TEST(Layout, Write) {
  const uint8_t data[] = {0xde, 0xad, 0xbe, 0xef};
  Packet p;
  p.type = PacketType::kWrite;
  p.flags = flags::kAckReq;
  p.dst_conn_id = 0x01020304;
  p.path_id = 0x0506;
  p.data = {.psn = 0x0a0b0c0d, .una_psn = 0x0a0b0c00, .tx_ts_ns = 0x11121314,
            .stream_id = 0x21222324,
            .msn = 0x31323334, .msg_len = 0x1000, .msg_offset = 0x800, .src_stream = 0x61626364,
            .rkey = 0x41424344, .va = 0x5152535455565758};
  p.payload = data;
  ExpectLayout(p, WithCrc({
                      0x01, 0x01, 0x00, 0x01,  // version 1, type WRITE, flags ACK_REQ
                      0x01, 0x02, 0x03, 0x04,  // dst_conn_id
                      0x05, 0x06, 0x00, 0x04,  // path_id, payload_len
                      0x0a, 0x0b, 0x0c, 0x0d,  // psn
                      0x0a, 0x0b, 0x0c, 0x00,  // una_psn
                      0x11, 0x12, 0x13, 0x14,  // tx_ts
                      0x21, 0x22, 0x23, 0x24,  // stream_id
                      0x31, 0x32, 0x33, 0x34,  // msn
                      0x00, 0x00, 0x10, 0x00,  // msg_len
                      0x00, 0x00, 0x08, 0x00,  // msg_offset
                      0x61, 0x62, 0x63, 0x64,  // src_stream
                      0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58,  // va
                      0x41, 0x42, 0x43, 0x44,  // rkey
                      0xde, 0xad, 0xbe, 0xef,  // payload
                  }));
}

TEST(Layout, SendWithMessageProbe) {
  const uint8_t data[] = {0x5a, 0xa5};
  Packet p;
  p.type = PacketType::kSend;
  p.flags = flags::kAckReq | flags::kRetransmit | flags::kMsgProbe;
  p.dst_conn_id = 0x0a0b0c0d;
  p.path_id = 3;
  p.data = {.psn = 0x100, .una_psn = 0xf0, .tx_ts_ns = 0x01020304, .stream_id = 0x101,
            .msn = 0x10, .msg_len = 0x2002, .msg_offset = 0x2000, .src_stream = 0x201,
            .recv_seq = 0x0f};
  p.payload = data;
  ExpectLayout(p, WithCrc({
                      0x01, 0x03, 0x00, 0x25,  // version 1, type SEND, ACK_REQ|RETRANSMIT|MSG_PROBE
                      0x0a, 0x0b, 0x0c, 0x0d,  // dst_conn_id
                      0x00, 0x03, 0x00, 0x02,  // path_id, payload_len
                      0x00, 0x00, 0x01, 0x00,  // psn
                      0x00, 0x00, 0x00, 0xf0,  // una_psn
                      0x01, 0x02, 0x03, 0x04,  // tx_ts
                      0x00, 0x00, 0x01, 0x01,  // stream_id
                      0x00, 0x00, 0x00, 0x10,  // msn
                      0x00, 0x00, 0x20, 0x02,  // msg_len
                      0x00, 0x00, 0x20, 0x00,  // msg_offset
                      0x00, 0x00, 0x02, 0x01,  // src_stream
                      0x00, 0x00, 0x00, 0x0f,  // recv_seq
                      0x5a, 0xa5,              // payload
                  }));
}

TEST(Layout, WriteImmAndSendImm) {
  const uint8_t data[] = {0x77};
  Packet p;
  p.type = PacketType::kWriteImm;
  p.flags = flags::kSolicited;
  p.dst_conn_id = 1;
  p.data = {.psn = 2, .una_psn = 1, .tx_ts_ns = 3, .stream_id = 4, .msn = 5, .msg_len = 1,
            .msg_offset = 0, .src_stream = 8, .rkey = 6, .va = 7, .imm = 0x99887766,
            .recv_seq = 0x0c0d0e0f};
  p.payload = data;
  ExpectLayout(p, WithCrc({0x01, 0x02, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 1,
                           0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5,
                           0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 8,  // msg_len, msg_offset, src_stream
                           0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 6,  // va, rkey
                           0x0c, 0x0d, 0x0e, 0x0f,              // recv_seq
                           0x99, 0x88, 0x77, 0x66,              // imm
                           0x77}));
  p.type = PacketType::kSendImm;
  p.data.rkey = 0;
  p.data.va = 0;
  ExpectLayout(p, WithCrc({0x01, 0x04, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 1,
                           0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5,
                           0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 8,
                           0x0c, 0x0d, 0x0e, 0x0f,  // recv_seq
                           0x99, 0x88, 0x77, 0x66,  // imm
                           0x77}));
}

TEST(Layout, AtomicCompareSwapAndResponse) {
  Packet p;
  p.type = PacketType::kAtomicCompSwap;
  p.dst_conn_id = 1;
  p.data = {.psn = 0, .tx_ts_ns = 0, .stream_id = 2, .msn = 3, .msg_len = 8, .msg_offset = 0,
            .src_stream = 0x01000000, .rkey = 0xaabbccdd, .va = 0x1000,
            .operand0 = 0x0102030405060708, .operand1 = 0x1112131415161718};
  ExpectLayout(p, WithCrc({0x01, 0x08, 0x00, 0x00, 0, 0, 0, 1, 0, 0, 0, 0,
                           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3,
                           0, 0, 0, 8, 0, 0, 0, 0, 1, 0, 0, 0,  // msg_len, msg_offset, src_stream
                           0, 0, 0, 0, 0, 0, 0x10, 0x00, 0xaa, 0xbb, 0xcc, 0xdd,  // va, rkey
                           1, 2, 3, 4, 5, 6, 7, 8,                         // compare
                           0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18}));  // swap
  Packet r;
  r.type = PacketType::kAtomicResp;
  r.dst_conn_id = 1;
  r.data = {.psn = 0, .tx_ts_ns = 0, .stream_id = 2, .msn = 3, .msg_len = 8, .msg_offset = 0,
            .src_stream = 0xfffffffe, .orig = 0xf0e0d0c0b0a09080};
  ExpectLayout(r, WithCrc({0x01, 0x09, 0x00, 0x00, 0, 0, 0, 1, 0, 0, 0, 0,
                           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3,
                           0, 0, 0, 8, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe,
                           0xf0, 0xe0, 0xd0, 0xc0, 0xb0, 0xa0, 0x90, 0x80}));
}

TEST(Layout, AckWithSackAndStreamAck) {
  Packet p;
  p.type = PacketType::kAck;
  p.dst_conn_id = 0x0a000001;
  p.path_id = 7;
  p.ack.cum_psn = 0x100;
  p.ack.echo_ts_ns = 0x01000000;
  p.ack.ack_delay_ns = 0x200;
  p.ack.rate_hint_mbps = 40000;
  p.ack.rx_pkts = 0x10;
  p.ack.ce_pkts = 2;
  p.ack.ece = true;
  p.ack.has_sack = true;
  p.ack.sack = {0x8000000000000001ull, 0, 0, 0};
  p.ack.num_stream_acks = 1;
  p.ack.stream_acks[0] = {0x42, 9};
  p.flags = flags::kSack | flags::kEce;
  std::vector<uint8_t> want = {
      0x01, 0x10, 0x00, 0x18,  // version 1, type ACK, flags SACK|ECE
      0x0a, 0x00, 0x00, 0x01,  // dst_conn_id
      0x00, 0x07, 0x00, 0x28,  // path_id, payload_len = 32 + 8
      0x00, 0x00, 0x01, 0x00,  // cum_psn
      0x01, 0x00, 0x00, 0x00,  // echo_ts
      0x00, 0x00, 0x02, 0x00,  // ack_delay
      0x00, 0x00, 0x9c, 0x40,  // rate_hint 40000 Mbit/s
      0x00, 0x00, 0x00, 0x10,  // rx_pkts
      0x00, 0x00, 0x00, 0x02,  // ce_pkts
      0x01, 0x00, 0x00, 0x00,  // num_stream_acks, reserved
      0x80, 0, 0, 0, 0, 0, 0, 0x01,  // SACK word 0: PSN 0x101 and 0x140
  };
  want.insert(want.end(), 24, 0);  // SACK words 1-3
  const std::vector<uint8_t> entry = {0, 0, 0, 0x42, 0, 0, 0, 9};
  want.insert(want.end(), entry.begin(), entry.end());
  ExpectLayout(p, WithCrc(want));
}

TEST(Layout, NakProbeAndConnReq) {
  Packet n;
  n.type = PacketType::kNak;
  n.dst_conn_id = 0x0a000001;
  n.path_id = 2;
  n.nak = {0x42, 5, 0x77, NakCode::kReceiverNotReady, 0, 100};
  ExpectLayout(n, WithCrc({0x01, 0x11, 0, 0, 0x0a, 0, 0, 1, 0, 2, 0, 0,
                           0, 0, 0, 0x42, 0, 0, 0, 5, 0, 0, 0, 0x77, 0x01, 0x00, 0x00, 0x64,
                           0, 0, 0, 0, 0, 0, 0, 0}));  // first_chunk, num_chunks: reserved
  Packet pr;
  pr.type = PacketType::kProbeReply;
  pr.dst_conn_id = 3;
  pr.path_id = 9;
  pr.probe = {0x01020304, 0x05060708};
  ExpectLayout(pr, WithCrc({0x01, 0x21, 0, 0, 0, 0, 0, 3, 0, 9, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}));
  Packet c;
  c.type = PacketType::kConnReq;
  c.conn = {0x0a000001, 0xcafef00d, 1, 2, ConnReason::kNone, 128, 8192, 0, 4792,
            0x0102030405060708, 0x1112131415161718, 0x400};
  ExpectLayout(c, WithCrc({0x01, 0x30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                           0x0a, 0, 0, 1, 0xca, 0xfe, 0xf0, 0x0d,  // src_conn_id, nonce
                           1, 2, 0, 0,                             // versions, reason, reserved
                           0x00, 0x80, 0x20, 0x00,                 // num_paths, max_payload
                           0, 0, 0, 0, 0x12, 0xb8, 0, 0,           // capabilities, udp_port, reserved
                           1, 2, 3, 4, 5, 6, 7, 8,                 // incarnation
                           0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,  // cookie
                           0, 0, 0x04, 0, 0, 0, 0, 0}));           // stream_window, reserved
}

TEST(Layout, NakResendAndConnRetry) {
  Packet n;
  n.type = PacketType::kNak;
  n.dst_conn_id = 0x0a000001;
  n.path_id = 4;
  n.nak = {.stream_id = 0x42, .msn = 6, .psn = 0x99, .code = NakCode::kResend,
           .detail = static_cast<uint8_t>(NakDetail::kNotPlaced), .first_chunk = 0x01020304,
           .num_chunks = 0x10};
  ExpectLayout(n, WithCrc({0x01, 0x11, 0, 0, 0x0a, 0, 0, 1, 0, 4, 0, 0,
                           0, 0, 0, 0x42, 0, 0, 0, 6, 0, 0, 0, 0x99,
                           0x05, 0x0a, 0x00, 0x00,   // code RESEND, detail not placed, rnr_delay
                           0x01, 0x02, 0x03, 0x04,   // first_chunk
                           0x00, 0x00, 0x00, 0x10}));  // num_chunks
  Packet r;
  r.type = PacketType::kConnRetry;
  r.dst_conn_id = 0x0a000001;  // the requester's src_conn_id
  r.conn = {.src_conn_id = 0x0b000002, .nonce = 0xcafef00d, .min_version = 1, .max_version = 1,
            .num_paths = 4, .max_payload = 1024, .udp_port = 4792,
            .incarnation = 0x8877665544332211, .cookie = 0xfedcba9876543210,
            .stream_window = 0x100};
  ExpectLayout(r, WithCrc({0x01, 0x34, 0, 0, 0x0a, 0, 0, 1, 0, 0, 0, 0,
                           0x0b, 0, 0, 2, 0xca, 0xfe, 0xf0, 0x0d,  // src_conn_id, nonce
                           1, 1, 0, 0,                             // versions, reason, reserved
                           0x00, 0x04, 0x04, 0x00,                 // num_paths, max_payload
                           0, 0, 0, 0, 0x12, 0xb8, 0, 0,           // capabilities, udp_port, reserved
                           0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // incarnation
                           0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,  // cookie
                           0, 0, 0x01, 0, 0, 0, 0, 0}));           // stream_window, reserved
}

TEST(Layout, ConnAcceptWithPlanes) {
  Packet c;
  c.type = PacketType::kConnAccept;
  c.dst_conn_id = 7;
  c.conn = {.src_conn_id = 9, .nonce = 1, .min_version = 1, .max_version = 1, .num_paths = 8,
            .max_payload = 4096, .capabilities = caps::kPlanes, .udp_port = 4792,
            .incarnation = 2, .stream_window = 0x100, .num_planes = 2};
  SetConnPlane(&c.conn, 0, IpAddr::V4(198, 51, 100, 7));
  SetConnPlane(&c.conn, 1, IpAddr::V4(203, 0, 113, 7));
  ExpectLayout(c, WithCrc({0x01, 0x31, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0x20,  // payload_len 32
                           0, 0, 0, 9, 0, 0, 0, 1, 1, 1, 0, 0,
                           0x00, 0x08, 0x10, 0x00,                 // num_paths, max_payload
                           0, 0, 0, 1, 0x12, 0xb8, 0, 0,           // capabilities: PLANES
                           0, 0, 0, 0, 0, 0, 0, 2,                 // incarnation
                           0, 0, 0, 0, 0, 0, 0, 0,                 // cookie
                           0, 0, 0x01, 0, 0, 0, 0, 0,              // stream_window, reserved
                           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 7,  // plane 1
                           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 203, 0, 113, 7}));  // plane 2
}

// clang-format on

TEST(Codec, PlaneAddressesRoundTripInBothFamilies) {
  for (const char* name : {"v4_conn_accept_planes", "v6_conn_accept_planes"}) {
    SCOPED_TRACE(name);
    Packet in = Sample(name).Get();
    in.conn.num_planes = kMaxPlanes - 1;
    const IpAddr first = ConnPlane(in.conn, 0);
    for (size_t i = 1; i < in.conn.num_planes; i++) {
      IpAddr a = first;
      a.bytes[first.v6 ? 15 : 3] += static_cast<uint8_t>(i);
      SetConnPlane(&in.conn, i, a);
    }
    const auto bytes = Encode(in);
    EXPECT_EQ(bytes.size(),
              kCommonHeaderBytes + kConnBytes + (kMaxPlanes - 1) * kPlaneAddrBytes + kCrcBytes);
    Packet out;
    ASSERT_EQ(Parse(bytes, &out), ParseError::kOk);
    EXPECT_TRUE(Equivalent(in, out));
    EXPECT_EQ(ConnPlane(out.conn, 6), ConnPlane(in.conn, 6));
    EXPECT_EQ(ConnPlane(out.conn, 6).v6, first.v6);
    EXPECT_TRUE(out.payload.empty());
  }
}

// ---- Rejections --------------------------------------------------------------

TEST(Reject, EveryTruncationLength) {
  for (const auto& s : SampleConversation()) {
    SCOPED_TRACE(s.name);
    const auto full = Encode(s.Get());
    const size_t hdr = kCommonHeaderBytes + TypeHeaderBytes(s.packet.type) + kCrcBytes;
    for (size_t len = 0; len < full.size(); len++) {
      std::vector<uint8_t> cut(full.begin(), full.begin() + len);
      const ParseError want =
          len < hdr ? ParseError::kTruncatedHeader : ParseError::kTruncatedPayload;
      ASSERT_EQ(Parse(cut), want) << "length " << len;
    }
  }
}

TEST(Reject, TrailingBytes) {
  auto b = Encode(Sample("v4_send").Get());
  b.push_back(0);
  EXPECT_EQ(Parse(b), ParseError::kBadLength);
}

TEST(Reject, VersionTypeAndFlags) {
  const auto s = Sample("v4_write_first");
  const auto good = Encode(s.Get());
  for (uint8_t v : {0, 2, 0xff}) {
    auto b = good;
    b[0] = v;
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kBadVersion) << int(v);
  }
  for (uint8_t t : {0x00, 0x0a, 0x12, 0x22, 0x35, 0xff}) {
    auto b = good;
    b[1] = t;
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kBadType) << int(t);
  }
  for (uint16_t f : {flags::kSolicited, flags::kEce, flags::kSack, uint16_t{0x8000}}) {
    auto b = good;
    Put16(b, 2, f);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kBadFlags) << f;
  }
  auto ack = Encode(Sample("v4_ack_plain").Get());
  Put16(ack, 2, flags::kAckReq);
  Reseal(ack);
  EXPECT_EQ(Parse(ack), ParseError::kBadFlags);
}

TEST(Reject, MessageProbeOnlyOnRequests) {
  int requests = 0;
  for (const auto& s : SampleConversation()) {
    if (s.frame.src.v6) continue;
    SCOPED_TRACE(s.name);
    auto b = Encode(s.Get());
    Put16(b, 2, static_cast<uint16_t>(WireFlags(s.Get()) | flags::kMsgProbe));
    Reseal(b);
    const bool request = ClassOf(static_cast<uint8_t>(s.packet.type)) == PacketClass::kData &&
                         IsRequest(s.packet.type);
    EXPECT_EQ(Parse(b), request ? ParseError::kOk : ParseError::kBadFlags);
    requests += request;
  }
  EXPECT_GE(requests, 7);  // WRITE, WRITE_IMM, SEND, SEND_IMM, READ_REQ, ATOMIC_FA, ATOMIC_CS
  // The responses in particular: a READ_RESP or ATOMIC_RESP is never a probe.
  for (const char* name : {"v4_read_resp", "v4_atomic_resp"}) {
    const SamplePacket p_sample = Sample(name);
    Packet p = p_sample.Get();
    p.flags |= flags::kMsgProbe;
    EXPECT_EQ(CheckFields(p), ParseError::kBadFlags) << name;
  }
}

// A well-formed version 0 WRITE (28-byte data header, no src_stream), as a v0
// sender would put it on the wire: dropped whole, not misread as v1.
TEST(Reject, Version0PacketIsDropped) {
  // clang-format off
  const auto v0 = WithCrc({
      0x00, 0x01, 0x00, 0x01,  // version 0, type WRITE, flags ACK_REQ
      0x01, 0x02, 0x03, 0x04,  // dst_conn_id
      0x05, 0x06, 0x00, 0x04,  // path_id, payload_len
      0x0a, 0x0b, 0x0c, 0x0d,  // psn
      0x0a, 0x0b, 0x0c, 0x00,  // una_psn
      0x11, 0x12, 0x13, 0x14,  // tx_ts
      0x21, 0x22, 0x23, 0x24,  // stream_id
      0x31, 0x32, 0x33, 0x34,  // msn
      0x00, 0x00, 0x10, 0x00,  // msg_len
      0x00, 0x00, 0x08, 0x00,  // msg_offset
      0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58,  // va
      0x41, 0x42, 0x43, 0x44,  // rkey
      0xde, 0xad, 0xbe, 0xef,  // payload
  });
  // clang-format on
  EXPECT_EQ(Parse(v0), ParseError::kBadVersion);
  // So is every sample re-labelled version 0, and a v0 CONN_REQ in particular.
  for (const auto& s : SampleConversation()) {
    auto b = Encode(s.Get());
    b[0] = 0;
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kBadVersion) << s.name;
  }
}

TEST(Reject, EveryBitFlipIsCaught) {
  for (const auto& s : SampleConversation()) {
    if (s.frame.src.v6) continue;  // the IPv4 half has every type
    SCOPED_TRACE(s.name);
    const auto good = Encode(s.Get());
    for (size_t i = 0; i < good.size(); i++) {
      for (int bit = 0; bit < 8; bit++) {
        auto b = good;
        b[i] ^= static_cast<uint8_t>(1u << bit);
        const ParseError e = Parse(b);
        ASSERT_NE(e, ParseError::kOk) << "byte " << i << " bit " << bit;
        // Past the header fields that decide structure, only the CRC can notice.
        if (i >= kCommonHeaderBytes + TypeHeaderBytes(s.packet.type) &&
            s.packet.type != PacketType::kAck) {
          ASSERT_EQ(e, ParseError::kBadCrc) << "byte " << i;
        }
      }
    }
  }
}

TEST(Reject, CrcCheckCanBeLeftToHardware) {
  auto b = Encode(Sample("v4_send").Get());
  b[b.size() - 1] ^= 1;
  EXPECT_EQ(Parse(b), ParseError::kBadCrc);
  Packet p;
  ParseOptions no_crc;
  no_crc.verify_crc = false;
  EXPECT_EQ(ParseDatagram(b, no_crc, &p), ParseError::kOk);
}

// Offsets of data header fields inside a datagram.
constexpr size_t kD = kCommonHeaderBytes;
constexpr size_t kUnaOff = kD + 4, kStreamOff = kD + 12, kMsgLenOff = kD + 20, kMsgOffOff = kD + 24;
constexpr size_t kSrcStreamOff = kD + 28;
constexpr size_t kTargetEnd = kD + kDataHeaderBytes + kRdmaTargetBytes;

TEST(Reject, DataFields) {
  {
    auto b = Encode(Sample("v4_write_first").Get());
    Put32(b, kStreamOff, 0);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kZeroStream);
  }
  // Every data type names the sender's stream.
  for (const char* name :
       {"v4_write_first", "v4_write_imm", "v4_send", "v4_send_imm_empty", "v4_read_req",
        "v4_read_resp", "v4_atomic_fa", "v4_atomic_cs", "v4_atomic_resp", "v4_write_probe"}) {
    auto b = Encode(Sample(name).Get());
    Put32(b, kSrcStreamOff, 0);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kZeroStream) << name;
  }
  {
    auto b = Encode(Sample("v4_write_first").Get());  // psn 100
    Put32(b, kUnaOff, 101);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kUnaAfterPsn);
    Put32(b, kUnaOff, 0xfffffff0u);  // before 100 in serial order: fine
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kOk);
  }
  {
    auto b = Encode(Sample("v4_write_first").Get());
    Put32(b, 4, 0);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kZeroConnId);
  }
  {
    auto b = Encode(Sample("v4_write_last").Get());  // offset 4096, 1904 bytes of 6000
    Put32(b, kMsgLenOff, 5999);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kPayloadBeyondMessage);
    Put32(b, kMsgLenOff, 6000);
    Put32(b, kMsgOffOff, 0xffffffffu);  // offset + length would wrap
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kPayloadBeyondMessage);
  }
  {
    auto b = Encode(Sample("v4_send_imm_empty").Get());
    Put32(b, kMsgLenOff, 10);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kEmptyPayload);
  }
  for (const char* name : {"v4_read_req", "v4_atomic_fa", "v4_atomic_resp"}) {
    auto b = Encode(Sample(name).Get());
    GrowRegion(b, 4);
    EXPECT_EQ(Parse(b), ParseError::kPayloadNotAllowed) << name;
  }
  {
    auto b = Encode(Sample("v4_read_req").Get());
    Put32(b, kMsgOffOff, 8);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kReservedNotZero);
  }
  for (const char* name : {"v4_atomic_fa", "v4_atomic_cs", "v4_atomic_resp"}) {
    auto b = Encode(Sample(name).Get());
    Put32(b, kMsgLenOff, 16);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kBadAtomicLength) << name;
  }
  {
    auto b = Encode(Sample("v4_atomic_fa").Get());
    Put64(b, kTargetEnd + 8, 1);  // operand1 of a fetch-add
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kBadAtomicOperand);
  }
}

TEST(Reject, MessageLongerThan2GiB) {
  // Every data type: msg_len kMaxMessageBytes + 1 and the largest u32.
  for (const auto& s : SampleConversation()) {
    if (s.frame.src.v6 || ClassOf(static_cast<uint8_t>(s.packet.type)) != PacketClass::kData) {
      continue;
    }
    for (uint32_t len : {kMaxMessageBytes + 1, 0xffffffffu}) {
      auto b = Encode(s.Get());
      Put32(b, kMsgLenOff, len);
      Reseal(b);
      EXPECT_EQ(Parse(b), ParseError::kMessageTooLong) << s.name << " " << len;
    }
  }
  // kMaxMessageBytes itself is fine: a READ of 2 GiB, and its last response chunk.
  auto b = Encode(Sample("v4_read_req").Get());
  Put32(b, kMsgLenOff, kMaxMessageBytes);
  Reseal(b);
  EXPECT_EQ(Parse(b), ParseError::kOk);
  const SamplePacket last_sample = Sample("v4_read_resp");
  Packet last = last_sample.Get();
  last.data.msg_len = kMaxMessageBytes;
  last.data.msg_offset = kMaxMessageBytes - static_cast<uint32_t>(last.payload.size());
  EXPECT_EQ(Parse(Encode(last)), ParseError::kOk);
  // The encoder refuses what the receiver would drop.
  const SamplePacket w_sample = Sample("v4_write_first");
  Packet w = w_sample.Get();
  w.data.msg_len = kMaxMessageBytes + 1;
  EXPECT_EQ(CheckFields(w), ParseError::kMessageTooLong);
}

constexpr size_t kAckNumOff = kCommonHeaderBytes + 24;

TEST(Reject, AckFields) {
  const auto sack = Encode(Sample("v4_ack_sack").Get());  // SACK + 2 stream acks
  {
    auto b = sack;
    b[kAckNumOff] = kMaxStreamAcks + 1;
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kTooManyStreamAcks);
  }
  {
    auto b = sack;
    b[kAckNumOff] = 3;  // claims one entry more than payload_len holds
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kBadSackLength);
  }
  {
    auto b = sack;
    Put16(b, 2, flags::kEce);  // SACK flag cleared but the bitmap bytes remain
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kBadSackLength);
  }
  {
    auto b = sack;
    const size_t bitmap = kCommonHeaderBytes + kAckFixedBytes;
    std::fill(b.begin() + bitmap, b.begin() + bitmap + kSackBytes, 0);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kEmptySack);
  }
  {
    auto b = sack;
    Put32(b, kCommonHeaderBytes + kAckFixedBytes + kSackBytes, 0);  // first entry's stream
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kZeroStreamAck);
  }
  for (size_t off : {kAckNumOff + 1, kAckNumOff + 2, kAckNumOff + 3}) {
    auto b = sack;
    b[off] = 1;
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kReservedNotZero) << off;
  }
}

constexpr size_t kNakCodeOff = kCommonHeaderBytes + 12;
constexpr size_t kNakRnrOff = kCommonHeaderBytes + 14;
constexpr size_t kNakFirstOff = kCommonHeaderBytes + 16, kNakNumOff = kCommonHeaderBytes + 20;

TEST(Reject, NakFields) {
  const auto rnr = Encode(Sample("v4_nak_rnr").Get());
  for (uint8_t code : {0, kNakCodeMax + 1, 0xff}) {
    auto b = rnr;
    b[kNakCodeOff] = code;
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kBadNakCode) << int(code);
  }
  {
    auto b = rnr;
    b[kNakCodeOff] = static_cast<uint8_t>(NakCode::kRemoteAccess);  // keeps the RNR delay
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kReservedNotZero);
  }
  {
    auto b = rnr;
    Put32(b, kCommonHeaderBytes, 0);
    Reseal(b);
    EXPECT_EQ(Parse(b), ParseError::kZeroStream);
  }
  {
    auto b = rnr;
    GrowRegion(b, 8);
    EXPECT_EQ(Parse(b), ParseError::kPayloadNotAllowed);
  }
  // first_chunk and num_chunks belong to RESEND; every other code keeps them 0.
  for (const char* name : {"v4_nak_rnr", "v4_nak_access"}) {
    for (size_t off : {kNakFirstOff, kNakNumOff}) {
      auto b = Encode(Sample(name).Get());
      Put32(b, off, 1);
      Reseal(b);
      EXPECT_EQ(Parse(b), ParseError::kReservedNotZero) << name << " offset " << off;
    }
  }
}

TEST(Reject, NakResendRange) {
  const auto resend = Encode(Sample("v4_nak_resend").Get());  // chunks [0, 1)
  ASSERT_EQ(Parse(resend), ParseError::kOk);
  auto range = [&](uint32_t first, uint32_t num) {
    auto b = resend;
    Put32(b, kNakFirstOff, first);
    Put32(b, kNakNumOff, num);
    Reseal(b);
    return Parse(b);
  };
  EXPECT_EQ(range(0, 0), ParseError::kBadResendRange);  // nothing to re-send
  EXPECT_EQ(range(7, 0), ParseError::kBadResendRange);
  EXPECT_EQ(range(0xffffffffu, 1), ParseError::kBadResendRange);  // end wraps past 2^32
  EXPECT_EQ(range(2, 0xffffffffu), ParseError::kBadResendRange);
  EXPECT_EQ(range(0x80000000u, 0x80000000u), ParseError::kBadResendRange);
  EXPECT_EQ(range(0xfffffffeu, 1), ParseError::kOk);  // the last representable range
  EXPECT_EQ(range(0, 0xffffffffu), ParseError::kOk);
  EXPECT_EQ(range(5, 3), ParseError::kOk);
  // RESEND has no RNR delay.
  auto b = resend;
  Put16(b, kNakRnrOff, 1);
  Reseal(b);
  EXPECT_EQ(Parse(b), ParseError::kReservedNotZero);
  // The encoder refuses the same.
  const SamplePacket p_sample = Sample("v4_nak_resend");
  Packet p = p_sample.Get();
  p.nak.num_chunks = 0;
  EXPECT_EQ(CheckFields(p), ParseError::kBadResendRange);
}

TEST(Reject, ProbeReplyCarriesNoPadding) {
  auto b = Encode(Sample("v4_probe_reply").Get());
  GrowRegion(b, 16);
  EXPECT_EQ(Parse(b), ParseError::kPayloadNotAllowed);
  // A probe may carry padding (path MTU checks).
  EXPECT_EQ(Parse(Encode(Sample("v4_probe").Get())), ParseError::kOk);
}

constexpr size_t kC = kCommonHeaderBytes;

TEST(Reject, ConnectionFields) {
  const auto req = Encode(Sample("v4_conn_req").Get());
  const auto rej = Encode(Sample("v4_conn_reject").Get());
  auto expect = [](std::vector<uint8_t> b, ParseError e, const char* what) {
    Reseal(b);
    EXPECT_EQ(Parse(b), e) << what;
  };
  auto b = req;
  Put32(b, 4, 7);
  expect(b, ParseError::kReservedNotZero, "CONN_REQ with a destination id");
  b = req;
  Put32(b, kC, 0);
  expect(b, ParseError::kZeroConnId, "zero source id");
  b = req;
  b[kC + 8] = 2;
  b[kC + 9] = 1;
  expect(b, ParseError::kBadVersionRange, "min > max");
  b = req;
  b[kC + 10] = 1;
  expect(b, ParseError::kBadConnReason, "REQ with a reason");
  b = rej;
  b[kC + 10] = kConnReasonMax + 1;
  expect(b, ParseError::kBadConnReason, "unknown reason");
  b = req;
  Put16(b, kC + 12, 0);
  expect(b, ParseError::kBadConnParameters, "no paths");
  b = req;
  Put16(b, kC + 14, kMinConnPayloadBytes - 1);
  expect(b, ParseError::kBadConnParameters, "tiny payload");
  b = req;
  b[kC + 11] = 1;
  expect(b, ParseError::kReservedNotZero, "reserved byte");
  b = req;
  Put16(b, kC + 22, 1);
  expect(b, ParseError::kReservedNotZero, "reserved word");
  b = req;
  Put16(b, kC + 20, 0);
  expect(b, ParseError::kBadConnParameters, "no receive port");
  b = req;
  Put16(b, 8, 1);
  expect(b, ParseError::kReservedNotZero, "path id");
  // Unknown capability bits are ignored, so later versions can add some.
  b = req;
  Put32(b, kC + 16, 0x80000000u);
  expect(b, ParseError::kOk, "capability bit");
  // rate_hint: only in a REQ or ACCEPT with the RATE_HINT bit (reserved to
  // a receiver without it).
  b = req;
  ASSERT_NE(Sample("v4_conn_req").Get().conn.capabilities & caps::kRateHint, 0u);
  Put32(b, kC + 44, 1);
  expect(b, ParseError::kOk, "REQ with a rate hint");
  Put32(b, kC + 16, 0);
  expect(b, ParseError::kReservedNotZero, "a rate hint without the RATE_HINT bit");
  for (const char* name : {"v4_conn_retry", "v4_conn_reject", "v4_conn_close"}) {
    b = Encode(Sample(name).Get());
    Put32(b, kC + 16, caps::kRateHint);
    Put32(b, kC + 44, 1);
    expect(b, ParseError::kReservedNotZero, (std::string(name) + " with a rate hint").c_str());
  }
  b = req;
  Put32(b, kC + 40, 0);
  expect(b, ParseError::kBadConnParameters, "REQ with stream_window 0");
  b = Encode(Sample("v4_conn_accept").Get());
  Put32(b, kC + 40, 0);
  expect(b, ParseError::kBadConnParameters, "ACCEPT with stream_window 0");
}

constexpr size_t kIncarnationOff = kC + 24, kCookieOff = kC + 32, kStreamWindowOff = kC + 40;

TEST(Reject, ConnectionIncarnationCookieAndWindow) {
  auto expect = [](std::vector<uint8_t> b, ParseError e, const std::string& what) {
    Reseal(b);
    EXPECT_EQ(Parse(b), e) << what;
  };
  const char* kAll[] = {"v4_conn_req",    "v4_conn_req_cookie", "v4_conn_retry",
                        "v4_conn_accept", "v4_conn_reject",     "v4_conn_close"};
  for (const char* name : kAll) {
    const auto good = Encode(Sample(name).Get());
    auto b = good;
    Put64(b, kIncarnationOff, 0);
    expect(b, ParseError::kBadConnParameters, std::string(name) + " with incarnation 0");
    b = good;
    Put32(b, kC + 16, 0);
    Put32(b, kC + 44, 0x100);
    expect(b, ParseError::kReservedNotZero, std::string(name) + " rate_hint without its bit");
  }
  // The cookie: anything in a REQ (0 on a first try), non-zero in a RETRY,
  // reserved everywhere else.
  for (uint64_t cookie : {0ull, 1ull, ~0ull}) {
    auto b = Encode(Sample("v4_conn_req").Get());
    Put64(b, kCookieOff, cookie);
    expect(b, ParseError::kOk, "REQ cookie");
  }
  for (const char* name : {"v4_conn_accept", "v4_conn_reject", "v4_conn_close"}) {
    auto b = Encode(Sample(name).Get());
    Put64(b, kCookieOff, 0x0123456789abcdefull);
    expect(b, ParseError::kReservedNotZero, std::string(name) + " with a cookie");
  }
  const auto retry = Encode(Sample("v4_conn_retry").Get());
  auto b = retry;
  Put64(b, kCookieOff, 0);
  expect(b, ParseError::kBadConnParameters, "RETRY without a cookie");
  // stream_window >= 1 only where the sender opens the connection.
  for (const char* name : {"v4_conn_retry", "v4_conn_reject", "v4_conn_close"}) {
    b = Encode(Sample(name).Get());
    Put32(b, kStreamWindowOff, 0);
    expect(b, ParseError::kOk, std::string(name) + " with stream_window 0");
  }
}

TEST(Reject, PlaneLists) {
  auto expect = [](std::vector<uint8_t> b, ParseError e, const std::string& what) {
    Reseal(b);
    EXPECT_EQ(Parse(b), e) << what;
  };
  const auto planes = Encode(Sample("v4_conn_accept_planes").Get());
  auto b = planes;
  Put32(b, kC + 16, 0);
  expect(b, ParseError::kBadConnParameters, "a plane list without the PLANES bit");
  b = Encode(Sample("v4_conn_req").Get());
  Put32(b, kC + 16, caps::kPlanes);
  expect(b, ParseError::kBadConnParameters, "the PLANES bit without a list");
  b = planes;
  GrowRegion(b, 4);
  EXPECT_EQ(Parse(b), ParseError::kBadConnParameters) << "a list of 20 bytes";
  b = Encode(Sample("v4_conn_req").Get());
  Put32(b, kC + 16, caps::kPlanes);
  GrowRegion(b, kMaxPlanes * kPlaneAddrBytes, 1);
  EXPECT_EQ(Parse(b), ParseError::kBadConnParameters) << "more than kMaxPlanes planes";
  b = planes;
  for (size_t i = 0; i < kPlaneAddrBytes; i++) b[kC + kConnBytes + i] = 0;
  expect(b, ParseError::kBadConnParameters, "an unspecified plane address");
  b = planes;
  b[kC + kConnBytes + 10] = 0;  // no longer IPv4-mapped: an IPv6 address
  Packet out;
  Reseal(b);
  ASSERT_EQ(Parse(b, &out), ParseError::kOk);
  EXPECT_TRUE(ConnPlane(out.conn, 0).v6);
  for (const char* name : {"v4_conn_retry", "v4_conn_reject", "v4_conn_close"}) {
    b = Encode(Sample(name).Get());
    GrowRegion(b, kPlaneAddrBytes, 1);
    EXPECT_EQ(Parse(b), ParseError::kPayloadNotAllowed) << name << " with a plane list";
  }
  // The encoder holds to the same rules.
  Packet p = Sample("v4_conn_close").Get();
  p.conn.num_planes = 1;
  SetConnPlane(&p.conn, 0, IpAddr::V4(10, 0, 0, 1));
  std::vector<uint8_t> buf(256);
  EXPECT_FALSE(EncodeDatagram(p, buf).ok());
}

TEST(Reject, ConnRetryFields) {
  const auto retry = Encode(Sample("v4_conn_retry").Get());
  auto expect = [](std::vector<uint8_t> b, ParseError e, const char* what) {
    Reseal(b);
    EXPECT_EQ(Parse(b), e) << what;
  };
  auto b = retry;
  Put32(b, 4, 0);
  expect(b, ParseError::kZeroConnId, "RETRY to connection id 0");
  b = retry;
  Put32(b, kC, 0);
  expect(b, ParseError::kZeroConnId, "RETRY with src_conn_id 0");
  b = retry;
  b[kC + 10] = static_cast<uint8_t>(ConnReason::kNoResources);
  expect(b, ParseError::kBadConnReason, "RETRY with a reason");
  b = retry;
  b[kC + 8] = 2;
  b[kC + 9] = 1;
  expect(b, ParseError::kBadVersionRange, "RETRY min > max");
  b = retry;
  GrowRegion(b, 4);
  EXPECT_EQ(Parse(b), ParseError::kPayloadNotAllowed);
  b = retry;
  Put16(b, 8, 1);
  expect(b, ParseError::kReservedNotZero, "RETRY path id");
  // num_paths, max_payload and udp_port are informational.
  b = retry;
  Put16(b, kC + 12, 0);
  Put16(b, kC + 14, 0);
  Put16(b, kC + 20, 0);
  expect(b, ParseError::kOk, "RETRY with zero parameters");
}

// ---- Encoder refuses what the parser would reject -------------------------

TEST(Encode, RefusesInvalidPacketsWithTheRuleName) {
  std::vector<uint8_t> buf(256);
  Packet p;
  p.type = PacketType::kSend;
  p.dst_conn_id = 1;
  auto r = EncodeDatagram(p, buf);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("zero_stream"), std::string_view::npos)
      << r.status().message();

  p.data.stream_id = 1;
  r = EncodeDatagram(p, buf);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("zero_stream"), std::string_view::npos)
      << "no src_stream: " << r.status().message();

  p.data.src_stream = 2;
  p.data.rkey = 5;  // a SEND does not carry an rkey: it would be lost
  r = EncodeDatagram(p, buf);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("reserved_not_zero"), std::string_view::npos);

  p.data.rkey = 0;
  p.data.msg_len = kMaxMessageBytes + 1;
  r = EncodeDatagram(p, buf);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("message_too_long"), std::string_view::npos);
  p.data.msg_len = 0;

  p.type = static_cast<PacketType>(0x44);
  EXPECT_FALSE(EncodeDatagram(p, buf).ok());

  p.type = PacketType::kSend;
  EXPECT_TRUE(EncodeDatagram(p, buf).ok());
  r = EncodeDatagram(p, std::span<uint8_t>(buf.data(), EncodedBytes(p) - 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);

  const SamplePacket n_sample = Sample("v4_nak_resend");
  Packet n = n_sample.Get();
  n.nak.first_chunk = 0xffffffffu;
  r = EncodeDatagram(n, buf);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad_resend_range"), std::string_view::npos);

  const SamplePacket c_sample = Sample("v4_conn_accept");
  Packet c = c_sample.Get();
  c.conn.incarnation = 0;
  r = EncodeDatagram(c, buf);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad_conn_parameters"), std::string_view::npos);
}

TEST(Names, EveryReasonHasADistinctName) {
  std::set<std::string> names;
  for (int e = 0; e < static_cast<int>(ParseError::kCount); e++) {
    const std::string n = ParseErrorName(static_cast<ParseError>(e));
    EXPECT_NE(n, "unknown");
    EXPECT_TRUE(names.insert(n).second) << n;
  }
  EXPECT_STREQ(PacketTypeName(0x10), "ACK");
  EXPECT_STREQ(PacketTypeName(0x34), "CONN_RETRY");
  EXPECT_STREQ(PacketTypeName(0x7f), "UNKNOWN");
  EXPECT_STREQ(NakCodeName(2), "REMOTE_ACCESS");
  EXPECT_STREQ(NakCodeName(5), "RESEND");
  EXPECT_STREQ(NakCodeName(6), "UNKNOWN");
  EXPECT_STREQ(ParseErrorName(ParseError::kMessageTooLong), "message_too_long");
  EXPECT_STREQ(ParseErrorName(ParseError::kBadResendRange), "bad_resend_range");
  // Every packet type and NAK code has a name.
  for (int t = 0; t < 256; t++) {
    if (ClassOf(static_cast<uint8_t>(t)) != PacketClass::kInvalid) {
      EXPECT_STRNE(PacketTypeName(static_cast<uint8_t>(t)), "UNKNOWN") << t;
    }
  }
  for (uint8_t c = 1; c <= kNakCodeMax; c++) EXPECT_STRNE(NakCodeName(c), "UNKNOWN") << int(c);
}

}  // namespace
}  // namespace metaroce::wire
