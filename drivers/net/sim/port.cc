/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Output queues: admission (drop-tail), ECN marking, serialisation.

#include <algorithm>

#include "fabric_private.h"
#include "flow_private.h"

namespace metaroce::sim {
namespace {

constexpr uint64_t kTouchCeMark = 0xce;

/** Marks CE for a frame finding @p occupancy bytes queued: the step threshold, or RED. */
bool ShouldMark(PortState& p, uint64_t occupancy) {
  if (!p.red.enabled()) return occupancy > p.ecn_threshold_bytes;
  if (occupancy <= p.red.min_bytes) return false;
  if (occupancy > p.red.max_bytes) return true;
  const double ramp = static_cast<double>(occupancy - p.red.min_bytes) /
                      static_cast<double>(p.red.max_bytes - p.red.min_bytes);
  return p.mark_rng.Bernoulli(p.red.max_prob * ramp);
}

}  // namespace

void FabricImpl::Enqueue(PortId port, FrameHandle h) {
  PortState& p = ports_[port];
  Frame& f = frames_[h];
  const uint64_t len = f.bytes.size();
  const uint64_t occupancy = p.queue_bytes;  // includes the frame on the wire
  if (p.is_switch_port) {
    p.stats.queue_bytes.Add(occupancy);
    // A frame PFC admitted (by its ingress's account) is not dropped here.
    if (f.pfc_ingress == FramePool::kNone && occupancy + len > p.buffer_bytes) {
      Drop(port, h, DropCause::kQueueFull);
      return;
    }
    if (ShouldMark(p, occupancy) && MarkCe(f.bytes, f.l3, f.l3_offset) == EcnResult::kMarked) {
      f.Touch(kTouchCeMark);
      p.stats.ecn_marked++;
      Trace(TraceKind::kEcnMark, port, &f, occupancy);
    }
  }
  p.queue.push_back(h);
  p.queue_bytes += len;
  p.stats.enqueued_frames++;
  p.stats.max_queue_bytes = std::max(p.stats.max_queue_bytes, p.queue_bytes);
  Trace(TraceKind::kEnqueue, port, &f, occupancy);
  StartTx(port);
}

void FabricImpl::OnTxDone(PortId port) {
  PortState& p = ports_[port];
  const FrameHandle h = p.queue.front();
  p.queue.pop_front();
  const size_t len = frames_[h].bytes.size();
  p.queue_bytes -= len;
  p.stats.tx_frames++;
  p.stats.tx_bytes += len;
  TraceFrame(TraceKind::kTxDone, port, h, 0);
  if (frames_[h].pfc_ingress != FramePool::kNone) PfcRelease(h);
  p.busy = false;
  StartTx(port);  // not while paused: the frame on the wire was finished
  Transmit(port, h);
  if (p.owner.kind == NodeRef::Kind::kHost) {
    Endpoint* ep = hosts_[p.owner.index]->endpoint();
    if (ep != nullptr) ep->OnTxReady(now_);
  }
}

}  // namespace metaroce::sim
