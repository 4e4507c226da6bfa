/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Loss and path health: what is lost (SACK holes past the reorder window,
// timeouts), what goes again, and when a path is given up.

#include <algorithm>

#include "engine_private.h"

namespace metaroce::transport {

// ---- Loss and path health ----

void EngineImpl::AdvanceUna(TxPath* path) {
  while (path->una != path->next_psn && !path->At(path->una).live) path->una++;
}

void EngineImpl::DeclareLost(TimeNs now, Connection* c, TxPath* path, uint32_t psn, bool by_rto) {
  Inflight& e = path->At(psn);
  if (!e.live) return;
  e.live = false;
  path->inflight--;
  c->inflight--;
  path->cc.inflight -= e.bytes;
  c->cc.inflight -= e.bytes;
  path->lost_pkts++;
  if (by_rto) {
    stats.lost_detected_rto++;
  } else {
    stats.lost_detected_sack++;
  }
  // A lost extra copy (tail-loss probe, rescue) sends nothing again and does
  // not count against the path's health: in a stall, copies of one chunk
  // would otherwise multiply and fail healthy paths.
  if (e.copy) return;
  if (!by_rto) path->health_lost++;
  TxMsg* m = Msg(c, e.msg);
  if (m == nullptr || m->done || e.epoch != m->epoch || e.probe || m->delivered.Test(e.chunk)) {
    return;
  }
  // Exactly this chunk goes again at once, on the same path unless it timed out.
  c->retx.push_back(RetxChunk{e.msg, e.chunk, 1,
                              static_cast<uint16_t>(by_rto ? UINT16_MAX : path->id), UINT16_MAX,
                              RetxKind::kLoss});
  (void)now;
}

void EngineImpl::DetectLoss(TimeNs now, Connection* c, TxPath* path) {
  path->reorder_at = kNever;
  if (!path->has_acked) return;
  // RACK-style: a packet overtaken by a later one of its own path is lost
  // once it is reorder_window_ns later than an RTT after it was sent; until
  // then the path may just have reordered it (adaptive routing).
  const TimeNs wait = path->srtt + cfg.reorder_window_ns;
  for (uint32_t psn = path->una; wire::SeqLt(psn, path->highest_acked) && psn != path->next_psn;
       psn++) {
    const Inflight& e = path->At(psn);
    if (!e.live) continue;
    if (e.sent_at + wait <= now) {
      DeclareLost(now, c, path, psn, false);
    } else {
      path->reorder_at = std::min(path->reorder_at, e.sent_at + wait);
    }
  }
}

// A path that keeps losing while the others do not sits on a bad link (a
// gray failure): give it up and re-probe it on another source port. Loss
// that hits every path alike is left alone; moving would not help.
void EngineImpl::CheckPathHealth(TimeNs now, Connection* c, TxPath* path) {
  path->loss_ratio = static_cast<double>(path->health_lost) / path->health_sent;
  path->health_sent = 0;
  path->health_lost = 0;
  double others = 0;
  uint32_t active = 0;
  for (const TxPath& p : c->paths) {
    if (&p == path || p.state != PathState::kActive) continue;
    others += p.loss_ratio;
    active++;
  }
  if (active == 0) return;  // never give up the last path for loss alone
  others /= active;
  const double limit = cfg.path_fail_loss_pct / 100.0;
  if (path->loss_ratio >= limit && path->loss_ratio > 3 * others + 0.05) {
    stats.path_loss_failures++;
    FailPath(now, c, path);
  }
}

void EngineImpl::FailPath(TimeNs now, Connection* c, TxPath* path) {
  SetPathState(c, path, PathState::kFailed);
  path->failures++;
  stats.path_failures++;
  for (uint32_t psn = path->una; psn != path->next_psn; psn++) DeclareLost(now, c, path, psn, true);
  AdvanceUna(path);
  path->failed_at = now;
  path->probe_at = now + cfg.path_probe_interval_ns;
  path->unanswered_probes = 0;
  path->rerouting = false;
  bool all_failed = true;
  for (const TxPath& p : c->paths) all_failed &= p.state == PathState::kFailed;
  if (all_failed && c->all_failed_since == kNever) c->all_failed_since = now;
  CheckPlane(now, c, *path);
}

// A path that fell silent while the others delivered later packets has a
// dead route, in one direction or both, while the peer lives. Waiting for
// path_fail_timeouts timeouts on that route and then path_probe_interval_ns
// cost a dark spine ~50 round trips; a fresh port is a new route (and the
// peer answers the probe from a fresh port: a new return route). Its window
// and RTO stay for when it answers: silence alone says nothing of congestion.
void EngineImpl::Reroute(TimeNs now, Connection* c, TxPath* path) {
  FailPath(now, c, path);
  c->last_reroute_at = now;
  path->rerouting = true;
  path->probe_at = now;
}

TimeNs EngineImpl::ProbeWait(const TxPath& p) const {
  if (p.rerouting && p.has_rtt && p.unanswered_probes <= config::kRerouteQuickProbes) {
    return std::max<TimeNs>(2 * p.srtt, cfg.tlp_min_ns) << (p.unanswered_probes - 1);
  }
  return cfg.path_probe_interval_ns << std::min(p.unanswered_probes, 6u);
}

bool EngineImpl::ShownArrived(const wire::AckBody& a, TimeNs* asked_at, uint32_t psn) {
  // Only an ACK that echoes a packet sent before then can tell: one sent
  // since carries the una_psn that moved the receiver past the packets in
  // question whether they arrived or not, and ends the question.
  if (a.ack_delay_ns == wire::kAckNoEcho) return false;
  if (!wire::SeqLt(a.echo_ts_ns, static_cast<uint32_t>(*asked_at))) {
    *asked_at = kNever;
    return false;
  }
  bool arrived = wire::SeqLt(psn, a.cum_psn);
  if (!arrived && a.has_sack && wire::SeqLt(a.cum_psn, psn)) {
    const uint32_t i = psn - a.cum_psn - 1;
    arrived = i < wire::kSackBits && ((a.sack[i / 64] >> (i % 64)) & 1) != 0;
  }
  if (arrived) *asked_at = kNever;
  return arrived;
}

void EngineImpl::CheckTimeout(TimeNs now, Connection* c, TxPath* path, const wire::AckBody& a) {
  if (!ShownArrived(a, &path->timeout_at, path->timeout_psn)) return;
  // Eifel (RFC 3522/4015): the path was never at fault. Undo its window cut
  // and count; keep later RTOs past what this packet took.
  stats.spurious_timeouts++;
  path->timeouts = 0;
  path->cc.cwnd = std::max(path->cc.cwnd, path->timeout_cwnd);
  if (!RaiseStallFloor(now, c, now - path->timeout_sent_at, cfg.rto_max_ns, &c->rto_floor)) return;
  path->rto = RtoOf(c, *path);
}

void EngineImpl::CheckTailProbe(TimeNs now, Connection* c, TxPath* path, const wire::AckBody& a) {
  if (!ShownArrived(a, &path->tlp_at, path->tlp_psn)) return;
  // The packet the probe repeated arrived: its ACK was only late. A peer
  // that stalls (descheduled, busy) makes every path's probes needless
  // alike, so the connection's probes wait at least 5/4 of what this one
  // took, as its RTO does after a spurious timeout, and within the same
  // bounds: a stall, not a queue (config::kRtoFloorStallRtts), and never
  // past rto_min, beyond which the RTO would come first anyway.
  stats.needless_tail_probes++;
  RaiseStallFloor(now, c, now - path->tlp_psn_sent_at, cfg.rto_min_ns, &c->tlp_floor);
}

bool EngineImpl::RaiseStallFloor(TimeNs now, const Connection* c, TimeNs took, TimeNs cap,
                                 StallFloor* floor) {
  if (c->base_rtt == kNever || took < config::kRtoFloorStallRtts * c->base_rtt) return false;
  floor->ns = std::min(std::max(floor->ns, took + took / 4), cap);
  floor->at = now;
  return true;
}

void StallFloor::Decay(TimeNs now, TimeNs gone_below) {
  if (ns == 0 || now - at < config::kRtoFloorHalfLifeNs) return;
  ns = ns / 2 < gone_below ? 0 : ns / 2;
  at = now;
}

void EngineImpl::PathTimeout(TimeNs now, Connection* c, TxPath* path, TimeNs age) {
  const TimeNs stuck_since = path->At(path->una).sent_at;
  stats.rto_timeouts++;
  path->timeout_at = now;
  path->timeout_psn = path->una;
  path->timeout_sent_at = stuck_since;
  path->timeout_cwnd = path->cc.cwnd;
  for (uint32_t psn = path->una; psn != path->next_psn; psn++) {
    const Inflight& e = path->At(psn);
    if (e.live && e.sent_at + age <= now) DeclareLost(now, c, path, psn, true);
  }
  AdvanceUna(path);
  path->rto = std::min(path->rto * 2, cfg.rto_max_ns);
  if (cfg.congestion_control) path->cc.OnTimeout(path_cc);
  if (++path->timeouts < cfg.path_fail_timeouts) return;
  // A path is bad when the others get through and it does not. When no
  // other active path has been acknowledged since this one's oldest packet
  // went out, the peer (or this host) stalled: failing paths would not help,
  // and silence fails the connection if the peer is gone.
  bool others = false, others_progress = false;
  for (const TxPath& p : c->paths) {
    if (&p == path || p.state != PathState::kActive) continue;
    others = true;
    others_progress |= p.progress_at >= stuck_since;
  }
  // A peer heard again after a silence answers the paths one by one: the
  // others' progress is evidence against this one only a probe's wait after.
  if (others_progress && now < c->heard_again_at + TlpWait(c, *path)) return;
  if (!others || others_progress) FailPath(now, c, path);
}

}  // namespace metaroce::transport
