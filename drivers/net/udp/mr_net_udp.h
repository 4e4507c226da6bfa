/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The `udp` port driver: MetaRoCE over kernel UDP sockets, for commodity
 * Linux hosts without DPDK (doc/udp-driver.md). Framing::kUdp: the engine
 * reads and writes UDP payloads; addresses, ports and ECN travel in
 * TxSlot::addr / RxPacket::addr. One socket receives on ip:port; one socket
 * per source port sends, so every path's source port is real on the wire.
 */

#ifndef METAROCE_MR_NET_UDP_H
#define METAROCE_MR_NET_UDP_H

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "mr_port.h"
#include "mr_wire_frame.h"

namespace metaroce::udp {

/** Largest datagram (UDP payload) the driver sends or receives; also TxSlot::cap. */
inline constexpr uint32_t kMaxDatagramBytes = 9216;
/** Most source ports (= transmit sockets) one port may bind. */
inline constexpr uint32_t kMaxSourcePorts = 1024;
/** Default number of source ports. */
inline constexpr uint32_t kDefaultSourcePorts = 64;
/** Transmit buffers per queue (TxAlloc() hands out at most this many at once). */
inline constexpr uint32_t kTxPoolBuffers = 512;
/** Datagrams one recvmmsg()/sendmmsg() call moves at most. */
inline constexpr uint32_t kMaxBatch = 64;

/** The driver's arguments, parsed and checked (see ParseUdpArgs()). */
struct UdpArgs {
  wire::IpAddr ip;                              ///< address to bind (never a wildcard)
  uint16_t port = wire::kDefaultUdpPort;        ///< receive port; 0: the kernel picks one
  uint32_t source_ports = kDefaultSourcePorts;  ///< transmit sockets, 1..kMaxSourcePorts
  uint16_t first_source_port = 0;  ///< first of the consecutive source ports; 0: ephemeral
  uint32_t busy_poll_us = 0;       ///< SO_BUSY_POLL on the receive socket; 0: not set
  /**
   * SO_RCVBUF of the receive socket (0: kernel default). The default holds a
   * connection's whole window (512 x 4 KiB packets): with the kernel's ~200 KB
   * a burst overflows the socket and every overflow is a retransmission.
   */
  uint32_t rcvbuf_bytes = 4u << 20;
  uint32_t sndbuf_bytes = 0;  ///< SO_SNDBUF of each transmit socket; 0: kernel default
  uint16_t queues = 1;        ///< only 1 is supported
};

/**
 * Checks "udp:ip=ADDR,port=N,source_ports=K,first_source_port=P,busy_poll=US,
 * rcvbuf=BYTES,sndbuf=BYTES,queues=1". An unknown key, a key given twice or a
 * bad value fails with InvalidArgument naming the key and what is allowed.
 */
absl::StatusOr<UdpArgs> ParseUdpArgs(const port::PortArgs& args);

/**
 * Opens the sockets of @p args. Socket errors come back as the errno's status
 * code (EADDRINUSE: Unavailable) with the call, address and port in the message.
 */
absl::StatusOr<std::unique_ptr<port::Port>> OpenUdpPort(const UdpArgs& args);

/** The registry entry ("udp"); OpenPort("udp:...") reaches it. */
extern const port::PortDriver kUdpDriver;

}  // namespace metaroce::udp

#endif  // METAROCE_MR_NET_UDP_H
