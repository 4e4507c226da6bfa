/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Verbs objects of the applications, on the shard thread that owns them:
// each control request is checked (sizes, handles of this application only,
// limits) and becomes engine calls. Errors are errno values for the shim.

#include <infiniband/verbs.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon.h"
#include "mr_log.h"
#include "request.h"

namespace metaroce::daemon {
namespace {

/** IB's 5-bit RNR timer code in nanoseconds (IBTA table 45). */
transport::TimeNs RnrTimerNs(uint8_t code) {
  static constexpr uint32_t kUs100[32] = {65536, 1,    2,    3,     4,     6,     8,     12,
                                          16,    24,   32,   48,    64,    96,    128,   192,
                                          256,   384,  512,  768,   1024,  1536,  2048,  3072,
                                          4096,  6144, 8192, 12288, 16384, 24576, 32768, 49152};
  // Units of 10 us; code 0 is 655.36 ms.
  return transport::TimeNs{kUs100[code & 31]} * 10'000;
}

}  // namespace

App::~App() {
  if (async_efd >= 0) close(async_efd);
  for (const int fd : kick_efds) close(fd);
}

ChannelObj::~ChannelObj() {
  if (efd >= 0) close(efd);
}

uint16_t PortForQpn(uint16_t base_udp_port, uint32_t qpn) {
  return static_cast<uint16_t>(base_udp_port + (qpn & ((1u << kQpnShardBits) - 1)));
}

ShardService::ShardService(const DaemonConfig& cfg, uint16_t index)
    : cfg_(cfg), index_(index), kick_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

ShardService::~ShardService() {
  if (kick_fd_ >= 0) close(kick_fd_);
}

void ShardService::Kick() {
  const uint64_t one = 1;
  ssize_t n = write(kick_fd_, &one, sizeof(one));
  (void)n;  // a full counter wakes the shard as well
}

void ShardService::RunOnShard(const std::function<void()>& fn) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = ++work_submitted_;
  work_.push_back(fn);
  has_work_.store(true, std::memory_order_seq_cst);
  Kick();
  cv_.wait(lock, [&] { return work_done_ >= ticket; });
}

void ShardService::AttachApp(App* app) {
  apps_.push_back(app);
  mem_.Attach(app->id, app->mem.get());
  PublishApps();
}

