/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The host handle: sending into the fabric, the endpoint's timer, delivery.

#include <algorithm>

#include "fabric_private.h"
#include "flow_private.h"

namespace metaroce::sim {

Host::Host(FabricImpl* fabric, HostId id, const HostConfig& config, PortId port, uint64_t seed)
    : fabric_(fabric),
      id_(id),
      name_(config.name),
      mac_(config.mac),
      ipv4_(config.ipv4),
      ipv6_(config.ipv6),
      has_ipv6_(config.ipv6.v6),
      port_(port),
      tx_capacity_(config.tx_queue_frames),
      rng_(seed) {}

bool Host::Send(std::span<const uint8_t> frame) { return fabric_->HostSend(*this, frame); }

size_t Host::TxQueueUsed() const { return fabric_->ports_[port_].queue.size(); }

void Host::SetTimer(SimTime deadline) { fabric_->HostSetTimer(*this, deadline); }

SimTime Host::Now() const { return fabric_->now_; }

uint64_t Host::line_rate_bps() const { return fabric_->ports_[port_].rate_bps; }

bool FabricImpl::HostSend(Host& host, std::span<const uint8_t> frame) {
  const PortState& p = ports_[host.port_];
  if (frame.empty() || frame.size() > kMaxFrameBytes || p.peer == kNoIndex ||
      p.queue.size() >= host.tx_capacity_) {
    host.stats_.send_rejected++;
    Trace(TraceKind::kSendRejected, host.id_, nullptr, frame.size());
    return false;
  }
  const FrameHandle h = frames_.Alloc();
  Frame& f = frames_[h];
  f.bytes.assign(frame.begin(), frame.end());
  f.id = next_frame_id_++;
  f.hash = HashBytes(frame);
  // Switches route on what the sender wrote; a fault that later damages the
  // headers does not misroute the frame (it arrives damaged instead).
  const FlowKey k = ParseFlowKey(frame);
  f.l3 = k.l3;
  f.l3_offset = k.l3_offset;
  f.flow_hash = FlowHash(k);
  f.dst_host = k.l3 == L3Kind::kNone ? kNoIndex : LookupHost(k.dst);
  host.stats_.sent_frames++;
  Trace(TraceKind::kSend, host.id_, &f, 0);
  Enqueue(host.port_, h);
  return true;
}

void FabricImpl::HostSetTimer(Host& host, SimTime deadline) {
  host.timer_deadline_ = deadline;
  if (deadline == kSimTimeNever) return;  // a pending entry will find nothing to do
  const SimTime at = std::max(deadline, now_);
  // One live heap entry per host: only an earlier deadline needs a new one; a
  // later one is picked up when the current entry comes due (TimerDue).
  if (at < host.timer_event_at_) {
    host.timer_gen_++;
    host.timer_event_at_ = at;
    Schedule(at, EventKind::kTimer, host.id_, host.timer_gen_);
  }
}

bool FabricImpl::TimerDue(const Event& e) {
  Host& host = *hosts_[e.target];
  if (e.aux != host.timer_gen_) return false;  // superseded by an earlier deadline
  host.timer_event_at_ = kSimTimeNever;
  if (host.timer_deadline_ == kSimTimeNever) return false;  // cancelled
  if (host.timer_deadline_ > e.time) {                      // pushed later meanwhile
    host.timer_gen_++;
    host.timer_event_at_ = host.timer_deadline_;
    Schedule(host.timer_deadline_, EventKind::kTimer, host.id_, host.timer_gen_);
    return false;
  }
  return true;
}

void FabricImpl::OnTimer(HostId id) {
  Host& host = *hosts_[id];
  host.timer_deadline_ = kSimTimeNever;
  host.stats_.timers_fired++;
  Trace(TraceKind::kTimer, id, nullptr, 0);
  if (host.endpoint_ != nullptr) host.endpoint_->OnTimer(now_);
}

void FabricImpl::Deliver(HostId id, FrameHandle h) {
  Host& host = *hosts_[id];
  const Frame& f = frames_[h];
  host.stats_.rx_frames++;
  host.stats_.rx_bytes += f.bytes.size();
  Trace(TraceKind::kDeliver, id, &f, 0);
  if (host.endpoint_ != nullptr) {
    // The slot is not reused before Free(), so the bytes stay put even if the
    // endpoint sends (and allocates frames) from inside OnFrame.
    host.endpoint_->OnFrame(now_, f.view());
  } else {
    host.stats_.rx_no_endpoint++;
  }
  frames_.Free(h);
}

}  // namespace metaroce::sim
