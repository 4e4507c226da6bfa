/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Packet I/O for the dataplane: one interface every driver implements (DPDK
 * ethdev, kernel UDP sockets, the simulated fabric's test binding) and one
 * registry drivers plug into. A port moves packets and nothing else: no
 * protocol logic lives here.
 */

#ifndef METAROCE_MR_PORT_H
#define METAROCE_MR_PORT_H

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_engine.h"
#include "mr_wire_frame.h"

namespace metaroce::port {

/** One received packet, valid until the next RxBurst() on the same queue. */
struct RxPacket {
  std::span<const uint8_t> data;  ///< whole frame (kEthernet) or UDP payload (kUdp)
  wire::FrameInfo addr;           ///< kUdp: source address and port, destination port, ECN
};

/** Counters every port keeps. */
struct PortStats {
  uint64_t rx_packets = 0;
  uint64_t rx_bytes = 0;
  uint64_t rx_errors = 0;  ///< receive calls that failed (socket errors, ...)
  uint64_t tx_packets = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_errors = 0;     ///< packets the port could not send (queue full, socket errors)
  uint64_t tx_no_buffer = 0;  ///< TxAlloc() calls that got fewer buffers than asked
};

/** What a port is and how the engine must address it. */
struct PortInfo {
  std::string driver;
  transport::Framing framing = transport::Framing::kEthernet;
  wire::IpAddr ip;
  wire::MacAddr mac;
  uint16_t udp_port = 0;  ///< MetaRoCE destination port it receives on
  uint16_t num_queues = 1;
  uint32_t max_frame_bytes = 0;        ///< largest packet it sends (MTU + headers)
  std::vector<uint16_t> source_ports;  ///< non-empty: the only source ports it can send from
};

/** A driver instance. Burst calls on one queue come from one thread. */
class Port {
 public:
  virtual ~Port() = default;
  virtual const PortInfo& info() const = 0;
  /** Receives up to @p n packets on @p queue; returns how many (0 when none). */
  virtual uint16_t RxBurst(uint16_t queue, RxPacket* pkts, uint16_t n) = 0;
  /** Fills up to @p n empty transmit buffers for @p queue; returns how many. */
  virtual uint16_t TxAlloc(uint16_t queue, transport::TxSlot* slots, uint16_t n) = 0;
  /**
   * Sends the first @p n slots of a TxAlloc() (len > 0: sent; len 0: returned
   * unused) and takes every one of them back; returns how many were sent.
   */
  virtual uint16_t TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) = 0;
  virtual PortStats stats() const = 0;

  // ---- Optional: steering for multi-queue ports (lib/runtime, doc/runtime.md) ----

  /**
   * Asks the device to deliver received packets whose UDP destination port is
   * @p udp_port to @p queue (a flow rule, e.g. rte_flow). Control path: call
   * before the queues are polled. The port keeps the rule until it is closed.
   * @param udp_port UDP destination port to match.
   * @param queue receive queue (below info().num_queues) those packets go to.
   * @return true when the rule is in place; false when the port cannot steer
   *         by UDP destination port (the default: the caller steers in
   *         software); an error when the port should have but failed.
   */
  virtual absl::StatusOr<bool> SteerUdpDstPort(uint16_t /*udp_port*/, uint16_t /*queue*/) {
    return false;
  }

  /**
   * Takes packet @p index of the last RxBurst() on @p queue out of the
   * port's hands, so that its RxPacket::data stays valid past the next
   * RxBurst() until ReleaseRx(): how a packet received on one queue is handed
   * to another thread without a copy. Call it before the next RxBurst() on
   * that queue, from the queue's thread.
   * @return a handle for ReleaseRx(), or nullptr when the port cannot (the
   *         default; the caller copies the packet instead).
   */
  virtual void* DetachRx(uint16_t /*queue*/, uint16_t /*index*/) { return nullptr; }

  /**
   * Gives back a packet DetachRx() kept; its data is invalid from then on.
   * Thread-safe: any thread may release any handle of this port, once.
   */
  virtual void ReleaseRx(void* /*handle*/) {}

  /**
   * A descriptor that polls readable (POLLIN) when @p queue has packets to
   * receive, so that an idle caller can sleep until traffic comes; -1 when
   * the port has none, or holds packets that no descriptor announces (the
   * caller then polls). Ask again each time before sleeping.
   */
  virtual int RxEventFd(uint16_t /*queue*/) { return -1; }
};

/** Driver arguments: "name:key=value,key=value" as on a command line. */
struct PortArgs {
  std::string driver;
  std::vector<std::pair<std::string, std::string>> kv;

  /** Parses "udp:ip=127.0.0.1,port=4792". */
  static absl::StatusOr<PortArgs> Parse(const std::string& text);
  /** The value of @p key, or @p fallback. */
  std::string Get(const std::string& key, const std::string& fallback = "") const;
  bool Has(const std::string& key) const;
};

/** Parses an unsigned decimal argument value in [lo, hi]; false if it is not one. */
bool ParseUintArg(const std::string& text, uint64_t lo, uint64_t hi, uint64_t* out);

/** A driver: a name and a constructor. */
struct PortDriver {
  const char* name;
  const char* help;  ///< one line per argument, shown by --help of the programs
  absl::StatusOr<std::unique_ptr<Port>> (*create)(const PortArgs& args);
};

/** Adds a driver to the registry (drivers call it from a static initializer). */
void RegisterDriver(const PortDriver* driver);
/** The registered drivers, by name. */
std::vector<const PortDriver*> Drivers();
/** Creates a port from "driver:args"; the error lists the known drivers or names the bad argument.
 */
absl::StatusOr<std::unique_ptr<Port>> OpenPort(const std::string& spec);

/**
 * @p base for an engine on a port described by @p info, receiving on
 * @p udp_port: the port's addresses, framing and source ports, and a payload
 * no larger than the port's frames carry. Fails when they carry no MetaRoCE
 * packet at all.
 */
absl::StatusOr<transport::EngineConfig> EngineConfigFor(const transport::EngineConfig& base,
                                                        const PortInfo& info, uint16_t udp_port);

/** The port of one more plane of a host (doc/transport.md, "Planes"): Device and Runtime take
 * these. */
struct PlaneSpec {
  std::string port;    ///< a port spec like plane 0's, with the plane's own address
  std::string faults;  ///< optional fault stage for this plane's port(s) only
};

/**
 * Adds the ports of planes 1.. (doc/transport.md, "Planes") to @p ec, made by
 * EngineConfigFor() for plane 0's @p planes[0]: their addresses, and a
 * payload every plane's frames carry. They must have plane 0's framing and
 * IP family, and the same source ports (a path keeps its port on any plane).
 */
absl::Status AddPlanes(std::span<const PortInfo* const> planes, transport::EngineConfig* ec);

}  // namespace metaroce::port

/**
 * Registers a driver at program start, like DPDK's RTE_PMD_REGISTER_VDEV. Use it
 * inside the driver's namespace with the unqualified name of its PortDriver
 * (the name becomes part of a function name).
 */
#define MR_PORT_DRIVER_REGISTER(var)                                  \
  __attribute__((constructor)) static void mr_port_register_##var() { \
    ::metaroce::port::RegisterDriver(&(var));                         \
  }

#endif  // METAROCE_MR_PORT_H