int ShardService::Execute(App* app, ipc::Op op, const uint8_t* body, size_t len, const int* fds,
                          int nfds, std::vector<uint8_t>* reply, std::vector<int>* reply_fds) {
  const AppLimits& lim = cfg_.limits;
  ipc::HandleMsg h;
  switch (op) {
    case ipc::Op::kAllocPd: {
      if (len != 0) return EINVAL;
      if (app->pds.size() >= lim.max_pds) return ENOMEM;
      auto pd = engine().AllocPd(app->id);
      if (!pd.ok()) return ErrnoOf(pd.status());
      // Inline send data is gathered from the send rings through this region.
      auto mr = engine().RegMr(*pd, kInlineVaBase, kInlineVaBytes, 0);
      if (!mr.ok()) {
        (void)engine().DeallocPd(*pd);
        return ErrnoOf(mr.status());
      }
      auto o = std::make_unique<PdObj>();
      o->engine_pd = *pd;
      o->inline_lkey = mr->lkey;
      const uint32_t handle = app->pds.Add(std::move(o));
      if (handle == 0) return ENOMEM;
      Reply(reply, ipc::HandleMsg{handle, 0});
      return 0;
    }
    case ipc::Op::kDeallocPd: {
      if (!Parse(body, len, &h)) return EINVAL;
      PdObj* pd = app->pds.Get(h.handle);
      if (pd == nullptr) return EINVAL;
      if (pd->users != 0) return EBUSY;
      (void)engine().DeregMr(pd->inline_lkey);
      if (absl::Status s = engine().DeallocPd(pd->engine_pd); !s.ok()) return ErrnoOf(s);
      app->pds.Remove(h.handle);
      return 0;
    }
    case ipc::Op::kRegMr: {
      ipc::RegMrReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      return RegMr(app, r, fds, nfds, reply);
    }
    case ipc::Op::kDeregMr: {
      if (!Parse(body, len, &h)) return EINVAL;
      MrObj* mr = app->mrs.Get(h.handle);
      if (mr == nullptr) return EINVAL;
      if (absl::Status s = engine().DeregMr(mr->lkey); !s.ok()) return ErrnoOf(s);
      if (mr->mapping != 0) app->mem->ReleaseMapping(mr->mapping);
      app->mr_bytes -= mr->length;
      app->pds.Get(mr->pd)->users--;
      app->mrs.Remove(h.handle);
      return 0;
    }
    case ipc::Op::kCreateCompChannel: {
      if (len != 0 || nfds != 1) return EINVAL;
      if (app->channels.size() >= lim.max_comp_channels) return ENOMEM;
      // It must be an eventfd: the daemon only ever writes 8-byte counts to it.
      auto o = std::make_unique<ChannelObj>();
      o->efd = dup(fds[0]);
      if (o->efd < 0) return EMFILE;
      const uint32_t handle = app->channels.Add(std::move(o));
      if (handle == 0) return ENOMEM;
      Reply(reply, ipc::HandleMsg{handle, 0});
      return 0;
    }
    case ipc::Op::kDestroyCompChannel: {
      if (!Parse(body, len, &h)) return EINVAL;
      ChannelObj* ch = app->channels.Get(h.handle);
      if (ch == nullptr) return EINVAL;
      if (ch->users != 0) return EBUSY;
      app->channels.Remove(h.handle);
      return 0;
    }
    case ipc::Op::kCreateCq: {
      ipc::CreateCqReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      if (r.depth == 0 || r.depth > lim.max_cqe) return EINVAL;
      if (app->cqs.size() >= lim.max_cqs) return ENOMEM;
      if (r.channel != 0 && app->channels.Get(r.channel) == nullptr) return EINVAL;
      const uint32_t depth = ipc::RingDepth(r.depth);
      auto seg = Segment::Create("metaroce-cq", ipc::CqSegmentBytes(depth, app->lanes));
      if (!seg.ok()) return ENOMEM;
      auto cq = engine().CreateCq(depth);
      if (!cq.ok()) return ErrnoOf(cq.status());
      auto o = std::make_unique<CqObj>();
      o->engine_cq = *cq;
      o->seg = std::move(*seg);
      o->depth = depth;
      o->lanes = app->lanes;
      o->channel = r.channel;
      const int seg_fd = o->seg->fd();
      const uint64_t seg_bytes = o->seg->bytes();
      const uint32_t handle = app->cqs.Add(std::move(o));
      if (handle == 0) {
        (void)engine().DestroyCq(*cq);
        return ENOMEM;
      }
      app->cqs.Get(handle)->handle = handle;
      if (r.channel != 0) app->channels.Get(r.channel)->users++;
      cq_owner_[*cq] = Owner{app, handle};
      Reply(reply, ipc::CreateCqRep{handle, depth, seg_bytes});
      reply_fds->push_back(seg_fd);
      return 0;
    }
    case ipc::Op::kDestroyCq: {
      if (!Parse(body, len, &h)) return EINVAL;
      return DestroyCq(app, h.handle);
    }
    case ipc::Op::kCreateQp: {
      ipc::CreateQpReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      return CreateQp(app, r, reply, reply_fds);
    }
    case ipc::Op::kConnectQp: {
      ipc::ConnectQpReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      return ConnectQp(app, r);
    }
    case ipc::Op::kDestroyQp: {
      if (!Parse(body, len, &h)) return EINVAL;
      return DestroyQp(app, h.handle);
    }
    case ipc::Op::kQueryQp: {
      if (!Parse(body, len, &h)) return EINVAL;
      QpObj* qp = app->qps.Get(h.handle);
      if (qp == nullptr) return EINVAL;
      const transport::QpState st = engine().GetQpState(qp->qpn);
      ipc::QueryQpRep rep;
      rep.status = static_cast<uint32_t>(st == transport::QpState::kError   ? ipc::QpStatus::kError
                                         : st == transport::QpState::kReady ? ipc::QpStatus::kReady
                                                                            : ipc::QpStatus::kIdle);
      Reply(reply, rep);
      return 0;
    }
    case ipc::Op::kModifyQp: {
      ipc::ModifyQpReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      QpObj* qp = app->qps.Get(r.qp);
      if (qp == nullptr || r.retry_cnt > 7 || r.rnr_retry > 7 || r.min_rnr_timer > 31) {
        return EINVAL;
      }
      transport::QpAttr a = qp->tuning;
      if (r.mask & ipc::modify::kAccess) {
        a.remote_access = 0;
        if (r.access_flags & IBV_ACCESS_REMOTE_WRITE) {
          a.remote_access |= transport::access::kRemoteWrite;
        }
        if (r.access_flags & IBV_ACCESS_REMOTE_READ)
          a.remote_access |= transport::access::kRemoteRead;
        if (r.access_flags & IBV_ACCESS_REMOTE_ATOMIC) {
          a.remote_access |= transport::access::kRemoteAtomic;
        }
      }
      if (r.mask & ipc::modify::kRetryCnt) a.retry_cnt = r.retry_cnt;
      if (r.mask & ipc::modify::kRnrRetry) a.rnr_retry = r.rnr_retry;
      if (r.mask & ipc::modify::kMinRnrTimer) a.min_rnr_delay_ns = RnrTimerNs(r.min_rnr_timer);
      if (absl::Status s = engine().UpdateQp(qp->qpn, a); !s.ok()) return ErrnoOf(s);
      qp->tuning = a;
      return 0;
    }
    case ipc::Op::kSetQpError: {
      if (!Parse(body, len, &h)) return EINVAL;
      QpObj* qp = app->qps.Get(h.handle);
      if (qp == nullptr) return EINVAL;
      FailQp(app, qp);
      return 0;
    }
    case ipc::Op::kCreateSrq:
    case ipc::Op::kDestroySrq:
    case ipc::Op::kModifySrq:
    case ipc::Op::kQuerySrq: return ExecuteSrq(app, op, body, len, reply, reply_fds);
    default: return EOPNOTSUPP;
  }
}

