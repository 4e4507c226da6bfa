/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Counters of the simulated fabric. A port's counters cover its output queue
 * and the link direction leaving it (faults are injected there), so one
 * PortStats describes everything that happened to frames sent from that port.
 */

#ifndef METAROCE_MR_SIM_STATS_H
#define METAROCE_MR_SIM_STATS_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mr_sim_time.h"

namespace metaroce::sim {

/**
 * Log-linear histogram of byte counts: exact below 16, then 16 buckets per
 * power of two (relative error below 6.25%). Fixed size, no allocation.
 */
class QueueHistogram {
 public:
  static constexpr int kSubBucketBits = 4;                       ///< log2 of buckets per octave
  static constexpr uint64_t kSubBuckets = 1u << kSubBucketBits;  ///< buckets per octave
  /** Total buckets: enough for any uint64_t. */
  static constexpr int kBuckets = (64 - kSubBucketBits + 1) * static_cast<int>(kSubBuckets);

  /** Records one sample. */
  void Add(uint64_t value) {
    buckets_[Index(value)]++;
    count_++;
  }
  /** Samples recorded. */
  uint64_t count() const { return count_; }
  /**
   * Smallest bucket upper bound such that at least @p q (0..1) of the samples
   * are at or below it; 0 when empty. Never below the true percentile.
   */
  uint64_t Percentile(double q) const;

  /** Bucket of a value (public for tests). */
  static int Index(uint64_t value);
  /** Largest value that falls in bucket @p index. */
  static uint64_t UpperBound(int index);

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
};

/** Why a frame vanished inside the fabric. */
enum class DropCause : uint8_t {
  kQueueFull,    ///< output buffer full (drop-tail)
  kLoss,         ///< Bernoulli loss fault
  kBurstLoss,    ///< Gilbert-Elliott loss fault
  kBlackhole,    ///< link blackholed
  kCorrupt,      ///< damaged by the corruption fault and dropped (FaultConfig::corrupt_drop)
  kNoRoute,      ///< switch had no route for the destination (or no IP header)
  kUnconnected,  ///< port has no link
  kPfcHeadroom,  ///< PFC on: its ingress's headroom was used up (too little for the link)
  kCount,
};

/** Stable snake_case name of a drop cause ("queue_full"). */
const char* DropCauseName(DropCause c);

/** Output port and its outgoing link direction. */
struct PortStats {
  uint64_t enqueued_frames = 0;   ///< accepted into the output queue
  uint64_t tx_frames = 0;         ///< fully serialised onto the link
  uint64_t tx_bytes = 0;          ///< frame bytes of those (no wire overhead)
  uint64_t delivered_frames = 0;  ///< arrived at the far end (copies included)
  std::array<uint64_t, static_cast<size_t>(DropCause::kCount)> drops{};  ///< by DropCause
  uint64_t ecn_marked = 0;       ///< ECT frames rewritten to CE at enqueue
  uint64_t corrupted = 0;        ///< frames damaged by the corruption fault
  uint64_t duplicated = 0;       ///< extra copies made by the duplication fault
  uint64_t reordered = 0;        ///< frames given extra delay by the reorder fault
  uint64_t max_queue_bytes = 0;  ///< largest occupancy reached (incl. the frame on the wire)
  // PFC. A switch port as an ingress: what it sent upstream and held.
  uint64_t pfc_pauses_sent = 0;        ///< PAUSE (XOFF) frames sent to the upstream port
  uint64_t pfc_resumes_sent = 0;       ///< resumes (XON) sent
  uint64_t pfc_max_ingress_bytes = 0;  ///< most bytes its frames held in the switch at once
  // Any port as a transmitter: how long it was paused by its peer.
  uint64_t pfc_pauses_received = 0;  ///< pauses that took effect here
  SimTime pfc_paused_ps = 0;         ///< time paused, in pauses that ended
  /** Occupancy found by each arriving frame (switch ports; NIC ports sample nothing). */
  QueueHistogram queue_bytes;

  /** Frames dropped for @p c. */
  uint64_t dropped(DropCause c) const { return drops[static_cast<size_t>(c)]; }
};

/** Host side counters beyond its port. */
struct HostStats {
  uint64_t sent_frames = 0;    ///< accepted by Send()
  uint64_t send_rejected = 0;  ///< Send() returned false (queue full, bad size, no link)
  uint64_t rx_frames = 0;      ///< delivered to the endpoint (or discarded if none)
  uint64_t rx_bytes = 0;
  uint64_t rx_no_endpoint = 0;  ///< arrived while no endpoint was attached
  uint64_t timers_fired = 0;    ///< OnTimer calls
};

/**
 * Jain's fairness index of @p x: (sum x)^2 / (n sum x^2), 1 when all are
 * equal, 1/n when one has everything; 0 when all are 0 or there are none.
 */
double JainIndex(std::span<const double> x);

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_STATS_H
