/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Connections: the handshake (CONN_REQ -> CONN_RETRY cookie -> CONN_REQ with
// the cookie -> CONN_ACCEPT), engine incarnations, restarted peers, limits,
// idle close, and the paths a new connection starts with (doc/spec.md 8.1).
//
// Threat model: an off-path host that can send packets with any source
// address but never sees the traffic between two engines. It must not be able
// to open, reset or take over a connection, nor hold state here: a CONN_REQ
// creates nothing until its cookie (a keyed MAC only this engine can make)
// comes back from the requester's address, and every later packet must carry
// ids and an incarnation it never saw.

#include <sodium.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "engine_private.h"

namespace metaroce::transport {
namespace {

using wire::PacketType;

}  // namespace

// ---- Cookies ----

uint64_t EngineImpl::Cookie(TimeNs slot, const wire::IpAddr& ip, const wire::ConnBody& req) const {
  uint8_t in[sizeof(ip.bytes) + 2 + 4 + 4 + 8 + 8];
  uint8_t* q = in;
  auto put = [&q](const void* v, size_t n) {
    std::memcpy(q, v, n);
    q += n;
  };
  put(ip.bytes.data(), ip.bytes.size());
  put(&req.udp_port, 2);
  put(&req.src_conn_id, 4);
  put(&req.nonce, 4);
  put(&req.incarnation, 8);
  put(&slot, 8);
  static_assert(crypto_shorthash_KEYBYTES == sizeof(cookie_key));
  static_assert(crypto_shorthash_BYTES == 8);
  uint64_t mac;
  crypto_shorthash(reinterpret_cast<uint8_t*>(&mac), in, sizeof(in), cookie_key);
  // The low byte names the slot, so a check needs one MAC, not two. A
  // cookie is never 0 (0 in a CONN_REQ means "none yet").
  const uint64_t v = (mac & ~uint64_t{0xff}) | (slot & 0xff);
  return v != 0 ? v : 0x100;
}

bool EngineImpl::CookieValid(TimeNs now, const wire::IpAddr& ip, const wire::ConnBody& req) const {
  if (req.cookie == 0) return false;
  const TimeNs slot = now / config::kCookieSlotNs;
  for (TimeNs s : {slot, slot - 1}) {
    if ((s & 0xff) != (req.cookie & 0xff)) continue;
    const uint64_t want = Cookie(s, ip, req);
    return sodium_memcmp(&want, &req.cookie, sizeof(want)) == 0;
  }
  return false;
}

void EngineImpl::QueueLoose(const PeerAddr& to, const wire::Packet& p) {
  if (loose_tx.size() >= kMaxQueuedControl) {
    stats.control_dropped++;
    return;
  }
  loose_tx.push_back(LooseReply{to, p});
}

// ---- Connection table ----

Connection* EngineImpl::ConnFor(const PeerAddr& peer) {
  auto it = conn_by_peer.find(PeerKey{peer.ip, peer.udp_port});
  if (it != conn_by_peer.end()) {
    Connection* c = FindConn(it->second);
    if (c->state != ConnState::kFailed && !c->close_pending) return c;
  }
  if (!MakeRoomFor(peer.ip)) return nullptr;
  return NewConnection(peer);
}

bool EngineImpl::MakeRoomFor(const wire::IpAddr& ip) {
  size_t live = 0, same_host = 0;
  Connection* idle = nullptr;  // the longest idle one: the one to give up first
  for (uint32_t id : conn_order) {
    Connection* c = conns.at(id).get();
    if (c->state == ConnState::kFailed || c->close_pending) continue;
    live++;
    same_host += c->peer.ip == ip;
    if (c->qps.empty() && (idle == nullptr || c->idle_since < idle->idle_since)) idle = c;
  }
  if (same_host >= cfg.max_connections_per_host) return false;
  if (live < cfg.max_connections) return true;
  // Full: a connection no local QP uses may go (it is closed politely);
  // connections with QPs never do, whatever peers send.
  if (idle == nullptr) return false;
  stats.conn_evicted++;
  Touch(idle);
  idle->close_pending = true;
  idle->close_reason = wire::ConnReason::kNoResources;
  return true;
}

Connection* EngineImpl::NewConnection(const PeerAddr& peer) {
  auto c = std::make_unique<Connection>();
  do {
    c->local_id = rng.NonZero32();
  } while (conns.contains(c->local_id));
  c->peer = peer;
  c->nonce = rng.NonZero32();
  c->state = ConnState::kConnecting;
  SetUpPaths(c.get());
  Connection* raw = c.get();
  conn_by_peer[PeerKey{peer.ip, peer.udp_port}] = raw->local_id;
  conn_order.push_back(raw->local_id);
  conns[raw->local_id] = std::move(c);
  conn_cache.Fit(conns.size());
  Touch(raw);  // its CONN_REQ is due
  return raw;
}

uint16_t EngineImpl::FreshPort(const Connection* c) {
  auto used = [c](uint16_t port) {
    if (c == nullptr) return false;
    for (const TxPath& p : c->paths) {
      if (p.src_port == port) return true;
    }
    return false;
  };
  const size_t choices =
      cfg.source_ports.empty() ? 65536u - config::kPathSourcePortMin : cfg.source_ports.size();
  auto draw = [&] {
    const uint64_t i = rng.Below(choices);
    return cfg.source_ports.empty() ? static_cast<uint16_t>(config::kPathSourcePortMin + i)
                                    : cfg.source_ports[i];
  };
  // Every path of a connection has its own entropy (its own ECMP route)
  // whenever there are ports enough; a few draws find one in a large range,
  // a scan in a short list.
  for (int tries = 0; tries < 16; tries++) {
    const uint16_t port = draw();
    if (!used(port)) return port;
  }
  if (!cfg.source_ports.empty()) {
    const size_t start = rng.Below(choices);
    for (size_t k = 0; k < choices; k++) {
      const uint16_t port = cfg.source_ports[(start + k) % choices];
      if (!used(port)) return port;
    }
  }
  return draw();
}

void EngineImpl::SetUpPaths(Connection* c) {
  c->cc.Reset(conn_cc);
  c->base_rtt = kNever;
  c->paths.resize(cfg.num_paths);
  for (TxPath& p : c->paths) p.src_port = 0;
  for (uint16_t i = 0; i < cfg.num_paths; i++) {
    TxPath& p = c->paths[i];
    p.id = i;
    p.src_port = FreshPort(c);
    p.window = cfg.path_window_pkts;
    p.cc.Reset(path_cc);
    p.ring.assign(std::bit_ceil(cfg.path_window_pkts), Inflight{});
    p.mask = static_cast<uint32_t>(p.ring.size() - 1);
    p.rto = cfg.rto_initial_ns;
  }
  c->failed_paths = c->plb_probes_due = 0;
  for (TxPath& p : c->paths) {
    c->failed_paths += p.state == PathState::kFailed;
    c->plb_probes_due += p.plb_probe_due;
  }
}

void EngineImpl::SetPathState(Connection* c, TxPath* path, PathState s) {
  c->failed_paths += (s == PathState::kFailed) - (path->state == PathState::kFailed);
  path->state = s;
}

void EngineImpl::SetPlbProbeDue(Connection* c, TxPath* path, bool due) {
  c->plb_probes_due += due - path->plb_probe_due;
  path->plb_probe_due = due;
}

void EngineImpl::Establish(TimeNs now, Connection* c, const wire::ConnBody& body) {
  c->last_rx_at = now;
  c->remote_id = body.src_conn_id;
  c->peer_incarnation = body.incarnation;
  c->peer_stream_window = body.stream_window;
  c->peer_paths = body.num_paths;
  c->rx_paths.assign(body.num_paths, RxPath{});
  for (uint16_t i = 0; i < body.num_paths; i++) {
    c->rx_paths[i].reply_port = c->paths[i % c->paths.size()].src_port;
  }
  c->chunk_bytes = std::min<uint32_t>(cfg.max_payload, body.max_payload);
  AdoptPlanes(now, c, body);
  c->state = ConnState::kEstablished;
  if (c->qps.empty()) c->idle_since = now;
  for (uint32_t qpn : c->qps) {
    if (Qp* qp = FindQp(qpn)) ReleaseSends(qp);
  }
}

// ---- Handshake packets ----

void EngineImpl::FillOpening(const Connection* c, PacketType type, uint32_t nonce,
                             wire::Packet* p) const {
  p->type = type;
  p->dst_conn_id = type == PacketType::kConnReq ? 0 : c->remote_id;
  wire::ConnBody& b = p->conn;
  b.src_conn_id = c->local_id;
  b.nonce = nonce;
  b.min_version = b.max_version = wire::kVersion;
  b.num_paths = cfg.num_paths;
  b.max_payload = cfg.max_payload;
  b.udp_port = cfg.udp_port;
  b.incarnation = incarnation;
  b.stream_window = cfg.stream_window_msgs;
  b.cookie = type == PacketType::kConnReq ? c->cookie : 0;
  if (type == PacketType::kConnReq || type == PacketType::kConnAccept) {
    b.capabilities |= wire::caps::kRateHint | wire::caps::kIdle;
    AnnouncePlanes(&b);
  }
  if (type == PacketType::kConnClose) {
    b.reason = c->close_reason;
    b.cookie = 0;
  }
}

void EngineImpl::HandleConn(TimeNs now, const wire::FrameInfo& from, const wire::Packet& p) {
  if (p.type == PacketType::kConnReq) {
    HandleConnReq(now, from, p);
    return;
  }
  const wire::ConnBody& b = p.conn;
  Connection* c = FindConn(p.dst_conn_id);
  if (c == nullptr || from.src != c->peer.ip) {
    stats.rx_unknown_conn++;
    return;
  }
  Touch(c);
  switch (p.type) {
    case PacketType::kConnRetry:
      // The peer wants proof that we receive at our address: come back with
      // its cookie at once.
      if (c->state == ConnState::kConnecting && b.nonce == c->nonce) {
        c->cookie = b.cookie;
        c->req_at = now;
        c->req_waits = 0;  // the peer answers: its next silence is a loss
        // The request that opens the connection carries our share for the
        // peer's data where the peer reads it; listed now, the peers whose
        // RETRYs arrive together are all counted in each request's share.
        c->peer_reads_hint = (b.capabilities & wire::caps::kRateHint) != 0;
        c->peer_takes_idle = (b.capabilities & wire::caps::kIdle) != 0;
        if (c->peer_reads_hint) ExpectSender(now, c);
      }
      break;
    case PacketType::kConnAccept:
      if (b.nonce != c->nonce) break;
      if (c->state == ConnState::kEstablished && c->peer_incarnation == b.incarnation) {
        // A simultaneous open: the peer's request established the connection,
        // and this answer to ours comes after it with a newer share.
        TakeOpeningHint(c, b);
        break;
      }
      if (c->state != ConnState::kConnecting) break;
      if (!PlanesValid(c->peer.ip, b)) {
        stats.rx_conn_refused++;  // an unusable plane list: wait for a good answer
        break;
      }
      Establish(now, c, b);
      TakeOpeningHint(c, b);
      PushShareTo(c);  // our request carried its part; more senders may have come since
      break;
    case PacketType::kConnReject:
      if (c->state == ConnState::kConnecting && b.nonce == c->nonce) FailConnection(c);
      break;
    case PacketType::kConnClose:
      if (c->state == ConnState::kEstablished && b.src_conn_id == c->remote_id &&
          b.incarnation == c->peer_incarnation) {
        FailConnection(c);
      }
      break;
    default: break;
  }
}

void EngineImpl::HandleConnReq(TimeNs now, const wire::FrameInfo& from, const wire::Packet& p) {
  const wire::ConnBody& b = p.conn;
  const PeerAddr peer{from.src, from.eth_src, b.udp_port};
  // Answers to a request go back to where it came from and hold no state.
  auto answer = [&](PacketType type, wire::ConnReason why, uint64_t cookie) {
    wire::Packet r;
    r.type = type;
    r.dst_conn_id = b.src_conn_id;
    r.conn.src_conn_id = 1;  // no connection of ours exists; any non-zero id
    r.conn.nonce = b.nonce;
    r.conn.reason = why;
    r.conn.min_version = r.conn.max_version = wire::kVersion;
    r.conn.num_paths = cfg.num_paths;
    r.conn.max_payload = cfg.max_payload;
    r.conn.udp_port = cfg.udp_port;
    r.conn.incarnation = incarnation;
    r.conn.stream_window = cfg.stream_window_msgs;
    r.conn.cookie = cookie;
    if (type == PacketType::kConnRetry) {
      r.conn.capabilities = wire::caps::kRateHint | wire::caps::kIdle;
    }
    QueueLoose(peer, r);
  };
  if (b.min_version > wire::kVersion || b.max_version < wire::kVersion) {
    stats.rx_conn_refused++;
    answer(PacketType::kConnReject, wire::ConnReason::kVersionUnsupported, 0);
    return;
  }
  if (b.num_paths > kMaxPaths || !PlanesValid(from.src, b)) {
    stats.rx_conn_refused++;
    answer(PacketType::kConnReject, wire::ConnReason::kBadParameters, 0);
    return;
  }
  if (!CookieValid(now, from.src, b)) {
    // Return routability first: a forged source address never sees this.
    if (b.cookie != 0) stats.rx_bad_cookie++;
    stats.tx_conn_retries++;
    answer(PacketType::kConnRetry, wire::ConnReason::kNone,
           Cookie(now / config::kCookieSlotNs, from.src, b));
    return;
  }
  Connection* c = nullptr;
  if (auto it = conn_by_peer.find(PeerKey{from.src, b.udp_port}); it != conn_by_peer.end()) {
    c = FindConn(it->second);
  }
  std::vector<uint32_t> moving;
  Connection* old = nullptr;
  if (c != nullptr && c->state == ConnState::kEstablished &&
      (c->remote_id != b.src_conn_id || c->peer_incarnation != b.incarnation)) {
    // A new incarnation of the peer (restarted), or the peer gave up the old
    // connection and opens another: what we had with it is gone. QPs that
    // joined it after the old peer was last heard (an application that
    // reconnected faster than this engine noticed the restart) never
    // exchanged anything with it: they move to the new connection instead.
    if (c->peer_incarnation != b.incarnation) stats.conn_restarts++;
    for (uint32_t qpn : c->qps) {
      const Qp* qp = FindQp(qpn);
      if (qp != nullptr && qp->state == QpState::kReady && qp->rx_mark == c->rx_pkts) {
        moving.push_back(qpn);
      }
    }
    for (uint32_t qpn : moving) c->qps.erase(std::find(c->qps.begin(), c->qps.end(), qpn));
    FailConnection(c);
    old = c;
    c = nullptr;
  }
  if (c == nullptr || c->state == ConnState::kFailed || c->close_pending) {
    if (!MakeRoomFor(from.src)) {
      stats.rx_conn_refused++;
      answer(PacketType::kConnReject, wire::ConnReason::kNoResources, 0);
      return;
    }
    c = NewConnection(peer);
  }
  if (c->state == ConnState::kConnecting) Establish(now, c, b);  // also a simultaneous open
  if (c->peer.mac != from.eth_src) {
    c->peer.mac = from.eth_src;
    ForgetEncap(c);
  }
  Touch(c);
  // The requester paces to our share from its first packet (it comes in
  // our ACCEPT), and counts in the shares of those that come with it.
  c->accept_pending = true;
  c->accept_nonce = b.nonce;
  TakeOpeningHint(c, b);
  if (c->peer_reads_hint) ExpectSender(now, c);
  for (uint32_t qpn : moving) MoveQp(FindQp(qpn), old, c);
}

void EngineImpl::MoveQp(Qp* qp, Connection* from, Connection* to) {
  stats.qps_moved++;
  // Nothing of its work reached a peer: every message starts over on the new
  // connection (which may cut it into other chunks), keeping its MSN.
  for (MsgRef& r : qp->sq) {
    const TxMsg* m = Msg(from, r);
    if (m == nullptr) continue;
    const MsgRef moved = AllocMsg(to);
    TxMsg* n = Msg(to, moved);
    *n = *m;
    n->gen = moved.gen;
    n->in_use = true;
    n->epoch = 0;
    n->num_chunks = 1;
    n->next_chunk = 0;
    n->on_ready = n->fifo = false;
    n->quantum = 0;
    n->probe_at = n->rnr_resume_at = kNever;
    n->probe_backoff = 0;
    n->retries_left = qp->attr.retry_cnt;
    n->rnr_left = qp->attr.rnr_retry;
    FreeMsg(from, r);
    r = moved;
  }
  qp->sq_sched = qp->sq_tx = 0;
  qp->tx_queued = false;
  qp->rd_atomic_pending = 0;  // counted again as the messages are released
  qp->peer_msn_next = 0;
  qp->conn = to->local_id;
  qp->connection = to;
  qp->rx_mark = to->rx_pkts;
  to->qps.push_back(qp->qpn);
  to->idle_since = kNever;
  Touch(to);
  Touch(from);
  ReleaseSends(qp);
}

}  // namespace metaroce::transport
