/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * What runs on a simulated host (an Endpoint: the protocol engine or a test
 * driver) and the handle it uses to reach its NIC (Host). The endpoint is a
 * pure state machine: the fabric calls it with the current simulated time; it
 * sends frames and arms one timer. Callbacks happen only from inside
 * Fabric::RunUntil() / RunUntilIdle(), one at a time, never re-entrantly:
 * Send() and SetTimer() only record work, they never call back.
 */

#ifndef METAROCE_MR_SIM_ENDPOINT_H
#define METAROCE_MR_SIM_ENDPOINT_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "mr_sim_config.h"
#include "mr_sim_rng.h"
#include "mr_sim_stats.h"
#include "mr_sim_time.h"
#include "mr_wire_frame.h"

namespace metaroce::sim {

class FabricImpl;

/** Index of a host in its fabric (0-based, in order of creation). */
using HostId = uint32_t;
/** Index of a port in its fabric (0-based, in order of creation). */
using PortId = uint32_t;

/** Code running on a host. Implemented by the engine adapter or a test. */
class Endpoint {
 public:
  virtual ~Endpoint() = default;

  /**
   * A frame arrived (last bit received). The bytes are valid only during the
   * call; they are exactly what the sender sent, unless a fault damaged them or
   * a switch set CE. Nothing is verified: parse them (wire::ParseFrame).
   * @param now   arrival time
   * @param frame the Ethernet frame, without FCS
   */
  virtual void OnFrame(SimTime now, std::span<const uint8_t> frame) = 0;

  /**
   * The deadline set with Host::SetTimer() was reached. The timer is disarmed
   * before the call; re-arm it from here if needed.
   * @param now the deadline (never earlier; equal unless it was set in the past)
   */
  virtual void OnTimer(SimTime now) = 0;

  /**
   * A frame finished serialising and freed a tx queue slot
   * (Host::TxQueueFree() > 0). Called after every transmitted frame, so an
   * endpoint that had to stop on a full queue can continue here. Default: nothing.
   */
  virtual void OnTxReady(SimTime now) { (void)now; }
};

/**
 * A simulated host with one NIC port. Owned by the Fabric; the pointer stays
 * valid for the Fabric's lifetime. Not thread-safe (nothing in the simulator is).
 */
class Host {
 public:
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  /** Attaches the code that runs here (nullptr detaches). Not owned. */
  void Attach(Endpoint* endpoint) {
    endpoint_ = endpoint;
    if (endpoint != nullptr) attachments_++;
  }
  /**
   * Endpoints attached so far, this one included: a restarted endpoint is
   * told apart by it (simulated engines derive their incarnation from it).
   */
  uint32_t attachments() const { return attachments_; }
  /** The attached endpoint, or nullptr. */
  Endpoint* endpoint() const { return endpoint_; }

  /**
   * Queues a frame for transmission at the current time. The bytes are copied.
   * Frames leave in order at the link's line rate. The first switch routes
   * by the destination IP and ECMP-hashes the 5-tuple (so the UDP source port
   * picks the path); the Ethernet addresses are not looked at.
   * @param frame Ethernet frame without FCS, 1..kMaxFrameBytes bytes
   * @return false (and nothing queued) when the tx queue is full, the size is
   *         out of range or the host has no link
   */
  bool Send(std::span<const uint8_t> frame);

  /** Free tx queue slots: how many Send() calls would succeed now. */
  size_t TxQueueFree() const { return tx_capacity_ - TxQueueUsed(); }
  /** Tx queue capacity in frames (HostConfig::tx_queue_frames). */
  size_t TxQueueCapacity() const { return tx_capacity_; }
  /** Frames queued or on the wire. */
  size_t TxQueueUsed() const;

  /**
   * Arms the host's single timer: OnTimer(deadline) will be called at
   * @p deadline (at the current time if it is already past). Re-arming replaces
   * the previous deadline; kSimTimeNever cancels. Cheap: pushing a deadline
   * later never touches the event heap until the earlier one would have fired.
   */
  void SetTimer(SimTime deadline);
  /** Disarms the timer. */
  void CancelTimer() { SetTimer(kSimTimeNever); }
  /** Armed deadline, or kSimTimeNever. */
  SimTime TimerDeadline() const { return timer_deadline_; }

  /** Current simulated time. */
  SimTime Now() const;

  HostId id() const { return id_; }                   ///< index in the fabric
  const std::string& name() const { return name_; }   ///< HostConfig::name or "host<id>"
  const wire::MacAddr& mac() const { return mac_; }   ///< HostConfig::mac
  const wire::IpAddr& ipv4() const { return ipv4_; }  ///< always set
  const wire::IpAddr& ipv6() const { return ipv6_; }  ///< all zero when the host has none
  bool has_ipv6() const { return has_ipv6_; }         ///< an IPv6 address was configured
  PortId port() const { return port_; }               ///< the NIC port (Fabric::port_stats())
  /** NIC line rate in bits/s (0 until a link is connected). */
  uint64_t line_rate_bps() const;
  /** This host's own seeded random stream, for the endpoint's use. */
  Rng& rng() { return rng_; }
  const HostStats& stats() const { return stats_; }  ///< host-side counters

 private:
  friend class FabricImpl;
  Host(FabricImpl* fabric, HostId id, const HostConfig& config, PortId port, uint64_t seed);

  FabricImpl* fabric_;
  HostId id_;
  std::string name_;
  wire::MacAddr mac_;
  wire::IpAddr ipv4_;
  wire::IpAddr ipv6_;
  bool has_ipv6_ = false;
  PortId port_;
  size_t tx_capacity_;
  Endpoint* endpoint_ = nullptr;
  uint32_t attachments_ = 0;
  Rng rng_;
  HostStats stats_;
  // Timer: the deadline the endpoint asked for, and the time of the one heap
  // entry that is still valid (identified by timer_gen_); see SetTimer().
  SimTime timer_deadline_ = kSimTimeNever;
  SimTime timer_event_at_ = kSimTimeNever;
  uint32_t timer_gen_ = 0;
};

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_ENDPOINT_H
