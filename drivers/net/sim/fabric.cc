/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The run loop, event dispatch and the trace.

#include <algorithm>
#include <utility>

#include "fabric_private.h"

namespace metaroce::sim {

void FabricImpl::RunLoop(SimTime limit) {
  while (!events_.empty() && events_.top().time <= limit) {
    if (routes_dirty_) ComputeRoutes();
    const Event e = events_.Pop();
    // Superseded timer and reconvergence entries vanish without moving the clock.
    if (e.kind == EventKind::kTimer && !TimerDue(e)) continue;
    if (e.kind == EventKind::kReconverge && links_[e.target].reconverge_gen != e.aux) continue;
    now_ = e.time;
    events_processed_++;
    switch (e.kind) {
      case EventKind::kTxDone: OnTxDone(e.target); break;
      case EventKind::kArrive: OnArrive(e.target, e.aux); break;
      case EventKind::kTimer: OnTimer(e.target); break;
      case EventKind::kReconverge: OnReconverge(e.target, e.aux); break;
      case EventKind::kPfc: OnPfc(e.target, e.aux != 0); break;
      case EventKind::kCallback: {
        std::function<void()> fn = std::move(callbacks_[e.target]);
        callbacks_[e.target] = nullptr;
        free_callbacks_.push_back(e.target);
        Trace(TraceKind::kCallback, 0, nullptr, e.target);
        fn();
        break;
      }
    }
  }
}

void FabricImpl::ScheduleCallback(SimTime at, std::function<void()> fn) {
  uint32_t slot;
  if (free_callbacks_.empty()) {
    slot = static_cast<uint32_t>(callbacks_.size());
    callbacks_.push_back(std::move(fn));
  } else {
    slot = free_callbacks_.back();
    free_callbacks_.pop_back();
    callbacks_[slot] = std::move(fn);
  }
  Schedule(std::max(at, now_), EventKind::kCallback, slot, 0);
}

void FabricImpl::Trace(TraceKind kind, uint32_t component, const Frame* f, uint64_t arg) {
  TraceRecord r;
  r.time = now_;
  r.kind = kind;
  r.component = component;
  if (f != nullptr) {
    r.frame_id = f->id;
    r.frame_hash = f->hash;
  }
  r.arg = arg;
  trace_.Add(r);
  if (observer_) observer_(r);
}

uint32_t FabricImpl::LookupHost(const wire::IpAddr& addr) const { return addr_to_host_.Find(addr); }

Host* FabricImpl::FindHost(const wire::IpAddr& addr) {
  const uint32_t id = LookupHost(addr);
  return id == kNoIndex ? nullptr : hosts_[id].get();
}

}  // namespace metaroce::sim
