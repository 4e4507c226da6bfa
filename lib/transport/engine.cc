/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Engine construction, the verbs-level control path, connection set-up,
// the message pool and completions.

#include <algorithm>
#include <bit>
#include <memory>

#include "absl/strings/str_cat.h"
#include "engine_private.h"

namespace metaroce::transport {
namespace {

absl::Status CheckConfig(const EngineConfig& c) {
  auto bad = [](auto... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (c.qpn_tag_bits > kMaxQpnTagBits || c.qpn_tag >> c.qpn_tag_bits != 0) {
    return bad("qpn_tag_bits must be 0..", kMaxQpnTagBits,
               " and qpn_tag below 2^qpn_tag_bits, not ", c.qpn_tag_bits, " and ", c.qpn_tag);
  }
  if (c.num_paths == 0 || c.num_paths > kMaxPaths) {
    return bad("num_paths must be 1..", kMaxPaths, ", not ", c.num_paths);
  }
  if (c.max_payload < wire::kMinConnPayloadBytes || c.max_payload > 9000) {
    return bad("max_payload must be ", wire::kMinConnPayloadBytes, "..9000 bytes, not ",
               c.max_payload);
  }
  if (c.path_window_pkts == 0 || c.path_window_pkts >= TxPath::kMaxRing) {
    return bad("path_window_pkts must be 1..", TxPath::kMaxRing - 1,
               " (the SACK bitmap must cover every packet in flight), not ", c.path_window_pkts);
  }
  if (c.conn_window_pkts == 0) return bad("conn_window_pkts must be at least 1");
  if (c.rx_capacity_mbps > UINT32_MAX) {
    return bad("rx_capacity_mbps must be at most ", UINT32_MAX, " (about 4.3 Pbit/s), not ",
               c.rx_capacity_mbps);
  }
  if (c.rto_min_ns == 0 || c.rto_min_ns > c.rto_max_ns || c.rto_initial_ns < c.rto_min_ns) {
    return bad("need 0 < rto_min_ns <= rto_initial_ns and rto_min_ns <= rto_max_ns");
  }
  if (c.cc_delay_target_ns >= c.rto_max_ns) {
    return bad("cc_delay_target_ns must be below rto_max_ns (", c.rto_max_ns,
               " ns; 0 turns the delay signal off), not ", c.cc_delay_target_ns);
  }
  if (c.pacing_gain_pct != 0 && (c.pacing_gain_pct <= 100 || c.pacing_gain_pct > 1000)) {
    return bad(
        "pacing_gain_pct must be 101..1000 (a pacer at or below window / RTT would "
        "shrink what the window sends; 0 turns window pacing off), not ",
        c.pacing_gain_pct);
  }
  if (c.ack_every_pkts == 0) return bad("ack_every_pkts must be at least 1");
  if (c.keepalive_ns == 0 || c.keepalive_ns >= c.conn_fail_after_ns) {
    return bad("need 0 < keepalive_ns < conn_fail_after_ns (several keep-alives before failing)");
  }
  if (c.msg_probe_min_ns == 0 || c.msg_probe_min_ns > c.msg_probe_max_ns) {
    return bad("need 0 < msg_probe_min_ns <= msg_probe_max_ns");
  }
  if (c.path_fail_timeouts == 0) return bad("path_fail_timeouts must be at least 1");
  if (c.path_health_window_pkts == 0) return bad("path_health_window_pkts must be at least 1");
  if (c.path_fail_loss_pct == 0 || c.path_fail_loss_pct > 100) {
    return bad("path_fail_loss_pct must be 1..100, not ", c.path_fail_loss_pct);
  }
  if (c.stream_window_msgs == 0 || c.stream_window_msgs > (1u << 20)) {
    return bad("stream_window_msgs must be 1..", 1u << 20);
  }
  if (c.dscp > 63) return bad("dscp must be 0..63, not ", c.dscp);
  if (c.udp_port == 0) return bad("udp_port must not be 0");
  if (c.max_connections == 0) return bad("max_connections must be at least 1");
  for (uint16_t p : c.source_ports) {
    if (p == 0) return bad("source_ports must not contain port 0");
  }
  if (c.extra_planes.size() > wire::kMaxPlanes - 1) {
    return bad("extra_planes holds at most ", wire::kMaxPlanes - 1, " planes (", wire::kMaxPlanes,
               " with local_ip), not ", c.extra_planes.size());
  }
  if (c.num_paths < c.extra_planes.size() + 1) {
    return bad("num_paths (", c.num_paths, ") must be at least the number of planes (",
               c.extra_planes.size() + 1, "): every plane needs a path");
  }
  for (size_t i = 0; i < c.extra_planes.size(); i++) {
    const wire::IpAddr& ip = c.extra_planes[i].ip;
    if (ip.v6 != c.local_ip.v6 || ip.IsUnspecified()) {
      return bad("extra_planes[", i, "] (", ip.ToString(), ") must be an ",
                 c.local_ip.v6 ? "IPv6" : "IPv4", " address like local_ip");
    }
    if (ip == c.local_ip) return bad("extra_planes[", i, "] repeats local_ip ", ip.ToString());
    for (size_t j = 0; j < i; j++) {
      if (c.extra_planes[j].ip == ip) {
        return bad("extra_planes[", i, "] repeats extra_planes[", j, "] (", ip.ToString(), ")");
      }
    }
  }
  return absl::OkStatus();
}

wire::PacketType TypeOf(Opcode op) {
  switch (op) {
    case Opcode::kWrite: return wire::PacketType::kWrite;
    case Opcode::kWriteImm: return wire::PacketType::kWriteImm;
    case Opcode::kSend: return wire::PacketType::kSend;
    case Opcode::kSendImm: return wire::PacketType::kSendImm;
    case Opcode::kRead: return wire::PacketType::kReadReq;
    case Opcode::kAtomicFetchAdd: return wire::PacketType::kAtomicFetchAdd;
    case Opcode::kAtomicCompSwap: return wire::PacketType::kAtomicCompSwap;
  }
  return wire::PacketType::kSend;
}

WcOpcode WcOf(Opcode op) {
  switch (op) {
    case Opcode::kWrite:
    case Opcode::kWriteImm: return WcOpcode::kRdmaWrite;
    case Opcode::kSend:
    case Opcode::kSendImm: return WcOpcode::kSend;
    case Opcode::kRead: return WcOpcode::kRdmaRead;
    case Opcode::kAtomicFetchAdd: return WcOpcode::kFetchAdd;
    case Opcode::kAtomicCompSwap: return WcOpcode::kCompSwap;
  }
  return WcOpcode::kSend;
}

bool IsReadOrAtomic(Opcode op) {
  return op == Opcode::kRead || op == Opcode::kAtomicFetchAdd || op == Opcode::kAtomicCompSwap;
}

}  // namespace

// ---- Engine (public) forwards to EngineImpl ----

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineConfig& cfg, MemoryAccess* mem) {
  if (mem == nullptr) return absl::InvalidArgumentError("a MemoryAccess is required");
  if (auto st = CheckConfig(cfg); !st.ok()) return st;
  return std::unique_ptr<Engine>(new Engine(std::make_unique<EngineImpl>(cfg, mem)));
}

Engine::Engine(std::unique_ptr<EngineImpl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;
absl::StatusOr<uint32_t> Engine::AllocPd(uint64_t owner) { return impl_->AllocPd(owner); }
absl::Status Engine::DeallocPd(uint32_t pd) { return impl_->DeallocPd(pd); }
absl::StatusOr<MrInfo> Engine::RegMr(uint32_t pd, uint64_t addr, uint64_t len, uint32_t acc) {
  if (!impl_->pds.contains(pd)) return absl::NotFoundError(absl::StrCat("no PD ", pd));
  return impl_->mrs.Register(pd, addr, len, acc);
}
absl::StatusOr<MrInfo> Engine::RegMr(uint32_t pd, uint64_t addr, uint64_t len, uint32_t acc,
                                     const MrInfo& keys) {
  if (!impl_->pds.contains(pd)) return absl::NotFoundError(absl::StrCat("no PD ", pd));
  return impl_->mrs.RegisterWithKeys(pd, addr, len, acc, keys);
}
absl::Status Engine::DeregMr(uint32_t lkey) { return impl_->mrs.Deregister(lkey); }
absl::StatusOr<uint32_t> Engine::CreateCq(uint32_t depth) { return impl_->CreateCq(depth); }
absl::Status Engine::DestroyCq(uint32_t cq) { return impl_->DestroyCq(cq); }
absl::StatusOr<uint32_t> Engine::CreateQp(const QpAttr& a) { return impl_->CreateQp(a, 0); }
absl::StatusOr<uint32_t> Engine::CreateQp(const QpAttr& a, uint32_t qpn) {
  if (qpn == 0 || qpn >= kQpnSpace ||
      (qpn & ((uint32_t{1} << impl_->cfg.qpn_tag_bits) - 1)) != impl_->cfg.qpn_tag) {
    return absl::InvalidArgumentError(absl::StrCat("QP number ", qpn, " must be 1..", kQpnSpace - 1,
                                                   " and end in this engine's tag ",
                                                   impl_->cfg.qpn_tag));
  }
  if (impl_->qps.contains(qpn)) {
    return absl::AlreadyExistsError(absl::StrCat("QP number ", qpn, " is in use"));
  }
  return impl_->CreateQp(a, qpn);
}
absl::Status Engine::DestroyQp(uint32_t qpn) { return impl_->DestroyQp(qpn); }
absl::Status Engine::ConnectQp(uint32_t qpn, const PeerAddr& peer, uint32_t remote_qpn) {
  return impl_->ConnectQp(qpn, peer, remote_qpn);
}
absl::Status Engine::UpdateQp(uint32_t qpn, const QpAttr& a) { return impl_->UpdateQp(qpn, a); }
QpState Engine::GetQpState(uint32_t qpn) const {
  auto it = impl_->qps.find(qpn);
  return it == impl_->qps.end() ? QpState::kReset : it->second->state;
}
absl::Status Engine::PostSend(TimeNs now, uint32_t qpn, const SendWr& wr) {
  return impl_->PostSend(now, qpn, wr);
}
absl::Status Engine::PostRecv(uint32_t qpn, const RecvWr& wr) { return impl_->PostRecv(qpn, wr); }
absl::Status Engine::PostSrqRecv(uint32_t srq, const RecvWr& wr) {
  return impl_->PostSrqRecv(srq, wr);
}
absl::StatusOr<uint32_t> Engine::CreateSrq(uint32_t pd, uint32_t max_wr, uint32_t max_sge) {
  return impl_->CreateSrq(pd, max_wr, max_sge);
}
absl::Status Engine::DestroySrq(uint32_t srq) { return impl_->DestroySrq(srq); }
absl::Status Engine::ArmSrqLimit(uint32_t srq, uint32_t limit) {
  return impl_->ArmSrqLimit(srq, limit);
}
absl::StatusOr<SrqInfo> Engine::QuerySrq(uint32_t srq) const { return impl_->QuerySrq(srq); }
size_t Engine::PollCq(uint32_t cq, std::span<Completion> out) { return impl_->PollCq(cq, out); }
size_t Engine::PollAsyncEvents(std::span<AsyncEvent> out) {
  size_t n = 0;
  while (n < out.size() && !impl_->events.empty()) {
    out[n++] = impl_->events.front();
    impl_->events.pop_front();
  }
  return n;
}
size_t Engine::TakeReadyCqs(std::span<uint32_t> out) { return impl_->TakeReadyCqs(out); }
absl::Status Engine::SetQpError(uint32_t qpn) { return impl_->SetQpError(qpn); }
size_t Engine::CqPending(uint32_t cq) const {
  auto it = impl_->cqs.find(cq);
  return it == impl_->cqs.end() ? 0 : it->second.entries.size();
}
bool Engine::CqInError(uint32_t cq) const {
  auto it = impl_->cqs.find(cq);
  return it != impl_->cqs.end() && it->second.error;
}
void Engine::OnFrame(TimeNs now, std::span<const uint8_t> frame) { impl_->OnFrame(now, frame); }
void Engine::OnDatagram(TimeNs now, const wire::FrameInfo& addr, std::span<const uint8_t> payload) {
  impl_->OnDatagram(now, addr, payload);
}
size_t Engine::PollTx(TimeNs now, std::span<TxSlot> slots) { return impl_->PollTx(now, slots); }
TimeNs Engine::NextDeadline() const { return impl_->NextDeadline(); }
bool Engine::HasPendingTx() const { return impl_->HasPendingTx(); }
const EngineStats& Engine::stats() const { return impl_->stats; }
std::vector<PathInfo> Engine::GetPaths(const wire::IpAddr& ip, uint16_t udp_port) const {
  return impl_->GetPaths(ip, udp_port);
}

// ---- EngineImpl: verbs ----

namespace {

// One full data packet, as the windows count it: an upper bound on its frame
// (VLAN tag and IPv6 included) or datagram.
uint32_t FullPacketBytes(const EngineConfig& c) {
  const size_t l2l3 = c.framing == Framing::kEthernet
                          ? wire::kEthHeaderBytes + wire::kVlanTagBytes + wire::kIpv6HeaderBytes +
                                wire::kUdpHeaderBytes
                          : 0;
  return static_cast<uint32_t>(c.max_payload + wire::kMaxHeaderBytes + l2l3);
}

CcLimits LimitsFor(const EngineConfig& c, uint32_t pkts, uint32_t initial_bytes) {
  CcLimits l;
  l.mss_bytes = FullPacketBytes(c);
  l.min_bytes = l.mss_bytes;
  // Without congestion control the packet windows alone bound what is in flight.
  l.max_bytes =
      c.congestion_control
          ? static_cast<uint32_t>(std::min<uint64_t>(uint64_t{pkts} * l.mss_bytes, UINT32_MAX))
          : UINT32_MAX;
  l.initial_bytes = initial_bytes == 0 || !c.congestion_control
                        ? l.max_bytes
                        : std::clamp(initial_bytes, l.min_bytes, l.max_bytes);
  return l;
}

}  // namespace

EngineImpl::EngineImpl(const EngineConfig& c, MemoryAccess* m)
    : cfg(c),
      path_cc(LimitsFor(c, c.path_window_pkts, 0)),  // the connection's window starts small
      conn_cc(LimitsFor(c, c.conn_window_pkts, c.initial_window_bytes)),
      mem(m),
      incarnation(c.incarnation != 0 ? c.incarnation : SecureRng::OsNonZero64()),
      rng(c.seed != 0 ? SecureRng::DerivedKey(c.seed, incarnation) : SecureRng::OsKey()),
      mrs(&rng) {
  rng.Fill(cookie_key, sizeof(cookie_key));
  local_planes.push_back(PlaneAddr{cfg.local_ip, cfg.local_mac});
  local_planes.insert(local_planes.end(), cfg.extra_planes.begin(), cfg.extra_planes.end());
  // Start QP numbers at a random point so a restarted engine does not reuse
  // the numbers its peers may still send to.
  next_qpn = static_cast<uint32_t>(rng.Below(kQpnSpace >> cfg.qpn_tag_bits));
}

absl::StatusOr<uint32_t> EngineImpl::AllocPd(uint64_t owner) {
  const uint32_t pd = next_pd++;
  pds[pd] = Pd{0, owner};
  return pd;
}

absl::Status EngineImpl::DeallocPd(uint32_t pd) {
  auto it = pds.find(pd);
  if (it == pds.end()) return absl::NotFoundError(absl::StrCat("no PD ", pd));
  if (it->second.qps != 0 || it->second.srqs != 0 || mrs.CountInPd(pd) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("PD ", pd, " still has QPs, SRQs or memory regions"));
  }
  pds.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> EngineImpl::CreateCq(uint32_t depth) {
  if (depth == 0 || depth > (1u << 22)) {
    return absl::InvalidArgumentError(absl::StrCat("CQ depth must be 1..", 1u << 22));
  }
  const uint32_t cq = next_cq++;
  cqs[cq].depth = depth;
  return cq;
}

absl::Status EngineImpl::DestroyCq(uint32_t cq) {
  if (!cqs.contains(cq)) return absl::NotFoundError(absl::StrCat("no CQ ", cq));
  for (const auto& [n, qp] : qps) {
    if (qp->attr.send_cq == cq || qp->attr.recv_cq == cq) {
      return absl::FailedPreconditionError(absl::StrCat("CQ ", cq, " is used by QP ", n));
    }
  }
  cqs.erase(cq);
  ready_cqs.erase(std::remove(ready_cqs.begin(), ready_cqs.end(), cq), ready_cqs.end());
  return absl::OkStatus();
}

uint32_t EngineImpl::NewQpn() {
  // Verbs programs print and parse QP numbers as 24 bits; the low
  // qpn_tag_bits say which engine of a daemon holds the QP.
  const uint32_t span = kQpnSpace >> cfg.qpn_tag_bits;
  for (;;) {
    const uint32_t qpn = (next_qpn++ % span) << cfg.qpn_tag_bits | cfg.qpn_tag;
    if (qpn != 0 && !qps.contains(qpn)) return qpn;
  }
}

absl::StatusOr<uint32_t> EngineImpl::CreateQp(const QpAttr& a, uint32_t qpn) {
  if (qps.size() >= (kQpnSpace >> cfg.qpn_tag_bits) - 1) {
    return absl::ResourceExhaustedError("every QP number of this engine is in use");
  }
  if (!pds.contains(a.pd)) return absl::NotFoundError(absl::StrCat("no PD ", a.pd));
  if (!cqs.contains(a.send_cq) || !cqs.contains(a.recv_cq)) {
    return absl::NotFoundError("send_cq and recv_cq must be existing CQs");
  }
  const bool own_rq = a.srq == 0;
  if (a.max_send_wr == 0 || (own_rq && a.max_recv_wr == 0) || a.max_sge == 0 ||
      a.max_send_wr > (1u << 20) || a.max_recv_wr > (1u << 20)) {
    return absl::InvalidArgumentError("max_send_wr, max_recv_wr and max_sge must be 1..2^20");
  }
  Pd& pd = pds[a.pd];
  auto srq = srqs.find(a.srq);
  if (!own_rq && (srq == srqs.end() || srq->second.owner != pd.owner)) {
    return absl::NotFoundError(absl::StrCat("no SRQ ", a.srq, " of this PD's owner"));
  }
  auto qp = std::make_unique<Qp>();
  qp->qpn = qpn != 0 ? qpn : NewQpn();
  qp->attr = a;
  qp->state = QpState::kInit;
  if (!own_rq) srq->second.qps++;
  pd.qps++;
  qp->owner = pd.owner;
  qpn = qp->qpn;
  qps[qpn] = std::move(qp);
  qp_cache.Fit(qps.size());
  return qpn;
}

absl::Status EngineImpl::DestroyQp(uint32_t qpn) {
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError(absl::StrCat("no QP ", qpn));
  if (Connection* c = qp->connection) {
    Touch(c);  // its deadline changes (no QP left: the idle clock starts)
    for (const MsgRef& r : qp->sq) FreeMsg(c, r);
    // Its READ and atomic responses go too: nothing may wait behind them.
    for (uint32_t i = 0; i < c->msgs.size(); i++) {
      const TxMsg& m = c->msgs[i];
      if (m.in_use && m.is_response && m.qpn == qpn) FreeMsg(c, MsgRef{i, m.gen});
    }
    for (RxMsg& m : qp->window) ReleaseRxMsg(c, &m);
    RememberClosed(c, *qp);
    c->qps.erase(std::remove(c->qps.begin(), c->qps.end(), qpn), c->qps.end());
    c->dirty.erase(std::remove(c->dirty.begin(), c->dirty.end(), qpn), c->dirty.end());
    if (c->state == ConnState::kFailed && c->qps.empty()) reap_pending = true;
  }
  pds[qp->attr.pd].qps--;
  if (qp->attr.srq != 0) srqs[qp->attr.srq].qps--;
  qp_cache.Erase(qpn, QpCacheHash(qpn));
  qps.erase(qpn);
  return absl::OkStatus();
}

absl::Status EngineImpl::ConnectQp(uint32_t qpn, const PeerAddr& peer, uint32_t remote_qpn) {
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError(absl::StrCat("no QP ", qpn));
  if (qp->state != QpState::kInit) {
    return absl::FailedPreconditionError(absl::StrCat("QP ", qpn, " is already connected"));
  }
  if (remote_qpn == 0) return absl::InvalidArgumentError("remote QP number must not be 0");
  if (peer.ip.v6 != cfg.local_ip.v6) {
    return absl::InvalidArgumentError("peer and local addresses differ in IP version");
  }
  Connection* c = ConnFor(peer);
  if (c == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("connection limit reached: at most ", cfg.max_connections,
                     " connections (max_connections) and ", cfg.max_connections_per_host,
                     " to one host (max_connections_per_host), none of them idle"));
  }
  qp->conn = c->local_id;
  qp->connection = c;
  qp->rx_mark = c->rx_pkts;
  // A connection that was idle without QPs kept nothing alive: its peer's
  // silence so far is no sign of trouble (ConnTimers restarts the clock at
  // the next poll). One still connecting starts its clock when it opens.
  if (c->qps.empty() && c->state == ConnState::kEstablished) c->qps_rejoined = true;
  c->idle_since = kNever;
  qp->remote_qpn = remote_qpn;
  qp->state = QpState::kReady;
  c->qps.push_back(qpn);
  Touch(c);
  return absl::OkStatus();
}

absl::Status EngineImpl::PostSend(TimeNs now, uint32_t qpn, const SendWr& wr) {
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError(absl::StrCat("no QP ", qpn));
  if (qp->state == QpState::kInit || qp->state == QpState::kReset) {
    return absl::FailedPreconditionError(absl::StrCat("QP ", qpn, " is not connected"));
  }
  if (qp->sq.size() >= qp->attr.max_send_wr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("send queue of QP ", qpn, " is full (", qp->attr.max_send_wr, ")"));
  }
  if (wr.sg.size() > qp->attr.max_sge) {
    return absl::InvalidArgumentError(
        absl::StrCat(wr.sg.size(), " SGEs exceed max_sge ", qp->attr.max_sge));
  }
  uint64_t total = 0;
  for (const Sge& s : wr.sg) total += s.length;
  if (total > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "message of ", total, " bytes is longer than max_msg_sz (", kMaxMessageBytes, " bytes)"));
  }
  const bool atomic = wr.opcode == Opcode::kAtomicFetchAdd || wr.opcode == Opcode::kAtomicCompSwap;
  if (atomic && (wr.sg.size() != 1 || total != 8)) {
    return absl::InvalidArgumentError("an atomic needs exactly one 8-byte SGE for the result");
  }
  Connection* c = qp->connection;
  Touch(c);
  MsgRef ref = AllocMsg(c);
  TxMsg* m = Msg(c, ref);
  m->qpn = qpn;
  m->type = TypeOf(wr.opcode);
  m->opcode = wr.opcode;
  m->wr_id = wr.wr_id;
  m->signaled = (wr.flags & send_flags::kSignaled) != 0 || qp->attr.sq_sig_all;
  m->fence = (wr.flags & send_flags::kFence) != 0;
  m->solicited = (wr.flags & send_flags::kSolicited) != 0 && wire::ConsumesReceive(m->type);
  m->sg = wr.sg;
  m->len = static_cast<uint32_t>(total);
  m->msn = qp->next_msn++;
  m->remote_va = wr.remote_addr;
  m->rkey = wr.rkey;
  m->imm = wr.imm;
  if (wire::ConsumesReceive(m->type)) m->recv_seq = qp->next_recv_seq++;
  if (atomic) {
    m->operand0 = wr.compare_add;
    m->operand1 = wr.opcode == Opcode::kAtomicCompSwap ? wr.swap : 0;
  }
  m->retries_left = qp->attr.retry_cnt;
  m->rnr_left = qp->attr.rnr_retry;
  qp->sq.push_back(ref);
  // Local protection: the gather list must lie in this PD's regions; READ and
  // atomic results are written, so they need local write access.
  const uint32_t need = IsReadOrAtomic(wr.opcode) ? access::kLocalWrite : 0;
  for (const Sge& s : wr.sg) {
    if (s.length != 0 && !mrs.CheckLocal(s.lkey, qp->attr.pd, s.addr, s.length, need)) {
      m->status = WcStatus::kLocProtErr;
      m->done = true;
      FailQp(qp, WcStatus::kWrFlushErr);
      return absl::OkStatus();
    }
  }
  if (qp->state == QpState::kError) {
    m->status = WcStatus::kWrFlushErr;
    m->done = true;
    CompleteSends(qp);
    return absl::OkStatus();
  }
  (void)now;
  ReleaseSends(qp);
  return absl::OkStatus();
}

