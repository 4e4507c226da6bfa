/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Transmit pacing for the run-to-completion loops (lib/device, lib/runtime):
 * a token bucket that bounds the bytes a loop hands to its port per second.
 * The loop asks Ready() before pulling packets from the engine and Spend()s
 * what it sent; the engine keeps whatever is not sent yet, so pacing delays
 * packets and never drops them. Time comes in as an argument, as for the
 * engine. The rate is set by configuration today; congestion control will
 * set it per connection later.
 */

#ifndef METAROCE_MR_PORT_PACER_H
#define METAROCE_MR_PORT_PACER_H

#include <algorithm>
#include <cstdint>

#include "mr_transport_types.h"

namespace metaroce::port {

/** Bytes a paced loop may send at once after being idle (one burst of 4 KiB packets, and some). */
inline constexpr uint64_t kPacerBurstBytes = 64 * 1024;

/** A token bucket of bytes; rate 0 means unpaced (always ready). One thread. */
class TxPacer {
 public:
  /** @param bytes_per_sec 0: no pacing */
  explicit TxPacer(uint64_t bytes_per_sec = 0, uint64_t burst_bytes = kPacerBurstBytes)
      : rate_(static_cast<double>(bytes_per_sec) / 1e9),
        burst_(static_cast<double>(burst_bytes)),
        tokens_(static_cast<double>(burst_bytes)) {}

  bool enabled() const { return rate_ > 0; }

  /** True when the loop may transmit at @p now: the bucket is not in debt. */
  bool Ready(transport::TimeNs now) {
    if (!enabled()) return true;
    if (now > last_) {
      tokens_ = std::min(burst_, tokens_ + static_cast<double>(now - last_) * rate_);
      last_ = now;
    }
    return tokens_ > 0;
  }

  /** The loop sent @p bytes (a burst may overdraw; the debt delays the next one). */
  void Spend(uint64_t bytes) {
    if (enabled()) tokens_ -= static_cast<double>(bytes);
  }

  /** Earliest time Ready() can be true again (now if it is). */
  transport::TimeNs ReadyAt() const {
    if (!enabled() || tokens_ > 0) return last_;
    return last_ + static_cast<transport::TimeNs>(-tokens_ / rate_) + 1;
  }

 private:
  double rate_;  ///< bytes per nanosecond
  double burst_;
  double tokens_;
  transport::TimeNs last_ = 0;
};

}  // namespace metaroce::port

#endif  // METAROCE_MR_PORT_PACER_H
