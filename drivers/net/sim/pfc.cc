/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Priority flow control (IEEE 802.1Qbb) at switch ingress ports: each
// ingress accounts the bytes of the frames it brought that are still queued
// in the switch; above XOFF it pauses its upstream, at XON it resumes it.
// PAUSE frames travel the reverse direction of the link: they leave after
// the frame being serialised there and take the link delay to arrive.

#include <algorithm>

#include "fabric_private.h"

namespace metaroce::sim {

bool FabricImpl::PfcAdmit(PortId ingress, PortId out, FrameHandle h) {
  PortState& in = ports_[ingress];
  Frame& f = frames_[h];
  const uint64_t len = f.bytes.size();
  if (in.pfc_ingress_bytes + len > in.pfc_xoff_bytes + in.pfc_headroom_bytes) {
    Drop(out, h, DropCause::kPfcHeadroom);
    return false;
  }
  f.pfc_ingress = ingress;
  in.pfc_ingress_bytes += len;
  in.stats.pfc_max_ingress_bytes = std::max(in.stats.pfc_max_ingress_bytes, in.pfc_ingress_bytes);
  if (!in.pfc_xoff_sent && in.pfc_ingress_bytes > in.pfc_xoff_bytes) PfcSend(ingress, true);
  return true;
}

void FabricImpl::PfcRelease(FrameHandle h) {
  Frame& f = frames_[h];
  PortState& in = ports_[f.pfc_ingress];
  in.pfc_ingress_bytes -= f.bytes.size();
  f.pfc_ingress = FramePool::kNone;  // the next switch accounts it afresh
  if (in.pfc_xoff_sent && in.pfc_ingress_bytes <= in.pfc_xon_bytes) {
    PfcSend(static_cast<PortId>(&in - ports_.data()), false);
  }
}

void FabricImpl::PfcSend(PortId ingress, bool pause) {
  PortState& in = ports_[ingress];
  in.pfc_xoff_sent = pause;
  if (pause) {
    in.stats.pfc_pauses_sent++;
  } else {
    in.stats.pfc_resumes_sent++;
  }
  if (in.peer == kNoIndex) return;
  // A MAC control frame goes out between data frames: after the one on the
  // wire (if any), then it is on the wire itself and crosses the link.
  const SimTime leave = in.busy ? std::max(in.tx_done_at, now_) : now_;
  const SimTime at = leave + WireTimePs(in, kPfcPauseFrameBytes) + in.delay_ps;
  Schedule(at, EventKind::kPfc, in.peer, pause ? 1 : 0);
}

void FabricImpl::OnPfc(PortId port, bool pause) {
  PortState& p = ports_[port];
  Trace(TraceKind::kPfcPause, port, nullptr, pause ? 1 : 0);
  if (pause == p.pfc_paused) return;
  p.pfc_paused = pause;
  if (pause) {
    p.pfc_paused_since = now_;
    p.stats.pfc_pauses_received++;
    return;  // a frame on the wire finishes; StartTx starts no other
  }
  p.stats.pfc_paused_ps += now_ - p.pfc_paused_since;
  StartTx(port);
}

}  // namespace metaroce::sim