int ShardService::RegMr(App* app, const ipc::RegMrReq& r, const int* fds, int nfds,
                        std::vector<uint8_t>* reply) {
  const AppLimits& lim = cfg_.limits;
  PdObj* pd = app->pds.Get(r.pd);
  if (pd == nullptr) return EINVAL;
  if (r.length == 0 || r.addr + r.length < r.addr || r.addr + r.length > kInlineVaBase) {
    return EINVAL;
  }
  if (r.iova != r.addr) return EOPNOTSUPP;  // remote addresses are the application's own
  if (app->mrs.size() >= lim.max_mrs) return ENOMEM;
  if (r.length > lim.max_mr_bytes - app->mr_bytes) return ENOMEM;
  uint32_t acc = 0;
  if (r.access & IBV_ACCESS_LOCAL_WRITE) acc |= transport::access::kLocalWrite;
  if (r.access & IBV_ACCESS_REMOTE_WRITE) acc |= transport::access::kRemoteWrite;
  if (r.access & IBV_ACCESS_REMOTE_READ) acc |= transport::access::kRemoteRead;
  if (r.access & IBV_ACCESS_REMOTE_ATOMIC) acc |= transport::access::kRemoteAtomic;
  uint64_t mapping = 0;
  if (r.memory == static_cast<uint32_t>(ipc::MrMemory::kSharedFd) && nfds == 1 &&
      r.map_va <= r.addr && r.addr + r.length <= r.map_va + r.map_len) {
    mapping = app->mem->AddMapping(fds[0], r.map_va, r.map_len, r.map_offset);
  }
  auto mr = engine().RegMr(pd->engine_pd, r.addr, r.length, acc);
  if (!mr.ok()) {
    if (mapping != 0) app->mem->ReleaseMapping(mapping);
    return ErrnoOf(mr.status());
  }
  auto o = std::make_unique<MrObj>();
  o->pd = r.pd;
  o->lkey = mr->lkey;
  o->length = r.length;
  o->mapping = mapping;
  const uint32_t handle = app->mrs.Add(std::move(o));
  if (handle == 0) {
    (void)engine().DeregMr(mr->lkey);
    if (mapping != 0) app->mem->ReleaseMapping(mapping);
    return ENOMEM;
  }
  pd->users++;
  app->mr_bytes += r.length;
  ipc::RegMrRep rep;
  rep.handle = handle;
  rep.lkey = mr->lkey;
  rep.rkey = mr->rkey;
  rep.memory =
      static_cast<uint32_t>(mapping != 0 ? ipc::MrMemory::kSharedFd : ipc::MrMemory::kCrossMemory);
  Reply(reply, rep);
  return 0;
}

int ShardService::DestroyCq(App* app, uint32_t h) {
  CqObj* cq = app->cqs.Get(h);
  if (cq == nullptr) return EINVAL;
  if (cq->users != 0) return EBUSY;
  if (absl::Status s = engine().DestroyCq(cq->engine_cq); !s.ok()) return ErrnoOf(s);
  if (cq->channel != 0) {
    if (ChannelObj* ch = app->channels.Get(cq->channel)) ch->users--;
  }
  cq_owner_.erase(cq->engine_cq);
  std::erase_if(cq_backlog_, [&](const auto& b) { return b.first == app && b.second == h; });
  app->cqs.Remove(h);
  return 0;
}

