/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// MetaRoCE header parse and encode (doc/spec.md sections 3 and 4).

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "mr_crc32c.h"
#include "mr_wire_codec.h"
#include "mr_wire_layout_private.h"
#include "mr_wire_psn.h"

namespace metaroce::wire {
namespace {

using namespace layout;

bool IsZero(const std::array<uint64_t, kSackWords>& w) {
  for (uint64_t x : w) {
    if (x != 0) return false;
  }
  return true;
}

// Which checks apply: a parsed packet has, by construction, zero in every
// field its type does not carry and ACK booleans that match its flags.
enum class Origin : bool { kCaller, kWire };

template <Origin kFrom>
ParseError CheckData(const Packet& p) {
  const DataBody& d = p.data;
  const size_t payload = p.payload.size();
  if (d.stream_id == 0 || d.src_stream == 0) return ParseError::kZeroStream;
  if (SeqLt(d.psn, d.una_psn)) return ParseError::kUnaAfterPsn;
  if (d.msg_len > kMaxMessageBytes) return ParseError::kMessageTooLong;
  // Fields this type does not carry must be zero, or encoding would drop them.
  if (kFrom == Origin::kCaller &&
      ((!HasRdmaTarget(p.type) && (d.rkey != 0 || d.va != 0)) ||
       (!HasImmediate(p.type) && d.imm != 0) || (!ConsumesReceive(p.type) && d.recv_seq != 0) ||
       (!IsAtomicRequest(p.type) && (d.operand0 | d.operand1) != 0) ||
       (p.type != PacketType::kAtomicResp && d.orig != 0))) {
    return ParseError::kReservedNotZero;
  }
  if (CarriesPayload(p.type)) {
    if (payload == 0 && d.msg_len != 0) return ParseError::kEmptyPayload;
    if (d.msg_offset > d.msg_len || payload > d.msg_len - d.msg_offset) {
      return ParseError::kPayloadBeyondMessage;
    }
    return ParseError::kOk;
  }
  if (payload != 0) return ParseError::kPayloadNotAllowed;
  if (d.msg_offset != 0) return ParseError::kReservedNotZero;
  if (IsAtomicRequest(p.type) || p.type == PacketType::kAtomicResp) {
    if (d.msg_len != 8) return ParseError::kBadAtomicLength;
    if (p.type == PacketType::kAtomicFetchAdd && d.operand1 != 0) {
      return ParseError::kBadAtomicOperand;
    }
  }
  return ParseError::kOk;
}

template <Origin kFrom>
ParseError CheckAck(const Packet& p) {
  const AckBody& a = p.ack;
  if (!p.payload.empty()) return ParseError::kPayloadNotAllowed;
  // The flag bits and the body booleans say the same thing; a packet whose
  // flags claim a bitmap the body does not have is inconsistent.
  if (kFrom == Origin::kCaller && (((p.flags & flags::kSack) != 0 && !a.has_sack) ||
                                   ((p.flags & flags::kEce) != 0 && !a.ece))) {
    return ParseError::kBadFlags;
  }
  if (a.num_stream_acks > kMaxStreamAcks) return ParseError::kTooManyStreamAcks;
  if (a.has_sack && IsZero(a.sack)) return ParseError::kEmptySack;
  if (kFrom == Origin::kCaller && !a.has_sack && !IsZero(a.sack)) {
    return ParseError::kReservedNotZero;
  }
  for (size_t i = 0; i < a.num_stream_acks; i++) {
    if (a.stream_acks[i].stream_id == 0) return ParseError::kZeroStreamAck;
  }
  return ParseError::kOk;
}

ParseError CheckNak(const Packet& p) {
  const NakBody& n = p.nak;
  const auto code = static_cast<uint8_t>(n.code);
  if (code == 0 || code > kNakCodeMax) return ParseError::kBadNakCode;
  if (n.stream_id == 0) return ParseError::kZeroStream;
  if (n.code != NakCode::kReceiverNotReady && n.rnr_delay_10us != 0) {
    return ParseError::kReservedNotZero;
  }
  if (n.code == NakCode::kResend) {
    // [first_chunk, first_chunk + num_chunks) must be a non-empty range within u32.
    if (n.num_chunks == 0 || n.first_chunk > UINT32_MAX - n.num_chunks) {
      return ParseError::kBadResendRange;
    }
  } else if (n.first_chunk != 0 || n.num_chunks != 0) {
    return ParseError::kReservedNotZero;
  }
  if (!p.payload.empty()) return ParseError::kPayloadNotAllowed;
  return ParseError::kOk;
}

bool IsOpening(PacketType t) { return t == PacketType::kConnReq || t == PacketType::kConnAccept; }

// An IPv4 plane address travels IPv4-mapped (::ffff:a.b.c.d), an IPv6 one as itself.
void StorePlane(const IpAddr& a, uint8_t* q) {
  std::array<uint8_t, kPlaneAddrBytes> b{};
  if (a.v6) {
    b = a.bytes;
  } else {
    b[10] = b[11] = 0xff;
    std::memcpy(&b[12], a.bytes.data(), 4);
  }
  std::memcpy(q, b.data(), b.size());
}

IpAddr LoadPlane(const uint8_t* q) {
  std::array<uint8_t, kPlaneAddrBytes> b;
  std::memcpy(b.data(), q, b.size());
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b.data(), kMapped, sizeof(kMapped)) == 0)
    return IpAddr::V4(b[12], b[13], b[14], b[15]);
  return IpAddr::V6(b);
}

}  // namespace