absl::Status EngineImpl::PostRecv(uint32_t qpn, const RecvWr& wr) {
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError(absl::StrCat("no QP ", qpn));
  if (qp->attr.srq != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("QP ", qpn, " takes its receives from SRQ ", qp->attr.srq));
  }
  if (qp->rq.size() >= qp->attr.max_recv_wr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("receive queue of QP ", qpn, " is full (", qp->attr.max_recv_wr, ")"));
  }
  absl::StatusOr<PostedRecv> r = MakeRecv(qp->attr.pd, qp->attr.max_sge, wr);
  if (!r.ok()) return r.status();
  if (qp->state == QpState::kError) {
    PushCqe(qp->attr.recv_cq,
            Completion{wr.wr_id, WcStatus::kWrFlushErr, WcOpcode::kRecv, false, 0, 0, qpn});
    return absl::OkStatus();
  }
  qp->rq.push_back(*std::move(r));
  return absl::OkStatus();
}

absl::StatusOr<PostedRecv> EngineImpl::MakeRecv(uint32_t pd, uint32_t max_sge,
                                                const RecvWr& wr) const {
  if (wr.sg.size() > max_sge) {
    return absl::InvalidArgumentError(absl::StrCat(wr.sg.size(), " SGEs exceed max_sge ", max_sge));
  }
  PostedRecv r;
  r.wr_id = wr.wr_id;
  r.sg = wr.sg;
  r.pd = pd;
  for (const Sge& s : wr.sg) {
    if (s.length != 0 && !mrs.CheckLocal(s.lkey, pd, s.addr, s.length, access::kLocalWrite)) {
      return absl::PermissionDeniedError(absl::StrCat(
          "receive SGE at 0x", absl::Hex(s.addr), " is not in a region with local write access"));
    }
    r.total += s.length;
  }
  return r;
}