int ShardService::CreateQp(App* app, const ipc::CreateQpReq& r, std::vector<uint8_t>* reply,
                           std::vector<int>* fds) {
  const AppLimits& lim = cfg_.limits;
  PdObj* pd = app->pds.Get(r.pd);
  CqObj* scq = app->cqs.Get(r.send_cq);
  CqObj* rcq = app->cqs.Get(r.recv_cq);
  if (pd == nullptr || scq == nullptr || rcq == nullptr) return EINVAL;
  SrqObj* srq = r.srq != 0 ? app->srqs.Get(r.srq) : nullptr;
  if (r.srq != 0 && srq == nullptr) return EINVAL;
  if (r.max_send_wr == 0 || r.max_send_wr > lim.max_qp_wr || r.max_recv_wr > lim.max_qp_wr ||
      r.max_send_sge > ipc::kMaxSge || r.max_recv_sge > ipc::kMaxSge ||
      r.max_inline > ipc::kMaxInlineBytes) {
    return EINVAL;
  }
  if (app->qps.size() >= std::min(lim.max_qps, ipc::kMaxQpsPerApp)) return ENOMEM;
  const uint32_t sq_depth = ipc::RingDepth(r.max_send_wr);
  // A QP on an SRQ keeps one unused receive slot: the segment's layout stays the same.
  const uint32_t rq_depth = srq != nullptr ? 1 : ipc::RingDepth(std::max(r.max_recv_wr, 1u));
  auto seg = Segment::Create("metaroce-qp", ipc::QpSegmentBytes(sq_depth, rq_depth));
  if (!seg.ok()) return ENOMEM;
  transport::QpAttr qa;
  qa.pd = pd->engine_pd;
  qa.send_cq = scq->engine_cq;
  qa.recv_cq = rcq->engine_cq;
  qa.max_send_wr = sq_depth;
  qa.max_recv_wr = rq_depth;
  qa.max_sge = ipc::kMaxSge;
  qa.sq_sig_all = r.sq_sig_all != 0;
  if (srq != nullptr) qa.srq = srq->engine_srq;
  auto qpn = engine().CreateQp(qa);
  if (!qpn.ok()) return ErrnoOf(qpn.status());
  auto o = std::make_unique<QpObj>();
  QpObj* qp = o.get();
  qp->tuning = qa;
  qp->qpn = *qpn;
  qp->pd = r.pd;
  qp->send_cq = r.send_cq;
  qp->recv_cq = r.recv_cq;
  qp->sq_sig_all = r.sq_sig_all != 0;
  qp->max_send_sge = std::max(r.max_send_sge, 1u);
  qp->max_recv_sge = srq != nullptr ? 0 : std::max(r.max_recv_sge, 1u);
  qp->srq = r.srq;
  qp->max_inline = r.max_inline;
  qp->seg = std::move(*seg);
  qp->sq_depth = sq_depth;
  qp->rq_depth = rq_depth;
  qp->sq_wr_id.assign(sq_depth, 0);
  qp->rq_wr_id.assign(rq_depth, 0);
  const uint32_t handle = app->qps.Add(std::move(o));
  if (handle == 0) {
    (void)engine().DestroyQp(*qpn);
    return ENOMEM;
  }
  qp->handle = handle;
  app->mem->SetInlineWindow(HandleTable<QpObj>::SlotOf(handle), qp->seg->at<uint8_t>(),
                            qp->seg->bytes());
  pd->users++;
  scq->users++;
  rcq->users++;
  if (srq != nullptr) srq->users++;
  qp_owner_[*qpn] = Owner{app, handle};
  ipc::CreateQpRep rep;
  rep.handle = handle;
  rep.qpn = *qpn;
  rep.sq_depth = sq_depth;
  rep.rq_depth = rq_depth;
  rep.max_send_wr = r.max_send_wr;
  rep.max_recv_wr = srq != nullptr ? 0 : r.max_recv_wr;
  rep.max_send_sge = qp->max_send_sge;
  rep.max_recv_sge = qp->max_recv_sge;
  rep.max_inline = r.max_inline;
  rep.lane = index_;
  rep.segment_bytes = qp->seg->bytes();
  Reply(reply, rep);
  fds->push_back(qp->seg->fd());
  return 0;
}

