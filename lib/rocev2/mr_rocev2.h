/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The RoCEv2 baseline: reliable-connected RDMA WRITEs as a commodity RoCEv2
 * NIC carries them, for side-by-side comparisons in the simulator. Go-back-N
 * (IBTA vol. 1, 9.7): one PSN sequence per QP, the responder NAKs the first
 * packet out of order once ("PSN sequence error") and drops every packet
 * until the expected one comes, the requester resends everything from the
 * NAKed PSN, and a local ACK timeout resends from the oldest unacknowledged
 * packet. One UDP source port per QP, so one ECMP path per QP.
 *
 * A model, not a verbs provider: messages are lengths (their payload bytes
 * are on the wire but come from and go to no memory), WRITE is the only
 * operation. Like lib/transport it does no I/O and reads no clock: frames in
 * through OnFrame(), out through PollTx() into caller buffers, NextDeadline()
 * for the caller's timer.
 *
 * Congestion control is DCQCN (Zhu et al., SIGCOMM 2015): the responder
 * answers CE-marked packets with at most one CNP per QP and interval; the
 * requester cuts the QP's rate by alpha / 2 on each CNP and recovers it in
 * fast-recovery, additive and hyper-increase stages driven by a timer and a
 * byte counter; packets are paced at the QP's rate.
 */

#ifndef METAROCE_MR_ROCEV2_H
#define METAROCE_MR_ROCEV2_H

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "mr_wire_frame.h"

namespace metaroce::rocev2 {

using TimeNs = uint64_t;
inline constexpr TimeNs kNever = UINT64_MAX;

/** RoCEv2's UDP destination port (IANA). */
inline constexpr uint16_t kUdpPort = 4791;

/** Header sizes of IBTA vol. 1 (9.2, 9.3, 9.5) and the RoCEv2 annex. */
inline constexpr size_t kBthBytes = 12;   ///< base transport header
inline constexpr size_t kRethBytes = 16;  ///< RDMA extended header (first packet of a WRITE)
inline constexpr size_t kAethBytes = 4;   ///< ACK extended header
inline constexpr size_t kIcrcBytes = 4;   ///< invariant CRC trailer
/** PSNs are 24 bits. */
inline constexpr uint32_t kPsnMask = 0xffffff;

struct Config {
  wire::IpAddr local_ip;
  wire::MacAddr local_mac;
  /** Payload bytes per packet: the path MTU (IBTA: 256..4096). */
  uint32_t mtu_bytes = 4096;
  /** Packets a QP may have sent and not seen acknowledged (the NIC's outstanding limit). */
  uint32_t window_pkts = 128;
  /** Local ACK timeout: with packets outstanding and no ACK for this long, go back to the oldest.
   */
  TimeNs ack_timeout_ns = 100'000;
  /** The responder acknowledges every this many packets, and every packet that asks (A bit). */
  uint32_t ack_every_pkts = 4;
  /**
   * Go-backs in a row without progress (local ACK timeouts and PSN sequence
   * error NAKs) before the QP fails, as ibv_qp_attr::retry_cnt (0..7; 7, as
   * perftest sets it).
   */
  uint32_t retry_count = 7;

