/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// ECN AIMD arithmetic (congestion_private.h, doc/congestion.md).

#include <algorithm>

#include "congestion_private.h"

namespace metaroce::transport {

void CcWindow::OnAck(const CcLimits& l, TimeNs now, TimeNs rtt, uint32_t acked_bytes,
                     uint32_t acked_pkts, uint32_t marked_pkts, TimeNs delay_target, bool held) {
  marked_pkts = std::min(marked_pkts, acked_pkts);  // a peer's counters cannot mark more
  if (now >= round_end) {
    // A round trip ended: alpha <- (1 - g) alpha + g F, F its marked fraction.
    if (round_pkts != 0) {
      const uint64_t f = round_marked * kAlphaOne / round_pkts;
      alpha = static_cast<uint32_t>(alpha - (alpha >> config::kCcAlphaGainShift) +
                                    (f >> config::kCcAlphaGainShift));
      const bool congested = round_marked * 256 >= round_pkts * config::kCcCongestedRoundShare256;
      congested_rounds = congested ? congested_rounds + 1 : 0;
    }
    round_pkts = round_marked = 0;
    round_end = now + rtt;
  }
  round_pkts += acked_pkts;
  round_marked += marked_pkts;
  if (marked_pkts != 0) {
    if (now >= hold_until) {
      const uint32_t cut = static_cast<uint32_t>(uint64_t{cwnd} * std::max(alpha, 1u) >>
                                                 (config::kCcAlphaFracBits + 1));
      cwnd = std::max(l.min_bytes, cwnd - std::min(cut, cwnd));
      hold_until = marked_hold_until = now + rtt;
      cuts++;
      slow_start = false;
    }
    return;
  }
  if (delay_target != 0 && rtt > delay_target) {
    if (now >= hold_until) {
      const uint64_t share = std::min<uint64_t>(
          (rtt - delay_target) * config::kCcDelayGain256 / rtt, config::kCcMaxDelayCut256);
      const uint32_t cut = static_cast<uint32_t>(uint64_t{cwnd} * share >> 8);
      cwnd = std::max(l.min_bytes, cwnd - std::min(cut, cwnd));
      hold_until = now + rtt;
      cuts++;
      delay_cuts++;
      slow_start = false;
    }
    return;  // no growth while the queue is above the target
  }
  if (acked_bytes == 0 || cwnd >= l.max_bytes) return;
  // Only a window that was in use grows (RFC 7661): a path the NIC's rate
  // or the spraying keeps below its window would otherwise grow without
  // bound, and its window would stop meaning anything.
  if (!held && uint64_t{inflight} + acked_bytes + l.mss_bytes < cwnd) return;
  // Slow start: every byte acknowledged, doubling per round trip. Then one
  // full packet per window's worth of bytes acknowledged: + 1 MSS per RTT.
  const uint64_t add =
      slow_start ? acked_bytes : std::max<uint64_t>(uint64_t{l.mss_bytes} * acked_bytes / cwnd, 1);
  cwnd = static_cast<uint32_t>(std::min<uint64_t>(cwnd + add, l.max_bytes));
}

void CcWindow::OnTimeout(const CcLimits& l) {
  cwnd = std::max(l.min_bytes, cwnd / 2);
  cuts++;
  slow_start = false;
}

}  // namespace metaroce::transport