size_t EngineImpl::PollCq(uint32_t cq, std::span<Completion> out) {
  auto it = cqs.find(cq);
  if (it == cqs.end()) return 0;
  Ring<Completion>& q = it->second.entries;
  size_t n = 0;
  while (n < out.size() && !q.empty()) {
    out[n++] = q.front();
    q.pop_front();
  }
  return n;
}

uint32_t Engine::ShareSenders() const {
  return static_cast<uint32_t>(std::max(impl_->share_last_senders, impl_->share_senders.size()));
}

Engine::ShareDemand Engine::GetShareDemand() const {
  const uint32_t all = ShareSenders();
  const FairShareLimited& l = impl_->share_last_limited;
  const uint32_t limited = std::min(l.senders, all);
  return ShareDemand{all - limited, limited, limited == l.senders ? l.mbps : 0};
}

bool Engine::SetRxCapacity(uint64_t mbps) {
  if (impl_->cfg.rx_capacity_mbps == 0 || mbps == 0 || mbps > UINT32_MAX) return false;
  impl_->cfg.rx_capacity_mbps = mbps;
  return true;
}

std::vector<PathInfo> EngineImpl::GetPaths(const wire::IpAddr& ip, uint16_t udp_port) const {
  std::vector<PathInfo> v;
  auto it = conn_by_peer.find(PeerKey{ip, udp_port});
  if (it == conn_by_peer.end()) return v;
  const Connection* c = conns.at(it->second).get();
  for (const TxPath& p : c->paths) v.push_back(PathInfoOf(p));
  return v;
}

