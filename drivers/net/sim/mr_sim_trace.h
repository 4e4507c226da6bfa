/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The simulation trace: every externally meaningful event (a frame sent,
 * queued, marked, dropped, damaged, copied, delivered; a timer fired; a route
 * change) is folded into a running 64-bit hash. Same seed and same inputs give
 * the same hash; tests compare it across runs. An optional observer sees each
 * record as it happens.
 */

#ifndef METAROCE_MR_SIM_TRACE_H
#define METAROCE_MR_SIM_TRACE_H

#include <cstdint>
#include <span>

#include "mr_sim_time.h"

namespace metaroce::sim {

/** What happened. Values are part of the trace hash: append only. */
enum class TraceKind : uint8_t {
  kSend = 1,      ///< host accepted a frame (component: host)
  kSendRejected,  ///< host refused a frame (component: host)
  kEnqueue,       ///< frame accepted by an output queue (component: port; arg: occupancy before)
  kEcnMark,       ///< frame rewritten to CE (component: port)
  kTxDone,        ///< last bit left the port (component: port)
  kDrop,          ///< frame dropped (component: port or switch; arg: DropCause)
  kCorrupt,       ///< frame damaged (component: port; arg: bit or byte offset)
  kDuplicate,     ///< copy made (component: port; arg: id of the original)
  kReorder,       ///< extra delay given (component: port; arg: delay in ps)
  kArrive,        ///< frame reached a switch (component: ingress port)
  kDeliver,       ///< frame handed to a host (component: host)
  kTimer,         ///< OnTimer called (component: host)
  kRouteChange,   ///< link left (arg 0) or rejoined (arg 1) routing (component: link)
  kCallback,      ///< a scheduled callback ran (arg: callback index)
  kPfcPause,      ///< a PAUSE took effect (component: the paused port; arg: 1 pause, 0 resume)
};

/** Name of a trace kind ("enqueue"). */
const char* TraceKindName(TraceKind k);

/** One trace record. Frame fields are zero for records without a frame. */
struct TraceRecord {
  SimTime time = 0;
  TraceKind kind = TraceKind::kSend;
  uint32_t component = 0;  ///< host, port, switch or link index, by kind
  uint64_t frame_id = 0;   ///< 1-based, in order of creation (Send or duplication)
  /**
   * Fingerprint of the frame's content: HashBytes() of the bytes the host
   * sent, folded with every later change (CE mark, corruption).
   */
  uint64_t frame_hash = 0;
  uint64_t arg = 0;  ///< kind-specific, see TraceKind
};

/** Deterministic 64-bit hash of a byte string (platform independent, unseeded). */
uint64_t HashBytes(std::span<const uint8_t> bytes);

/** Running hash over trace records. */
class TraceHash {
 public:
  /** Folds one record into the hash. */
  void Add(const TraceRecord& r);
  /** Hash of every record so far. */
  uint64_t value() const { return h_; }
  /** Records folded in. */
  uint64_t records() const { return n_; }

 private:
  uint64_t h_ = 0x6a09e667f3bcc908ULL;
  uint64_t n_ = 0;
};

}  // namespace metaroce::sim

#endif  // METAROCE_MR_SIM_TRACE_H
