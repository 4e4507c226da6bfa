/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "mr_wire_sample.h"

#include "mr_config.h"

namespace metaroce::wire {
namespace {

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// Two hosts; host A is the requester. Frames from B swap addresses and ports.
struct Hosts {
  FrameInfo a_to_b;
  FrameInfo b_to_a;
  uint32_t conn_at_a;  // A's id for the connection (B puts it in dst_conn_id)
  uint32_t conn_at_b;
};

// The engines' incarnations, B's handshake cookie and the QPs (streams) of the
// conversation: A's QP 0x201 talks to B's QP 0x101.
constexpr uint64_t kIncarnationA = 0x1a2b3c4d5e6f7081;
constexpr uint64_t kIncarnationB = 0x8f7e6d5c4b3a2918;
constexpr uint64_t kCookie = 0xc00c1e5a17ed0042;
constexpr uint32_t kStreamA = 0x201;
constexpr uint32_t kStreamB = 0x101;

Hosts MakeHosts(bool v6) {
  Hosts h{};
  FrameInfo f;
  f.eth_src.bytes = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0a};
  f.eth_dst.bytes = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0b};
  if (v6) {
    f.src = IpAddr::V6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a});
    f.dst = IpAddr::V6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b});
    f.flow_label = 0x12345;
  } else {
    f.src = IpAddr::V4(192, 0, 2, 10);
    f.dst = IpAddr::V4(192, 0, 2, 11);
    f.ip_id = 0x1234;
  }
  f.dscp = config::kDscp;
  f.ecn = Ecn::kEct0;
  f.src_port = config::kPathSourcePortMin;
  f.dst_port = kDefaultUdpPort;
  h.a_to_b = f;
  FrameInfo r = f;
  std::swap(r.eth_src, r.eth_dst);
  std::swap(r.src, r.dst);
  r.src_port = config::kPathSourcePortMin + 7;
  h.b_to_a = r;
  h.conn_at_a = v6 ? 0x00060001 : 0x00040001;
  h.conn_at_b = v6 ? 0x00060002 : 0x00040002;
  return h;
}