IpAddr ConnPlane(const ConnBody& c, size_t i) { return LoadPlane(c.plane_bytes[i].data()); }

void SetConnPlane(ConnBody* c, size_t i, const IpAddr& a) {
  StorePlane(a, c->plane_bytes[i].data());
}

bool operator==(const ConnBody& a, const ConnBody& b) {
  if (a.src_conn_id != b.src_conn_id || a.nonce != b.nonce || a.min_version != b.min_version ||
      a.max_version != b.max_version || a.reason != b.reason || a.num_paths != b.num_paths ||
      a.max_payload != b.max_payload || a.capabilities != b.capabilities ||
      a.udp_port != b.udp_port || a.incarnation != b.incarnation || a.cookie != b.cookie ||
      a.stream_window != b.stream_window || a.rate_hint_mbps != b.rate_hint_mbps ||
      a.num_planes != b.num_planes) {
    return false;
  }
  const size_t n = std::min<size_t>(a.num_planes, a.plane_bytes.size());
  return n == 0 ||
         std::memcmp(a.plane_bytes.data(), b.plane_bytes.data(), n * kPlaneAddrBytes) == 0;
}

namespace {

ParseError CheckConn(const Packet& p) {
  const ConnBody& c = p.conn;
  if (p.path_id != 0) return ParseError::kReservedNotZero;
  if (!p.payload.empty()) return ParseError::kPayloadNotAllowed;
  if (c.src_conn_id == 0) return ParseError::kZeroConnId;
  if (c.min_version > c.max_version) return ParseError::kBadVersionRange;
  if (c.incarnation == 0) return ParseError::kBadConnParameters;
  const auto reason = static_cast<uint8_t>(c.reason);
  const bool opening = IsOpening(p.type);
  if (c.num_planes > kMaxPlanes - 1) return ParseError::kBadConnParameters;
  if (c.num_planes != 0 && !opening) return ParseError::kPayloadNotAllowed;
  if (opening) {
    if (c.reason != ConnReason::kNone) return ParseError::kBadConnReason;
    if (c.num_paths == 0 || c.max_payload < kMinConnPayloadBytes || c.udp_port == 0 ||
        c.stream_window == 0) {
      return ParseError::kBadConnParameters;
    }
    // The plane list and its capability bit go together; no listed address is unspecified.
    if (((c.capabilities & caps::kPlanes) != 0) != (c.num_planes != 0)) {
      return ParseError::kBadConnParameters;
    }
    for (size_t i = 0; i < c.num_planes; i++) {
      if (ConnPlane(c, i).IsUnspecified()) return ParseError::kBadConnParameters;
    }
  } else if (p.type == PacketType::kConnRetry) {
    // num_paths, max_payload, udp_port and stream_window are informational.
    if (c.reason != ConnReason::kNone) return ParseError::kBadConnReason;
    if (c.cookie == 0) return ParseError::kBadConnParameters;
  } else if (reason > kConnReasonMax) {
    return ParseError::kBadConnReason;
  }
  // A hint only where the packet says it carries one (reserved elsewhere).
  if (c.rate_hint_mbps != 0 && (!opening || (c.capabilities & caps::kRateHint) == 0)) {
    return ParseError::kReservedNotZero;
  }
  // Only a RETRY hands out a cookie and only a REQ brings one back.
  if (p.type != PacketType::kConnReq && p.type != PacketType::kConnRetry && c.cookie != 0) {
    return ParseError::kReservedNotZero;
  }
  return ParseError::kOk;
}

// Writes the type header and the part of the payload region that belongs to
// the header (ACK extension). Returns the bytes written.
size_t EncodeTypeHeader(const Packet& p, uint8_t* out) {
  uint8_t* q = out;
  switch (ClassOf(p.type)) {
    case PacketClass::kData: {
      const DataBody& d = p.data;
      DataHdr h;
      h.psn.set(d.psn);
      h.una_psn.set(d.una_psn);
      h.tx_ts_ns.set(d.tx_ts_ns);
      h.stream_id.set(d.stream_id);
      h.msn.set(d.msn);
      h.msg_len.set(d.msg_len);
      h.msg_offset.set(d.msg_offset);
      h.src_stream.set(d.src_stream);
      Store(q, h);
      q += sizeof(h);
      if (HasRdmaTarget(p.type)) {
        RdmaTargetHdr t;
        t.rkey.set(d.rkey);
        t.va.set(d.va);
        Store(q, t);
        q += sizeof(t);
      }
      if (ConsumesReceive(p.type)) {
        Be32 rs;
        rs.set(d.recv_seq);
        Store(q, rs);
        q += sizeof(rs);
      }
      if (HasImmediate(p.type)) {
        Be32 imm;
        imm.set(d.imm);
        Store(q, imm);
        q += sizeof(imm);
      }
      if (IsAtomicRequest(p.type)) {
        AtomicOperandsHdr o;
        o.operand0.set(d.operand0);
        o.operand1.set(d.operand1);
        Store(q, o);
        q += sizeof(o);
      }
      if (p.type == PacketType::kAtomicResp) {
        Be64 orig;
        orig.set(d.orig);
        Store(q, orig);
        q += sizeof(orig);
      }
      break;
    }
    case PacketClass::kAck: {
      const AckBody& a = p.ack;
      AckHdr h{};
      h.cum_psn.set(a.cum_psn);
      h.echo_ts_ns.set(a.echo_ts_ns);
      h.ack_delay_ns.set(a.ack_delay_ns);
      h.rate_hint_mbps.set(a.rate_hint_mbps);
      h.rx_pkts.set(a.rx_pkts);
      h.ce_pkts.set(a.ce_pkts);
      h.num_stream_acks = a.num_stream_acks;
      Store(q, h);
      q += sizeof(h);
      if (a.has_sack) {
        for (uint64_t w : a.sack) {
          Be64 bw;
          bw.set(w);
          Store(q, bw);
          q += sizeof(bw);
        }
      }
      for (size_t i = 0; i < a.num_stream_acks; i++) {
        StreamAckHdr s;
        s.stream_id.set(a.stream_acks[i].stream_id);
        s.msn_next.set(a.stream_acks[i].msn_next);
        Store(q, s);
        q += sizeof(s);
      }
      break;
    }
    case PacketClass::kNak: {
      NakHdr h;
      h.stream_id.set(p.nak.stream_id);
      h.msn.set(p.nak.msn);
      h.psn.set(p.nak.psn);
      h.code = static_cast<uint8_t>(p.nak.code);
      h.detail = p.nak.detail;
      h.rnr_delay_10us.set(p.nak.rnr_delay_10us);
      h.first_chunk.set(p.nak.first_chunk);
      h.num_chunks.set(p.nak.num_chunks);
      Store(q, h);
      q += sizeof(h);
      break;
    }
    case PacketClass::kProbe: {
      ProbeHdr h;
      h.probe_seq.set(p.probe.probe_seq);
      h.ts_ns.set(p.probe.ts_ns);
      Store(q, h);
      q += sizeof(h);
      break;
    }
    case PacketClass::kConn: {
      const ConnBody& c = p.conn;
      ConnHdr h{};
      h.src_conn_id.set(c.src_conn_id);
      h.nonce.set(c.nonce);
      h.min_version = c.min_version;
      h.max_version = c.max_version;
      h.reason = static_cast<uint8_t>(c.reason);
      h.num_paths.set(c.num_paths);
      h.max_payload.set(c.max_payload);
      h.capabilities.set(c.capabilities);
      h.udp_port.set(c.udp_port);
      h.incarnation.set(c.incarnation);
      h.cookie.set(c.cookie);
      h.stream_window.set(c.stream_window);
      h.rate_hint.set(c.rate_hint_mbps);
      Store(q, h);
      q += sizeof(h);
      const size_t planes = std::min<size_t>(c.num_planes, c.plane_bytes.size());
      std::memcpy(q, c.plane_bytes.data(), planes * kPlaneAddrBytes);
      q += planes * kPlaneAddrBytes;
      break;
    }
    case PacketClass::kInvalid: break;
  }
  return static_cast<size_t>(q - out);
}

// Decodes the type header at @p in (length already checked) into @p out.
// Returns the bytes of the payload region that belong to the header.
ParseError DecodeTypeHeader(const uint8_t* in, size_t region, Packet* out) {
  const uint8_t* q = in;
  switch (ClassOf(out->type)) {
    case PacketClass::kData: {
      DataBody& d = out->data;
      d = DataBody{};
      const auto h = Load<DataHdr>(q);
      q += sizeof(h);
      d.psn = h.psn.get();
      d.una_psn = h.una_psn.get();
      d.tx_ts_ns = h.tx_ts_ns.get();
      d.stream_id = h.stream_id.get();
      d.msn = h.msn.get();
      d.msg_len = h.msg_len.get();
      d.msg_offset = h.msg_offset.get();
      d.src_stream = h.src_stream.get();
      if (HasRdmaTarget(out->type)) {
        const auto t = Load<RdmaTargetHdr>(q);
        q += sizeof(t);
        d.rkey = t.rkey.get();
        d.va = t.va.get();
      }
      if (ConsumesReceive(out->type)) {
        d.recv_seq = Load<Be32>(q).get();
        q += 4;
      }
      if (HasImmediate(out->type)) {
        d.imm = Load<Be32>(q).get();
        q += 4;
      }
      if (IsAtomicRequest(out->type)) {
        const auto o = Load<AtomicOperandsHdr>(q);
        d.operand0 = o.operand0.get();
        d.operand1 = o.operand1.get();
      }
      if (out->type == PacketType::kAtomicResp) d.orig = Load<Be64>(q).get();
      return ParseError::kOk;
    }
    case PacketClass::kAck: {
      AckBody& a = out->ack;
      const auto h = Load<AckHdr>(q);
      q += sizeof(h);
      a.cum_psn = h.cum_psn.get();
      a.echo_ts_ns = h.echo_ts_ns.get();
      a.ack_delay_ns = h.ack_delay_ns.get();
      a.rate_hint_mbps = h.rate_hint_mbps.get();
      a.rx_pkts = h.rx_pkts.get();
      a.ce_pkts = h.ce_pkts.get();
      a.has_sack = (out->flags & flags::kSack) != 0;
      a.ece = (out->flags & flags::kEce) != 0;
      a.num_stream_acks = h.num_stream_acks;
      if (h.reserved0 != 0 || h.reserved1.get() != 0) return ParseError::kReservedNotZero;
      if (a.num_stream_acks > kMaxStreamAcks) return ParseError::kTooManyStreamAcks;
      const size_t ext = (a.has_sack ? kSackBytes : 0) + a.num_stream_acks * kStreamAckBytes;
      if (ext != region) return ParseError::kBadSackLength;
      a.sack = {};
      if (a.has_sack) {
        for (auto& w : a.sack) {
          w = Load<Be64>(q).get();
          q += 8;
        }
      }
      for (size_t i = 0; i < a.num_stream_acks; i++) {
        const auto s = Load<StreamAckHdr>(q);
        q += sizeof(s);
        a.stream_acks[i] = {s.stream_id.get(), s.msn_next.get()};
      }
      for (size_t i = a.num_stream_acks; i < kMaxStreamAcks; i++) a.stream_acks[i] = {};
      out->payload = {};
      return ParseError::kOk;
    }
    case PacketClass::kNak: {
      const auto h = Load<NakHdr>(q);
      out->nak.stream_id = h.stream_id.get();
      out->nak.msn = h.msn.get();
      out->nak.psn = h.psn.get();
      out->nak.code = static_cast<NakCode>(h.code);
      out->nak.detail = h.detail;
      out->nak.rnr_delay_10us = h.rnr_delay_10us.get();
      out->nak.first_chunk = h.first_chunk.get();
      out->nak.num_chunks = h.num_chunks.get();
      return ParseError::kOk;
    }
    case PacketClass::kProbe: {
      const auto h = Load<ProbeHdr>(q);
      out->probe.probe_seq = h.probe_seq.get();
      out->probe.ts_ns = h.ts_ns.get();
      if (out->type == PacketType::kProbeReply && region != 0) {
        return ParseError::kPayloadNotAllowed;
      }
      return ParseError::kOk;
    }
    case PacketClass::kConn: {
      const auto h = Load<ConnHdr>(q);
      ConnBody& c = out->conn;
      c.src_conn_id = h.src_conn_id.get();
      c.nonce = h.nonce.get();
      c.min_version = h.min_version;
      c.max_version = h.max_version;
      c.reason = static_cast<ConnReason>(h.reason);
      c.num_paths = h.num_paths.get();
      c.max_payload = h.max_payload.get();
      c.capabilities = h.capabilities.get();
      c.udp_port = h.udp_port.get();
      c.incarnation = h.incarnation.get();
      c.cookie = h.cookie.get();
      c.stream_window = h.stream_window.get();
      c.rate_hint_mbps = h.rate_hint.get();
      if (h.reserved0 != 0 || h.reserved1.get() != 0) {
        return ParseError::kReservedNotZero;
      }
      // The extension: plane addresses (REQ/ACCEPT only; CheckConn has the rules).
      if (region % kPlaneAddrBytes != 0 || region > (kMaxPlanes - 1) * kPlaneAddrBytes) {
        return IsOpening(out->type) ? ParseError::kBadConnParameters
                                    : ParseError::kPayloadNotAllowed;
      }
      q += sizeof(h);
      c.num_planes = static_cast<uint8_t>(region / kPlaneAddrBytes);
      std::memcpy(c.plane_bytes.data(), q, region);
      out->payload = {};
      return ParseError::kOk;
    }
    case PacketClass::kInvalid: break;
  }
  return ParseError::kBadType;
}

}  // namespace