int ShardService::ConnectQp(App* app, const ipc::ConnectQpReq& r) {
  QpObj* qp = app->qps.Get(r.qp);
  if (qp == nullptr || qp->connected || r.dest_qpn == 0 || r.dest_qpn >= transport::kQpnSpace) {
    return EINVAL;
  }
  const runtime::Shard& s = *shard_;
  const transport::PeerAddr self = s.address();
  transport::PeerAddr peer;
  static constexpr uint8_t kZero[16] = {};
  static constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(r.dest_gid, kZero, 16) != 0) {
    if (std::memcmp(r.dest_gid, kV4Mapped, 12) == 0) {
      peer.ip = wire::IpAddr::V4(r.dest_gid[12], r.dest_gid[13], r.dest_gid[14], r.dest_gid[15]);
    } else {
      peer.ip.v6 = true;
      std::memcpy(peer.ip.bytes.data(), r.dest_gid, 16);
    }
  } else {
    // A LID-only address (ibv_rc_pingpong without -g): LIDs are the low 16
    // bits of the daemon's address, so the peer is in the same /16 (IPv4).
    if (r.dest_lid == 0 || self.ip.v6) return EINVAL;
    peer.ip = self.ip;
    peer.ip.bytes[2] = static_cast<uint8_t>(r.dest_lid >> 8);
    peer.ip.bytes[3] = static_cast<uint8_t>(r.dest_lid);
  }
  if (peer.ip.v6 != self.ip.v6) return EINVAL;
  // Shard 0's port is the daemon's base port; the peer QP's low bits say its shard.
  peer.udp_port = PortForQpn(static_cast<uint16_t>(s.udp_port() - index_), r.dest_qpn);
  if (peer.ip == self.ip && peer.udp_port == self.udp_port) peer.mac = self.mac;
  if (absl::Status st = engine().ConnectQp(qp->qpn, peer, r.dest_qpn); !st.ok()) {
    MR_LOG(WARNING, "metaroced: app %llu: connect QP %u to %s: %s",
           static_cast<unsigned long long>(app->id), qp->qpn, peer.ip.ToString().c_str(),
           std::string(st.message()).c_str());
    return ErrnoOf(st);
  }
  qp->connected = true;
  return 0;
}

int ShardService::DestroyQp(App* app, uint32_t h) {
  QpObj* qp = app->qps.Get(h);
  if (qp == nullptr) return EINVAL;
  (void)engine().DestroyQp(qp->qpn);
  qp_owner_.erase(qp->qpn);
  app->mem->SetInlineWindow(HandleTable<QpObj>::SlotOf(h), nullptr, 0);
  if (PdObj* pd = app->pds.Get(qp->pd)) pd->users--;
  if (CqObj* cq = app->cqs.Get(qp->send_cq)) cq->users--;
  if (CqObj* cq = app->cqs.Get(qp->recv_cq)) cq->users--;
  if (SrqObj* srq = app->srqs.Get(qp->srq)) srq->users--;
  app->qps.Remove(h);
  return 0;
}

void ShardService::DetachApp(App* app) {
  app->mem->gone.store(true);
  std::vector<uint32_t> hs;
  app->qps.ForEach([&](uint32_t h, QpObj&) { hs.push_back(h); });
  for (uint32_t h : hs) DestroyQp(app, h);
  hs.clear();
  app->srqs.ForEach([&](uint32_t h, SrqObj&) { hs.push_back(h); });
  for (uint32_t h : hs) DestroySrq(app, h);
  hs.clear();
  app->cqs.ForEach([&](uint32_t h, CqObj&) { hs.push_back(h); });
  for (uint32_t h : hs) DestroyCq(app, h);
  hs.clear();
  app->mrs.ForEach([&](uint32_t h, MrObj&) { hs.push_back(h); });
  for (uint32_t h : hs) {
    ipc::HandleMsg m{h, 0};
    std::vector<uint8_t> r;
    std::vector<int> f;
    Execute(app, ipc::Op::kDeregMr, reinterpret_cast<const uint8_t*>(&m), sizeof(m), nullptr, 0, &r,
            &f);
  }
  hs.clear();
  app->pds.ForEach([&](uint32_t h, PdObj&) { hs.push_back(h); });
  for (uint32_t h : hs) {
    ipc::HandleMsg m{h, 0};
    std::vector<uint8_t> r;
    std::vector<int> f;
    Execute(app, ipc::Op::kDeallocPd, reinterpret_cast<const uint8_t*>(&m), sizeof(m), nullptr, 0,
            &r, &f);
  }
  mem_.Detach(app->id);
  std::erase(apps_, app);
  std::erase_if(cq_backlog_, [&](const auto& b) { return b.first == app; });
  PublishApps();
}

}  // namespace metaroce::daemon
