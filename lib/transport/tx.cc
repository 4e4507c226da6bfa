/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Transmit side: what to send next (control, retransmissions, new data
// sprayed over the paths) and building packets into caller buffers. Loss and
// path health are in loss.cc, timers and the work lists in timers.cc.

#include <algorithm>

#include "engine_private.h"

namespace metaroce::transport {
namespace {

using wire::PacketType;

// The engine builds every packet by the rules; engine_checks builds check them anyway.
#ifdef METAROCE_ENGINE_CHECKS
constexpr wire::EncodeOptions kEncode{};
#else
constexpr wire::EncodeOptions kEncode{.trusted = true};
#endif

// The MetaRoCE bytes of @p p into @p out: bytes written, 0 if they do not fit
// (or, in engine_checks builds, if the packet breaks a rule).
size_t EncodeBody(const wire::Packet& p, std::span<uint8_t> out) {
  if (!kEncode.trusted && wire::CheckFields(p) != wire::ParseError::kOk) return 0;
  return wire::EncodeTrusted(p, out);
}

// Gathers @p len bytes at message offset @p off from a gather list, each
// piece checked against the regions first (one may have been deregistered
// since the work request was posted), or the memory could not be read. False
// if one fails.
bool Gather(const MrTable& mrs, uint32_t pd, uint64_t owner, MemoryAccess* mem, const SgList& sg,
            uint64_t off, uint8_t* dst, size_t len) {
  uint64_t o = off;
  size_t left = len;
  for (const Sge& s : sg) {
    if (left == 0) break;
    if (o >= s.length) {
      o -= s.length;
      continue;
    }
    const size_t n = std::min<uint64_t>(s.length - o, left);
    if (!mrs.CheckLocal(s.lkey, pd, s.addr + o, n, 0)) return false;
    left -= n;
    o = 0;
  }
  for (const Sge& s : sg) {
    if (len == 0) break;
    if (off >= s.length) {
      off -= s.length;
      continue;
    }
    const size_t n = std::min<uint64_t>(s.length - off, len);
    if (!mem->Read(owner, s.addr + off, dst, n)) return false;
    dst += n;
    len -= n;
    off = 0;
  }
  return true;
}

}  // namespace

// ---- Packets out ----

wire::FrameInfo& EngineImpl::FrameTo(const Connection* c, uint8_t plane, const TxSlot* slot) {
  wire::FrameInfo& f = tx_info;  // its other fields keep their defaults
  f.eth_src = local_planes[plane].mac;
  f.src = local_planes[plane].ip;
  if (c == nullptr) {
    f.eth_dst = slot->addr.eth_dst;
    f.dst = slot->addr.dst;
  } else if (plane == 0) {
    f.eth_dst = c->peer.mac;
    f.dst = c->peer.ip;
  } else {
    f.eth_dst = c->peer_plane_mac[plane];
    f.dst = c->peer_plane_ip[plane];
  }
  f.dscp = cfg.dscp;
  f.dst_port = c != nullptr ? c->peer.udp_port : slot->addr.dst_port;
  return f;
}

const wire::EncapTemplate& EngineImpl::Encap(Connection* c, uint8_t plane) {
  if (c->encap.size() <= plane) c->encap.resize(size_t{plane} + 1);
  wire::EncapTemplate& t = c->encap[plane];
  if (!t.built()) t.Build(FrameTo(c, plane, nullptr), kEncode);
  return t;
}

void EngineImpl::ForgetEncap(Connection* c) {
  for (wire::EncapTemplate& t : c->encap) t.Clear();
}

bool EngineImpl::Emit(TimeNs now, Connection* c, uint8_t plane, uint16_t src_port, wire::Packet* p,
                      TxSlot* slot, wire::Ecn ecn) {
  size_t n;
  if (cfg.framing == Framing::kEthernet && c != nullptr) {
    // The usual frame: the connection's prebuilt headers, patched.
    const wire::EncapTemplate& t = Encap(c, plane);
    if (!t.built() || slot->cap < t.bytes()) return false;
    const size_t body = EncodeBody(*p, {slot->buf + t.bytes(), slot->cap - t.bytes()});
    if (body == 0) return false;
    n = t.Stamp(src_port, ecn, body, slot->buf);
  } else {
    wire::FrameInfo& f = FrameTo(c, plane, slot);
    f.ecn = ecn;
    f.src_port = src_port;
    if (cfg.framing == Framing::kEthernet) {
      absl::StatusOr<size_t> r = wire::EncodeFrame(f, *p, {slot->buf, slot->cap}, kEncode);
      if (!r.ok()) return false;  // slot too small: the caller's buffers are misconfigured
      n = *r;
    } else {
      n = EncodeBody(*p, {slot->buf, slot->cap});
      if (n == 0) return false;
      slot->addr = f;
    }
  }
  slot->len = static_cast<uint32_t>(n);
  slot->plane = plane;
  stats.tx_packets++;
  stats.tx_bytes += n;
  if (c != nullptr) {
    c->tx_pkts++;
    c->tx_bytes += n;
  }
  (void)now;
  return true;
}

EngineImpl::Sent EngineImpl::SendChunk(TimeNs now, Connection* c, TxPath* path, MsgRef ref,
                                       uint32_t chunk, RetxKind kind, bool retx, TxSlot* slot) {
  TxMsg* m = Msg(c, ref);
  if (m == nullptr) return Sent::kGone;
  Qp* qp = FindQp(m->qpn);
  if (qp == nullptr || qp->conn != c->local_id) return Sent::kGone;
  const bool probe = kind == RetxKind::kMsgProbe;
  const bool payload_type = wire::CarriesPayload(m->type);
  const uint64_t off = payload_type ? uint64_t{chunk} * c->chunk_bytes : 0;
  const size_t len = payload_type ? std::min<uint64_t>(c->chunk_bytes, m->len - off) : 0;
  const bool last = chunk + 1 == m->num_chunks;
  if (m->type == PacketType::kReadResp && len != 0 &&
      mrs.CheckRemote(m->rkey, qp->attr.pd, m->src_va + off, len, access::kRemoteRead) !=
          wire::NakDetail::kNone) {
    // The region was deregistered (or changed) while the response was being
    // served: never read memory that is no longer registered.
    FailResponse(now, c, ref, wire::NakDetail::kRegionInvalidated);
    return Sent::kGone;
  }

  wire::Packet& p = tx_pkt;
  p.type = m->type;
  p.flags = 0;
  p.dst_conn_id = c->remote_id;
  p.path_id = path->id;
  p.data = wire::DataBody{};
  p.payload = {};
  const bool ends_burst = last && EndsBurst(c, qp, m);
  if ((last && (retx || m->num_chunks > 1 || ends_burst)) || probe || kind == RetxKind::kTailLoss ||
      WantsAckNow(c, *path)) {
    p.flags |= wire::flags::kAckReq;
  }
  if (probe && wire::IsRequest(m->type)) p.flags |= wire::flags::kMsgProbe;
  if (retx) p.flags |= wire::flags::kRetransmit;
  if (m->solicited && last) p.flags |= wire::flags::kSolicited;
  if (ends_burst && !retx && c->peer_takes_idle && NothingPostedAfter(qp, m)) {
    p.flags |= wire::flags::kIdle;
  }
  wire::DataBody& d = p.data;
  d.psn = path->next_psn;
  d.una_psn = path->inflight == 0 ? path->next_psn : path->una;
  d.tx_ts_ns = static_cast<uint32_t>(now);
  d.stream_id = qp->remote_qpn;
  d.msn = m->msn;
  d.msg_len = m->len;
  d.msg_offset = static_cast<uint32_t>(off);
  d.src_stream = qp->qpn;
  if (wire::HasRdmaTarget(m->type)) {
    d.rkey = m->rkey;
    d.va = m->remote_va;
  }
  if (wire::ConsumesReceive(m->type)) d.recv_seq = m->recv_seq;
  if (wire::HasImmediate(m->type)) d.imm = m->imm;
  if (wire::IsAtomicRequest(m->type)) {
    d.msg_len = 8;
    d.operand0 = m->operand0;
    d.operand1 = m->operand1;
  }
  if (m->type == PacketType::kAtomicResp) d.orig = m->orig;

  // Gather the payload straight into its place in the slot: one copy.
  const size_t pos =
      (cfg.framing == Framing::kEthernet ? wire::EncapBytes(cfg.local_ip.v6, false) : 0) +
      wire::PayloadOffset(p.type);
  if (pos + len + wire::kCrcBytes > slot->cap) return Sent::kNoRoom;
  if (len != 0) {
    uint8_t* dst = slot->buf + pos;
    if (m->is_response) {
      if (!mem->Read(qp->owner, m->src_va + off, dst, len)) {
        // The region's memory is out of reach (its owner unmapped it or is gone).
        FailResponse(now, c, ref, wire::NakDetail::kRegionInvalidated);
        return Sent::kGone;
      }
    } else if (!Gather(mrs, qp->attr.pd, qp->owner, mem, m->sg, off, dst, len)) {
      // Its gather list's region went away: a local protection error, as in verbs.
      m->status = WcStatus::kLocProtErr;
      m->done = true;
      FailQp(qp, WcStatus::kWrFlushErr);
      return Sent::kGone;
    }
    p.payload = {dst, len};
  }
  if (!Emit(now, c, path->plane, path->src_port, &p, slot, wire::Ecn::kEct0)) return Sent::kNoRoom;

  Inflight& e = path->At(path->next_psn);
  e = Inflight{true, probe, kind == RetxKind::kTailLoss, m->epoch, ref, chunk, slot->len, now};
  if (path->inflight == 0) path->una = path->next_psn;
  path->next_psn++;
  path->inflight++;
  c->inflight++;
  path->cc.inflight += slot->len;
  c->cc.inflight += slot->len;
  if (c->pace_mbps != 0) {
    // The pacer: the next data packet goes when this one has left at the
    // pacer's rate (bytes x 8000 / Mbit/s = ns). A poll later than the
    // schedule keeps it, by up to one packet's time (at the hint) or half a
    // window (window pacing, kCcPacingBurstShift), so that the caller's
    // polling granularity costs no rate.
    const TimeNs gap = uint64_t{slot->len} * 8'000 / c->pace_mbps;
    const TimeNs credit =
        std::max<TimeNs>(gap, uint64_t{c->pace_burst_bytes} * 8'000 / c->pace_mbps);
    c->pace_at = std::max(c->pace_at, now - std::min(now, credit)) + gap;
    c->pace_armed = true;
  }
  path->tx_pkts++;
  if (kind != RetxKind::kTailLoss && !probe) {
    // One tail-loss probe (and one rescue) per burst of sends.
    path->last_sent_at = now;
    path->tlp_sent = false;
    path->rescue_sent = false;
  }
  if (++path->health_sent >= cfg.path_health_window_pkts) CheckPathHealth(now, c, path);
  stats.tx_data_pkts++;
  if (retx) {
    path->retx_pkts++;
    stats.tx_retransmits++;
  }
  return Sent::kOk;
}

void EngineImpl::FailResponse(TimeNs now, Connection* c, MsgRef ref, wire::NakDetail why) {
  TxMsg* m = Msg(c, ref);
  if (m == nullptr) return;
  Qp* qp = FindQp(m->qpn);
  if (qp != nullptr && qp->conn == c->local_id) {
    // The requester's READ fails with a remote access error; this QP, as
    // after any refused request, enters the error state.
    wire::Packet ctx;
    ctx.flags = wire::flags::kAckReq;
    ctx.data.msn = m->msn;
    QueueNak(now, c, qp, nullptr, ctx, wire::NakCode::kRemoteAccess, why);
    FailQp(qp, WcStatus::kWrFlushErr);
  }
  FreeMsg(c, ref);
}

void EngineImpl::BuildAck(TimeNs now, Connection* c, uint16_t path_id, wire::Packet* p) {
  RxPath& rx = c->rx_paths[path_id];
  p->type = PacketType::kAck;
  p->dst_conn_id = c->remote_id;
  p->path_id = path_id;
  wire::AckBody& a = p->ack;
  a.cum_psn = rx.cum;
  a.echo_ts_ns = rx.echo_ts;
  a.ack_delay_ns =
      rx.has_echo
          ? static_cast<uint32_t>(std::min<TimeNs>(now - rx.echo_rx_at, wire::kAckNoEcho - 1))
          : wire::kAckNoEcho;
  a.rate_hint_mbps = HintFor(now, c);
  c->hint_sent_mbps = a.rate_hint_mbps;
  a.rx_pkts = rx.rx_pkts;
  a.ce_pkts = rx.ce_pkts;
  a.ece = rx.echo_ce;
  // Wire bit i is PSN cum + 1 + i: the window without its bit 0 (cum, not arrived).
  for (uint32_t i = 0; i < wire::kSackWords; i++) {
    a.sack[i] = rx.bits[i] >> 1 | rx.bits[i + 1] << 63;
  }
  a.has_sack = (a.sack[0] | a.sack[1] | a.sack[2] | a.sack[3]) != 0;
  // Stream ACKs: the stream of the newest packet first (a message probe waits
  // for it), then streams whose receive order advanced.
  auto add = [&](uint32_t stream, uint32_t msn_next) {
    for (uint32_t i = 0; i < a.num_stream_acks; i++) {
      if (a.stream_acks[i].stream_id == stream) return;
    }
    a.stream_acks[a.num_stream_acks++] = {stream, msn_next};
  };
  auto add_qp = [&](Qp* qp) {
    add(qp->remote_qpn, qp->msn_next);
    qp->dirty = false;
  };
  if (Qp* qp = FindQp(rx.last_qpn); qp != nullptr && qp->conn == c->local_id) add_qp(qp);
  while (!c->dirty.empty() && a.num_stream_acks < wire::kMaxStreamAcks) {
    Qp* qp = FindQp(c->dirty.back());
    c->dirty.pop_back();
    if (qp != nullptr && qp->conn == c->local_id) add_qp(qp);
  }
  // Destroyed streams' last word, while it may still be missing at the peer.
  for (size_t i = 0; c->closed_acks != 0 && i < c->closed.size(); i++) {
    ClosedStream& s = c->closed[i];
    if (!s.ack_pending || a.num_stream_acks == wire::kMaxStreamAcks) continue;
    add(s.remote_qpn, s.msn_next);
    s.ack_pending = false;
    c->closed_acks--;
  }
  rx.unacked = 0;
  rx.ack_now = false;
  rx.ack_due = kNever;
  rx.queued = false;
}

bool EngineImpl::PathHasRoom(const Connection* c, const TxPath& p, bool probe) const {
  if (p.state != PathState::kActive || p.next_psn - p.una >= p.ring.size()) return false;
  return probe || (p.inflight < p.window && c->inflight < cfg.conn_window_pkts && p.cc.HasRoom() &&
                   c->cc.HasRoom());
}

inline bool EngineImpl::WantsAckNow(const Connection* c, const TxPath& p) const {
  // The receiver acknowledges a path at once every ack_every_pkts packets;
  // fewer wait ack_delay_ns, longer than a data-center round trip. That
  // holds the window back when the packet about to go leaves the
  // connection's window without room for a full one more (its ACK would
  // come only after the delay), and for every packet of a thin window, one
  // that puts fewer than ack_every_pkts on each path in a round trip: each
  // ACK then settles one packet, and a window opened by the others' delayed
  // ACKs sat still for most of each round trip. With 8 paths, a new
  // connection's first window (32 KiB: one packet a path) sent for one
  // microsecond and waited five (mr-sim incast, 8 senders: 91.7 -> 93.2 %
  // of N S / C, the queue 0.19 -> 0.08 BDP). A thin window carries few
  // packets a round trip, so an ACK for each costs little.
  if (!cfg.congestion_control || p.inflight + 1 >= cfg.ack_every_pkts) return false;
  const uint64_t thick = uint64_t{c->paths.size()} * cfg.ack_every_pkts * path_cc.mss_bytes;
  return c->cc.cwnd < thick || c->cc.inflight + path_cc.mss_bytes >= c->cc.cwnd;
}

inline bool EngineImpl::NothingPostedAfter(const Qp* qp, const TxMsg* m) {
  // Not even one held back for the receiver's stream window or a fence
  // (EndsBurst counts those out): its QP sends again soon, and the
  // receiver would count it in again from its first packet, as a new
  // sender.
  return m->is_response || qp->sq_tx + 1 >= qp->sq.size();
}

inline bool EngineImpl::EndsBurst(const Connection* c, const Qp* qp, const TxMsg* m) const {
  // Nothing else is ready to go: no other QP's message or response in line,
  // and none released after this one on its QP. (One that waits for the
  // stream window or a fence is not released: this ACK is what frees it.)
  return c->ready.size() == 1 && (m->is_response || qp->sq_tx + 1 >= qp->sq_sched);
}

TxPath* EngineImpl::PickPath(Connection* c, int prefer, int avoid, bool probe) {
  if (prefer >= 0 && PathHasRoom(c, c->paths[prefer], probe)) return &c->paths[prefer];
  // Weighted round robin, each path's weight its congestion window: a path
  // with room adds its window to its credit at its turn and sends when the
  // credit reaches the largest window among the paths. A CE mark that cuts
  // a path's window moves its share of the next packets to the clear paths
  // at once; with windows alone (a window above what the pacer lets a path
  // carry never fills) nothing moved until a path's window was cut below
  // its share of the flight, and a permutation's collisions on the spines
  // held queues of 700 KB for tens of microseconds. A round in which no
  // credit reached it (the widest paths have no room) sends on the path
  // with room and the most credit: spraying never holds back what the
  // windows allow. With several planes a path's weight is its window against
  // its plane's widest: each plane gets its share, and only within a plane
  // do the windows steer. Across planes the windows' history starved planes
  // for good (a cut path whose connection's window is the limit never fills
  // its own again, so it never grows back): mr-sim's 8 planes kept 0.88 of
  // 8 x one plane, 0.96 with this (doc/congestion.md).
  const uint32_t n = static_cast<uint32_t>(c->paths.size());
  int avoided = -1;  // the avoided path, if nothing else has room
  TxPath* richest = nullptr;
  for (uint32_t k = 0; k < n; k++) {
    const uint32_t i = (c->next_path + k) % n;
    if (i == 0) SprayWidths(c);
    TxPath& p = c->paths[i];
    if (!PathHasRoom(c, p, probe)) continue;
    if (static_cast<int>(i) == avoid) {
      avoided = static_cast<int>(i);
      continue;
    }
    // Retransmissions and probes take the first path with room: they go
    // where the windows let them, now.
    const uint64_t full = avoid < 0 && !probe ? c->spray_full : 0;
    const uint64_t plane_full = c->planes > 1 ? c->spray_plane_full[p.plane] : 0;
    const uint64_t weight = plane_full != 0 ? full * p.cc.cwnd / plane_full : p.cc.cwnd;
    p.spray_credit = std::min<uint64_t>(
        p.spray_credit + std::max<uint64_t>(weight, full >> config::kSprayMinShareShift), full);
    if (p.spray_credit >= full) {
      p.spray_credit -= full;
      c->next_path = (i + 1) % n;
      return &p;
    }
    if (richest == nullptr || p.spray_credit > richest->spray_credit) richest = &p;
  }
  if (richest != nullptr) {
    richest->spray_credit = 0;
    c->next_path = static_cast<uint32_t>(richest - c->paths.data() + 1) % n;
    return richest;
  }
  return avoided >= 0 ? &c->paths[avoided] : nullptr;
}

void EngineImpl::SprayWidths(Connection* c) {
  uint64_t widest = 0;
  const bool planes = c->planes > 1;
  if (planes) c->spray_plane_full.fill(0);
  for (const TxPath& p : c->paths) {
    if (p.state != PathState::kActive) continue;
    widest = std::max<uint64_t>(widest, p.cc.cwnd);
    if (planes) {
      uint64_t& plane = c->spray_plane_full[p.plane];
      plane = std::max<uint64_t>(plane, p.cc.cwnd);
    }
  }
  c->spray_full = widest;
}

// ---- The send policy: one connection's turn at the slots ----
//
// ConnTx runs the stages in this order; the order is the policy. Control
// that unblocks the peer (NAKs, ACKs) goes before data, retransmissions
// before new data, and what sending raised leaves in the same turn: NAKs (a
// READ whose region went away) and the chunks of a path that its health
// check failed (left queued, they waited for the connection's next event).
const EngineImpl::TxStage EngineImpl::kTxStages[] = {
    {"close", &EngineImpl::TxClose},
    {"handshake", &EngineImpl::TxHandshake},
    {"keepalive", &EngineImpl::TxKeepalive},
    {"probe_replies", &EngineImpl::TxProbeReplies},
    {"path_probes", &EngineImpl::TxPathProbes},
    {"plb_probes", &EngineImpl::TxPlbProbes},
    {"naks", &EngineImpl::TxNaks},
    {"acks", &EngineImpl::TxAcks},
    {"retransmissions", &EngineImpl::TxRetransmissions},
    {"new_data", &EngineImpl::TxNewData},
    {"late_retransmissions", &EngineImpl::TxRetransmissions},
    {"late_naks", &EngineImpl::TxNaks},
};

size_t EngineImpl::ConnTx(TimeNs now, Connection* c, std::span<TxSlot> slots) {
  if (c->state == ConnState::kFailed) return 0;
  if (c->pace_armed && c->pace_at <= now) c->pace_armed = false;  // its time came: this visit
  TxTurn t{now, slots};
  for (const TxStage& stage : kTxStages) {
    (this->*stage.run)(c, t);
    if (t.over) break;
  }
  return t.n;
}

uint16_t EngineImpl::ControlPort(const Connection* c, uint16_t path_id) const {
  // Control packets about a peer path leave from that path's reply port.
  return path_id < c->rx_paths.size() ? c->rx_paths[path_id].reply_port
                                      : c->paths[path_id % c->paths.size()].src_port;
}

bool EngineImpl::EmitOpening(Connection* c, PacketType type, uint32_t nonce, TxTurn& t) {
  // CONN_REQ, CONN_ACCEPT and CONN_CLOSE say the same about us.
  wire::Packet p;
  FillOpening(c, type, nonce, &p);
  if (type != PacketType::kConnClose && c->peer_reads_hint) {
    p.conn.rate_hint_mbps = HintFor(t.now, c);
    c->hint_sent_mbps = p.conn.rate_hint_mbps;
  }
  if (!Emit(t.now, c, 0, c->paths[0].src_port, &p, t.slot(), wire::Ecn::kNotEct)) return false;
  t.n++;
  return true;
}

void EngineImpl::TxClose(Connection* c, TxTurn& t) {
  if (!c->close_pending) return;
  if (!t.full() && c->state == ConnState::kEstablished)
    EmitOpening(c, PacketType::kConnClose, 0, t);
  FailConnection(c);  // no QP uses it (or it is being evicted): nothing to flush
  t.over = true;
}

void EngineImpl::TxHandshake(Connection* c, TxTurn& t) {
  if (c->state == ConnState::kConnecting) {
    if (c->req_at <= t.now && !t.full()) {
      EmitOpening(c, PacketType::kConnReq, c->nonce, t);
      // Lost like any packet: again after rto_min, then doubling to
      // conn_retry_ns, so that a lossy fabric does not hold a new connection
      // for conn_retry_ns while an absent peer costs a few packets.
      const TimeNs wait = cfg.rto_min_ns << std::min<uint8_t>(c->req_waits, 30);
      c->req_at = t.now + std::min(wait, cfg.conn_retry_ns);
      if (wait < cfg.conn_retry_ns) c->req_waits++;
    }
    t.over = true;  // nothing else goes before the peer accepts
    return;
  }
  if (c->accept_pending && !t.full()) {
    EmitOpening(c, PacketType::kConnAccept, c->accept_nonce, t);
    c->accept_pending = false;
  }
}

void EngineImpl::TxKeepalive(Connection* c, TxTurn& t) {
  if (!c->keepalive_pending || t.full()) return;
  // Any answer from the peer will do: a reply to a probe of an active path
  // changes nothing but the connection's last-heard time.
  for (TxPath& path : c->paths) {
    if (path.state != PathState::kActive) continue;
    wire::Packet p;
    p.type = PacketType::kProbe;
    p.dst_conn_id = c->remote_id;
    p.path_id = path.id;
    p.probe = {path.probe_seq, static_cast<uint32_t>(t.now)};
    if (Emit(t.now, c, path.plane, path.src_port, &p, t.slot(), wire::Ecn::kNotEct)) {
      t.n++;
      stats.keepalives++;
    }
    break;
  }
  c->keepalive_pending = false;
}

void EngineImpl::TxProbeReplies(Connection* c, TxTurn& t) {
  while (!c->probe_replies.empty() && !t.full()) {
    wire::Packet p;
    p.type = PacketType::kProbeReply;
    p.dst_conn_id = c->remote_id;
    p.path_id = c->probe_replies.front().first;
    p.probe = c->probe_replies.front().second;
    c->probe_replies.pop_front();
    if (Emit(t.now, c, PlaneOf(c, p.path_id), ControlPort(c, p.path_id), &p, t.slot(),
             wire::Ecn::kNotEct)) {
      t.n++;
    }
  }
}

void EngineImpl::TxPathProbes(Connection* c, TxTurn& t) {
  if (c->failed_paths == 0) return;
  for (TxPath& path : c->paths) {
    if (t.full()) break;
    if (path.state != PathState::kFailed || path.probe_at > t.now) continue;
    // Try the path again on a fresh source port: a new ECMP route.
    path.src_port = FreshPort(c);
    wire::Packet p;
    p.type = PacketType::kProbe;
    p.dst_conn_id = c->remote_id;
    p.path_id = path.id;
    p.probe = {++path.probe_seq, static_cast<uint32_t>(t.now)};
    path.probe_ports[path.probe_seq % path.probe_ports.size()] = path.src_port;
    if (Emit(t.now, c, path.plane, path.src_port, &p, t.slot(), wire::Ecn::kNotEct)) {
      t.n++;
      stats.tx_probes++;
    }
    // Unanswered probes back off (x2 each, up to 64 intervals; a rerouted
    // path's first few come sooner): a peer that is only slow gets time to
    // answer before the next port is tried.
    path.unanswered_probes++;
    path.probe_at = t.now + ProbeWait(path);
  }
}

void EngineImpl::TxPlbProbes(Connection* c, TxTurn& t) {
  if (c->plb_probes_due == 0) return;
  for (TxPath& path : c->paths) {
    if (t.full()) break;
    if (!path.plb_probe_due || path.state != PathState::kActive) continue;
    SetPlbProbeDue(c, &path, false);
    wire::Packet p;
    p.type = PacketType::kProbe;
    p.dst_conn_id = c->remote_id;
    p.path_id = path.id;
    // Its own number and time: the reply must answer this probe, not a
    // keep-alive (which carries the path's current number).
    p.probe = {++path.probe_seq, static_cast<uint32_t>(t.now)};
    path.plb_probe = p.probe;
    // Should the path fail before the answer comes, the answer still proves
    // this port (HandleProbe revives a failed path on its probe's port).
    path.probe_ports[path.probe_seq % path.probe_ports.size()] = path.plb_port;
    if (Emit(t.now, c, path.plane, path.plb_port, &p, t.slot(), wire::Ecn::kNotEct)) {
      t.n++;
      stats.tx_probes++;
    }
  }
}

void EngineImpl::TxNaks(Connection* c, TxTurn& t) {
  while (!c->naks.empty() && !t.full()) {
    wire::Packet p;
    p.type = PacketType::kNak;
    p.dst_conn_id = c->remote_id;
    p.path_id = c->naks.front().path_id;
    p.nak = c->naks.front().nak;
    c->naks.pop_front();
    if (Emit(t.now, c, PlaneOf(c, p.path_id), ControlPort(c, p.path_id), &p, t.slot(),
             wire::Ecn::kNotEct)) {
      t.n++;
      stats.tx_naks++;
    }
  }
}

void EngineImpl::TxAcks(Connection* c, TxTurn& t) {
  for (size_t k = c->ack_queue.size(); k > 0 && !t.full(); k--) {
    const uint16_t id = c->ack_queue.front();
    c->ack_queue.pop_front();
    RxPath& rx = c->rx_paths[id];
    if (!rx.ack_now && rx.ack_due > t.now) {
      c->ack_queue.push_back(id);
      continue;
    }
    wire::Packet p;
    BuildAck(t.now, c, id, &p);
    if (Emit(t.now, c, PlaneOf(c, id), ControlPort(c, id), &p, t.slot(), wire::Ecn::kNotEct)) {
      t.n++;
      stats.tx_acks++;
    }
  }
}

void EngineImpl::TxRetransmissions(Connection* c, TxTurn& t) {
  while (!c->retx.empty() && !t.full() && !Paced(c, t.now)) {
    RetxChunk& r = c->retx.front();
    TxMsg* m = Msg(c, r.msg);
    const bool probe = r.kind == RetxKind::kMsgProbe;
    if (m == nullptr || m->done || r.count == 0 || r.chunk >= m->num_chunks ||
        (!probe && m->delivered.Test(r.chunk)) || (!probe && m->rnr_resume_at != kNever)) {
      // Nothing to send for this chunk (any more): on to the next of the range.
      if (m == nullptr || m->done || r.count <= 1 || r.chunk + 1 >= m->num_chunks) {
        c->retx.pop_front();
      } else {
        r.chunk++;
        r.count--;
      }
      continue;
    }
    TxPath* path = PickPath(c, r.prefer_path < c->paths.size() ? r.prefer_path : -1,
                            r.avoid_path < c->paths.size() ? r.avoid_path : -1, r.past_window);
    if (path == nullptr) return;
    const Sent sent = SendChunk(t.now, c, path, r.msg, r.chunk, r.kind, true, t.slot());
    // Sending may queue more (a path its health check failed declares what it
    // had in flight lost), at the back, and the ring may grow: r is stale.
    RetxChunk& sent_r = c->retx.front();
    if (sent == Sent::kNoRoom) return;
    if (sent == Sent::kOk) t.n++;
    if (sent == Sent::kGone || --sent_r.count == 0) {
      c->retx.pop_front();
    } else {
      sent_r.chunk++;
    }
  }
}

void EngineImpl::TxNewData(Connection* c, TxTurn& t) {
  // A message leaves the ready queue when all its chunks went out; the QP
  // then queues its next one.
  auto leave = [this, c](TxMsg* m) {
    m->on_ready = false;
    if (!m->fifo) return;
    m->fifo = false;
    if (Qp* qp = FindQp(m->qpn); qp != nullptr && qp->conn == c->local_id) {
      qp->tx_queued = false;
      FeedTx(c, qp);
    }
  };
  // A connection paced to its hint that starts sending after its opening
  // (TakeOpeningHint) or again after an idle spell starts at a random
  // phase: the QPs of a collective post together, and 32 senders whose
  // first packets left in the same instant built 1.1 BDPs at their receiver
  // (mr-sim incast, 400 Gbit/s; 0.15 with the phase). (Window pacing keeps
  // its credit after a pause instead.)
  if (c->pace_mbps != 0 && c->pace_burst_bytes == 0 && c->inflight == 0 && !c->ready.empty() &&
      (c->pace_phase_due || c->pace_at + PacketGapNs(c) < t.now)) {
    StartAtRandomPhase(t.now, c);
  }
  while (!c->ready.empty() && !t.full() && !Paced(c, t.now)) {
    const MsgRef ref = c->ready.front();
    TxMsg* m = Msg(c, ref);
    // A message an RNR NAK stopped waits out its delay off the queue; the
    // timer queues it again.
    if (m == nullptr || !m->on_ready || m->done || m->next_chunk >= m->num_chunks ||
        m->rnr_resume_at != kNever) {
      c->ready.pop_front();
      if (m != nullptr) leave(m);
      continue;
    }
    TxPath* path = PickPath(c, -1);
    if (path == nullptr) return;
    const Sent sent =
        SendChunk(t.now, c, path, ref, m->next_chunk, RetxKind::kLoss, false, t.slot());
    if (sent == Sent::kNoRoom) return;
    if (sent == Sent::kGone) {
      c->ready.pop_front();  // its QP went away: nothing may wait behind it
      if (Msg(c, ref) != nullptr) leave(Msg(c, ref));
      continue;
    }
    t.n++;
    m->next_chunk++;
    if (m->next_chunk == m->num_chunks) {
      c->ready.pop_front();
      leave(m);
    } else if (++m->quantum >= config::kTxQuantumChunks) {
      // Turn over: QPs and responses share the connection in quanta.
      m->quantum = 0;
      c->ready.pop_front();
      c->ready.push_back(ref);
    }
  }
}

void EngineImpl::ReapFailed() {
  for (size_t i = 0; i < conn_order.size();) {
    auto it = conns.find(conn_order[i]);
    Connection* c = it->second.get();
    if (c->state != ConnState::kFailed || !c->qps.empty()) {
      i++;
      continue;
    }
    if (auto p = conn_by_peer.find(PeerKey{c->peer.ip, c->peer.udp_port});
        p != conn_by_peer.end() && p->second == c->local_id) {
      conn_by_peer.erase(p);
    }
    conn_cache.Erase(c->local_id, c->local_id);
    conns.erase(it);
    conn_order.erase(conn_order.begin() + static_cast<ptrdiff_t>(i));
  }
}

size_t EngineImpl::PollTx(TimeNs now, std::span<TxSlot> slots) {
  CheckWorkLists("PollTx entry");
  seen_now = now;
  FailFatalQps();
  RunTimers(now);
  if (reap_pending) {
    reap_pending = false;
    ReapFailed();
  }
  size_t n = 0;
  while (!loose_tx.empty() && n < slots.size()) {
    LooseReply& r = loose_tx.front();
    TxSlot& s = slots[n];
    s.addr.dst = r.to.ip;
    s.addr.eth_dst = r.to.mac;
    s.addr.dst_port = r.to.udp_port;
    const uint16_t src_port =
        cfg.source_ports.empty() ? config::kPathSourcePortMin : cfg.source_ports[0];
    if (Emit(now, nullptr, 0, src_port, &r.packet, &s, wire::Ecn::kNotEct)) n++;
    loose_tx.pop_front();
  }
  n += VisitActive(now, slots.subspan(n));
  CheckWorkLists("PollTx exit");
  return n;
}

}  // namespace metaroce::transport