bool Equivalent(const Packet& a, const Packet& b) {
  if (a.type != b.type || WireFlags(a) != WireFlags(b) || a.dst_conn_id != b.dst_conn_id ||
      a.path_id != b.path_id) {
    return false;
  }
  if (a.payload.size() != b.payload.size() ||
      (!a.payload.empty() && std::memcmp(a.payload.data(), b.payload.data(), a.payload.size()))) {
    return false;
  }
  switch (ClassOf(a.type)) {
    case PacketClass::kData: return a.data == b.data;
    case PacketClass::kAck: {
      if (a.ack.num_stream_acks != b.ack.num_stream_acks) return false;
      AckBody x = a.ack, y = b.ack;
      // Entries past num_stream_acks are not on the wire.
      for (size_t i = std::min<size_t>(x.num_stream_acks, kMaxStreamAcks); i < kMaxStreamAcks;
           i++) {
        x.stream_acks[i] = y.stream_acks[i] = {};
      }
      return x == y;
    }
    case PacketClass::kNak: return a.nak == b.nak;
    case PacketClass::kProbe: return a.probe == b.probe;
    case PacketClass::kConn: return a.conn == b.conn;
    case PacketClass::kInvalid: break;
  }
  return false;
}

namespace {

// CheckFields() has two parts a parsed packet has not passed yet: the
// connection id and the body.
ParseError CheckConnId(const Packet& p) {
  if (p.type == PacketType::kConnReq) {
    return p.dst_conn_id != 0 ? ParseError::kReservedNotZero : ParseError::kOk;
  }
  return p.dst_conn_id == 0 ? ParseError::kZeroConnId : ParseError::kOk;
}

template <Origin kFrom>
ParseError CheckBody(PacketClass cls, const Packet& p) {
  switch (cls) {
    case PacketClass::kData: return CheckData<kFrom>(p);
    case PacketClass::kAck: return CheckAck<kFrom>(p);
    case PacketClass::kNak: return CheckNak(p);
    case PacketClass::kProbe:
      return (p.type == PacketType::kProbeReply && !p.payload.empty())
                 ? ParseError::kPayloadNotAllowed
                 : ParseError::kOk;
    case PacketClass::kConn: return CheckConn(p);
    case PacketClass::kInvalid: break;
  }
  return ParseError::kBadType;
}

}  // namespace

