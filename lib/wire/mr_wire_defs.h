/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Wire format v1 constants: packet types, flags, codes and the byte sizes of
 * every header. doc/spec.md is the normative description; the static_asserts
 * in mr_wire_layout_private.h pin these sizes to the byte layouts.
 */

#ifndef METAROCE_MR_WIRE_DEFS_H
#define METAROCE_MR_WIRE_DEFS_H

#include <cstddef>
#include <cstdint>

namespace metaroce::wire {

/**
 * Version carried in byte 0 of every MetaRoCE header by this implementation.
 * Version 1 replaced version 0, which had no engine incarnation, handshake
 * cookie, source stream or message-level recovery (doc/spec.md section 6).
 */
inline constexpr uint8_t kVersion = 1;

/**
 * Longest message in bytes (verbs' max_msg_sz; what RoCE NICs offer). A data
 * packet with a longer msg_len is malformed, and longer work requests are
 * refused when posted.
 */
inline constexpr uint32_t kMaxMessageBytes = 1u << 31;

/** Default UDP destination port (RoCEv2 uses 4791; this is deliberately not it). */
inline constexpr uint16_t kDefaultUdpPort = 4792;

/** Packet types (byte 1 of the common header). Values not listed are invalid. */
enum class PacketType : uint8_t {
  kWrite = 0x01,           ///< RDMA WRITE data
  kWriteImm = 0x02,        ///< RDMA WRITE with immediate; consumes a receive
  kSend = 0x03,            ///< SEND data; consumes a receive
  kSendImm = 0x04,         ///< SEND with immediate; consumes a receive
  kReadReq = 0x05,         ///< RDMA READ request
  kReadResp = 0x06,        ///< RDMA READ response data
  kAtomicFetchAdd = 0x07,  ///< ATOMIC fetch-and-add request
  kAtomicCompSwap = 0x08,  ///< ATOMIC compare-and-swap request
  kAtomicResp = 0x09,      ///< ATOMIC response (original value)
  kAck = 0x10,             ///< per-path acknowledgement
  kNak = 0x11,             ///< message-level negative acknowledgement
  kProbe = 0x20,           ///< path probe
  kProbeReply = 0x21,      ///< path probe reply
  kConnReq = 0x30,         ///< connection request
  kConnAccept = 0x31,      ///< connection accepted
  kConnReject = 0x32,      ///< connection rejected
  kConnClose = 0x33,       ///< connection closed
  kConnRetry = 0x34,       ///< come back with this cookie (handshake return-routability check)
};

/** Broad class of a packet type; decides which body follows the common header. */
enum class PacketClass : uint8_t { kInvalid, kData, kAck, kNak, kProbe, kConn };

/** Class of a raw type byte; kInvalid for values that are not a PacketType. */
constexpr PacketClass ClassOf(uint8_t type) {
  switch (type) {
    case 0x01:
    case 0x02:
    case 0x03:
    case 0x04:
    case 0x05:
    case 0x06:
    case 0x07:
    case 0x08:
    case 0x09: return PacketClass::kData;
    case 0x10: return PacketClass::kAck;
    case 0x11: return PacketClass::kNak;
    case 0x20:
    case 0x21: return PacketClass::kProbe;
    case 0x30:
    case 0x31:
    case 0x32:
    case 0x33:
    case 0x34: return PacketClass::kConn;
    default: return PacketClass::kInvalid;
  }
}

constexpr PacketClass ClassOf(PacketType type) { return ClassOf(static_cast<uint8_t>(type)); }

/** True for data types whose message consumes a posted receive at the target. */
constexpr bool ConsumesReceive(PacketType t) {
  return t == PacketType::kSend || t == PacketType::kSendImm || t == PacketType::kWriteImm;
}

/** True for data types that carry immediate data. */
constexpr bool HasImmediate(PacketType t) {
  return t == PacketType::kSendImm || t == PacketType::kWriteImm;
}

/** True for data types that carry an RDMA target (rkey + virtual address). */
constexpr bool HasRdmaTarget(PacketType t) {
  return t == PacketType::kWrite || t == PacketType::kWriteImm || t == PacketType::kReadReq ||
         t == PacketType::kAtomicFetchAdd || t == PacketType::kAtomicCompSwap;
}

/** True for ATOMIC request types. */
constexpr bool IsAtomicRequest(PacketType t) {
  return t == PacketType::kAtomicFetchAdd || t == PacketType::kAtomicCompSwap;
}

/** True for data types a requester sends (not READ/ATOMIC responses). */
constexpr bool IsRequest(PacketType t) {
  return t == PacketType::kWrite || t == PacketType::kWriteImm || t == PacketType::kSend ||
         t == PacketType::kSendImm || t == PacketType::kReadReq || IsAtomicRequest(t);
}

/** True for data types that may carry payload bytes. */
constexpr bool CarriesPayload(PacketType t) {
  return t == PacketType::kWrite || t == PacketType::kWriteImm || t == PacketType::kSend ||
         t == PacketType::kSendImm || t == PacketType::kReadResp;
}

/** Flags (bytes 2-3 of the common header). Which flags a type may carry: kAllowedFlags(). */
namespace flags {
inline constexpr uint16_t kAckReq = 1u << 0;      ///< data: receiver should ACK at once
inline constexpr uint16_t kSolicited = 1u << 1;   ///< SEND/SEND_IMM/WRITE_IMM: solicited event
inline constexpr uint16_t kRetransmit = 1u << 2;  ///< data: this chunk was sent before
inline constexpr uint16_t kEce = 1u << 3;         ///< ACK: the triggering packet was CE-marked
inline constexpr uint16_t kSack = 1u << 4;        ///< ACK: a 256-bit SACK bitmap is present
/**
 * Request data: a message probe. The sender holds every chunk of this message
 * as arrived but has no stream acknowledgement for it: answer with the stream
 * ACK, the message's NAK, or NAK RESEND naming chunks that were not placed.
 */
inline constexpr uint16_t kMsgProbe = 1u << 5;
/**
 * Data: the sender has nothing more queued for this connection behind this
 * packet, so the receiver's fair share counts it out at once (its share goes
 * to the senders still sending). Sent only to a peer that announced
 * caps::kIdle.
 */
inline constexpr uint16_t kIdle = 1u << 6;
}  // namespace flags

/** Capability bits of CONN_REQ / CONN_ACCEPT (doc/spec.md 4.5); unknown bits are ignored. */
namespace caps {
/**
 * The sender has more than one plane (a port per parallel fabric) and lists
 * the addresses of its planes 1..P-1 in the packet's extension; plane 0 is
 * the packet's source address.
 */
inline constexpr uint32_t kPlanes = 1u << 0;
/**
 * The sender reads `rate_hint` in the openings it receives. Advertised in
 * REQ, ACCEPT and RETRY; a REQ or ACCEPT carries a non-zero `rate_hint` (and
 * this bit) only to a peer that advertised it, since `rate_hint` is a
 * reserved field to a receiver without it.
 */
inline constexpr uint32_t kRateHint = 1u << 1;
/** The sender takes flags::kIdle on the data packets it receives (REQ, ACCEPT and RETRY). */
inline constexpr uint32_t kIdle = 1u << 2;
}  // namespace caps

/** Flags a packet of this type may carry; any other set bit makes the packet invalid. */
constexpr uint16_t AllowedFlags(PacketType t) {
  switch (ClassOf(t)) {
    case PacketClass::kData: {
      uint16_t f = flags::kAckReq | flags::kRetransmit | flags::kIdle;
      if (ConsumesReceive(t)) f |= flags::kSolicited;
      if (IsRequest(t)) f |= flags::kMsgProbe;
      return f;
    }
    case PacketClass::kAck: return flags::kEce | flags::kSack;
    default: return 0;
  }
}

/** NAK codes: the verbs-level error the requester reports. */
enum class NakCode : uint8_t {
  kReceiverNotReady = 1,  ///< no receive posted; retry after rnr_delay
  kRemoteAccess = 2,      ///< bad rkey, bounds or permission: IBV_WC_REM_ACCESS_ERR
  kInvalidRequest = 3,    ///< malformed or unsupported request: IBV_WC_REM_INV_REQ_ERR
  kRemoteOperation = 4,   ///< responder could not complete: IBV_WC_REM_OP_ERR
  /**
   * Not an error: chunks [first_chunk, first_chunk + num_chunks) of the message
   * were not placed (dropped after their packets were acknowledged); send them again.
   */
  kResend = 5,
};
inline constexpr uint8_t kNakCodeMax = 5;

/** Informational NAK detail (why the code was chosen). Unknown values are accepted. */
enum class NakDetail : uint8_t {
  kNone = 0,
  kBadRkey = 1,
  kOutOfBounds = 2,
  kNoPermission = 3,
  kRegionInvalidated = 4,
  kReceiveTooSmall = 5,
  kUnsupportedOp = 6,
  kMisalignedAtomic = 7,
  kStreamInError = 8,
  kResourceExhausted = 9,
  kNotPlaced = 10,  ///< RESEND: the chunks arrived but were dropped before placement
};

/** Reasons carried by CONN_REJECT and CONN_CLOSE. */
enum class ConnReason : uint8_t {
  kNone = 0,
  kVersionUnsupported = 1,
  kNoResources = 2,
  kBadParameters = 3,
  kShutdown = 4,
  kTimeout = 5,
  kPeerError = 6,
};
inline constexpr uint8_t kConnReasonMax = 6;

/** Header and trailer sizes in bytes (MetaRoCE part only, after the UDP header). */
inline constexpr size_t kCommonHeaderBytes = 12;
inline constexpr size_t kDataHeaderBytes = 32;      ///< sequencing header of every data packet
inline constexpr size_t kRdmaTargetBytes = 12;      ///< va + rkey
inline constexpr size_t kAtomicOperandsBytes = 16;  ///< two 64-bit operands
inline constexpr size_t kAckFixedBytes = 28;
inline constexpr size_t kNakBytes = 24;
inline constexpr size_t kProbeBytes = 8;
inline constexpr size_t kConnBytes = 48;
inline constexpr size_t kCrcBytes = 4;

/** SACK bitmap: bit i acknowledges PSN cum_psn + 1 + i. */
inline constexpr size_t kSackBits = 256;
inline constexpr size_t kSackBytes = kSackBits / 8;
inline constexpr size_t kSackWords = kSackBits / 64;

/**
 * An ACK's ack_delay when it echoes no timestamp (its path has received
 * nothing yet: an ACK sent for its rate_hint alone); it gives no RTT sample.
 */
inline constexpr uint32_t kAckNoEcho = UINT32_MAX;

/** Stream acknowledgements an ACK may carry, and the size of one. */
inline constexpr size_t kMaxStreamAcks = 8;
inline constexpr size_t kStreamAckBytes = 8;

/** Planes (parallel fabrics, one port each) a host may have, and one listed address's bytes. */
inline constexpr size_t kMaxPlanes = 8;
inline constexpr size_t kPlaneAddrBytes = 16;  ///< IPv6, or IPv4-mapped (::ffff:a.b.c.d)

/** Smallest max_payload a CONN_REQ / CONN_ACCEPT may announce. */
inline constexpr uint16_t kMinConnPayloadBytes = 256;

/** Largest MetaRoCE payload in one packet (the u16 payload_len field). */
inline constexpr size_t kMaxPayloadBytes = 0xffff;

/** Bytes between the UDP header and the payload for a packet type (fixed part). */
constexpr size_t TypeHeaderBytes(PacketType t) {
  switch (t) {
    case PacketType::kWrite:
    case PacketType::kReadReq: return kDataHeaderBytes + kRdmaTargetBytes;
    case PacketType::kWriteImm: return kDataHeaderBytes + kRdmaTargetBytes + 8;
    case PacketType::kSend: return kDataHeaderBytes + 4;
    case PacketType::kSendImm: return kDataHeaderBytes + 8;
    case PacketType::kReadResp: return kDataHeaderBytes;
    case PacketType::kAtomicFetchAdd:
    case PacketType::kAtomicCompSwap:
      return kDataHeaderBytes + kRdmaTargetBytes + kAtomicOperandsBytes;
    case PacketType::kAtomicResp: return kDataHeaderBytes + 8;
    case PacketType::kAck: return kAckFixedBytes;
    case PacketType::kNak: return kNakBytes;
    case PacketType::kProbe:
    case PacketType::kProbeReply: return kProbeBytes;
    case PacketType::kConnReq:
    case PacketType::kConnAccept:
    case PacketType::kConnReject:
    case PacketType::kConnClose:
    case PacketType::kConnRetry: return kConnBytes;
  }
  return 0;
}

/** Largest MetaRoCE header (common + type header + ACK extension), without payload and CRC. */
inline constexpr size_t kMaxHeaderBytes =
    kCommonHeaderBytes + kAckFixedBytes + kSackBytes + kMaxStreamAcks * kStreamAckBytes;

/** Encapsulation sizes. */
inline constexpr size_t kEthHeaderBytes = 14;
inline constexpr size_t kVlanTagBytes = 4;
inline constexpr size_t kIpv4HeaderBytes = 20;
inline constexpr size_t kIpv6HeaderBytes = 40;
inline constexpr size_t kUdpHeaderBytes = 8;

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint8_t kIpProtoUdp = 17;

/** ECN codepoints (low two bits of IPv4 TOS / IPv6 traffic class). */
enum class Ecn : uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };

}  // namespace metaroce::wire

#endif  // METAROCE_MR_WIRE_DEFS_H
