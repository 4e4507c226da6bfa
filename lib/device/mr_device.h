/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The embedding API: a MetaRoCE device is one protocol engine on one port,
 * driven run-to-completion by the thread that owns it. A storage server
 * creates a device, uses the verbs-level calls of engine() (PDs, MRs, CQs,
 * QPs, post, poll) and calls Poll() in its loop; nothing runs behind its
 * back. See doc/device.md and examples/.
 */

#ifndef METAROCE_MR_DEVICE_H
#define METAROCE_MR_DEVICE_H

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_port.h"
#include "mr_port_pacer.h"
#include "mr_port_tx.h"
#include "mr_transport.h"

namespace metaroce {

/** How to open a device. */
struct DeviceConfig {
  /** Port driver and arguments, e.g. "udp:ip=127.0.0.1,port=4792": plane 0. */
  std::string port;
  /** Optional fault injection in front of the port (lib/port/mr_port_fault.h), e.g. "drop=0.01". */
  std::string faults;
  /**
   * Planes 1..P-1: a port on each further parallel fabric, each with its own
   * address (same framing, IP family and source ports as `port`). Paths are
   * spread over the planes the peer has too. Empty: one plane.
   */
  std::vector<port::PlaneSpec> planes;
  /**
   * Engine settings. Addresses, framing, UDP port and source ports are taken
   * from the port; everything else (paths, windows, timers, seed) from here.
   */
  transport::EngineConfig engine;
  /**
   * Name in telemetry (/metaroce/engines) and log lines; empty: "DRIVER:IP:UDP_PORT" of the port.
   */
  std::string name;
  /** Publish the engine's figures to DPDK telemetry (doc/observability.md) while polling. */
  bool telemetry = true;
  /** Pace transmission to this many bytes per second (lib/port/mr_port_pacer.h); 0: unpaced. */
  uint64_t pace_bytes_per_sec = 0;
};

namespace telemetry {
class Publisher;
}

/** One engine on one port, polled by its owner's thread. Not thread-safe. */
class Device {
 public:
  static absl::StatusOr<std::unique_ptr<Device>> Open(const DeviceConfig& cfg);
  ~Device();

  /** The verbs-level API (control path, PostSend/PostRecv, PollCq). */
  transport::Engine& engine() { return *engine_; }
  /** The engine's clock: monotonic nanoseconds (pass it to PostSend). */
  transport::TimeNs Now() const;
  /** Where peers reach this device (give it to ConnectQp on the other side). */
  transport::PeerAddr address() const;
  const port::PortInfo& port_info() const { return ports_[0]->info(); }
  /** Plane 0's port itself (with its fault stage, if one was configured). */
  const port::Port& port() const { return *ports_[0]; }
  port::PortStats port_stats() const { return ports_[0]->stats(); }
  /** Ports, one per plane (1 + DeviceConfig::planes). */
  size_t num_planes() const { return ports_.size(); }
  const port::Port& plane_port(size_t plane) const { return *ports_[plane]; }
  /** Name in telemetry and log lines (DeviceConfig::name or the default). */
  const std::string& name() const { return name_; }
  /** Index of its engine in /metaroce/ telemetry commands; -1 if telemetry is off. */
  int64_t telemetry_index() const;

  /** When Poll() sends what the frames it received call for (ACKs, READ responses). */
  enum class Replies : uint8_t {
    /** Before it returns: a caller that may not poll again soon holds nothing back. */
    kNow,
    /**
     * At the next Poll()'s first transmit step, in one burst with what the
     * caller posted in between: for a loop that polls again at once. An
     * answer to a completion this poll brought then leaves without waiting
     * behind the ACK of the request it answers.
     */
    kNextPoll,
  };

  /**
   * One run-to-completion iteration: receive a burst into the engine, run its
   * timers, transmit what it has. Returns packets received plus sent.
   */
  size_t Poll(Replies replies = Replies::kNow);

 private:
  Device() = default;
  void Publish(transport::TimeNs now);  ///< a telemetry snapshot; logs what changed
  static constexpr uint16_t kBurst = 32;
  std::string name_;
  std::unique_ptr<telemetry::Publisher> publisher_;
  std::vector<std::unique_ptr<port::Port>> ports_;  ///< by plane
  std::vector<port::Port*> port_ptrs_;              ///< the same, for TxStep
  transport::ProcessMemory mem_;
  std::unique_ptr<transport::Engine> engine_;
  std::array<port::RxPacket, kBurst> rx_;
  std::array<transport::TxSlot, kBurst> tx_;
  port::TxStepState tx_step_;
  port::TxPacer pacer_;
};

}  // namespace metaroce

#endif  // METAROCE_MR_DEVICE_H
