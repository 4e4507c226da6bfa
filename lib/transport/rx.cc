/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Receive side: parse, connection management, ACK/NAK/probe handling, and
// the receiver of data: per-path PSN state, direct placement, in-order
// message completion per stream.

#include <algorithm>
#include <bit>
#include <cstring>

#include "engine_private.h"
#include "fair_share_private.h"

namespace metaroce::transport {
namespace {

using wire::PacketType;

// Shifts the receive window down by k bits (bit i+k becomes bit i).
void ShiftDown(uint64_t (&b)[RxPath::kWords], uint32_t k) {
  constexpr uint32_t kBits = RxPath::kWords * 64;
  if (k >= kBits) {
    for (uint64_t& w : b) w = 0;
    return;
  }
  const uint32_t words = k / 64, bits = k % 64;
  for (uint32_t i = 0; i < RxPath::kWords; i++) {
    const uint32_t src = i + words;
    uint64_t v = src < RxPath::kWords ? b[src] >> bits : 0;
    if (bits != 0 && src + 1 < RxPath::kWords) v |= b[src + 1] << (64 - bits);
    b[i] = v;
  }
}

// Moves cum over every PSN from cum on that has arrived (bit 0 is cum).
void Normalize(RxPath& rx) {
  uint32_t ones = 0;
  for (uint32_t i = 0; i < RxPath::kWords; i++) {
    const uint32_t t = static_cast<uint32_t>(std::countr_one(rx.bits[i]));
    ones += t;
    if (t < 64) break;
  }
  if (ones == 0) return;
  ShiftDown(rx.bits, ones);
  rx.cum += ones;
}

WcStatus StatusOf(wire::NakCode code) {
  switch (code) {
    case wire::NakCode::kRemoteAccess: return WcStatus::kRemAccessErr;
    case wire::NakCode::kInvalidRequest: return WcStatus::kRemInvReqErr;
    case wire::NakCode::kRemoteOperation: return WcStatus::kRemOpErr;
    case wire::NakCode::kReceiverNotReady: return WcStatus::kRnrRetryExcErr;
    case wire::NakCode::kResend: break;
  }
  return WcStatus::kGeneralErr;
}

// The TxMsg of @p qp's send queue with MSN @p msn, if still there.
MsgRef* FindByMsn(Qp* qp, const std::vector<TxMsg>& msgs, uint32_t msn) {
  if (qp->sq.empty()) return nullptr;
  const TxMsg& front = msgs[qp->sq.front().idx];
  const uint32_t i = msn - front.msn;
  if (i >= qp->sq.size()) return nullptr;
  return &qp->sq[i];
}

// What a NAK raised while executing a complete message answers: the message,
// on path 0, as if asked for (made only when one is raised).
wire::Packet ExecutionNakCause(uint32_t msn) {
  wire::Packet p;
  p.path_id = 0;
  p.data.msn = msn;
  p.flags = wire::flags::kAckReq;
  return p;
}

}  // namespace

void EngineImpl::OnFrame(TimeNs now, std::span<const uint8_t> frame) {
  wire::ParseOptions opt;
  opt.udp_port = cfg.udp_port;
  stats.rx_bytes += frame.size();
  rx_len = static_cast<uint32_t>(frame.size());
  const wire::ParseError e = wire::ParseFrame(frame, opt, &rx_info, &rx_pkt);
  if (e != wire::ParseError::kOk) {
    stats.rx_parse_drops[static_cast<size_t>(e)]++;
    return;
  }
  HandlePacket(now, rx_info, rx_pkt);
}

void EngineImpl::OnDatagram(TimeNs now, const wire::FrameInfo& addr,
                            std::span<const uint8_t> payload) {
  wire::ParseOptions opt;
  opt.udp_port = cfg.udp_port;
  stats.rx_bytes += payload.size();
  rx_len = static_cast<uint32_t>(payload.size());
  const wire::ParseError e = wire::ParseDatagram(payload, opt, &rx_pkt);
  if (e != wire::ParseError::kOk) {
    stats.rx_parse_drops[static_cast<size_t>(e)]++;
    return;
  }
  HandlePacket(now, addr, rx_pkt);
}

void EngineImpl::HandlePacket(TimeNs now, const wire::FrameInfo& from, const wire::Packet& p) {
  stats.rx_packets++;
  const wire::PacketClass cls = wire::ClassOf(p.type);
  if (cls == wire::PacketClass::kConn) {
    HandleConn(now, from, p);
    return;
  }
  Connection* c = FindConn(p.dst_conn_id);
  if (c == nullptr || c->state != ConnState::kEstablished) {
    stats.rx_unknown_conn++;
    return;
  }
  // Each plane's packets come from the peer's address on that plane.
  const uint8_t plane = PlaneOf(c, p.path_id);
  if (from.src != PeerIp(c, plane)) {
    stats.rx_wrong_source++;
    return;
  }
  if (plane != 0 && c->peer_plane_mac[plane] != from.eth_src) {
    c->peer_plane_mac[plane] = from.eth_src;  // the next hop on that plane
    ForgetEncap(c);
  }
  Touch(c);
  if (now - c->last_rx_at >= cfg.rto_min_ns) c->heard_again_at = now;
  c->last_rx_at = now;
  c->rx_pkts++;
  c->rx_bytes += rx_len;
  switch (cls) {
    case wire::PacketClass::kAck: HandleAck(now, c, p); break;
    case wire::PacketClass::kNak: HandleNak(now, c, p); break;
    case wire::PacketClass::kProbe: HandleProbe(now, c, p); break;
    case wire::PacketClass::kData: HandleData(now, c, from, p); break;
    default: break;
  }
}

// ---- ACK / NAK / probe ----

uint32_t EngineImpl::Delivered(TimeNs now, Connection* c, TxPath* path, uint32_t psn) {
  Inflight& e = path->At(psn);
  if (!e.live) return 0;
  e.live = false;
  path->inflight--;
  c->inflight--;
  path->cc.inflight -= e.bytes;
  c->cc.inflight -= e.bytes;
  path->delivered_sent_at = std::max(path->delivered_sent_at, e.sent_at);
  c->delivered_sent_at = std::max(c->delivered_sent_at, e.sent_at);
  TxMsg* m = Msg(c, e.msg);
  if (m == nullptr || e.epoch != m->epoch || e.probe) return e.bytes;
  if (m->delivered.Set(e.chunk) && m->delivered.Full() && !m->done && !m->is_response) {
    // Every chunk arrived; the message completes on the responder's stream
    // ACK (or response). Probe if that does not come.
    m->probe_backoff = std::max(path->rto, cfg.msg_probe_min_ns);
    m->probe_at = now + m->probe_backoff;
    c->probe_min = std::min(c->probe_min, m->probe_at);
  }
  if (m->is_response && m->delivered.Full()) {
    FreeMsg(c, e.msg);  // the requester has the whole response
  }
  return e.bytes;
}

void EngineImpl::CongestionOnAck(TimeNs now, Connection* c, TxPath* path, uint32_t acked_bytes,
                                 uint32_t rx_pkts, uint32_t ce_pkts) {
  if (!cfg.congestion_control) return;
  const TimeNs rtt = path->has_rtt ? path->srtt : cfg.rto_initial_ns;
  const TimeNs delay_target = path->has_rtt && c->base_rtt != kNever && cfg.cc_delay_target_ns != 0
                                  ? c->base_rtt + cfg.cc_delay_target_ns
                                  : 0;
  const uint64_t delay_cuts = path->cc.delay_cuts;
  // Data the window pacer holds back keeps the windows "in use": without
  // it, a paced connection's windows never grow (its inflight stays below
  // them) and the pacer, a share above window / RTT, never rises either.
  const bool held =
      c->pace_burst_bytes != 0 && c->pace_at > now && (!c->ready.empty() || !c->retx.empty());
  path->cc.OnAck(path_cc, now, rtt, acked_bytes, rx_pkts, ce_pkts, delay_target, held);
  stats.cc_delay_cuts += path->cc.delay_cuts - delay_cuts;
  // The connection's window answers congestion its paths share (the
  // receiver's link, our own): an ACK with marks while more than half of its
  // active paths cut their windows within a round trip (for marks or for
  // queueing delay: both say the shared queue grew). Marks on a few paths
  // are theirs to answer, by shrinking and moving; counted here, they would
  // shrink the connection below what its clear paths carry.
  uint32_t conn_marks = 0;
  if (ce_pkts != 0) {
    uint32_t active = 0, marked = 0;
    for (const TxPath& p : c->paths) {
      if (p.state != PathState::kActive) continue;
      active++;
      marked += p.cc.hold_until > now ? 1 : 0;  // cut (marks or delay) in its last round trip
    }
    if (2 * marked > active) conn_marks = ce_pkts;
  }
  c->cc.OnAck(conn_cc, now, rtt, acked_bytes, rx_pkts, conn_marks, 0, held);
  if (c->peer_hint_mbps != 0 && c->base_rtt != kNever) {
    // The receiver's share is what answers congestion at its link: the
    // connection's window keeps room for the hinted rate over the base RTT
    // and the receiver's ACK hold (a new sender takes it at once, from slow
    // start), so marks from that link do not cut it below its share too.
    // While a queue stands, window / RTT still falls below the hint and
    // the queue drains. Measured (doc/congestion.md): without it the marks
    // of an incast's first queue held senders at different windows below
    // their hints for 200-400 us.
    const uint64_t floor =
        uint64_t{c->peer_hint_mbps} * (c->base_rtt + cfg.ack_delay_ns) / 8'000;  // Mbit/s x ns
    c->cc.cwnd = static_cast<uint32_t>(
        std::max<uint64_t>(c->cc.cwnd, std::min<uint64_t>(floor, conn_cc.max_bytes)));
  }
  if (path->cc.congested_rounds < config::kCcRepathRounds) return;
  // Congested round after round while another path is clear: its route is
  // the hot one, not the receiver. Move it to another (PLB); it keeps its
  // window, the new route earns more by its own ACKs. Soon after a path of
  // this connection found a dead route, probe the new port first
  // (config::kPlbCarefulNs).
  for (const TxPath& p : c->paths) {
    if (&p == path || p.state != PathState::kActive || p.cc.congested_rounds != 0) continue;
    if (c->last_reroute_at != kNever && now - c->last_reroute_at < config::kPlbCarefulNs) {
      if (path->plb_port != 0 && now < path->plb_expires) return;  // its probe is out
      path->plb_port = FreshPort(c);
      SetPlbProbeDue(c, path, true);
      path->plb_expires = now + 4 * std::max<TimeNs>(path->srtt, cfg.tlp_min_ns);
      stats.cc_repath_probes++;
      return;
    }
    MovePath(c, path, FreshPort(c));
    return;
  }
}

void EngineImpl::MovePath(Connection* c, TxPath* path, uint16_t port) {
  path->src_port = port;
  path->plb_port = 0;
  SetPlbProbeDue(c, path, false);
  path->cc.congested_rounds = 0;
  path->repaths++;
  stats.cc_repaths++;
}

void EngineImpl::UpdatePacer(Connection* c) {
  uint64_t mbps = c->peer_hint_mbps != 0 ? c->peer_hint_mbps : UINT32_MAX;
  c->pace_burst_bytes = 0;
  if (cfg.congestion_control && cfg.pacing_gain_pct != 0 && c->srtt != 0) {
    // What the windows let out per round trip: the connection's, or its
    // active paths' together where they hold less.
    uint64_t paths = 0;
    for (const TxPath& p : c->paths) paths += p.state == PathState::kActive ? p.cc.cwnd : 0;
    const uint64_t window = std::min<uint64_t>(c->cc.cwnd, paths);
    const uint64_t gain = c->cc.slow_start
                              ? uint64_t{cfg.pacing_gain_pct} * config::kCcPacingSlowStartGainPct /
                                    config::kCcPacingGainPct
                              : cfg.pacing_gain_pct;
    // bytes x 8000 / ns = Mbit/s, times gain / 100; never below 1 Mbit/s
    // (0 would mean no pacer).
    const uint64_t window_mbps = std::max<uint64_t>(window * 80 * gain / c->srtt, 1);
    if (window_mbps < mbps) {
      mbps = window_mbps;
      c->pace_burst_bytes = static_cast<uint32_t>(window >> config::kCcPacingBurstShift);
    }
  }
  c->pace_mbps = mbps >= UINT32_MAX ? 0 : static_cast<uint32_t>(mbps);
}

void EngineImpl::HandleAck(TimeNs now, Connection* c, const wire::Packet& p) {
  if (p.path_id >= c->paths.size()) {
    stats.rx_bad_path++;
    return;
  }
  TxPath& path = c->paths[p.path_id];
  const wire::AckBody& a = p.ack;

  // RTT from the echoed timestamp, less the receiver's hold time.
  const uint32_t elapsed = static_cast<uint32_t>(now) - a.echo_ts_ns;
  if (a.ack_delay_ns != wire::kAckNoEcho && elapsed >= a.ack_delay_ns &&
      elapsed - a.ack_delay_ns < 1'000'000'000u) {
    const TimeNs r = elapsed - a.ack_delay_ns;
    if (!path.has_rtt) {
      path.srtt = r;
      path.rttvar = r / 2;
      path.has_rtt = true;
    } else {
      const TimeNs err = path.srtt > r ? path.srtt - r : r - path.srtt;
      path.rttvar = (3 * path.rttvar + err) / 4;
      path.srtt = (7 * path.srtt + r) / 8;
    }
    c->rto_floor.Decay(now, cfg.rto_min_ns);
    c->tlp_floor.Decay(now, cfg.tlp_min_ns);
    path.rto = RtoOf(c, path);
    c->srtt = c->srtt == 0 ? r : (7 * c->srtt + r) / 8;
    if (r < c->base_rtt || now - c->base_rtt_at > config::kCcBaseRttWindowNs) {
      c->base_rtt = r;
      c->base_rtt_at = now;
    }
  }
  if (path.timeout_at != kNever) CheckTimeout(now, c, &path, a);
  if (path.tlp_at != kNever) CheckTailProbe(now, c, &path, a);
  c->peer_hint_mbps = a.rate_hint_mbps;
  // What the receiver counted on this path since the last ACK (its counters
  // start at 0 with the connection; an ACK overtaken by a newer one counts
  // nothing).
  uint32_t rx_new = 0, ce_new = 0;
  if (static_cast<int32_t>(a.rx_pkts - path.last_rx_pkts) >= 0) {
    rx_new = a.rx_pkts - path.last_rx_pkts;
    ce_new =
        static_cast<int32_t>(a.ce_pkts - path.last_ce_pkts) > 0 ? a.ce_pkts - path.last_ce_pkts : 0;
    path.ce_pkts += ce_new;
    path.last_ce_pkts = a.ce_pkts;
    path.last_rx_pkts = a.rx_pkts;
  }

  // Settle what the ACK covers: PSNs before cum, and SACKed PSNs above it.
  // Only PSNs actually sent count: a forged or stale ACK settles nothing else.
  const uint32_t inflight_before = path.inflight;
  bool any = false;
  uint32_t highest = 0;  // newest PSN this ACK shows arrived
  uint32_t acked_bytes = 0;
  for (uint32_t psn = path.una; wire::SeqLt(psn, a.cum_psn) && psn != path.next_psn; psn++) {
    acked_bytes += Delivered(now, c, &path, psn);
    highest = psn;
    any = true;
  }
  if (a.has_sack) {
    for (uint32_t w = 0; w < wire::kSackWords; w++) {
      uint64_t bits = a.sack[w];
      while (bits != 0) {
        const uint32_t i = w * 64 + static_cast<uint32_t>(std::countr_zero(bits));
        bits &= bits - 1;
        const uint32_t psn = a.cum_psn + 1 + i;
        if (wire::SeqLt(psn, path.una) || !wire::SeqLt(psn, path.next_psn)) continue;
        acked_bytes += Delivered(now, c, &path, psn);
        highest = psn;
        any = true;
      }
    }
  }
  if (any && (!path.has_acked || wire::SeqLt(path.highest_acked, highest))) {
    path.highest_acked = highest;
    path.has_acked = true;
  }
  // One path keeps order: a packet still in flight below one that arrived
  // was lost, once it is later than reordering explains (DetectLoss).
  DetectLoss(now, c, &path);
  AdvanceUna(&path);
  if (path.inflight < inflight_before) {
    path.timeouts = 0;
    path.progress_at = now;
  }
  CongestionOnAck(now, c, &path, acked_bytes, rx_new, ce_new);
  UpdatePacer(c);
  if (OnlyReceives(c)) UnlistReceiver(c);

  for (uint32_t i = 0; i < a.num_stream_acks; i++) {
    Qp* qp = FindQp(a.stream_acks[i].stream_id);
    if (qp == nullptr || qp->conn != c->local_id) continue;
    StreamAccepted(now, c, qp, a.stream_acks[i].msn_next);
  }
}

void EngineImpl::StreamAccepted(TimeNs now, Connection* c, Qp* qp, uint32_t next) {
  // Beyond what this QP ever posted: not from a correct peer; taking it
  // would complete work that never went out.
  if (wire::SeqLt(qp->next_msn, next)) {
    stats.rx_bad_stream_acks++;
    return;
  }
  const bool advanced = wire::SeqLt(qp->peer_msn_next, next);
  if (!advanced && qp->rd_atomic_pending == 0) return;
  if (advanced) qp->peer_msn_next = next;
  for (const MsgRef& r : qp->sq) {
    TxMsg* m = Msg(c, r);
    if (m == nullptr || !wire::SeqLt(m->msn, qp->peer_msn_next)) break;
    if (m->done) continue;
    if (m->opcode != Opcode::kRead && !wire::IsAtomicRequest(m->type)) {
      m->done = true;
      m->probe_at = kNever;
    } else {
      // A READ or atomic the responder accepted: its response is on the
      // way. Its probes go on (a responder whose QP went away answers them
      // with nothing useful), but each stream ACK that still covers it (a
      // probe's answer) proves the responder alive and restores the budget:
      // a long READ never fails while its response is queued.
      m->retries_left = qp->attr.retry_cnt;
      if (m->probe_at != kNever) m->probe_at = now + m->probe_backoff;
    }
  }
  CompleteSends(qp);
}

void EngineImpl::HandleNak(TimeNs now, Connection* c, const wire::Packet& p) {
  const wire::NakBody& n = p.nak;
  Qp* qp = FindQp(n.stream_id);
  if (qp == nullptr || qp->conn != c->local_id || qp->state != QpState::kReady) return;
  MsgRef* ref = FindByMsn(qp, c->msgs, n.msn);
  if (ref == nullptr) return;
  TxMsg* m = Msg(c, *ref);
  if (m == nullptr || m->done) return;
  if (n.code == wire::NakCode::kResend) {
    // The peer did not place these chunks although their packets arrived:
    // send them again (only chunks sent and held as arrived; the rest are
    // on their way). The message probe waits until they are delivered.
    stats.resend_requests++;
    const uint32_t end = std::min<uint64_t>(uint64_t{n.first_chunk} + n.num_chunks,
                                            std::min(m->next_chunk, m->num_chunks));
    uint32_t run = 0;
    for (uint32_t i = n.first_chunk; i <= end; i++) {
      if (i < end && m->delivered.Unset(i)) {
        run++;
        continue;
      }
      if (run != 0) {
        c->retx.push_back(RetxChunk{*ref, i - run, run, UINT16_MAX, UINT16_MAX, RetxKind::kResend});
      }
      run = 0;
    }
    if (!m->delivered.Full()) m->probe_at = kNever;
    return;
  }
  if (n.detail == static_cast<uint8_t>(wire::NakDetail::kStreamInError)) {
    // The responder refused an earlier message of ours and executes nothing
    // after it: that message's own NAK tells why (its probe asks again).
    for (const MsgRef& r : qp->sq) {
      if (&r == ref) break;
      if (const TxMsg* e = Msg(c, r); e != nullptr && !e->done) return;
    }
  }
  if (n.code == wire::NakCode::kReceiverNotReady) {
    if (m->rnr_resume_at != kNever) return;  // already waiting
    // Only a NAK about a packet of the current attempt counts: those about
    // chunks of an attempt already restarted are stale.
    const TxPath* path = p.path_id < c->paths.size() ? &c->paths[p.path_id] : nullptr;
    const bool recent = path != nullptr && path->next_psn - n.psn - 1 < path->ring.size();
    const Inflight* e = recent ? &path->At(n.psn) : nullptr;
    if (e == nullptr || e->msg.idx != ref->idx || e->msg.gen != ref->gen || e->epoch != m->epoch) {
      stats.rx_stale_naks++;
      return;
    }
    if (qp->attr.rnr_retry != 7) {
      if (m->rnr_left == 0) {
        m->status = WcStatus::kRnrRetryExcErr;
        m->done = true;
        FailQp(qp, WcStatus::kWrFlushErr);
        return;
      }
      m->rnr_left--;
    }
    // Send the whole message again after the delay; chunks still in flight
    // belong to the old epoch and no longer count.
    m->epoch++;
    m->delivered.Clear();
    m->next_chunk = 0;
    m->probe_at = kNever;
    m->rnr_resume_at = now + std::max<TimeNs>(TimeNs{n.rnr_delay_10us} * 10'000, 1'000);
    c->probe_min = std::min(c->probe_min, m->rnr_resume_at);
    return;
  }
  m->status = StatusOf(n.code);
  m->done = true;
  FailQp(qp, WcStatus::kWrFlushErr);
}

void EngineImpl::HandleProbe(TimeNs now, Connection* c, const wire::Packet& p) {
  if (p.type == PacketType::kProbe) {
    // The peer is probing this path because it stopped hearing back on it;
    // the broken direction may be ours, so answer from a fresh port too.
    if (p.path_id < c->rx_paths.size()) c->rx_paths[p.path_id].reply_port = FreshPort(c);
    if (c->probe_replies.size() < kMaxQueuedControl) {
      c->probe_replies.emplace_back(p.path_id, p.probe);
    } else {
      stats.control_dropped++;
    }
    return;
  }
  if (p.path_id >= c->paths.size()) {
    stats.rx_bad_path++;
    return;
  }
  TxPath& path = c->paths[p.path_id];
  if (path.state == PathState::kActive && path.plb_port != 0 && p.probe == path.plb_probe) {
    MovePath(c, &path, path.plb_port);  // the careful PLB move's port works
    return;
  }
  if (path.state != PathState::kFailed) return;
  const uint32_t age = path.probe_seq - p.probe.probe_seq;
  if (path.probe_seq == 0 || age >= path.probe_ports.size()) return;
  // The port that probe went out on works: use the path again, on that port.
  path.src_port = path.probe_ports[p.probe.probe_seq % path.probe_ports.size()];
  SetPathState(c, &path, PathState::kActive);
  path.timeouts = 0;
  path.rerouting = false;
  path.health_sent = path.health_lost = 0;
  path.loss_ratio = 0;
  path.probe_at = kNever;
  path.failed_at = kNever;
  path.rto = path.has_rtt ? RtoOf(c, path) : cfg.rto_initial_ns;
  c->all_failed_since = kNever;
  PathAnswered(now, c, path);
}

// ---- The receiver's fair share, and the sender's side of it ----

TimeNs EngineImpl::ShareIntervalNs() const {
  // n senders x k packets x bytes x 8000 / Mbit/s = ns
  const uint64_t packets_ns = uint64_t{share_last_senders} * config::kFairSharePktsPerSender *
                              path_cc.mss_bytes * 8'000 / cfg.rx_capacity_mbps;
  return std::max<TimeNs>(config::kFairShareIntervalNs, packets_ns);
}

TimeNs EngineImpl::RollShare(TimeNs now) {
  const TimeNs interval = ShareIntervalNs();
  if (now - share_from < interval) return interval;
  // The interval ended: measure its senders and allocate again.
  const TimeNs span = now - share_from;
  // An interval that ran on to twice its length for want of packets spans
  // a silence: its rates say nothing of what the senders want when they
  // start again. Read as limited elsewhere, 8 senders restarting after an
  // idle were handed nearly the whole link in their first ACKs; counted as
  // wanting, they get an equal share from their first ACK.
  const bool silence = span >= 2 * interval;
  share_rates_.clear();
  share_measured.clear();
  uint64_t all_bytes = 0, ce_bytes = 0;
  for (uint32_t id : share_senders) {
    Connection* s = FindConn(id);
    if (s == nullptr || !s->share_listed) continue;
    if (OnlyReceives(s)) {
      s->share_listed = false;
      continue;
    }
    if (s->share_idle) {
      // Said IDLE and has not sent since: no demand now. It is still held
      // to its share (its listing) should it come back.
      all_bytes += s->share_bytes;
      ce_bytes += s->share_ce_bytes;
      s->share_bytes = s->share_ce_bytes = 0;
      s->share_left_counted = false;
      s->share_listed = false;
      continue;
    }
    const uint64_t mbps = s->share_bytes * 8'000 / span;  // bytes per ns x 8000 = Mbit/s
    s->share_last_mbps = static_cast<uint32_t>(std::min<uint64_t>(mbps, UINT32_MAX));
    // A sender that started within the interval had no share to be held to
    // for all of it (it may have started late in it, or in slow start):
    // its rate says nothing of its demand, so it counts as wanting more.
    // Read as limited elsewhere, 8 new senders raised the level to 4x the
    // fair share.
    // So does one whose packets came marked: congested on the way here,
    // most likely at our own link, which its share is to relieve.
    const bool marked = s->share_ce_bytes * 2 > s->share_bytes;
    const uint64_t demand = s->share_new || marked || silence ? cfg.rx_capacity_mbps : mbps;
    s->share_demand_mbps = static_cast<uint32_t>(std::min<uint64_t>(demand, UINT32_MAX));
    share_rates_.push_back(demand);
    all_bytes += s->share_bytes;
    ce_bytes += s->share_ce_bytes;
    s->share_new = false;
    s->share_returned = false;
    s->share_ce_bytes = 0;
    s->share_measured_at = now;
    s->share_bytes = 0;
    s->share_listed = false;
    share_measured.push_back(id);
  }
  share_last_senders = share_rates_.size();
  share_left = 0;
  share_listed_idle = 0;
  share_drain_mbps = ShareDrainMbps(cfg.rx_capacity_mbps, all_bytes, ce_bytes);
  share_mbps = FairShareMbps(cfg.rx_capacity_mbps - share_drain_mbps, share_rates_, share_mbps,
                             &share_last_limited);
  share_roll_mbps = share_mbps;
  share_from = now;
  // Senders are held to their shares for two intervals from their last
  // listing, and are listed once an interval: twice the interval that
  // starts now, which grows with the senders. Twice the one that ended
  // (20 us before 127 senders made it 83 us) left the sender whose packet
  // ended it unheld 40 us later, and its ACKs said "no limit" for the rest
  // of the interval (mr-sim incast, 127 senders: 2 BDPs at the receiver).
  const TimeNs next = ShareIntervalNs();
  share_senders.clear();
  share_pushed_senders = 0;
  for (uint32_t id : share_measured) {
    if (Connection* s = FindConn(id)) s->share_until = now + 2 * next;
  }
  return next;
}

void EngineImpl::ListSender(TimeNs now, Connection* c, TimeNs interval) {
  if (c->share_idle) {  // it sends again
    c->share_idle = false;
    c->share_returned = true;
    if (c->share_listed) share_listed_idle--;
    if (c->share_left_counted) {
      c->share_left_counted = false;
      share_left--;
    }
  }
  if (c->share_listed) return;
  c->share_listed = true;
  c->share_listed_at = now;
  c->share_new = c->share_measured_at != share_from;  // not measured over the last interval
  share_senders.push_back(c->local_id);
  c->share_until = std::max(c->share_until, now + 2 * interval);
  PushShares();
}

bool EngineImpl::OnlyReceives(const Connection* s) {
  // Listed for an opening, and it acknowledged a packet we sent since, but
  // sent nothing itself: most likely a peer that only receives (both ends
  // of a connection open it and list each other). Counted, it held the real
  // senders of a permutation to half the link for an interval (20 us). Not
  // before its ACK: a peer that sends to us too starts when we do, and its
  // first packets arrive half a round trip later (unlisted at our first
  // packet, every receiver of an all-to-all dropped all 63 senders at once
  // and handed their returning data C/19 ... C/63).
  return s->share_listed && s->share_bytes == 0 && s->delivered_sent_at >= s->share_listed_at;
}

void EngineImpl::UnlistReceiver(Connection* c) {
  // At its ACK, not at the next allocation: the senders' next ACKs carry
  // the part it held.
  c->share_listed = false;
  if (c->share_idle) share_listed_idle--;
  share_senders.erase(std::find(share_senders.begin(), share_senders.end(), c->local_id));
}

void EngineImpl::PushShares() {
  // New senders split the capacity equally (HintFor): those told more than
  // the new part (config::kFairSharePushStepPct over it) in an opening or an
  // ACK learn it now from an ACK of their own, half a round trip sooner than
  // from the ACK of their next data. New senders starting together are told
  // C, C/2, ... C/k as they come: until they hear, they send ln(k) times the
  // link. Looked at each time the senders grow by that step, so that each
  // sender costs O(1) work and O(1) ACKs per step.
  const size_t n = share_senders.size();
  if (n < 4 || n * 100 < share_pushed_senders * (100 + config::kFairSharePushStepPct) ||
      EqualPartMbps() == 0) {
    return;
  }
  share_pushed_senders = n;
  for (uint32_t id : share_senders) {
    if (Connection* s = FindConn(id)) PushShareTo(s);
  }
}

void EngineImpl::PushShareTo(Connection* s) {
  // (An ACCEPT on its way out carries the part anyway.)
  if (!s->share_listed || s->state != ConnState::kEstablished || s->rx_paths.empty() ||
      s->accept_pending) {
    return;
  }
  const uint64_t part = EqualPartMbps();
  if (part == 0) return;
  const uint64_t told = s->hint_sent_mbps == 0 ? UINT32_MAX : s->hint_sent_mbps;
  if (told * 100 <= part * (100 + config::kFairSharePushStepPct)) return;
  s->rx_paths[0].ack_now = true;
  MarkAckPending(s, 0);
  Touch(s);
  stats.share_pushes++;
}

void EngineImpl::AccountShare(TimeNs now, Connection* c, bool ce, bool idle) {
  const TimeNs interval = RollShare(now);
  c->share_bytes += rx_len;
  if (ce) c->share_ce_bytes += rx_len;
  ListSender(now, c, interval);
  if (idle) SenderLeft(c);
}

void EngineImpl::SenderLeft(Connection* c) {
  // Left to the next allocation, a departed sender's part stayed unused for
  // up to two intervals (20-88 us): 6 of 8 senders stopped, and the 2 left
  // reached C/2 43 us (9 round trips) after the 6's last packet; at once,
  // 3.4 us. It stays listed (held to its share should it come back: a
  // sender of one message at a time says IDLE after each), but is no demand
  // now: not in the equal part, nor in the level computed again.
  if (c->share_idle) return;
  c->share_idle = true;
  c->share_idle_mbps = share_roll_mbps;
  if (c->share_listed) share_listed_idle++;
  if (c->share_measured_at != share_from) return;  // not in the level
  c->share_left_counted = true;
  share_left++;
  // Again at each fifth: O(1) allocations per sender, as the pushes.
  if (share_left * 100 >= share_last_senders * config::kFairShareLeftStepPct) Reallocate();
}

void EngineImpl::Reallocate() {
  share_rates_.clear();
  size_t kept = 0;
  for (uint32_t id : share_measured) {
    Connection* s = FindConn(id);
    if (s == nullptr) continue;
    if (s->share_idle) {
      // Out of the level: should it come back and leave again within this
      // interval, it is not counted as leaving it twice.
      s->share_left_counted = false;
      s->share_measured_at = kNever;
      continue;
    }
    share_measured[kept++] = id;
    share_rates_.push_back(s->share_demand_mbps);
  }
  share_measured.resize(kept);
  share_last_senders = kept;
  share_left = 0;
  share_mbps = FairShareMbps(cfg.rx_capacity_mbps - share_drain_mbps, share_rates_, share_mbps,
                             &share_last_limited);
  stats.share_reallocations++;
}

void EngineImpl::ExpectSender(TimeNs now, Connection* c) {
  if (cfg.rx_capacity_mbps == 0) return;
  ListSender(now, c, RollShare(now));
}

void EngineImpl::TakeOpeningHint(Connection* c, const wire::ConnBody& b) {
  c->peer_takes_idle = (b.capabilities & wire::caps::kIdle) != 0;
  c->peer_reads_hint = (b.capabilities & wire::caps::kRateHint) != 0;
  if (!c->peer_reads_hint) return;
  c->peer_hint_mbps = b.rate_hint_mbps;
  UpdatePacer(c);
  // New senders take their shares from openings that arrive together, and
  // pacers started in step stay in step: 32 senders' packets arrived at the
  // receiver in bursts of 32 and its queue marked half of them at 91 % of
  // the link (the simulated fabric has no jitter of its own). The first
  // packet waits a random part of one packet's time at the new rate, drawn
  // when it goes (TxNewData): drawn here, the phase was spent by a sender
  // whose data came later than it, and the senders of an incast that opened
  // together and wrote a few microseconds later sent their first packets
  // in the same instant (63 senders: 1.6 BDPs at the receiver).
  c->pace_phase_due = true;
}

void EngineImpl::StartAtRandomPhase(TimeNs now, Connection* c) {
  c->pace_at = now + rng.Below(PacketGapNs(c) + 1);
  c->pace_armed = true;
  c->pace_phase_due = false;
}

uint32_t EngineImpl::HintFor(TimeNs now, const Connection* c) const {
  if (cfg.rx_capacity_mbps == 0 || c->share_until < now) return 0;
  // A sender that left keeps the level it was measured at, not the parts of
  // those who left before it: it paces to its last hint when it sends again,
  // and 8 senders that went quiet one after another and restarted together
  // came back at C/8 ... C (a 240 KB queue at their receiver).
  // Nor does one that comes back, until an interval's end measures it: the
  // level over those who stayed (the whole link once all had left) handed
  // 8 senders restarting together C, C/2, ... as they came.
  // (One that left before any level was computed is told what the others are.)
  const uint32_t part = EqualPartMbps();
  const uint32_t hint = part != 0 ? part : share_mbps;
  if (c->share_idle_mbps == 0 || !(c->share_idle || c->share_returned)) return hint;
  return c->share_idle ? c->share_idle_mbps : std::min(hint, c->share_idle_mbps);
}

uint32_t EngineImpl::EqualPartMbps() const {
  // More senders than the level was computed over (new ones): an equal part
  // each until the interval ends, so that a new sender is held to its share
  // from its first round trip and the others make room at once.
  // (Senders that said IDLE are no demand.)
  const size_t senders = share_senders.size() - share_listed_idle;
  if (share_mbps != 0 && senders <= share_last_senders) return 0;
  const uint64_t n = std::max<size_t>(senders, 1);
  return static_cast<uint32_t>(std::max<uint64_t>(cfg.rx_capacity_mbps / n, 1));
}

// ---- Data ----

void EngineImpl::MarkAckPending(Connection* c, uint16_t path_id) {
  RxPath& rx = c->rx_paths[path_id];
  if (!rx.queued) {
    rx.queued = true;
    c->ack_queue.push_back(path_id);
  }
}

bool EngineImpl::AckAsked(Connection* c, const wire::Packet& p) {
  // ACK_REQ asks for the ACKs of every path, not only its own: the sender
  // sets it on a burst's last packet, not on each small message's (tx.cc,
  // EndsBurst), and the burst's others, on other paths, are held below
  // ack_every_pkts.
  // One of them that comes after the request was sent before it (same
  // clock, the peer's): it is acknowledged at once too.
  // A request no newer than the last one finds the paths queued since then
  // acknowledged at once already, or holding packets sent after it.
  const uint32_t ts = p.data.tx_ts_ns;
  const bool sent_before = c->ack_asked && !wire::SeqLt(c->ack_asked_ts, ts);
  if ((p.flags & wire::flags::kAckReq) == 0) return sent_before;
  if (!sent_before) {
    c->ack_asked_ts = ts;
    c->ack_asked = true;
    for (const uint16_t id : c->ack_queue) c->rx_paths[id].ack_now = true;
  }
  return true;
}

bool EngineImpl::RecordPsn(TimeNs now, Connection* c, const wire::FrameInfo& from,
                           const wire::Packet& p) {
  RxPath& rx = c->rx_paths[p.path_id];
  const wire::DataBody& d = p.data;
  if (wire::SeqLt(rx.cum, d.una_psn)) {
    // The sender settled everything before una_psn: stop waiting for it.
    ShiftDown(rx.bits, d.una_psn - rx.cum);
    rx.cum = d.una_psn;
    Normalize(rx);
  }
  bool dup = false;
  const auto any_bits = [&rx] {
    uint64_t any = 0;
    for (uint64_t w : rx.bits) any |= w;
    return any != 0;
  };
  bool gap = any_bits();
  if (d.psn == rx.cum && !gap) {
    rx.cum++;  // the next in order with nothing held beyond it: the usual case, no shift
  } else if (wire::SeqLt(d.psn, rx.cum)) {
    dup = true;
  } else {
    const uint32_t i = d.psn - rx.cum;
    if (i > wire::kSackBits) {  // bit 0 is cum, the SACK reaches 256 past it
      stats.rx_beyond_window++;
      return false;
    }
    uint64_t& w = rx.bits[i / 64];
    const uint64_t bit = uint64_t{1} << (i % 64);
    dup = (w & bit) != 0;
    w |= bit;
    Normalize(rx);
    gap = any_bits();
  }
  if (dup) stats.rx_duplicate_pkts++;
  const bool ce = from.ecn == wire::Ecn::kCe;
  rx.rx_pkts++;
  if (ce) {
    rx.ce_pkts++;
    c->rx_ce_pkts++;
    stats.rx_ce_pkts++;
  }
  rx.echo_ts = d.tx_ts_ns;
  rx.echo_rx_at = now;
  rx.has_echo = true;
  rx.echo_ce = ce;
  rx.unacked++;
  rx.last_qpn = d.stream_id;
  if (AckAsked(c, p) || gap || dup || ce || rx.unacked >= cfg.ack_every_pkts) {
    rx.ack_now = true;
  } else {
    rx.ack_due = std::min(rx.ack_due, now + cfg.ack_delay_ns);
  }
  MarkAckPending(c, p.path_id);
  return true;
}

void EngineImpl::HandleData(TimeNs now, Connection* c, const wire::FrameInfo& from,
                            const wire::Packet& p) {
  if (p.path_id >= c->rx_paths.size()) {
    stats.rx_bad_path++;
    return;
  }
  if (!RecordPsn(now, c, from, p)) return;
  if (cfg.rx_capacity_mbps != 0) {
    AccountShare(now, c, from.ecn == wire::Ecn::kCe, (p.flags & wire::flags::kIdle) != 0);
  }
  // From here on the packet is acknowledged at path level: a chunk dropped
  // below is recovered by the sender's message probe (NAK RESEND).
  const wire::DataBody& d = p.data;
  Qp* qp = FindQp(d.stream_id);
  const bool probe = (p.flags & wire::flags::kMsgProbe) != 0;
  if (qp == nullptr || qp->conn != c->local_id) {
    stats.rx_unknown_stream++;
    // A stream not connected yet (the peer's data came before our
    // ConnectQp): nothing of the message was placed.
    if (probe && wire::IsRequest(p.type) && !AckClosedStream(c, p)) {
      QueueResend(c, d.src_stream, p, nullptr,
                  wire::CarriesPayload(p.type) ? ChunksOf(d.msg_len, c->chunk_bytes) : 1);
    }
    return;
  }
  if (d.src_stream != qp->remote_qpn) {
    stats.rx_wrong_stream++;  // another stream of the peer's may not write into this one
    return;
  }
  if (wire::IsRequest(p.type)) {
    HandleRequest(now, c, qp, p);
  } else {
    HandleResponse(now, c, qp, p);
  }
}

bool EngineImpl::Scatter(Qp* qp, uint32_t pd, const SgList& sg, uint64_t offset,
                         std::span<const uint8_t> data) {
  size_t done = 0;
  for (const Sge& s : sg) {
    if (done == data.size()) break;
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    const size_t n = std::min<uint64_t>(s.length - offset, data.size() - done);
    if (!mrs.CheckLocal(s.lkey, pd, s.addr + offset, n, access::kLocalWrite)) {
      return false;
    }
    if (!mem->Write(qp->owner, s.addr + offset, data.data() + done, n)) return false;
    done += n;
    offset = 0;
  }
  return done == data.size();
}

void EngineImpl::QueueNak(TimeNs now, Connection* c, Qp* qp, RxMsg* m, const wire::Packet& p,
                          wire::NakCode code, wire::NakDetail detail) {
  if (m != nullptr && m->failed) {
    m->fail_code = code;
    m->fail_detail = detail;
  }
  // One NAK per message and RTO, unless the sender asks for an answer.
  if (m != nullptr && m->nak_sent && (p.flags & wire::flags::kAckReq) == 0 &&
      now - m->nak_at < cfg.rto_min_ns) {
    return;
  }
  if (m != nullptr) {
    m->nak_sent = true;
    m->nak_at = now;
  }
  wire::NakBody n;
  n.stream_id = qp->remote_qpn;
  n.msn = p.data.msn;
  n.psn = p.data.psn;
  n.code = code;
  n.detail = static_cast<uint8_t>(detail);
  if (code == wire::NakCode::kReceiverNotReady) {
    n.rnr_delay_10us = static_cast<uint16_t>(
        std::min<TimeNs>((qp->attr.min_rnr_delay_ns + 9'999) / 10'000, 0xffff));
  }
  if (c->naks.size() >= kMaxQueuedControl) {
    stats.control_dropped++;  // a peer that floods refused packets gets fewer NAKs, not our memory
    return;
  }
  c->naks.push_back(PendingNak{p.path_id, n});
}

void EngineImpl::QueueResend(Connection* c, uint32_t requester_stream, const wire::Packet& p,
                             const RxMsg* m, uint32_t nchunks) {
  // The first few missing ranges; a later probe asks again for the rest.
  const uint32_t n = m != nullptr ? m->got.size() : std::max<uint32_t>(nchunks, 1);
  uint32_t from = 0;
  for (uint32_t k = 0; k < config::kResendRangesPerProbe && from < n; k++) {
    const uint32_t first = m != nullptr ? m->got.NextUnset(from) : 0;
    if (first >= n) break;
    const uint32_t end = m != nullptr ? m->got.NextSet(first) : n;
    if (c->naks.size() >= kMaxQueuedControl) {
      stats.control_dropped++;
      return;
    }
    wire::NakBody nak;
    nak.stream_id = requester_stream;
    nak.msn = p.data.msn;
    nak.psn = p.data.psn;
    nak.code = wire::NakCode::kResend;
    nak.detail = static_cast<uint8_t>(wire::NakDetail::kNotPlaced);
    nak.first_chunk = first;
    nak.num_chunks = end - first;
    c->naks.push_back(PendingNak{p.path_id, nak});
    stats.tx_resend_naks++;
    from = end;
  }
}

void EngineImpl::RememberClosed(Connection* c, const Qp& qp) {
  ClosedStream s{qp.qpn, qp.remote_qpn, qp.msn_next, qp.dirty};
  c->closed_acks += s.ack_pending ? 1 : 0;
  if (c->closed.size() < config::kClosedStreamsPerConn) {
    c->closed.push_back(s);
  } else {
    c->closed_acks -= c->closed[c->closed_next].ack_pending ? 1 : 0;
    c->closed[c->closed_next] = s;
    c->closed_next = (c->closed_next + 1) % config::kClosedStreamsPerConn;
  }
}

bool EngineImpl::AckClosedStream(Connection* c, const wire::Packet& p) {
  // A READ or atomic is not done when accepted: its response, if lost, can
  // no longer come, and a stream ACK would keep its requester waiting.
  if (p.type == wire::PacketType::kReadReq || wire::IsAtomicRequest(p.type)) return false;
  for (ClosedStream& s : c->closed) {
    if (s.qpn != p.data.stream_id || s.remote_qpn != p.data.src_stream) continue;
    if (!wire::SeqLt(p.data.msn, s.msn_next)) return false;
    if (!s.ack_pending) c->closed_acks++;
    s.ack_pending = true;  // the probe asked for an ACK of its path (ACK_REQ)
    return true;
  }
  return false;
}

void EngineImpl::ReleaseRxMsg(Connection* c, RxMsg* m) {
  c->rx_state_bytes -= m->state_bytes;
  m->state_bytes = 0;
  m->active = false;
  if (m->got.HeapBytes() != 0) m->got = ChunkSet{};
}

void EngineImpl::RefuseAfter(Qp* qp, uint32_t msn) {
  if (!qp->has_failed_msg || wire::SeqLt(msn, qp->failed_msn)) {
    qp->has_failed_msg = true;
    qp->failed_msn = msn;
  }
}

void EngineImpl::HandleRequest(TimeNs now, Connection* c, Qp* qp, const wire::Packet& p) {
  const wire::DataBody& d = p.data;
  const bool probe = (p.flags & wire::flags::kMsgProbe) != 0;
  if (RxMsg* f = qp->Window(d.msn); f != nullptr && f->active && f->msn == d.msn && f->failed) {
    QueueNak(now, c, qp, f, p, f->fail_code, f->fail_detail);  // what it was refused for
    return;
  }
  if (qp->state == QpState::kError || (qp->has_failed_msg && wire::SeqLt(qp->failed_msn, d.msn))) {
    // Verbs: nothing after a refused message is executed; its requester
    // fails that message and flushes the rest.
    QueueNak(now, c, qp, nullptr, p, wire::NakCode::kInvalidRequest,
             wire::NakDetail::kStreamInError);
    return;
  }
  if (wire::SeqLt(d.msn, qp->msn_next)) {
    // Already accepted: the stream ACK must have been lost; send it again.
    stats.rx_duplicate_chunks++;
    if (!qp->dirty) {
      qp->dirty = true;
      c->dirty.push_back(qp->qpn);
    }
    return;
  }
  if (d.msn - qp->msn_next >= cfg.stream_window_msgs) {
    stats.rx_beyond_window++;  // the peer knows our window from the handshake
    return;
  }
  const uint32_t chunk = c->chunk_bytes;
  const uint32_t nchunks = wire::CarriesPayload(p.type) ? ChunksOf(d.msg_len, chunk) : 1;
  RxMsg& m = qp->WindowGrow(d.msn);
  if (!m.active || m.msn != d.msn) {
    const size_t need = ChunkSet::HeapBytesFor(nchunks);
    if (c->rx_state_bytes + need > cfg.rx_msg_state_bytes) {
      stats.rx_state_exhausted++;  // bounded: a probe asks for this message again later
      if (probe) QueueResend(c, qp->remote_qpn, p, nullptr, nchunks);
      return;
    }
    ReleaseRxMsg(c, &m);
    m = RxMsg{};
    m.active = true;
    m.msn = d.msn;
    m.type = p.type;
    m.len = d.msg_len;
    m.got.Reset(nchunks);
    m.state_bytes = m.got.HeapBytes();
    c->rx_state_bytes += m.state_bytes;
    m.recv_seq = d.recv_seq;
    m.imm = d.imm;
    m.va = d.va;
    m.rkey = d.rkey;
    m.operand0 = d.operand0;
    m.operand1 = d.operand1;
  } else if (m.type != p.type || m.len != d.msg_len) {
    stats.rx_bad_chunk++;
    return;
  }
  if ((p.flags & wire::flags::kSolicited) != 0) m.solicited = true;
  const size_t len = p.payload.size();
  if (wire::CarriesPayload(p.type) &&
      (d.msg_offset % chunk != 0 || len != std::min<uint64_t>(chunk, d.msg_len - d.msg_offset))) {
    stats.rx_bad_chunk++;
    return;
  }
  const uint32_t idx = d.msg_offset / chunk;
  if (idx >= m.got.size()) return;
  const bool needs_receive = wire::ConsumesReceive(p.type);
  if (needs_receive && !ReceivePosted(qp, d.recv_seq, d.msn)) {
    QueueNak(now, c, qp, &m, p, wire::NakCode::kReceiverNotReady, wire::NakDetail::kNone);
    return;
  }
  if (m.got.Test(idx)) {
    // A duplicate. A message probe asks what is missing; tell it.
    stats.rx_duplicate_chunks++;
    if (probe && !m.got.Full()) QueueResend(c, qp->remote_qpn, p, &m, nchunks);
    return;
  }

  switch (p.type) {
    case PacketType::kWriteImm:
    case PacketType::kWrite: {
      if (len != 0) {
        // The whole message must fit its region (as verbs checks it): no chunk
        // of a WRITE that reaches past the region is placed.
        // The QP must allow remote writes (qp_access_flags), then the region.
        wire::NakDetail why =
            (qp->attr.remote_access & access::kRemoteWrite) == 0
                ? wire::NakDetail::kNoPermission
                : mrs.CheckRemote(d.rkey, qp->attr.pd, d.va, d.msg_len, access::kRemoteWrite);
        if (why == wire::NakDetail::kNone &&
            !mem->Write(qp->owner, d.va + d.msg_offset, p.payload.data(), len)) {
          why = wire::NakDetail::kRegionInvalidated;  // its memory is out of reach
        }
        if (why != wire::NakDetail::kNone) {
          m.failed = true;
          RefuseAfter(qp, m.msn);
          QueueNak(now, c, qp, &m, p, wire::NakCode::kRemoteAccess, why);
          AdvanceReceiver(now, c, qp);  // the QP enters the error state if it is next
          return;
        }
      }
      break;
    }
    case PacketType::kSend:
    case PacketType::kSendImm: {
      const PostedRecv& r = qp->rq[d.recv_seq - qp->rq_base];
      if (d.msg_len > r.total) {
        m.failed = true;
        m.local_status = WcStatus::kLocLenErr;
        RefuseAfter(qp, m.msn);
        QueueNak(now, c, qp, &m, p, wire::NakCode::kInvalidRequest,
                 wire::NakDetail::kReceiveTooSmall);
        AdvanceReceiver(now, c, qp);  // completes the receive with a length error if it is next
        return;
      }
      if (!Scatter(qp, r.pd, r.sg, d.msg_offset, p.payload)) {
        // The receive buffer's region went away after it was posted: a
        // protection error here, an access error for the requester.
        m.failed = true;
        m.local_status = WcStatus::kLocProtErr;
        RefuseAfter(qp, m.msn);
        QueueNak(now, c, qp, &m, p, wire::NakCode::kRemoteAccess,
                 wire::NakDetail::kRegionInvalidated);
        AdvanceReceiver(now, c, qp);
        return;
      }
      break;
    }
    default:  // READ and ATOMIC requests execute in stream order in AdvanceReceiver.
      break;
  }
  m.got.Set(idx);
  if (probe && !m.got.Full()) QueueResend(c, qp->remote_qpn, p, &m, nchunks);
  AdvanceReceiver(now, c, qp);
}

void EngineImpl::AdvanceReceiver(TimeNs now, Connection* c, Qp* qp) {
  bool advanced = false;
  while (qp->state == QpState::kReady) {
    RxMsg* slot = qp->Window(qp->msn_next);
    if (slot == nullptr || !slot->active || slot->msn != qp->msn_next) break;
    RxMsg& m = *slot;
    if (m.failed) {
      // Every earlier message is done: the refused one ends the stream, as
      // in verbs. Its receive (if it consumed one) completes with the local
      // error, the QP enters the error state and the rest is flushed.
      if (wire::ConsumesReceive(m.type) && m.type != PacketType::kWriteImm && !qp->rq.empty() &&
          m.recv_seq == qp->rq_base) {
        const PostedRecv r = qp->rq.front();
        qp->rq.pop_front();
        qp->rq_base++;
        PushCqe(qp->attr.recv_cq,
                Completion{r.wr_id, m.local_status, WcOpcode::kRecv, false, 0, 0, qp->qpn});
      }
      FailQp(qp, WcStatus::kWrFlushErr);
      break;
    }
    if (!m.got.Full()) break;
    if (m.type == PacketType::kReadReq || wire::IsAtomicRequest(m.type)) {
      const bool atomic = wire::IsAtomicRequest(m.type);
      if (atomic && m.va % 8 != 0) {
        m.failed = true;
        RefuseAfter(qp, m.msn);
        QueueNak(now, c, qp, &m, ExecutionNakCause(m.msn), wire::NakCode::kInvalidRequest,
                 wire::NakDetail::kMisalignedAtomic);
        continue;  // the failed branch above ends the stream
      }
      const uint64_t len = atomic ? 8 : m.len;
      const uint32_t need = atomic ? access::kRemoteAtomic : access::kRemoteRead;
      wire::NakDetail why = (qp->attr.remote_access & need) == 0 ? wire::NakDetail::kNoPermission
                            : len == 0                           ? wire::NakDetail::kNone
                                       : mrs.CheckRemote(m.rkey, qp->attr.pd, m.va, len, need);
      uint64_t orig = 0;
      if (why == wire::NakDetail::kNone && atomic &&
          !(m.type == PacketType::kAtomicFetchAdd
                ? mem->FetchAdd(qp->owner, m.va, m.operand0, &orig)
                : mem->CompareSwap(qp->owner, m.va, m.operand0, m.operand1, &orig))) {
        why = wire::NakDetail::kRegionInvalidated;  // its memory is out of reach
      }
      if (why != wire::NakDetail::kNone) {
        m.failed = true;
        RefuseAfter(qp, m.msn);
        QueueNak(now, c, qp, &m, ExecutionNakCause(m.msn), wire::NakCode::kRemoteAccess, why);
        continue;
      }
      const MsgRef ref = AllocMsg(c);
      TxMsg* r = Msg(c, ref);
      r->is_response = true;
      r->qpn = qp->qpn;
      r->msn = m.msn;
      if (atomic) {
        r->type = PacketType::kAtomicResp;
        r->len = 8;
        r->orig = orig;
        r->num_chunks = 1;
      } else {
        r->type = PacketType::kReadResp;
        r->len = m.len;
        r->src_va = m.va;
        r->rkey = m.rkey;  // every chunk is checked again when it is read
        r->num_chunks = ChunksOf(m.len, c->chunk_bytes);
      }
      r->delivered.Reset(r->num_chunks);
      Ready(c, ref);
    } else if (wire::ConsumesReceive(m.type)) {
      if (qp->rq.empty() || m.recv_seq != qp->rq_base) {
        // Its receive went to another message (a peer that numbered two
        // messages alike): refused, never a receive that is not there.
        m.failed = true;
        m.local_status = WcStatus::kLocQpOpErr;
        RefuseAfter(qp, m.msn);
        QueueNak(now, c, qp, &m, ExecutionNakCause(m.msn), wire::NakCode::kInvalidRequest,
                 wire::NakDetail::kNone);
        continue;
      }
      const PostedRecv r = qp->rq.front();
      qp->rq.pop_front();
      qp->rq_base++;
      Completion e;
      e.wr_id = r.wr_id;
      e.opcode = m.type == PacketType::kWriteImm ? WcOpcode::kRecvRdmaWithImm : WcOpcode::kRecv;
      e.byte_len = m.len;
      e.has_imm = m.type != PacketType::kSend;
      e.imm = m.imm;
      e.qp_num = qp->qpn;
      PushCqe(qp->attr.recv_cq, e);
    }
    ReleaseRxMsg(c, &m);
    qp->msn_next++;
    advanced = true;
  }
  if (advanced && !qp->dirty) {
    qp->dirty = true;
    c->dirty.push_back(qp->qpn);
  }
}

void EngineImpl::HandleResponse(TimeNs now, Connection* c, Qp* qp, const wire::Packet& p) {
  const wire::DataBody& d = p.data;
  MsgRef* ref = FindByMsn(qp, c->msgs, d.msn);
  if (ref == nullptr) return;  // a late duplicate of a completed response
  TxMsg* m = Msg(c, *ref);
  if (m == nullptr || m->done) return;
  if (p.type == PacketType::kReadResp) {
    if (m->opcode != Opcode::kRead || d.msg_len != m->len) {
      stats.rx_bad_chunk++;
      return;
    }
    const uint32_t chunk = c->chunk_bytes;
    if (d.msg_offset % chunk != 0 ||
        p.payload.size() != std::min<uint64_t>(chunk, d.msg_len - d.msg_offset)) {
      stats.rx_bad_chunk++;
      return;
    }
    const uint32_t idx = d.msg_offset / chunk;
    if (m->resp_received.Test(idx)) {
      stats.rx_duplicate_chunks++;
      return;
    }
    if (!Scatter(qp, qp->attr.pd, m->sg, d.msg_offset, p.payload)) {
      m->status = WcStatus::kLocProtErr;
      m->done = true;
      FailQp(qp, WcStatus::kWrFlushErr);
      return;
    }
    m->resp_received.Set(idx);
    if (!m->resp_received.Full()) {
      // The response is flowing: the request arrived, so its probes wait
      // (a 2 GiB READ takes longer than any probe budget).
      if (m->probe_at != kNever) {
        m->probe_at = now + m->probe_backoff;
        m->retries_left = qp->attr.retry_cnt;
      }
      return;
    }
  } else {
    if (!wire::IsAtomicRequest(m->type)) {
      stats.rx_bad_chunk++;
      return;
    }
    uint8_t orig[8];
    std::memcpy(orig, &d.orig, 8);  // the result lands in host byte order, as with verbs
    if (!Scatter(qp, qp->attr.pd, m->sg, 0, orig)) {
      m->status = WcStatus::kLocProtErr;
      m->done = true;
      FailQp(qp, WcStatus::kWrFlushErr);
      return;
    }
  }
  m->done = true;
  m->probe_at = kNever;
  qp->rd_atomic_pending--;
  // The responder executes in stream order: a response also says that every
  // earlier message was accepted, should the stream ACK saying so be lost.
  StreamAccepted(now, c, qp, m->msn + 1);
  CompleteSends(qp);
}

}  // namespace metaroce::transport
