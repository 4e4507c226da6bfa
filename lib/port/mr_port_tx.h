/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The transmit step of every loop that drives an engine over a port
 * (lib/device, lib/runtime): the engine fills port buffers, a hook may take
 * some back before they go out, the pacer is charged, the port sends.
 */

#ifndef METAROCE_MR_PORT_TX_H
#define METAROCE_MR_PORT_TX_H

#include <cstdint>
#include <span>

#include "absl/functional/function_ref.h"
#include "mr_port.h"
#include "mr_port_pacer.h"
#include "mr_transport.h"

namespace metaroce::port {

/** Transmit buffers asked for first; doubled while the engine fills them all. */
inline constexpr uint16_t kFirstTxBurst = 4;
/**
 * Transmit bursts one step sends at most, so that a sender with a large
 * window still comes back to receive (ACKs) in time.
 */
inline constexpr int kMaxTxBurstsPerStep = 8;

/**
 * An iteration that starts this long after the previous one (the thread was
 * descheduled, or the host stalled) reads its receive queue, up to
 * kMaxRxBurstsWhenLate bursts, before the engine's timers run: the ACKs that
 * queued meanwhile would otherwise fire retransmission timeouts for packets
 * that arrived. Half the RTO floor, far above a busy loop's iteration.
 */
inline constexpr transport::TimeNs kLatePollNs = config::kRtoMinNs / 2;
/**
 * Receive bursts a late iteration reads at most: enough for a stall of
 * milliseconds' ACKs, few enough that the ACKs its own data packets owe go
 * out soon after.
 */
inline constexpr int kMaxRxBurstsWhenLate = 8;

/** What one loop keeps between steps. */
struct TxStepState {
  /**
   * Buffers the next step asks for first. A latency-bound exchange sends one
   * or two packets per poll, and taking (and giving back) a whole burst of
   * mbufs for each cost a quarter of the CPU; the next step starts from what
   * this one needed.
   */
  uint16_t want = kFirstTxBurst;
  transport::TimeNs polled_at = 0;  ///< the last iteration began (RxBurstsFor)
};

/** Receive bursts the iteration beginning at @p now reads at most: 1, more when it is late. */
inline int RxBurstsFor(TxStepState* st, transport::TimeNs now) {
  const bool late = st->polled_at != 0 && now - st->polled_at >= kLatePollNs;
  st->polled_at = now;
  return late ? kMaxRxBurstsWhenLate : 1;
}

/**
 * Runs @p engine's timers and sends what it has for @p now through @p queue
 * of @p port, in bursts of at most @p slots.size() buffers. @p keep is called
 * for every filled buffer before it is sent; it sets len to 0 to keep the
 * packet from the port (e.g. one addressed to the loop itself). Returns the
 * packets the engine filled.
 */
size_t TxStep(Port& port, uint16_t queue, transport::Engine& engine, TxPacer& pacer,
              transport::TimeNs now, std::span<transport::TxSlot> slots, TxStepState* st,
              absl::FunctionRef<void(transport::TxSlot&)> keep);

/**
 * TxStep for an engine of several planes: @p ports[k] is plane k's port
 * (EngineConfig::extra_planes). Buffers come from plane 0's port; a packet the
 * engine puts on plane k > 0 is copied into a buffer of that plane's port and
 * sent there (a driver's buffers leave only through the port that gave them),
 * or dropped if that port has none free (the engine recovers it as a loss).
 */
size_t TxStep(std::span<Port* const> ports, uint16_t queue, transport::Engine& engine,
              TxPacer& pacer, transport::TimeNs now, std::span<transport::TxSlot> slots,
              TxStepState* st, absl::FunctionRef<void(transport::TxSlot&)> keep);

}  // namespace metaroce::port

#endif  // METAROCE_MR_PORT_TX_H