ParseError CheckFields(const Packet& p) {
  const PacketClass cls = ClassOf(p.type);
  if (cls == PacketClass::kInvalid) return ParseError::kBadType;
  if ((p.flags & ~AllowedFlags(p.type)) != 0) return ParseError::kBadFlags;
  if (const ParseError e = CheckConnId(p); e != ParseError::kOk) return e;
  if (PayloadFieldBytes(p) > kMaxPayloadBytes) return ParseError::kBadLength;
  return CheckBody<Origin::kCaller>(cls, p);
}

ParseError ParseDatagram(std::span<const uint8_t> in, const ParseOptions& opt, Packet* out) {
  if (in.size() < kCommonHeaderBytes) return ParseError::kTruncatedHeader;
  const auto h = Load<CommonHdr>(in.data());
  if (h.version != kVersion) return ParseError::kBadVersion;
  if (ClassOf(h.type) == PacketClass::kInvalid) return ParseError::kBadType;
  out->type = static_cast<PacketType>(h.type);
  out->flags = h.flags.get();
  if ((out->flags & ~AllowedFlags(out->type)) != 0) return ParseError::kBadFlags;
  const size_t type_bytes = TypeHeaderBytes(out->type);
  if (in.size() < kCommonHeaderBytes + type_bytes + kCrcBytes) return ParseError::kTruncatedHeader;
  const size_t region = h.payload_len.get();
  const size_t total = kCommonHeaderBytes + type_bytes + region + kCrcBytes;
  if (in.size() < total) return ParseError::kTruncatedPayload;
  if (in.size() > total) return ParseError::kBadLength;
  if (opt.verify_crc) {
    const uint32_t want = Load<Be32>(in.data() + total - kCrcBytes).get();
    if (Crc32c(in.data(), total - kCrcBytes) != want) return ParseError::kBadCrc;
  }
  out->dst_conn_id = h.dst_conn_id.get();
  out->path_id = h.path_id.get();
  const uint8_t* body = in.data() + kCommonHeaderBytes;
  out->payload = {body + type_bytes, region};
  const ParseError e = DecodeTypeHeader(body, region, out);
  if (e != ParseError::kOk) return e;
  // Type and flags were checked above; payload_len, 16 bits, cannot exceed kMaxPayloadBytes.
  static_assert(kMaxPayloadBytes == UINT16_MAX);
  if (const ParseError id = CheckConnId(*out); id != ParseError::kOk) return id;
  return CheckBody<Origin::kWire>(ClassOf(out->type), *out);
}

