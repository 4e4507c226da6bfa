/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The `dpdk` port driver: MetaRoCE frames over any DPDK ethdev (a NIC's PMD,
 * net_ring, net_memif, net_af_packet, ...), doc/dpdk-driver.md.
 * Framing::kEthernet: the engine writes whole Ethernet frames straight into
 * mbufs and parses received frames in place. EAL is initialised once per
 * process, by the first port opened or by InitEal().
 */

#ifndef METAROCE_MR_NET_DPDK_H
#define METAROCE_MR_NET_DPDK_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_port.h"
#include "mr_wire_frame.h"

namespace metaroce::dpdk {

/** Default mbufs in a port's pool: small enough for `--no-huge -m 512`. */
inline constexpr uint32_t kDefaultMbufs = 8192;
/** Smallest and largest mbufs= value. */
inline constexpr uint32_t kMinMbufs = 1024;
inline constexpr uint32_t kMaxMbufs = 1u << 20;
/** Default MTU (IP packet bytes); frames are MTU + 14 bytes of Ethernet header. */
inline constexpr uint32_t kDefaultMtu = 1500;
/** Smallest and largest mtu= value. */
inline constexpr uint32_t kMinMtu = 576;
inline constexpr uint32_t kMaxMtu = 9600;
/** Most queues one port may have. */
inline constexpr uint32_t kMaxQueues = 16;
/** Receive and transmit descriptors asked for per queue (the PMD may adjust them). */
inline constexpr uint16_t kRxDescriptors = 1024;
inline constexpr uint16_t kTxDescriptors = 1024;
/** Most packets one RxBurst() returns (larger requests are cut to this). */
inline constexpr uint16_t kMaxRxBurst = 256;

/** Most static neighbour entries neigh= may give. */
inline constexpr size_t kMaxStaticNeigh = 256;

/** A neighbour entry from the neigh= argument: never aged out, never overwritten by learning. */
struct StaticNeigh {
  wire::IpAddr ip;
  wire::MacAddr mac;
  friend bool operator==(const StaticNeigh&, const StaticNeigh&) = default;
};

/** The driver's arguments, parsed and checked (see ParseDpdkArgs()). */
struct DpdkArgs {
  std::vector<std::string> eal;  ///< EAL arguments (without argv[0]); empty: none given
  std::string port = "0";        ///< ethdev port id, or a device name (e.g. net_ring0)
  wire::IpAddr ip;               ///< this port's IPv4 or IPv6 address (required)
  bool mac_auto = true;          ///< true: the device's MAC (rte_eth_macaddr_get)
  wire::MacAddr mac;             ///< the MAC when !mac_auto
  uint16_t udp_port = wire::kDefaultUdpPort;  ///< MetaRoCE UDP port received on
  uint16_t queues = 1;                        ///< receive and transmit queues, 1..kMaxQueues
  uint32_t mbufs = kDefaultMbufs;             ///< mbufs in the port's pool
  uint32_t mtu = kDefaultMtu;                 ///< IP MTU; sizes the mbufs and max_frame_bytes
  std::vector<StaticNeigh> neigh;             ///< static neighbour entries (neigh=)
  bool csum_offload = true;  ///< csum=auto: offload IPv4/UDP checksums if the device can
};

/**
 * Checks "dpdk:eal=ARGS,port=ID|NAME,ip=ADDR,mac=auto|AA:BB:CC:DD:EE:FF,
 * udp_port=N,queues=Q,mbufs=N,mtu=N,neigh=IP@MAC;IP@MAC,csum=auto|off". EAL arguments in
 * eal= are separated by spaces or ';', and '|' stands for ',' (which separates
 * the driver's own arguments); so are the entries of neigh=. An unknown key,
 * a key given twice or a bad value fails with InvalidArgument naming the key
 * and what is allowed. Needs no EAL.
 */
absl::StatusOr<DpdkArgs> ParseDpdkArgs(const port::PortArgs& args);

/**
 * Initialises EAL once per process with @p eal_args (argv[0] is added). Later
 * calls return the first call's result and ignore their arguments; EAL set up
 * by someone else (rte_eal_init() already called) counts as success. A failure
 * carries rte_errno and the EAL log lines it printed. Thread-safe.
 */
absl::Status InitEal(const std::vector<std::string>& eal_args);

/**
 * Opens the ethdev of @p args: initialises EAL if needed, creates (or reuses)
 * the port's mbuf pool, configures its queues and starts it. Errors name the
 * DPDK call and its rte_errno / return code.
 */
absl::StatusOr<std::unique_ptr<port::Port>> OpenDpdkPort(const DpdkArgs& args);

/**
 * What a port's neighbour resolution did (doc/dpdk-driver.md, "Neighbour
 * resolution"). ARP (IPv4) and ND (IPv6) are counted together: a port has one
 * address family.
 */
struct NeighStats {
  uint64_t requests_answered = 0;  ///< ARP requests and NS for this port's address answered
  uint64_t requests_sent = 0;      ///< ARP requests and NS sent (to resolve or to refresh)
  uint64_t replies_learnt = 0;     ///< ARP replies and NA whose sender's MAC was stored
  uint64_t requests_learnt = 0;    ///< senders of requests for this port's address stored
  uint64_t unresolved_drops = 0;   ///< frames dropped because the destination's MAC was unknown
  uint64_t malformed = 0;          ///< ARP / NS / NA frames too short or invalid, dropped
  uint64_t ignored = 0;            ///< valid ARP / NS / NA about other hosts (or our own echo)
  uint64_t send_failures = 0;      ///< requests and answers not sent (no mbuf, ring full)
  uint64_t entries = 0;            ///< neighbours in the table now, static ones included
};

/**
 * The neighbour counters of a dpdk port: @p port itself, or a wrapper that
 * forwards info() (the fault stage of lib/port/mr_port_fault.h); nullopt for
 * any other port. Thread-safe.
 */
std::optional<NeighStats> NeighStatsOf(const port::Port& port);

/** Transmit checksum offloads a dpdk port negotiated with its device (csum=auto). */
struct TxOffloads {
  bool ipv4_cksum = false;  ///< the device writes the IPv4 header checksum
  bool udp_cksum = false;   ///< the device writes the UDP checksum of IPv4 frames
};

/** The offloads of @p port if it is a dpdk port itself (not wrapped); nullopt otherwise. */
std::optional<TxOffloads> TxOffloadsOf(const port::Port& port);

/** The registry entry ("dpdk"); OpenPort("dpdk:...") reaches it. */
extern const port::PortDriver kDpdkDriver;

}  // namespace metaroce::dpdk

#endif  // METAROCE_MR_NET_DPDK_H
