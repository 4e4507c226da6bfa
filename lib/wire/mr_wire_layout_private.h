/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * Byte layouts of wire format v1, exactly as doc/spec.md draws them. Fields are
 * byte arrays (alignment 1), so the structs have no padding and every offset
 * and size is pinned by a static_assert below. Not installed.
 */

#ifndef METAROCE_MR_WIRE_LAYOUT_PRIVATE_H
#define METAROCE_MR_WIRE_LAYOUT_PRIVATE_H

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mr_wire_defs.h"

namespace metaroce::wire::layout {

/**
 * Big-endian unsigned integer of N bytes. get() and set() are one load or
 * store and a byte swap: written as a byte loop, GCC 12 kept the loop for
 * the 64-bit fields (~150 instructions per data packet in parse and encode).
 */
template <typename T>
struct Be {
  uint8_t b[sizeof(T)];
  T get() const {
    T v;
    std::memcpy(&v, b, sizeof(T));
    return ToHost(v);
  }
  void set(T v) {
    v = ToHost(v);  // the swap is its own inverse
    std::memcpy(b, &v, sizeof(T));
  }

 private:
  static T ToHost(T v) {
    if constexpr (std::endian::native == std::endian::big || sizeof(T) == 1) {
      return v;
    } else if constexpr (sizeof(T) == 2) {
      return __builtin_bswap16(v);
    } else if constexpr (sizeof(T) == 4) {
      return __builtin_bswap32(v);
    } else {
      static_assert(sizeof(T) == 8);
      return __builtin_bswap64(v);
    }
  }
};
using Be16 = Be<uint16_t>;
using Be32 = Be<uint32_t>;
using Be64 = Be<uint64_t>;

struct CommonHdr {
  uint8_t version;
  uint8_t type;
  Be16 flags;
  Be32 dst_conn_id;
  Be16 path_id;
  Be16 payload_len;
};

struct DataHdr {
  Be32 psn;
  Be32 una_psn;
  Be32 tx_ts_ns;
  Be32 stream_id;
  Be32 msn;
  Be32 msg_len;
  Be32 msg_offset;
  Be32 src_stream;
};

struct RdmaTargetHdr {
  Be64 va;
  Be32 rkey;
};

struct AtomicOperandsHdr {
  Be64 operand0;
  Be64 operand1;
};

struct AckHdr {
  Be32 cum_psn;
  Be32 echo_ts_ns;
  Be32 ack_delay_ns;
  Be32 rate_hint_mbps;
  Be32 rx_pkts;
  Be32 ce_pkts;
  uint8_t num_stream_acks;
  uint8_t reserved0;
  Be16 reserved1;
};

struct StreamAckHdr {
  Be32 stream_id;
  Be32 msn_next;
};

struct NakHdr {
  Be32 stream_id;
  Be32 msn;
  Be32 psn;
  uint8_t code;
  uint8_t detail;
  Be16 rnr_delay_10us;
  Be32 first_chunk;
  Be32 num_chunks;
};

struct ProbeHdr {
  Be32 probe_seq;
  Be32 ts_ns;
};

struct ConnHdr {
  Be32 src_conn_id;
  Be32 nonce;
  uint8_t min_version;
  uint8_t max_version;
  uint8_t reason;
  uint8_t reserved0;
  Be16 num_paths;
  Be16 max_payload;
  Be32 capabilities;
  Be16 udp_port;
  Be16 reserved1;
  Be64 incarnation;
  Be64 cookie;
  Be32 stream_window;
  Be32 rate_hint;
};

struct EthHdr {
  uint8_t dst[6];
  uint8_t src[6];
  Be16 ether_type;
};

struct Ipv4Hdr {
  uint8_t version_ihl;
  uint8_t tos;
  Be16 total_length;
  Be16 id;
  Be16 frag;
  uint8_t ttl;
  uint8_t protocol;
  Be16 checksum;
  uint8_t src[4];
  uint8_t dst[4];
};

struct Ipv6Hdr {
  Be32 ver_tc_flow;
  Be16 payload_length;
  uint8_t next_header;
  uint8_t hop_limit;
  uint8_t src[16];
  uint8_t dst[16];
};

struct UdpHdr {
  Be16 src_port;
  Be16 dst_port;
  Be16 length;
  Be16 checksum;
};

// Every wire size and offset, pinned (doc/spec.md section 3).
static_assert(sizeof(Be16) == 2 && sizeof(Be32) == 4 && sizeof(Be64) == 8);
static_assert(sizeof(CommonHdr) == kCommonHeaderBytes);
static_assert(offsetof(CommonHdr, flags) == 2 && offsetof(CommonHdr, dst_conn_id) == 4);
static_assert(offsetof(CommonHdr, path_id) == 8 && offsetof(CommonHdr, payload_len) == 10);
static_assert(sizeof(DataHdr) == kDataHeaderBytes);
static_assert(offsetof(DataHdr, una_psn) == 4 && offsetof(DataHdr, stream_id) == 12);
static_assert(offsetof(DataHdr, msg_offset) == 24 && offsetof(DataHdr, src_stream) == 28);
static_assert(sizeof(RdmaTargetHdr) == kRdmaTargetBytes && offsetof(RdmaTargetHdr, rkey) == 8);
static_assert(sizeof(AtomicOperandsHdr) == kAtomicOperandsBytes);
static_assert(sizeof(AckHdr) == kAckFixedBytes && offsetof(AckHdr, num_stream_acks) == 24);
static_assert(sizeof(StreamAckHdr) == kStreamAckBytes);
static_assert(sizeof(NakHdr) == kNakBytes && offsetof(NakHdr, code) == 12);
static_assert(offsetof(NakHdr, first_chunk) == 16 && offsetof(NakHdr, num_chunks) == 20);
static_assert(sizeof(ProbeHdr) == kProbeBytes);
static_assert(sizeof(ConnHdr) == kConnBytes && offsetof(ConnHdr, num_paths) == 12);
static_assert(offsetof(ConnHdr, capabilities) == 16 && offsetof(ConnHdr, udp_port) == 20);
static_assert(offsetof(ConnHdr, incarnation) == 24 && offsetof(ConnHdr, cookie) == 32);
static_assert(offsetof(ConnHdr, stream_window) == 40 && offsetof(ConnHdr, rate_hint) == 44);
static_assert(sizeof(EthHdr) == kEthHeaderBytes);
static_assert(sizeof(Ipv4Hdr) == kIpv4HeaderBytes);
static_assert(sizeof(Ipv6Hdr) == kIpv6HeaderBytes);
static_assert(sizeof(UdpHdr) == kUdpHeaderBytes);
static_assert(kSackBytes == 32, "the SACK bitmap is 256 bits");
static_assert(TypeHeaderBytes(PacketType::kWrite) == 44);
static_assert(TypeHeaderBytes(PacketType::kWriteImm) == 52);
static_assert(TypeHeaderBytes(PacketType::kSend) == 36);
static_assert(TypeHeaderBytes(PacketType::kSendImm) == 40);
static_assert(TypeHeaderBytes(PacketType::kReadReq) == 44);
static_assert(TypeHeaderBytes(PacketType::kReadResp) == 32);
static_assert(TypeHeaderBytes(PacketType::kAtomicFetchAdd) == 60);
static_assert(TypeHeaderBytes(PacketType::kAtomicCompSwap) == 60);
static_assert(TypeHeaderBytes(PacketType::kAtomicResp) == 40);
static_assert(TypeHeaderBytes(PacketType::kAck) == 28 && TypeHeaderBytes(PacketType::kNak) == 24);
static_assert(TypeHeaderBytes(PacketType::kProbe) == 8);
static_assert(TypeHeaderBytes(PacketType::kConnReq) == 48 &&
              TypeHeaderBytes(PacketType::kConnRetry) == 48);
static_assert(kMaxMessageBytes == 0x80000000u, "messages up to 2 GiB");
static_assert(kMaxHeaderBytes == 12 + 28 + 32 + 64);
// The ACK with its full extension stays the largest header in v1.
static_assert(kCommonHeaderBytes + kDataHeaderBytes + kRdmaTargetBytes + kAtomicOperandsBytes <=
              kMaxHeaderBytes);
static_assert(kCommonHeaderBytes + kConnBytes <= kMaxHeaderBytes);

/** Reads a layout struct from possibly unaligned bytes. */
template <typename T>
inline T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/** Writes a layout struct to possibly unaligned bytes. */
template <typename T>
inline void Store(uint8_t* p, const T& v) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace metaroce::wire::layout

#endif  // METAROCE_MR_WIRE_LAYOUT_PRIVATE_H