// ---- Connections ----

// ---- Messages ----

uint32_t EngineImpl::ChunksOf(uint64_t len, uint32_t chunk_bytes) {
  // 64-bit: a 2 GiB message of 256-byte chunks is 2^23 chunks, and len +
  // chunk - 1 must not wrap.
  return static_cast<uint32_t>(std::max<uint64_t>(1, (len + chunk_bytes - 1) / chunk_bytes));
}

MsgRef EngineImpl::AllocMsg(Connection* c) {
  uint32_t idx;
  if (!c->free_msgs.empty()) {
    idx = c->free_msgs.back();
    c->free_msgs.pop_back();
  } else {
    idx = static_cast<uint32_t>(c->msgs.size());
    c->msgs.emplace_back();
  }
  TxMsg& m = c->msgs[idx];
  m.Recycle(m.gen + 1);
  return MsgRef{idx, m.gen};
}

void EngineImpl::FreeMsg(Connection* c, MsgRef r) {
  TxMsg* m = Msg(c, r);
  if (m == nullptr) return;
  m->in_use = false;
  m->sg.clear();
  c->free_msgs.push_back(r.idx);
}

void EngineImpl::Ready(Connection* c, MsgRef r) {
  TxMsg* m = Msg(c, r);
  if (m == nullptr || m->on_ready) return;
  m->on_ready = true;
  c->ready.push_back(r);
  Touch(c);
}

