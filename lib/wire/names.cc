/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "mr_wire_codec.h"
#include "mr_wire_packet.h"

namespace metaroce::wire {

const char* PacketTypeName(uint8_t type) {
  switch (type) {
    case 0x01: return "WRITE";
    case 0x02: return "WRITE_IMM";
    case 0x03: return "SEND";
    case 0x04: return "SEND_IMM";
    case 0x05: return "READ_REQ";
    case 0x06: return "READ_RESP";
    case 0x07: return "ATOMIC_FA";
    case 0x08: return "ATOMIC_CS";
    case 0x09: return "ATOMIC_RESP";
    case 0x10: return "ACK";
    case 0x11: return "NAK";
    case 0x20: return "PROBE";
    case 0x21: return "PROBE_REPLY";
    case 0x30: return "CONN_REQ";
    case 0x31: return "CONN_ACCEPT";
    case 0x32: return "CONN_REJECT";
    case 0x33: return "CONN_CLOSE";
    case 0x34: return "CONN_RETRY";
    default: return "UNKNOWN";
  }
}

const char* NakCodeName(uint8_t code) {
  switch (code) {
    case 1: return "RNR";
    case 2: return "REMOTE_ACCESS";
    case 3: return "INVALID_REQUEST";
    case 4: return "REMOTE_OPERATION";
    case 5: return "RESEND";
    default: return "UNKNOWN";
  }
}

const char* ParseErrorName(ParseError e) {
  switch (e) {
    case ParseError::kOk: return "ok";
    case ParseError::kEthTruncated: return "eth_truncated";
    case ParseError::kEthNotIp: return "eth_not_ip";
    case ParseError::kIpTruncated: return "ip_truncated";
    case ParseError::kIpBadVersion: return "ip_bad_version";
    case ParseError::kIpBadHeaderLength: return "ip_bad_header_length";
    case ParseError::kIpBadChecksum: return "ip_bad_checksum";
    case ParseError::kIpBadLength: return "ip_bad_length";
    case ParseError::kIpFragment: return "ip_fragment";
    case ParseError::kIpNotUdp: return "ip_not_udp";
    case ParseError::kIpv6ExtensionHeader: return "ipv6_extension_header";
    case ParseError::kUdpTruncated: return "udp_truncated";
    case ParseError::kUdpBadLength: return "udp_bad_length";
    case ParseError::kUdpWrongPort: return "udp_wrong_port";
    case ParseError::kUdpBadChecksum: return "udp_bad_checksum";
    case ParseError::kTruncatedHeader: return "truncated_header";
    case ParseError::kTruncatedPayload: return "truncated_payload";
    case ParseError::kBadVersion: return "bad_version";
    case ParseError::kBadType: return "bad_type";
    case ParseError::kBadFlags: return "bad_flags";
    case ParseError::kBadLength: return "bad_length";
    case ParseError::kBadCrc: return "bad_crc";
    case ParseError::kReservedNotZero: return "reserved_not_zero";
    case ParseError::kZeroConnId: return "zero_conn_id";
    case ParseError::kZeroStream: return "zero_stream";
    case ParseError::kUnaAfterPsn: return "una_after_psn";
    case ParseError::kPayloadBeyondMessage: return "payload_beyond_message";
    case ParseError::kEmptyPayload: return "empty_payload";
    case ParseError::kPayloadNotAllowed: return "payload_not_allowed";
    case ParseError::kBadAtomicLength: return "bad_atomic_length";
    case ParseError::kBadAtomicOperand: return "bad_atomic_operand";
    case ParseError::kMessageTooLong: return "message_too_long";
    case ParseError::kBadSackLength: return "bad_sack_length";
    case ParseError::kEmptySack: return "empty_sack";
    case ParseError::kTooManyStreamAcks: return "too_many_stream_acks";
    case ParseError::kZeroStreamAck: return "zero_stream_ack";
    case ParseError::kBadNakCode: return "bad_nak_code";
    case ParseError::kBadResendRange: return "bad_resend_range";
    case ParseError::kBadConnReason: return "bad_conn_reason";
    case ParseError::kBadVersionRange: return "bad_version_range";
    case ParseError::kBadConnParameters: return "bad_conn_parameters";
    case ParseError::kCount: break;
  }
  return "unknown";
}

}  // namespace metaroce::wire