  /**
   * DCQCN, with the values commonly cited from the DCQCN paper (SIGCOMM 2015)
   * unless said otherwise (doc/rocev2.md). Off: a QP sends at line rate up to its window.
   */
  bool dcqcn = true;
  uint64_t line_rate_mbps = 100'000;     ///< the NIC's rate: a QP starts and recovers up to it
  TimeNs cnp_interval_ns = 50'000;       ///< responder: at most one CNP per QP in this time (N)
  double dcqcn_g = 1.0 / 256;            ///< alpha's gain (g)
  TimeNs alpha_timer_ns = 55'000;        ///< alpha decays when no CNP came for this long (K)
  TimeNs increase_timer_ns = 55'000;     ///< rate-increase timer (T)
  uint64_t increase_bytes = 10'000'000;  ///< rate-increase byte counter (B)
  uint32_t fast_recovery_steps = 5;      ///< increase events of fast recovery (F)
  uint64_t additive_mbps = 40;           ///< additive increase step (R_AI)
  uint64_t hyper_mbps = 400;             ///< hyper increase step (R_HAI): ours, 10 x R_AI
  uint64_t min_rate_mbps = 10;           ///< a QP is never paced below this
};

/** A buffer for one outgoing frame, as lib/transport's TxSlot. */
struct TxSlot {
  uint8_t* buf = nullptr;
  uint32_t cap = 0;
  uint32_t len = 0;  ///< set by PollTx
};

/** How a WRITE ended, as the verbs statuses of the same names. */
enum class WcStatus : uint8_t {
  kSuccess,
  kRetryExceeded,  ///< the QP's retries ran out on this WRITE: the QP is in error
  kFlushed,        ///< posted behind it on a QP in error
};

/** One completed WRITE (the requester's side; the responder completes nothing). */
struct Completion {
  uint64_t wr_id = 0;
  uint32_t qpn = 0;
  uint64_t bytes = 0;
  WcStatus status = WcStatus::kSuccess;
};

struct Stats {
  uint64_t tx_data_pkts = 0;    ///< data packets sent, resent ones included
  uint64_t tx_resent_pkts = 0;  ///< of those, sent again (go-back-N)
  uint64_t tx_acks = 0;
  uint64_t tx_naks = 0;           ///< PSN sequence error NAKs
  uint64_t rx_data_pkts = 0;      ///< data packets received, in order or not
  uint64_t rx_accepted_pkts = 0;  ///< in order: the expected PSN
  uint64_t rx_out_of_order = 0;   ///< dropped: after a gap
  uint64_t rx_duplicates = 0;     ///< dropped: already accepted
  uint64_t rx_dropped = 0;        ///< not parsed, not ours, or for no connected QP
  uint64_t go_backs_nak = 0;      ///< sender went back on a NAK
  uint64_t go_backs_timeout = 0;  ///< sender went back on the local ACK timeout
  uint64_t completed_bytes = 0;   ///< payload of WRITEs completed successfully
  uint64_t qp_errors = 0;         ///< QPs failed: retries exhausted
  uint64_t rx_ce_pkts = 0;        ///< data packets that arrived CE-marked
  uint64_t tx_cnps = 0;           ///< congestion notifications sent (responder)
  uint64_t rx_cnps = 0;           ///< congestion notifications received: rate cuts (requester)
};

/** A QP's DCQCN state (requester side). */
struct QpRate {
  double rate_mbps = 0;    ///< current rate (Rc)
  double target_mbps = 0;  ///< target rate (Rt)
  double alpha = 1;
  bool limited = false;  ///< paced: a CNP came and the rate is not back at line rate
};

class Engine {
 public:
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const Config& cfg);
  virtual ~Engine() = default;

  /** A new RC QP (not connected). QP numbers are 24 bits, from 1. */
  virtual uint32_t CreateQp() = 0;
  /**
   * Connects @p qpn to @p remote_qpn at @p peer (its IP address and next-hop
   * MAC); its packets leave from UDP source port @p src_port (the QP's ECMP
   * path). @p sq_psn is the PSN of its first packet, @p rq_psn the PSN of the
   * peer's first (24 bits each, as ibv_modify_qp's sq_psn and rq_psn).
   */
  virtual absl::Status ConnectQp(uint32_t qpn, const wire::IpAddr& peer_ip,
                                 const wire::MacAddr& peer_mac, uint32_t remote_qpn,
                                 uint16_t src_port, uint32_t sq_psn = 0, uint32_t rq_psn = 0) = 0;
  /** Queues an RDMA WRITE of @p bytes (>= 1) on a connected QP (not one in error). */
  virtual absl::Status PostWrite(TimeNs now, uint32_t qpn, uint64_t wr_id, uint64_t bytes) = 0;

  /** Builds up to slots.size() frames (ACKs and NAKs first, then data, QPs in turn). */
  virtual size_t PollTx(TimeNs now, std::span<TxSlot> slots) = 0;
  /** Handles one received Ethernet frame. */
  virtual void OnFrame(TimeNs now, std::span<const uint8_t> frame) = 0;
  /** When PollTx next has something to do: now (work waiting), a timeout, or kNever. */
  virtual TimeNs NextDeadline() const = 0;
  /** Takes completed WRITEs, oldest first. */
  virtual size_t PollCq(std::span<Completion> out) = 0;

  virtual const Stats& stats() const = 0;
  /** DCQCN state of @p qpn (zero for an unknown QP). */
  virtual QpRate Rate(uint32_t qpn) const = 0;
};

}  // namespace metaroce::rocev2

#endif  // METAROCE_MR_ROCEV2_H