void EngineImpl::ReleaseSends(Qp* qp) {
  Connection* c = qp->connection;
  if (c == nullptr || c->state != ConnState::kEstablished || qp->state != QpState::kReady) return;
  Touch(c);
  while (qp->sq_sched < qp->sq.size()) {
    const MsgRef ref = qp->sq[qp->sq_sched];
    TxMsg* m = Msg(c, ref);
    if (m->msn - qp->peer_msn_next >= c->peer_stream_window) break;  // receiver's window
    if (m->fence && qp->rd_atomic_pending > 0) break;
    m->num_chunks = m->type == wire::PacketType::kReadReq || wire::IsAtomicRequest(m->type)
                        ? 1
                        : ChunksOf(m->len, c->chunk_bytes);
    m->delivered.Reset(m->num_chunks);
    if (m->opcode == Opcode::kRead) m->resp_received.Reset(ChunksOf(m->len, c->chunk_bytes));
    if (IsReadOrAtomic(m->opcode)) qp->rd_atomic_pending++;
    qp->sq_sched++;
  }
  FeedTx(c, qp);
}

void EngineImpl::FeedTx(Connection* c, Qp* qp) {
  if (qp->tx_queued || qp->state != QpState::kReady) return;
  // A QP sends its messages one after another (completions are in posting
  // order anyway); the connection takes turns between QPs.
  for (; qp->sq_tx < qp->sq_sched && qp->sq_tx < qp->sq.size(); qp->sq_tx++) {
    const MsgRef ref = qp->sq[qp->sq_tx];
    TxMsg* m = Msg(c, ref);
    // A message waiting out an RNR delay is queued again when it ends.
    if (m == nullptr || m->done || m->next_chunk >= m->num_chunks || m->rnr_resume_at != kNever) {
      continue;
    }
    m->fifo = true;
    qp->tx_queued = true;
    Ready(c, ref);
    return;
  }
}