size_t EncodeTrusted(const Packet& p, std::span<uint8_t> out) {
  const size_t total = EncodedBytes(p);
  if (out.size() < total) return 0;
  uint8_t* q = out.data();
  CommonHdr h;
  h.version = kVersion;
  h.type = static_cast<uint8_t>(p.type);
  h.flags.set(WireFlags(p));
  h.dst_conn_id.set(p.dst_conn_id);
  h.path_id.set(p.path_id);
  h.payload_len.set(static_cast<uint16_t>(PayloadFieldBytes(p)));
  Store(q, h);
  q += sizeof(h);
  q += EncodeTypeHeader(p, q);
  // A caller may have gathered the payload straight into its place (see PayloadOffset()).
  if (p.type != PacketType::kAck && !p.payload.empty()) {
    if (p.payload.data() != q) std::memcpy(q, p.payload.data(), p.payload.size());
    q += p.payload.size();
  }
  Be32 crc;
  crc.set(Crc32c(out.data(), static_cast<size_t>(q - out.data())));
  Store(q, crc);
  return total;
}

absl::StatusOr<size_t> EncodeDatagram(const Packet& p, std::span<uint8_t> out,
                                      const EncodeOptions& opt) {
  const ParseError e = opt.trusted ? ParseError::kOk : CheckFields(p);
  if (e != ParseError::kOk) {
    return absl::InvalidArgumentError(absl::StrCat("cannot encode ",
                                                   PacketTypeName(static_cast<uint8_t>(p.type)),
                                                   " packet: ", ParseErrorName(e)));
  }
  const size_t n = EncodeTrusted(p, out);
  if (n == 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "buffer of ", out.size(), " bytes cannot hold a ", EncodedBytes(p), "-byte packet"));
  }
  return n;
}

}  // namespace metaroce::wire
