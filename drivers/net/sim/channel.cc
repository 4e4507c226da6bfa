/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// One direction of a link: fault injection and propagation.

#include <cmath>

#include "fabric_private.h"

namespace metaroce::sim {

void FabricImpl::Drop(PortId port, FrameHandle h, DropCause cause) {
  ports_[port].stats.drops[static_cast<size_t>(cause)]++;
  TraceFrame(TraceKind::kDrop, port, h, static_cast<uint64_t>(cause));
  frames_.Free(h);
}

void FabricImpl::Transmit(PortId port, FrameHandle h) {
  PortState& p = ports_[port];
  if (p.peer == kNoIndex) {
    Drop(port, h, DropCause::kUnconnected);
    return;
  }
  SimTime arrive = now_ + p.delay_ps;
  if (p.has_faults) {
    const FaultConfig& fc = p.faults;
    if (now_ >= fc.blackhole_at_ps) {
      Drop(port, h, DropCause::kBlackhole);
      return;
    }
    if (fc.loss_probability > 0 && p.rng.Bernoulli(fc.loss_probability)) {
      Drop(port, h, DropCause::kLoss);
      return;
    }
    if (fc.burst_loss.enabled) {
      const GilbertElliottConfig& ge = fc.burst_loss;
      if (ge.step_ps > 0) {
        // The steps while the link idled, at once: the chain's state k steps
        // on is the stationary share plus the start's excess times (1-a-b)^k.
        const SimTime idle_steps = (now_ - p.ge_at) / ge.step_ps;
        p.ge_at = now_;
        if (idle_steps > 1) {
          const double a = ge.p_good_to_bad, b = ge.p_bad_to_good;
          const double stationary = a + b > 0 ? a / (a + b) : 0;
          const double decay = std::pow(1 - a - b, static_cast<double>(idle_steps - 1));
          p.ge_bad = p.rng.Bernoulli(stationary + ((p.ge_bad ? 1 : 0) - stationary) * decay);
        }
      }
      const bool lost = p.rng.Bernoulli(p.ge_bad ? ge.loss_bad : ge.loss_good);
      if (p.rng.Bernoulli(p.ge_bad ? ge.p_bad_to_good : ge.p_good_to_bad)) p.ge_bad = !p.ge_bad;
      if (lost) {
        Drop(port, h, DropCause::kBurstLoss);
        return;
      }
    }
    if (fc.corrupt_probability > 0 && p.rng.Bernoulli(fc.corrupt_probability)) {
      Frame& f = frames_[h];
      uint64_t where;
      uint8_t flip;
      if (fc.corrupt_mode == CorruptMode::kBit) {
        where = p.rng.Below(f.bytes.size() * 8);
        flip = static_cast<uint8_t>(1u << (where % 8));
        f.bytes[where / 8] ^= flip;
      } else {
        where = p.rng.Below(f.bytes.size());
        flip = static_cast<uint8_t>(1 + p.rng.Below(255));
        f.bytes[where] ^= flip;
      }
      f.Touch(where << 8 | flip);
      p.stats.corrupted++;
      Trace(TraceKind::kCorrupt, port, &f, where);
      if (fc.corrupt_drop) {
        Drop(port, h, DropCause::kCorrupt);
        return;
      }
    }
    FrameHandle copy = FramePool::kNone;
    if (fc.duplicate_probability > 0 && p.rng.Bernoulli(fc.duplicate_probability)) {
      copy = frames_.Alloc();
      Frame& c = frames_[copy];
      const Frame& f = frames_[h];
      c.bytes.assign(f.bytes.begin(), f.bytes.end());
      c.id = next_frame_id_++;
      c.hash = f.hash;
      c.flow_hash = f.flow_hash;
      c.dst_host = f.dst_host;
      c.l3 = f.l3;
      c.l3_offset = f.l3_offset;
      p.stats.duplicated++;
      Trace(TraceKind::kDuplicate, port, &c, f.id);
    }
    for (FrameHandle x : {h, copy}) {
      if (x == FramePool::kNone) continue;
      SimTime t = arrive;
      if (fc.reorder_probability > 0 && p.rng.Bernoulli(fc.reorder_probability)) {
        const SimTime extra = p.rng.Range(1, fc.reorder_max_delay_ps);
        t += extra;
        p.stats.reordered++;
        TraceFrame(TraceKind::kReorder, port, x, static_cast<uint64_t>(extra));
      }
      Schedule(t, EventKind::kArrive, p.peer, x);
    }
    return;
  }
  Schedule(arrive, EventKind::kArrive, p.peer, h);
}

void FabricImpl::OnArrive(PortId ingress, FrameHandle h) {
  const PortId from = ports_[ingress].peer;
  PortState& src = ports_[from];
  // A frame still on the wire when the blackhole starts is lost too.
  if (now_ >= src.faults.blackhole_at_ps) {
    Drop(from, h, DropCause::kBlackhole);
    return;
  }
  src.stats.delivered_frames++;
  const NodeRef owner = ports_[ingress].owner;
  if (owner.kind == NodeRef::Kind::kHost) {
    Deliver(owner.index, h);
  } else {
    Forward(owner.index, ingress, h);
  }
}

}  // namespace metaroce::sim
