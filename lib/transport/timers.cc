/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Timers and work lists. A poll visits only the connections on the active
// list (something happened to them since: a packet, a verb, a timer) and
// pops the timer heap for the rest, so its cost follows activity, not the
// number of connections.

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "engine_private.h"

namespace metaroce::transport {

// ---- Timers ----

TimeNs EngineImpl::TlpWait(const Connection* c, const TxPath& p) const {
  // srtt leaves out the receiver's hold time (the ACK's ack_delay). With
  // fewer packets in flight than the receiver acknowledges at once, the ACK
  // of the newest may be held that long: RFC 8985's PTO adds the peer's
  // delayed-ACK timer for a flight of one (ours: both ends hold alike).
  // Without it, a path that sends a packet every few microseconds (paced,
  // or one of many) probed while its ACK was held: 42,000 probes in 3 s of
  // a window-paced memif write_bw. A peer shown to stall longer than that
  // (a needless probe, CheckTailProbe) raises the connection's floor.
  if (!p.has_rtt) return p.rto / 2;
  const TimeNs held = p.inflight < cfg.ack_every_pkts ? cfg.ack_delay_ns : 0;
  return std::max({2 * p.srtt + held, cfg.tlp_min_ns, c->tlp_floor.ns});
}

bool EngineImpl::Silent(const Connection* c, const TxPath& p, TimeNs now) const {
  // Nothing settled since the newest packet left; or only packets older
  // than it, and nothing for a probe's wait since. A route that died under
  // load delivers what was sent before, and those ACKs come in after the
  // path's window filled and its newest left: taken as life, they held
  // about one dark path in seven until its third RTO, 0.45 ms later
  // (mr-sim spine).
  if (p.progress_at < p.last_sent_at) return true;
  return p.delivered_sent_at < p.last_sent_at && p.progress_at + TlpWait(c, p) <= now;
}

TimeNs EngineImpl::TlpDeadline(const Connection* c, const TxPath& p) const {
  return p.last_sent_at + TlpWait(c, p);
}

TimeNs EngineImpl::RescueDeadline(const Connection* c, const TxPath& p) const {
  // A peer heard again after a silence works through what queued meanwhile
  // and answers the paths one by one: a path is judged (Silent, and others
  // delivered later packets) a probe's wait after that at the earliest. Over
  // kernel UDP a path was rerouted for an ACK 14 us behind another path's.
  const TimeNs w = TlpWait(c, p);
  return std::max(p.last_sent_at + 2 * w, c->heard_again_at + w);
}

void EngineImpl::GatherSilence(const Connection* c, PeerSilence* s) const {
  s->gathered = true;
  s->newest_hold = 0;
  s->waiting = 0;
  s->waiting_on.fill(0);
  for (const TxPath& q : c->paths) {
    s->newest_hold = std::max(s->newest_hold, q.cc.marked_hold_until);
    if (q.state == PathState::kActive && q.inflight != 0 && q.At(q.una).sent_at < q.progress_at) {
      s->waiting++;
      s->waiting_on[q.plane]++;
    }
  }
}

TimeNs EngineImpl::RtoDeadline(const Connection* c, const TxPath& p, PeerSilence* s,
                               bool* stall) const {
  const TimeNs sent_at = p.At(p.una).sent_at;
  const TimeNs rto_at = sent_at + p.rto;
  // The peer answered after this packet left, then nothing at all came back
  // for rto_min, while another path waits that was itself answered after
  // its oldest packet left: the peer (or this host) may have stalled, and
  // what is in flight would then be answered when it wakes. Or a burst took
  // every path's packets or ACKs at once. The RTO sends a stall probe
  // instead of the timeout: the newest packet once more, whose ACK shows
  // what arrived (SACK repairs the rest at once), backed off like the RTO;
  // the timeout proper comes after rto_silent of silence
  // (config::kRtoSilentNs). A packet lost in a hole leaves the rest of a
  // busy connection talking, and under light traffic nothing else waits or
  // the peer was last heard before it left: the RTO as it is. A waiting
  // path not answered since its oldest packet left (a dark link) shows
  // nothing of the peer: counted, dark paths kept each other probing, and
  // none ever timed out. With planes, the other waiting path must be on
  // another plane: when only one plane's paths wait while the peer answered
  // on the others, the plane is dark, not the peer.
  if (cfg.rto_silent_ns == 0 || c->last_rx_at <= sent_at ||
      rto_at < c->last_rx_at + cfg.rto_min_ns) {
    return rto_at;
  }
  if (!s->gathered) GatherSilence(c, s);
  // A window cut since the packet left: the fabric was congested, and
  // silence after congestion is loss (an overflowing queue), not a stall.
  if (s->newest_hold >= sent_at) return rto_at;
  // The others are the waiting paths but p, or those of other planes.
  const uint16_t self = sent_at < p.progress_at ? 1 : 0;  // p counted among them
  const uint16_t others = c->planes <= 1 ? s->waiting - self : s->waiting - s->waiting_on[p.plane];
  if (others == 0) return rto_at;
  const TimeNs give_up = c->last_rx_at + cfg.rto_silent_ns;
  const TimeNs probe_at = std::max(rto_at, p.stall_probe_at + p.rto);
  if (probe_at >= give_up) return std::max(rto_at, give_up);
  if (stall != nullptr) *stall = true;
  return probe_at;
}

void EngineImpl::StallProbe(TimeNs now, Connection* c, TxPath* path) {
  QueueNewest(c, path, path->id, UINT16_MAX, true);
  stats.stall_probes++;
  path->stall_probe_at = now;
  path->rto = std::min(path->rto * 2, cfg.rto_max_ns);
}

bool EngineImpl::OthersProgressedSince(const Connection* c, const TxPath& path, TimeNs t) const {
  for (const TxPath& q : c->paths) {
    if (&q != &path && q.state == PathState::kActive && q.delivered_sent_at > t) return true;
  }
  return false;
}

uint32_t EngineImpl::QueueNewest(Connection* c, TxPath* path, uint16_t prefer, uint16_t avoid,
                                 bool past_window) {
  for (uint32_t psn = path->next_psn; psn != path->una;) {
    const Inflight& e = path->At(--psn);
    if (!e.live) continue;
    const RetxChunk r{e.msg, e.chunk, 1, prefer, avoid, RetxKind::kTailLoss, past_window};
    // A stall probe goes first: the chunks in line may wait for window that
    // only its answer frees.
    if (past_window) {
      c->retx.push_front(r);
    } else {
      c->retx.push_back(r);
    }
    return psn;
  }
  return path->next_psn;
}

void EngineImpl::ConnTimers(TimeNs now, Connection* c) {
  if (c->state != ConnState::kEstablished) return;
  if (c->qps_rejoined) {
    c->qps_rejoined = false;
    c->last_rx_at = std::max(c->last_rx_at, now);
  }
  for (TxPath& path : c->paths) {
    if (path.state != PathState::kActive || path.inflight == 0) continue;
    if (path.reorder_at <= now) {
      DetectLoss(now, c, &path);
      AdvanceUna(&path);
      if (path.inflight == 0) continue;
    }
    if (bool stall; RtoDue(c, path, now, &stall)) {
      if (stall) {
        StallProbe(now, c, &path);
      } else {
        PathTimeout(now, c, &path, path.rto);
      }
    } else if (cfg.tail_loss_probe && !path.tlp_sent && TlpDeadline(c, path) <= now) {
      // Tail-loss probe: nothing was sent for a while and the newest packets
      // are unacknowledged. Send the newest again on this path; its ACK shows
      // any gap before it, which SACK recovery repairs long before the RTO.
      const uint32_t psn = QueueNewest(c, &path, path.id, UINT16_MAX);
      stats.tail_loss_probes++;
      path.tlp_sent = true;
      if (psn != path.next_psn) {
        path.tlp_at = now;
        path.tlp_psn = psn;
        path.tlp_psn_sent_at = path.At(psn).sent_at;
      }
    } else if (cfg.tail_loss_probe && path.tlp_sent && !path.rescue_sent &&
               RescueDeadline(c, path) <= now) {
      // The probe went unanswered too: the path may be dead (a blackhole).
      // Send the newest chunk once more on another path, so the operation
      // completes now, and the other path's progress while this one stays
      // silent marks this one as the problem at its RTO.
      if (Silent(c, path, now)) {
        // While the whole connection is silent (nothing for rto_min: the
        // peer stalled again after answering a moment), what the others
        // delivered before says nothing of this path now.
        if (now < c->last_rx_at + cfg.rto_min_ns &&
            OthersProgressedSince(c, path, path.last_sent_at)) {
          // Silent while other paths delivered packets sent after its newest
          // one: this path's route (a dark link or plane, either way) lost
          // them, and its RTO (rto_min above srtt) would come some ten round
          // trips later. It is rerouted now.
          stats.silent_path_timeouts++;
          Reroute(now, c, &path);
          continue;
        } else {
          QueueNewest(c, &path, UINT16_MAX, path.id);
          stats.tail_loss_rescues++;
        }
      }
      path.rescue_sent = true;
    }
  }
  if (c->all_failed_since != kNever && now - c->all_failed_since >= cfg.conn_fail_after_ns) {
    FailConnection(c);
    return;
  }
  // A peer that died while we only wait (posted receives, nothing in flight)
  // is found by keep-alive probes: silence for conn_fail_after_ns fails the
  // connection, as every path failing would.
  if (c->qps.empty()) {
    // No local QP uses it: close it after a while, so that no peer holds
    // state here for good.
    if (c->idle_since == kNever) c->idle_since = now;
    if (now - c->idle_since >= cfg.conn_idle_ns) {
      stats.conn_idle_closed++;
      c->close_pending = true;
      c->close_reason = wire::ConnReason::kTimeout;
      return;
    }
  }
  if (!c->qps.empty()) {
    if (now - c->last_rx_at >= cfg.conn_fail_after_ns) {
      FailConnection(c);
      return;
    }
    if (now - c->last_rx_at >= cfg.keepalive_ns && now >= c->keepalive_at) {
      c->keepalive_pending = true;
      c->keepalive_at = now + cfg.keepalive_ns;
    }
  }
  if (c->probe_min > now) return;
  c->probe_min = kNever;
  for (uint32_t qpn : c->qps) {
    Qp* qp = FindQp(qpn);
    if (qp == nullptr || qp->state != QpState::kReady) continue;
    for (size_t i = 0; i < qp->sq_sched && i < qp->sq.size(); i++) {
      const MsgRef ref = qp->sq[i];
      TxMsg* m = Msg(c, ref);
      if (m == nullptr || m->done) continue;
      if (m->rnr_resume_at <= now) {
        m->rnr_resume_at = kNever;
        Ready(c, ref);
      } else if (m->probe_at <= now) {
        if (m->retries_left == 0) {
          m->status = WcStatus::kRetryExcErr;
          m->done = true;
          FailQp(qp, WcStatus::kWrFlushErr);
          break;
        }
        m->retries_left--;
        stats.msg_probes++;
        c->retx.push_back(
            RetxChunk{ref, m->num_chunks - 1, 1, UINT16_MAX, UINT16_MAX, RetxKind::kMsgProbe});
        m->probe_backoff = std::min(m->probe_backoff * 2, cfg.msg_probe_max_ns);
        m->probe_at = now + m->probe_backoff;
      }
      c->probe_min = std::min({c->probe_min, m->probe_at, m->rnr_resume_at});
    }
  }
}

TimeNs EngineImpl::ConnDeadline(const Connection* c) const {
  if (c->state == ConnState::kFailed) return kNever;
  if (c->state == ConnState::kConnecting) return c->req_at;
  TimeNs t = c->probe_min;
  if (c->close_pending || c->qps_rejoined) return 0;
  if (c->qps.empty())
    t = c->idle_since == kNever ? 0 : std::min(t, c->idle_since + cfg.conn_idle_ns);
  PeerSilence silence;
  for (const TxPath& p : c->paths) {
    if (p.state == PathState::kActive && p.inflight != 0) {
      t = std::min({t, RtoDeadline(c, p, &silence), p.reorder_at});
      if (cfg.tail_loss_probe && !p.tlp_sent) t = std::min(t, TlpDeadline(c, p));
      if (cfg.tail_loss_probe && p.tlp_sent && !p.rescue_sent)
        t = std::min(t, RescueDeadline(c, p));
    } else if (p.state == PathState::kFailed) {
      t = std::min(t, p.probe_at);
    }
  }
  for (uint16_t id : c->ack_queue) {
    const RxPath& rx = c->rx_paths[id];
    t = std::min(t, rx.ack_now ? 0 : rx.ack_due);
  }
  if (c->all_failed_since != kNever) t = std::min(t, c->all_failed_since + cfg.conn_fail_after_ns);
  if (c->pace_armed && (!c->retx.empty() || !c->ready.empty())) t = std::min(t, c->pace_at);
  if (!c->qps.empty()) {
    t = std::min({t, std::max(c->last_rx_at + cfg.keepalive_ns, c->keepalive_at),
                  c->last_rx_at + cfg.conn_fail_after_ns});
  }
  return t;
}

// ---- Work lists ----

namespace {

// std::*_heap keep the largest on top: "later" makes it the earliest.
bool Later(const EngineImpl::Timer& a, const EngineImpl::Timer& b) { return a.at > b.at; }

}  // namespace

void EngineImpl::Touch(Connection* c) {
  if (c == nullptr || c->on_active) return;
  c->on_active = true;
  active.push_back(c->local_id);
}

void EngineImpl::PushTimer(Connection* c, TimeNs at) const {
  c->timer_at = at;
  if (at == kNever) return;
  timers.push_back(Timer{at, c->local_id});
  std::push_heap(timers.begin(), timers.end(), Later);
}

EngineImpl::Timer EngineImpl::PopTimer() const {
  std::pop_heap(timers.begin(), timers.end(), Later);
  const Timer t = timers.back();
  timers.pop_back();
  return t;
}

Connection* EngineImpl::TimerOwner(const Timer& t) const {
  auto it = conns.find(t.conn);
  if (it == conns.end() || it->second->timer_at != t.at) return nullptr;  // stale
  return it->second.get();
}

void EngineImpl::Schedule(Connection* c) {
  // An entry no later than the deadline stays: a deadline that moved later
  // (each packet sent moves its path's RTO) costs nothing until that entry
  // reaches the top, where it is moved once (SettleTimers).
  const TimeNs at = ConnDeadline(c);
  if (at < c->timer_at) PushTimer(c, at);
}

void EngineImpl::RunTimers(TimeNs now) {
  while (!timers.empty() && timers.front().at <= now) {
    const Timer t = PopTimer();
    Connection* c = TimerOwner(t);
    if (c == nullptr) continue;
    const TimeNs at = ConnDeadline(c);
    if (at > now) {
      PushTimer(c, at);  // it moved later: nothing is due yet
      continue;
    }
    c->timer_at = kNever;
    Touch(c);
  }
}

void EngineImpl::SettleTimers() const {
  while (!timers.empty()) {
    const Timer& top = timers.front();
    Connection* c = TimerOwner(top);
    if (c != nullptr) {
      const TimeNs at = ConnDeadline(c);
      if (at == top.at) return;
      PopTimer();
      PushTimer(c, at);
    } else {
      PopTimer();
    }
  }
}

size_t EngineImpl::VisitActive(TimeNs now, std::span<TxSlot> slots) {
  size_t n = 0;
  more.clear();
  // The connections visit in line until the slots run out; the rest keep
  // their place, first in line at the next poll, and run their timers at
  // their turn: nothing they would send can go out before then anyway, and
  // a poll costs the connections it reaches, not the length of the line (63
  // busy connections behind a full NIC queue were 124 deadline scans per
  // packet sent in mr-sim's all-to-all). A connection stays on_active while
  // it is visited, so what it touches on itself (its next message queued)
  // does not put it back in line ahead of the others.
  for (const size_t end = active.size(); active_head < end && n < slots.size();) {
    const uint32_t id = active[active_head++];
    Connection* c = FindConn(id);
    if (c == nullptr) continue;  // forgotten since it was touched
    if (ConnDeadline(c) <= now) ConnTimers(now, c);
    n += ConnTx(now, c, slots.subspan(n));
    if (n >= slots.size()) {
      more.push_back(id);  // may have more: behind the ones not reached
      continue;
    }
    // It sent all it could: what is left waits for an event or a timer.
    c->on_active = false;
    Schedule(c);
  }
  active.insert(active.end(), more.begin(), more.end());
  // Drop the visited front once it is most of the vector: O(1) a visit.
  if (active_head == active.size()) {
    active.clear();
    active_head = 0;
  } else if (active_head >= active.size() / 2) {
    active.erase(active.begin(), active.begin() + static_cast<ptrdiff_t>(active_head));
    active_head = 0;
  }
  line_left = active_head < active.size();
  return n;
}

bool EngineImpl::ConnHasPendingTx(const Connection* c) const {
  if (c->state == ConnState::kFailed) return false;
  if (c->state == ConnState::kConnecting) return false;  // CONN_REQ is timer driven
  if (c->close_pending || c->accept_pending || !c->probe_replies.empty() || !c->naks.empty()) {
    return true;
  }
  for (uint16_t pid : c->ack_queue) {
    if (c->rx_paths[pid].ack_now) return true;
  }
  if (c->retx.empty() && c->ready.empty()) return false;
  if (Paced(c, seen_now)) return false;  // its deadline is the pacer's
  const bool probe = !c->retx.empty() && c->retx.front().past_window;
  for (const TxPath& p : c->paths) {
    if (PathHasRoom(c, p, probe)) return true;
  }
  return false;
}

TimeNs EngineImpl::NextDeadline() const {
  // Connections the last poll's slots did not reach (or that filled them)
  // are due at once: their deadlines are taken at their turn, so that asking
  // costs nothing however long the line is. Those touched since cost one
  // deadline each.
  if (!loose_tx.empty() || line_left) return 0;
  TimeNs t = kNever;
  for (const uint32_t id : Line()) {
    auto it = conns.find(id);
    if (it != conns.end()) t = std::min(t, ConnDeadline(it->second.get()));
  }
  // Every other connection's deadline is at or after its timer entry, and the
  // top entry, once settled, is its connection's deadline.
  SettleTimers();
  if (!timers.empty()) t = std::min(t, timers.front().at);
  return t;
}

bool EngineImpl::HasPendingTx() const {
  if (!loose_tx.empty()) return true;
  for (const uint32_t id : Line()) {
    auto it = conns.find(id);
    if (it != conns.end() && ConnHasPendingTx(it->second.get())) return true;
  }
  return false;
}

void EngineImpl::CheckWorkLists(const char* where) const {
#ifdef METAROCE_ENGINE_CHECKS
  size_t on_active = 0;
  for (const auto& [id, conn] : conns) {
    const Connection* c = conn.get();
    const char* broken = nullptr;
    const auto failed = std::count_if(c->paths.begin(), c->paths.end(), [](const TxPath& p) {
      return p.state == PathState::kFailed;
    });
    const auto plb_due = std::count_if(c->paths.begin(), c->paths.end(),
                                       [](const TxPath& p) { return p.plb_probe_due; });
    if (c->failed_paths != failed || c->plb_probes_due != plb_due) {
      broken = "its count of failed paths or of PLB probes due is wrong";
    } else if (c->on_active) {
      on_active++;
      if (std::count(Line().begin(), Line().end(), id) != 1)
        broken = "on_active but not listed once";
    } else if (ConnHasPendingTx(c)) {
      broken = "has packets to send but is not on the active list";
    } else if (c->timer_at > ConnDeadline(c)) {
      broken = "its timer entry is later than its deadline";
    } else if (c->timer_at != kNever &&
               std::none_of(timers.begin(), timers.end(),
                            [&](const Timer& t) { return t.conn == id && t.at == c->timer_at; })) {
      broken = "its timer entry is missing";
    }
    if (broken != nullptr) {
      std::fprintf(stderr, "metaroce engine check failed at %s: connection %u %s\n", where, id,
                   broken);
      std::abort();
    }
  }
  if (on_active != Line().size() && std::any_of(Line().begin(), Line().end(), [&](uint32_t id) {
        return conns.contains(id) && !conns.at(id)->on_active;
      })) {
    std::fprintf(stderr,
                 "metaroce engine check failed at %s: a listed connection is not on_active\n",
                 where);
    std::abort();
  }
#else
  (void)where;
#endif
}

}  // namespace metaroce::transport