void AddConversation(bool v6, std::vector<SamplePacket>* out) {
  const Hosts h = MakeHosts(v6);
  const std::string pre = v6 ? "v6_" : "v4_";
  auto add = [&](const char* name, bool from_a, uint16_t path, Packet p,
                 std::vector<uint8_t> payload = {}) {
    SamplePacket s;
    s.name = pre + name;
    s.frame = from_a ? h.a_to_b : h.b_to_a;
    s.frame.src_port = static_cast<uint16_t>(s.frame.src_port + path);
    p.path_id = path;
    p.dst_conn_id = from_a ? h.conn_at_b : h.conn_at_a;
    s.packet = p;
    s.payload = std::move(payload);
    out->push_back(std::move(s));
  };
  // Requests go from A's stream to B's; responses (READ_RESP, ATOMIC_RESP) back.
  auto data = [](PacketType t, uint32_t psn, uint32_t stream, uint32_t msn, uint32_t len,
                 uint32_t off) {
    Packet p;
    p.type = t;
    p.data.psn = psn;
    p.data.una_psn = psn - psn % 4;  // a few packets still unacknowledged
    p.data.tx_ts_ns = 1000000 + psn * 250;
    p.data.stream_id = stream;
    p.data.msn = msn;
    p.data.msg_len = len;
    p.data.msg_offset = off;
    p.data.src_stream = stream == kStreamB ? kStreamA : kStreamB;
    return p;
  };

  // A's first CONN_REQ carries no cookie; B answers CONN_RETRY with one and
  // keeps no state; A repeats the request with the cookie; B accepts.
  Packet req;
  req.type = PacketType::kConnReq;
  req.conn = {.src_conn_id = h.conn_at_a,
              .nonce = 0x5eed1234,
              .min_version = kVersion,
              .max_version = kVersion,
              .num_paths = 8,
              .max_payload = 4096,
              .capabilities = caps::kRateHint,
              .udp_port = kDefaultUdpPort,
              .incarnation = kIncarnationA,
              .stream_window = config::kStreamWindowMsgs};
  add("conn_req", true, 0, req);
  // CONN_REQ goes out before A knows B's id.
  out->back().packet.dst_conn_id = 0;
  Packet retry;
  retry.type = PacketType::kConnRetry;
  retry.conn = {.src_conn_id = h.conn_at_b,
                .nonce = 0x5eed1234,
                .min_version = kVersion,
                .max_version = kVersion,
                .num_paths = 8,
                .max_payload = 4096,
                .capabilities = caps::kRateHint,
                .udp_port = kDefaultUdpPort,
                .incarnation = kIncarnationB,
                .cookie = kCookie,
                .stream_window = config::kStreamWindowMsgs};
  add("conn_retry", false, 0, retry);
  // B's RETRY said it reads a rate hint in openings: A's second request
  // carries its fair share for what B will send it.
  req.conn.cookie = kCookie;
  req.conn.rate_hint_mbps = 50'000;
  add("conn_req_cookie", true, 0, req);
  out->back().packet.dst_conn_id = 0;
  Packet acc = retry;
  acc.type = PacketType::kConnAccept;
  acc.conn.cookie = 0;
  // B's share for A's data: a new sender paced from its first packet.
  acc.conn.rate_hint_mbps = 12'250;
  add("conn_accept", false, 0, acc);
  // The same answer from B as a host of two planes: its second plane's address rides along.
  Packet acc2 = acc;
  acc2.conn.capabilities = caps::kPlanes | caps::kRateHint | caps::kIdle;
  acc2.conn.num_planes = 1;
  SetConnPlane(&acc2.conn, 0,
               v6 ? IpAddr::V6({0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b})
                  : IpAddr::V4(198, 51, 100, 11));
  add("conn_accept_planes", false, 0, acc2);

  Packet probe;
  probe.type = PacketType::kProbe;
  probe.probe = {1, 999000};
  add("probe", true, 3, probe, Pattern(64, 0));
  Packet reply;
  reply.type = PacketType::kProbeReply;
  reply.probe = {1, 999000};
  add("probe_reply", false, 3, reply);

  // A 6000-byte WRITE on stream 0x101 (B's QP), sprayed over paths 0 and 1.
  Packet w = data(PacketType::kWrite, 100, kStreamB, 0, 6000, 0);
  w.data.rkey = 0x0badcafe;
  w.data.va = 0x00007f0012340000;
  add("write_first", true, 0, w, Pattern(4096, 1));
  w.data.psn = 200;
  w.data.msg_offset = 4096;
  w.flags = flags::kAckReq | flags::kIdle;  // nothing queued behind it
  add("write_last", true, 1, w, Pattern(1904, 2));

  Packet wi = data(PacketType::kWriteImm, 101, kStreamB, 1, 64, 0);
  wi.flags = flags::kAckReq | flags::kSolicited;
  wi.data.rkey = 0x0badcafe;
  wi.data.va = 0x00007f0012341000;
  wi.data.recv_seq = 0;
  wi.data.imm = 0xdeadbeef;
  add("write_imm", true, 0, wi, Pattern(64, 3));

  Packet s = data(PacketType::kSend, 201, kStreamB, 2, 100, 0);
  s.data.recv_seq = 1;
  s.flags = flags::kRetransmit;
  add("send", true, 1, s, Pattern(100, 4));

  Packet si = data(PacketType::kSendImm, 102, kStreamB, 3, 0, 0);
  si.data.recv_seq = 2;
  si.data.imm = 0x01020304;
  si.flags = flags::kSolicited | flags::kAckReq;
  add("send_imm_empty", true, 0, si);

  Packet rr = data(PacketType::kReadReq, 202, kStreamB, 4, 8192, 0);
  rr.data.rkey = 0x11223344;
  rr.data.va = 0x0000100000002000;
  add("read_req", true, 1, rr);

  Packet resp = data(PacketType::kReadResp, 7000, kStreamA, 4, 8192, 4096);
  add("read_resp", false, 2, resp, Pattern(4096, 5));

  Packet fa = data(PacketType::kAtomicFetchAdd, 103, kStreamB, 5, 8, 0);
  fa.data.rkey = 0x55667788;
  fa.data.va = 0x0000100000003000;
  fa.data.operand0 = 5;
  add("atomic_fa", true, 0, fa);

  Packet cs = data(PacketType::kAtomicCompSwap, 203, kStreamB, 6, 8, 0);
  cs.data.rkey = 0x55667788;
  cs.data.va = 0x0000100000003008;
  cs.data.operand0 = 0x1111111111111111;
  cs.data.operand1 = 0x2222222222222222;
  add("atomic_cs", true, 1, cs);

  Packet ar = data(PacketType::kAtomicResp, 7001, kStreamA, 5, 8, 0);
  ar.data.orig = 0x8000000000000001;
  add("atomic_resp", false, 2, ar);

  // ACK for path 0 with a gap: PSNs 100..102 arrived, 103 lost, 104 arrived.
  Packet ack;
  ack.type = PacketType::kAck;
  ack.ack.cum_psn = 103;
  ack.ack.echo_ts_ns = 1000000 + 104 * 250;
  ack.ack.ack_delay_ns = 1500;
  ack.ack.rate_hint_mbps = 25000;
  ack.ack.rx_pkts = 4;
  ack.ack.ce_pkts = 1;
  ack.ack.ece = true;
  ack.ack.has_sack = true;
  ack.ack.sack[0] = 0x1;         // PSN 104
  ack.ack.sack[3] = 1ull << 63;  // PSN 103 + 256, the far edge of the bitmap
  ack.ack.num_stream_acks = 2;
  ack.ack.stream_acks[0] = {kStreamA, 2};
  ack.ack.stream_acks[1] = {0x202, 17};
  add("ack_sack", false, 0, ack);

  Packet ack2;
  ack2.type = PacketType::kAck;
  ack2.ack.cum_psn = 204;
  ack2.ack.echo_ts_ns = 1000000 + 203 * 250;
  ack2.ack.rx_pkts = 4;
  add("ack_plain", false, 1, ack2);

  // B's share for A alone, pushed when more new senders came, on a path
  // that has received nothing yet: it echoes no timestamp.
  Packet push;
  push.type = PacketType::kAck;
  push.ack.ack_delay_ns = kAckNoEcho;
  push.ack.rate_hint_mbps = 12'250;
  add("ack_share_push", false, 2, push);

  // Message probe: every chunk of the WRITE was acknowledged on its path but no
  // stream ACK passed MSN 0, so A sends its last chunk again, flagged.
  Packet probe_w = w;
  probe_w.data.psn = 204;
  probe_w.data.una_psn = 204;
  probe_w.data.tx_ts_ns = 1000000 + 204 * 250;
  probe_w.flags = flags::kAckReq | flags::kRetransmit | flags::kMsgProbe;
  add("write_probe", true, 1, probe_w, Pattern(1904, 2));

  // B had dropped the WRITE's first chunk (4096 bytes) before placing it.
  Packet resend;
  resend.type = PacketType::kNak;
  resend.nak = {.stream_id = kStreamA,
                .msn = 0,
                .psn = 204,
                .code = NakCode::kResend,
                .detail = static_cast<uint8_t>(NakDetail::kNotPlaced),
                .first_chunk = 0,
                .num_chunks = 1};
  add("nak_resend", false, 1, resend);

  Packet nak;
  nak.type = PacketType::kNak;
  nak.nak = {kStreamA, 7, 204, NakCode::kRemoteAccess, static_cast<uint8_t>(NakDetail::kBadRkey),
             0};
  add("nak_access", false, 1, nak);
  Packet rnr = nak;
  rnr.nak = {kStreamA, 3, 102, NakCode::kReceiverNotReady, 0, 50};
  add("nak_rnr", false, 0, rnr);

  // In REJECT and CLOSE the parameters are informational and the cookie is 0.
  Packet rej;
  rej.type = PacketType::kConnReject;
  rej.conn = {.src_conn_id = h.conn_at_b,
              .nonce = 0x5eed1234,
              .min_version = kVersion,
              .max_version = kVersion,
              .reason = ConnReason::kNoResources,
              .incarnation = kIncarnationB};
  add("conn_reject", false, 0, rej);
  Packet close;
  close.type = PacketType::kConnClose;
  close.conn = {.src_conn_id = h.conn_at_a,
                .nonce = 0x5eed1234,
                .min_version = kVersion,
                .max_version = kVersion,
                .reason = ConnReason::kShutdown,
                .incarnation = kIncarnationA};
  add("conn_close", true, 0, close);
}

}  // namespace

std::vector<SamplePacket> SampleConversation() {
  std::vector<SamplePacket> out;
  AddConversation(false, &out);
  AddConversation(true, &out);
  // One VLAN-tagged, CE-marked frame so the dissector and parser see both.
  SamplePacket tagged;
  for (const SamplePacket& s : out) {
    if (s.name == "v6_write_first") tagged = s;
  }
  tagged.name = "v6_write_first_vlan_ce";
  tagged.frame.has_vlan = true;
  tagged.frame.vlan_tci = 0x6064;  // PCP 3, VLAN 100
  tagged.frame.ecn = Ecn::kCe;
  out.push_back(std::move(tagged));
  return out;
}

}  // namespace metaroce::wire
