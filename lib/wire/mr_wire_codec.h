/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Parsing and encoding of MetaRoCE packets. Both are pure functions over
 * caller buffers with full bounds checks. A parse either succeeds or names
 * the one rule the input broke (ParseError); encoding refuses any packet that
 * the parser would reject, so what we send always parses.
 */

#ifndef METAROCE_MR_WIRE_CODEC_H
#define METAROCE_MR_WIRE_CODEC_H

#include <array>
#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "mr_wire_frame.h"
#include "mr_wire_packet.h"

namespace metaroce::wire {

/** Why a packet was rejected. Drivers and the engine count drops by this reason. */
enum class ParseError : uint8_t {
  kOk = 0,
  // Ethernet
  kEthTruncated,
  kEthNotIp,
  // IPv4 / IPv6
  kIpTruncated,
  kIpBadVersion,
  kIpBadHeaderLength,
  kIpBadChecksum,
  kIpBadLength,
  kIpFragment,
  kIpNotUdp,
  kIpv6ExtensionHeader,
  // UDP
  kUdpTruncated,
  kUdpBadLength,
  kUdpWrongPort,
  kUdpBadChecksum,
  // MetaRoCE common header
  kTruncatedHeader,
  kTruncatedPayload,
  kBadVersion,
  kBadType,
  kBadFlags,
  kBadLength,
  kBadCrc,
  kReservedNotZero,
  kZeroConnId,
  // Data
  kZeroStream,
  kUnaAfterPsn,
  kPayloadBeyondMessage,
  kEmptyPayload,
  kPayloadNotAllowed,
  kBadAtomicLength,
  kBadAtomicOperand,
  kMessageTooLong,  ///< msg_len beyond kMaxMessageBytes
  // ACK
  kBadSackLength,
  kEmptySack,
  kTooManyStreamAcks,
  kZeroStreamAck,
  // NAK
  kBadNakCode,
  kBadResendRange,  ///< RESEND with num_chunks 0, or first_chunk + num_chunks overflowing
  // Connection management
  kBadConnReason,
  kBadVersionRange,
  kBadConnParameters,
  kCount,  ///< number of reasons (array size for counters)
};

/** Stable snake_case name of a reason ("bad_crc"), for counters and logs. */
const char* ParseErrorName(ParseError e);

/** What the receiver checks. */
struct ParseOptions {
  uint16_t udp_port = kDefaultUdpPort;  ///< frames to another UDP destination port are rejected
  bool verify_crc = true;               ///< false only when hardware already checked it
  bool verify_ip_checksum = true;       ///< IPv4 header checksum
  bool verify_udp_checksum = true;      ///< when non-zero (always present on IPv6)
};

/**
 * Parses the MetaRoCE bytes of one UDP datagram (header, payload, CRC trailer).
 * @param in  the UDP payload
 * @param out on success the decoded packet; out->payload points into @p in
 * @return kOk, or the first rule the input broke (out is then unspecified)
 */
ParseError ParseDatagram(std::span<const uint8_t> in, const ParseOptions& opt, Packet* out);

/**
 * Parses a whole Ethernet frame: Ethernet (at most one VLAN tag), IPv4 or
 * IPv6 without options or extension headers, UDP to opt.udp_port, MetaRoCE.
 * @param frame the frame without FCS
 * @param info  on success the encapsulation fields (addresses, ports, ECN, ...)
 */
ParseError ParseFrame(std::span<const uint8_t> frame, const ParseOptions& opt, FrameInfo* info,
                      Packet* out);

/**
 * The encapsulation alone: parses Ethernet, IP and UDP as ParseFrame() does
 * (every rule up to the UDP checksum, opt.udp_port included) and points
 * @p udp_payload at what follows the UDP header. For other UDP protocols
 * sharing the framing (the RoCEv2 baseline of the simulator).
 */
ParseError ParseUdpFrame(std::span<const uint8_t> frame, const ParseOptions& opt, FrameInfo* info,
                         std::span<const uint8_t>* udp_payload);

/**
 * Checks the fields of a decoded packet against the v1 rules that do not depend
 * on the byte layout (non-zero ids, offsets inside the message, ...). The
 * parser applies it to every packet; encoders apply it before writing.
 */
ParseError CheckFields(const Packet& p);

/** Encoding choices. */
struct EncodeOptions {
  bool udp_checksum_ipv4 = false;  ///< IPv6 always carries a UDP checksum (RFC 8200)
  /**
   * Skip CheckFields: the caller built the packet by the rules (the engine,
   * whose -Dengine_checks builds check anyway). Every receiver still checks.
   */
  bool trusted = false;
};

/**
 * Writes the MetaRoCE bytes of @p p (header, payload, CRC) into @p out.
 * @return bytes written, or InvalidArgument (the packet breaks a rule, named)
 *         or ResourceExhausted (out is too small)
 */
absl::StatusOr<size_t> EncodeDatagram(const Packet& p, std::span<uint8_t> out,
                                      const EncodeOptions& opt = {});

/**
 * EncodeDatagram() of a packet the caller built by the rules (CheckFields()
 * is not applied): the fast path of a sender whose packets are right by
 * construction (the engine; its -Dengine_checks builds check them first).
 * @return bytes written, or 0 when @p out is too small
 */
size_t EncodeTrusted(const Packet& p, std::span<uint8_t> out);

/**
 * Writes a whole Ethernet frame (Ethernet, IP, UDP, MetaRoCE) into @p out.
 * @return frame length, or an error as EncodeDatagram
 */
absl::StatusOr<size_t> EncodeFrame(const FrameInfo& f, const Packet& p, std::span<uint8_t> out,
                                   const EncodeOptions& opt = {});

/**
 * Writes the Ethernet, IP and UDP headers of @p f in front of a UDP payload
 * of @p udp_payload_bytes already in place at out[EncapBytes(f)...]: the
 * encapsulation EncodeFrame() writes, for other UDP protocols.
 * @return frame length, or InvalidArgument / ResourceExhausted as EncodeFrame
 */
absl::StatusOr<size_t> EncodeUdpFrame(const FrameInfo& f, size_t udp_payload_bytes,
                                      std::span<uint8_t> out, const EncodeOptions& opt = {});

/**
 * The Ethernet, IP and UDP headers of one destination, built once: a sender's
 * fast path copies them in front of each datagram and patches only what
 * varies per packet (UDP source port, ECN, lengths and checksums). Stamp()
 * writes exactly the bytes EncodeUdpFrame() would for the same FrameInfo.
 */
class EncapTemplate {
 public:
  /**
   * Builds from @p f all but f.src_port, f.ecn and the lengths, which Stamp()
   * takes. @return false, leaving it unbuilt, when @p f is not encodable.
   */
  bool Build(const FrameInfo& f, const EncodeOptions& opt = {});
  bool built() const { return bytes_ != 0; }
  void Clear() { bytes_ = 0; }
  /** Bytes of headers: the UDP payload goes at out + bytes(). */
  size_t bytes() const { return bytes_; }
  /**
   * Writes the headers in front of a UDP payload of @p udp_payload_bytes
   * already at out + bytes() (at most the UDP maximum; the caller's own
   * limits keep it far below).
   * @return the frame length
   */
  size_t Stamp(uint16_t src_port, Ecn ecn, size_t udp_payload_bytes, uint8_t* out) const;

 private:
  static constexpr size_t kMaxBytes =
      kEthHeaderBytes + kVlanTagBytes + kIpv6HeaderBytes + kUdpHeaderBytes;
  std::array<uint8_t, kMaxBytes> hdr_{};
  uint8_t bytes_ = 0;
  uint8_t ip_off_ = 0;  ///< Ethernet header and tag
  bool v6_ = false;
  bool udp_csum_ = false;    ///< a UDP checksum is written (IPv6 always)
  uint32_t ip_sum_ = 0;      ///< IPv4: unfolded sum of the header with ECN 0, length 0, checksum 0
  uint32_t pseudo_sum_ = 0;  ///< unfolded sum of the pseudo header's addresses and protocol
};

}  // namespace metaroce::wire

#endif  // METAROCE_MR_WIRE_CODEC_H
