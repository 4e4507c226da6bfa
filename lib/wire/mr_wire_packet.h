/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The decoded form of one MetaRoCE packet, in host byte order. Parsing fills it
 * from wire bytes; encoding writes it back. Which body member is meaningful
 * follows from the packet type (ClassOf()). Parsing sets every field of that
 * body and leaves the others as they were (zero in a new Packet), so one
 * Packet can be parsed into again and again.
 */

#ifndef METAROCE_MR_WIRE_PACKET_H
#define METAROCE_MR_WIRE_PACKET_H

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

#include "mr_wire_defs.h"
#include "mr_wire_frame.h"

namespace metaroce::wire {

/** Body of every data packet (requests, SEND/WRITE data and responses). */
struct DataBody {
  friend bool operator==(const DataBody&, const DataBody&) = default;
  uint32_t psn = 0;         ///< path sequence number on common.path_id
  uint32_t una_psn = 0;     ///< oldest PSN on this path the sender still waits for; <= psn
  uint32_t tx_ts_ns = 0;    ///< sender clock at transmission, ns modulo 2^32
  uint32_t stream_id = 0;   ///< destination stream (the receiver's QP number); never 0
  uint32_t msn = 0;         ///< message sequence number within the stream
  uint32_t msg_len = 0;     ///< total message length in bytes
  uint32_t msg_offset = 0;  ///< offset of this packet's payload within the message
  uint32_t src_stream = 0;  ///< the sender's stream (its QP number); never 0
  uint32_t rkey = 0;        ///< HasRdmaTarget() types
  uint64_t va = 0;          ///< HasRdmaTarget() types: remote address of message byte 0
  uint32_t imm = 0;         ///< HasImmediate() types (host order of the 32-bit value)
  uint32_t recv_seq = 0;    ///< ConsumesReceive() types: index of the receive it consumes
  uint64_t operand0 = 0;    ///< ATOMIC: add value (fetch-add) or compare value (comp-swap)
  uint64_t operand1 = 0;    ///< ATOMIC comp-swap: swap value; fetch-add: 0
  uint64_t orig = 0;        ///< ATOMIC response: the value before the operation
};

/** "Every message of this stream below msn_next is placed and accepted." */
struct StreamAck {
  uint32_t stream_id = 0;  ///< the requester's stream; never 0
  uint32_t msn_next = 0;
  friend bool operator==(const StreamAck&, const StreamAck&) = default;
};

/** Per-path acknowledgement. */
struct AckBody {
  friend bool operator==(const AckBody&, const AckBody&) = default;
  uint32_t cum_psn = 0;         ///< next PSN expected: every PSN before it was received
  uint32_t echo_ts_ns = 0;      ///< tx_ts_ns of the packet that triggered this ACK
  uint32_t ack_delay_ns = 0;    ///< time the receiver held that packet before acking
  uint32_t rate_hint_mbps = 0;  ///< receiver's fair share for this sender; 0 = no limit
  uint32_t rx_pkts = 0;         ///< data packets received on this path, cumulative mod 2^32
  uint32_t ce_pkts = 0;         ///< of those, CE-marked, cumulative mod 2^32
  bool has_sack = false;        ///< flags::kSack (WireFlags() sets the bit from this)
  bool ece = false;             ///< flags::kEce (WireFlags() sets the bit from this)
  /** Bit i (word i / 64, bit i % 64) set: PSN cum_psn + 1 + i was received. */
  std::array<uint64_t, kSackWords> sack{};
  uint8_t num_stream_acks = 0;
  std::array<StreamAck, kMaxStreamAcks> stream_acks{};
};

/** Message-level negative acknowledgement. */
struct NakBody {
  friend bool operator==(const NakBody&, const NakBody&) = default;
  uint32_t stream_id = 0;  ///< the requester's stream; never 0
  uint32_t msn = 0;        ///< message that failed
  uint32_t psn = 0;        ///< PSN (on common.path_id) of the packet that triggered it
  NakCode code = NakCode::kInvalidRequest;
  uint8_t detail = 0;           ///< NakDetail, informational
  uint16_t rnr_delay_10us = 0;  ///< kReceiverNotReady: wait at least this many 10 us units
  uint32_t first_chunk = 0;     ///< kResend: first chunk not placed; otherwise 0
  uint32_t num_chunks = 0;      ///< kResend: chunks from first_chunk not placed (>= 1); otherwise 0
};

/** PROBE / PROBE_REPLY body. */
struct ProbeBody {
  friend bool operator==(const ProbeBody&, const ProbeBody&) = default;
  uint32_t probe_seq = 0;
  uint32_t ts_ns = 0;  ///< PROBE: sender clock; PROBE_REPLY: echo of the probe's ts_ns
};

/** Connection management body (CONN_REQ / CONN_ACCEPT / CONN_REJECT / CONN_CLOSE / CONN_RETRY). */
struct ConnBody {
  /** Every field, and the first num_planes plane addresses (the rest are not on the wire). */
  friend bool operator==(const ConnBody& a, const ConnBody& b);
  uint32_t src_conn_id = 0;  ///< the sender's own id for this connection; never 0
  uint32_t nonce = 0;        ///< request's random value; ACCEPT/REJECT/CLOSE echo it
  uint8_t min_version = 0;   ///< lowest wire version the sender speaks
  uint8_t max_version = 0;   ///< highest wire version the sender speaks
  ConnReason reason = ConnReason::kNone;
  uint16_t num_paths = 0;      ///< paths the sender will spray over (REQ/ACCEPT)
  uint16_t max_payload = 0;    ///< largest payload the sender accepts per packet
  uint32_t capabilities = 0;   ///< optional features (caps::*); unknown bits ignored
  uint16_t udp_port = 0;       ///< UDP port the sender receives MetaRoCE on (REQ/ACCEPT: non-zero)
  uint64_t incarnation = 0;    ///< the sending engine's random instance id; never 0
  uint64_t cookie = 0;         ///< RETRY: the cookie; REQ: the cookie echoed (0 on a first try)
  uint32_t stream_window = 0;  ///< REQ/ACCEPT: messages per stream the sender's receiver tracks
  /**
   * REQ/ACCEPT with caps::kRateHint: the sender's fair share for the data the
   * peer will send it, Mbit/s, as an ACK's rate_hint (0: no limit), so that a
   * new sender is paced from its first packet. 0 in every other packet.
   */
  uint32_t rate_hint_mbps = 0;
  /**
   * REQ/ACCEPT with caps::kPlanes: the addresses of the sender's planes
   * 1..num_planes (plane 0 is the source address), in the extension.
   */
  uint8_t num_planes = 0;
  /**
   * Those addresses as the wire has them (IPv4 ones IPv4-mapped): read and
   * write them with ConnPlane() / SetConnPlane(). Entries past num_planes
   * are left uninitialized, so that the planes cost nothing to every other
   * Packet made (a zeroed array of addresses cost ~130 instructions per data
   * packet, in the Packets each one makes on its way).
   */
  std::array<std::array<uint8_t, kPlaneAddrBytes>, kMaxPlanes - 1> plane_bytes;
};

/** Plane @p i + 1's address in @p c (i < c.num_planes). */
IpAddr ConnPlane(const ConnBody& c, size_t i);
/** Sets plane @p i + 1's address in @p c (i < kMaxPlanes - 1; num_planes is the caller's). */
void SetConnPlane(ConnBody* c, size_t i, const IpAddr& a);

/** One decoded MetaRoCE packet. */
struct Packet {
  PacketType type = PacketType::kWrite;
  uint16_t flags = 0;
  uint32_t dst_conn_id = 0;  ///< receiver's connection id; 0 only in CONN_REQ
  uint16_t path_id = 0;
  DataBody data;
  AckBody ack;
  NakBody nak;
  ProbeBody probe;
  ConnBody conn;
  /** Data payload or PROBE padding. Parsing points it into the parsed buffer. */
  std::span<const uint8_t> payload;
};

/**
 * The flags field as encoded: for an ACK, p.flags plus kSack / kEce when
 * ack.has_sack / ack.ece are set (parsing sets both the bits and the booleans).
 */
inline uint16_t WireFlags(const Packet& p) {
  uint16_t f = p.flags;
  if (p.type == PacketType::kAck) {
    if (p.ack.has_sack) f |= flags::kSack;
    if (p.ack.ece) f |= flags::kEce;
  }
  return f;
}

/**
 * True when @p a and @p b have the same type, flags, ids, the same values in
 * every field their type carries and equal payload bytes.
 */
bool Equivalent(const Packet& a, const Packet& b);

/** Offset of the payload from the start of the MetaRoCE header (datagram). */
constexpr size_t PayloadOffset(PacketType t) { return kCommonHeaderBytes + TypeHeaderBytes(t); }

/** Bytes following the type header (the payload_len field) for this packet. Inline, as
 * EncodedBytes(): the encoder and the field checks ask on every packet. */
inline size_t PayloadFieldBytes(const Packet& p) {
  if (p.type == PacketType::kAck) {
    return (p.ack.has_sack ? kSackBytes : 0) +
           std::min<size_t>(p.ack.num_stream_acks, kMaxStreamAcks) * kStreamAckBytes;
  }
  if (ClassOf(p.type) == PacketClass::kConn) {
    return std::min<size_t>(p.conn.num_planes, kMaxPlanes - 1) * kPlaneAddrBytes + p.payload.size();
  }
  return p.payload.size();
}

/** Bytes after the UDP header that Encode() writes for this packet (headers, payload, CRC). */
inline size_t EncodedBytes(const Packet& p) {
  return kCommonHeaderBytes + TypeHeaderBytes(p.type) + PayloadFieldBytes(p) + kCrcBytes;
}

/** Name of a packet type as in doc/spec.md ("WRITE", "ACK", ...); "UNKNOWN" otherwise. */
const char* PacketTypeName(uint8_t type);

/** Name of a NAK code ("RNR", "REMOTE_ACCESS", ...); "UNKNOWN" otherwise. */
const char* NakCodeName(uint8_t code);

}  // namespace metaroce::wire

#endif  // METAROCE_MR_WIRE_PACKET_H
