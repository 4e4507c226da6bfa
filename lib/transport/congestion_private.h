/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * ECN-driven AIMD congestion windows (doc/congestion.md). One CcWindow per
 * path and one per connection; the connection's bounds the sum of its paths'.
 * Pure arithmetic on what ACKs report: no clock of its own, no I/O.
 */

#ifndef METAROCE_TRANSPORT_CONGESTION_PRIVATE_H
#define METAROCE_TRANSPORT_CONGESTION_PRIVATE_H

#include <cstdint>

#include "mr_config.h"
#include "mr_transport_types.h"

namespace metaroce::transport {

/** The limits of one window, from the engine's configuration. */
struct CcLimits {
  uint32_t min_bytes = 0;      ///< never below (one full packet: a window always sends)
  uint32_t max_bytes = 0;      ///< never above (and the start: line rate until told otherwise)
  uint32_t mss_bytes = 0;      ///< one full packet, the additive step per round trip
  uint32_t initial_bytes = 0;  ///< the start (0: max_bytes); below max_bytes, slow start grows it
};

/**
 * A byte window under DCTCP-style AIMD: alpha tracks the fraction of packets
 * marked CE per round trip; a round trip with marks cuts the window once by
 * alpha / 2, one without grows it by one full packet if the window was in
 * use (within a packet of full when the ACK came). A new window starts in
 * slow start: it grows by every byte acknowledged until its first cut. Where nothing marks, a
 * smoothed RTT above the delay target cuts it Swift-style, by
 * beta (rtt - target) / rtt, once per round trip.
 */
struct CcWindow {
  static constexpr uint32_t kAlphaOne = 1u << config::kCcAlphaFracBits;

  uint32_t cwnd = 0;              ///< bytes that may be in flight
  uint32_t inflight = 0;          ///< bytes in flight (data packets sent, not yet settled)
  uint32_t alpha = kAlphaOne;     ///< marked fraction estimate, kAlphaOne = every packet
  uint64_t round_pkts = 0;        ///< packets acknowledged this round trip
  uint64_t round_marked = 0;      ///< of which the receiver saw CE-marked
  TimeNs round_end = 0;           ///< this round trip ends (alpha is updated)
  TimeNs hold_until = 0;          ///< no second cut before (one per round trip)
  TimeNs marked_hold_until = 0;   ///< hold_until of the last cut for CE marks
  uint32_t congested_rounds = 0;  ///< consecutive round trips at least half marked
  uint64_t cuts = 0;              ///< decreases so far (observability)
  uint64_t delay_cuts = 0;        ///< of which for delay above the target
  /** Growing by what is acknowledged (doubling per round trip) until the first cut. */
  bool slow_start = false;

  void Reset(const CcLimits& l) {
    *this = CcWindow{};
    cwnd = l.initial_bytes != 0 ? l.initial_bytes : l.max_bytes;
    slow_start = cwnd < l.max_bytes;
  }
  /** Room for another packet: always while nothing is in flight. */
  bool HasRoom() const { return inflight < cwnd; }
  /**
   * An ACK settled @p acked_bytes in @p acked_pkts packets, of which the
   * receiver reports @p marked_pkts arrived CE-marked, at @p now on a path
   * whose smoothed RTT is @p rtt; an @p rtt above @p delay_target (0: no
   * delay signal) is queueing to answer. inflight no longer counts the
   * settled bytes.
   */
  void OnAck(const CcLimits& l, TimeNs now, TimeNs rtt, uint32_t acked_bytes, uint32_t acked_pkts,
             uint32_t marked_pkts, TimeNs delay_target = 0, bool held = false);
  /** A retransmission timeout: the path stalled; halve, as after a mark. */
  void OnTimeout(const CcLimits& l);
};

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_CONGESTION_PRIVATE_H