size_t EngineImpl::TakeReadyCqs(std::span<uint32_t> out) {
  std::vector<uint32_t>& r = ready_cqs;
  const size_t n = std::min(out.size(), r.size());
  for (size_t i = 0; i < n; i++) {
    out[i] = r[i];
    if (auto it = cqs.find(r[i]); it != cqs.end()) it->second.ready = false;
  }
  r.erase(r.begin(), r.begin() + static_cast<ptrdiff_t>(n));
  return n;
}
absl::Status EngineImpl::SetQpError(uint32_t qpn) {
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError(absl::StrCat("no QP ", qpn));
  FailQp(qp, WcStatus::kWrFlushErr);
  return absl::OkStatus();
}

absl::Status EngineImpl::UpdateQp(uint32_t qpn, const QpAttr& a) {
  Qp* qp = FindQp(qpn);
  if (qp == nullptr) return absl::NotFoundError(absl::StrCat("no QP ", qpn));
  if ((a.remote_access & ~(access::kRemoteWrite | access::kRemoteRead | access::kRemoteAtomic)) !=
      0) {
    return absl::InvalidArgumentError("remote_access takes only the access::kRemote* bits");
  }
  qp->attr.remote_access = a.remote_access;
  qp->attr.retry_cnt = a.retry_cnt;
  qp->attr.rnr_retry = a.rnr_retry;
  qp->attr.min_rnr_delay_ns = a.min_rnr_delay_ns;
  Touch(qp->connection);
  return absl::OkStatus();
}

// ---- Completions ----

void EngineImpl::PushCqe(uint32_t cq, const Completion& e) {
  auto it = cqs.find(cq);
  if (it == cqs.end()) return;
  Cq& q = it->second;
  if (q.error || q.entries.size() >= q.depth) {
    // As verbs: an overrun CQ is in error (IBV_EVENT_CQ_ERR) and every QP
    // that completes into it is fatal (IBV_EVENT_QP_FATAL), flushed at the
    // next PollTx: completions are never lost silently.
    stats.cq_overflows++;
    if (q.error) return;
    q.error = true;
    events.push_back(AsyncEvent{AsyncEvent::Type::kCqError, cq});
    for (const auto& [n, qp] : qps) {
      if ((qp->attr.send_cq == cq || qp->attr.recv_cq == cq) && !qp->flushed &&
          std::find(fatal_qps.begin(), fatal_qps.end(), n) == fatal_qps.end()) {
        fatal_qps.push_back(n);
      }
    }
    std::sort(fatal_qps.begin(), fatal_qps.end());  // deterministic order
    return;
  }
  q.entries.push_back(e);
  if (!q.ready) {
    q.ready = true;
    ready_cqs.push_back(cq);
  }
}

void EngineImpl::FailFatalQps() {
  while (!fatal_qps.empty()) {
    const uint32_t qpn = fatal_qps.front();
    fatal_qps.erase(fatal_qps.begin());
    Qp* qp = FindQp(qpn);
    if (qp == nullptr || qp->flushed) continue;
    events.push_back(AsyncEvent{AsyncEvent::Type::kQpFatal, qpn});
    FailQp(qp, WcStatus::kWrFlushErr);
  }
}

void EngineImpl::CompleteSends(Qp* qp) {
  Connection* c = qp->connection;
  while (!qp->sq.empty()) {
    const MsgRef ref = qp->sq.front();
    TxMsg* m = Msg(c, ref);
    if (m != nullptr && !m->done) break;
    if (m != nullptr) {
      if (m->signaled || m->status != WcStatus::kSuccess) {
        Completion e;
        e.wr_id = m->wr_id;
        e.status = m->status;
        e.opcode = WcOf(m->opcode);
        e.byte_len = m->opcode == Opcode::kRead ? m->len : 0;
        if (wire::IsAtomicRequest(m->type)) e.byte_len = 8;
        e.qp_num = qp->qpn;
        PushCqe(qp->attr.send_cq, e);
      }
      FreeMsg(c, ref);
    }
    qp->sq.pop_front();
    if (qp->sq_sched > 0) qp->sq_sched--;
    if (qp->sq_tx > 0) qp->sq_tx--;
  }
  ReleaseSends(qp);
}

void EngineImpl::FailQp(Qp* qp, WcStatus rest) {
  if (qp->flushed) {
    CompleteSends(qp);
    return;
  }
  qp->state = QpState::kError;
  qp->flushed = true;
  Connection* c = qp->connection;
  Touch(c);
  for (const MsgRef& r : qp->sq) {
    TxMsg* m = Msg(c, r);
    if (m != nullptr && !m->done) {
      m->status = rest;
      m->done = true;
    }
  }
  CompleteSends(qp);
  for (const PostedRecv& r : qp->rq) {
    PushCqe(qp->attr.recv_cq,
            Completion{r.wr_id, WcStatus::kWrFlushErr, WcOpcode::kRecv, false, 0, 0, qp->qpn});
  }
  qp->rq.clear();
}

void EngineImpl::FailConnection(Connection* c) {
  if (c->state == ConnState::kFailed) return;
  c->state = ConnState::kFailed;
  reap_pending = true;
  Touch(c);
  if (!c->close_pending) stats.conn_failures++;  // a polite close is no failure
  for (uint32_t qpn : c->qps) {
    Qp* qp = FindQp(qpn);
    if (qp == nullptr || qp->flushed) continue;
    // The oldest unfinished work request is the one the transport gave up on.
    for (const MsgRef& r : qp->sq) {
      TxMsg* m = Msg(c, r);
      if (m != nullptr && !m->done) {
        m->status = WcStatus::kRetryExcErr;
        m->done = true;
        break;
      }
    }
    FailQp(qp, WcStatus::kWrFlushErr);
  }
  c->ready.clear();
  c->retx.clear();
  c->naks.clear();
  c->ack_queue.clear();
  for (TxPath& p : c->paths) {
    for (Inflight& e : p.ring) e.live = false;
    p.inflight = 0;
    p.cc.inflight = 0;
    p.una = p.next_psn;
  }
  c->inflight = 0;
  c->cc.inflight = 0;
}

}  // namespace metaroce::transport
