/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The control thread's side of every application's verbs objects: each
// request is checked (sizes, handles of this application only, limits,
// references), numbered (handles, QP numbers) and handed to the shards that
// hold its engine objects (objects.cc, srq.cc): a PD, MR or CQ to every
// shard, an SRQ to the application's home shard, a QP at RTR to its host
// pair's shard (placement.h). Errors are errno values for the shim.

#include <infiniband/verbs.h>
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

/** @p a with what @p r modifies. */
transport::QpAttr Modified(transport::QpAttr a, const ipc::ModifyQpReq& r) {
  if (r.mask & ipc::modify::kAccess) {
    a.remote_access = 0;
    if (r.access_flags & IBV_ACCESS_REMOTE_WRITE)
      a.remote_access |= transport::access::kRemoteWrite;
    if (r.access_flags & IBV_ACCESS_REMOTE_READ) a.remote_access |= transport::access::kRemoteRead;
    if (r.access_flags & IBV_ACCESS_REMOTE_ATOMIC) {
      a.remote_access |= transport::access::kRemoteAtomic;
    }
  }
  if (r.mask & ipc::modify::kRetryCnt) a.retry_cnt = r.retry_cnt;
  if (r.mask & ipc::modify::kRnrRetry) a.rnr_retry = r.rnr_retry;
  if (r.mask & ipc::modify::kMinRnrTimer) a.min_rnr_delay_ns = RnrTimerNs(r.min_rnr_timer);
  return a;
}

/** The peer's address from an RTR's address vector; false when it names none. */
bool PeerIp(const ipc::ConnectQpReq& r, const wire::IpAddr& self, wire::IpAddr* peer) {
  static constexpr uint8_t kZero[16] = {};
  static constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(r.dest_gid, kZero, 16) != 0) {
    if (std::memcmp(r.dest_gid, kV4Mapped, 12) == 0) {
      *peer = wire::IpAddr::V4(r.dest_gid[12], r.dest_gid[13], r.dest_gid[14], r.dest_gid[15]);
    } else {
      peer->v6 = true;
      std::memcpy(peer->bytes.data(), r.dest_gid, 16);
    }
  } else {
    // A LID-only address (ibv_rc_pingpong without -g): LIDs are the low 16
    // bits of the daemon's address, so the peer is in the same /16 (IPv4).
    if (r.dest_lid == 0 || self.v6) return false;
    *peer = self;
    peer->bytes[2] = static_cast<uint8_t>(r.dest_lid >> 8);
    peer->bytes[3] = static_cast<uint8_t>(r.dest_lid);
  }
  return peer->v6 == self.v6;
}

/** The first error of the shards' answers, 0 if none. */
int FirstError(const std::vector<int>& errs) {
  for (const int e : errs) {
    if (e != 0) return e;
  }
  return 0;
}

}  // namespace

void Server::OnEveryShard(App* app, const std::function<void(ShardService*, AppPart*)>& fn) {
  std::vector<uint64_t> tickets(shards_.size());
  for (size_t i = 0; i < shards_.size(); i++) {
    ShardService* sh = shards_[i];
    AppPart* part = app->parts[i].get();
    tickets[i] = sh->Submit([&fn, sh, part] { fn(sh, part); });
  }
  for (size_t i = 0; i < shards_.size(); i++) shards_[i]->Wait(tickets[i]);
}

void Server::OnShard(App* app, uint16_t i, const std::function<void(ShardService*, AppPart*)>& fn) {
  ShardService* sh = shards_[i];
  AppPart* part = app->parts[i].get();
  sh->RunOnShard([&] { fn(sh, part); });
}

uint32_t Server::NewQpn(uint32_t tag) {
  // Verbs programs print and parse QP numbers as 24 bits.
  constexpr uint32_t kSpan = transport::kQpnSpace >> kQpnTagBits;
  for (;;) {
    const uint32_t qpn = (next_qpn_++ % kSpan) << kQpnTagBits | tag;
    if (qpn != 0 && !qpns_.contains(qpn)) return qpn;
  }
}

int Server::Execute(App* app, ipc::Op op, const uint8_t* body, size_t len, const int* fds, int nfds,
                    std::vector<uint8_t>* reply, std::vector<int>* reply_fds) {
  const AppLimits& lim = cfg_.limits;
  ipc::HandleMsg h;
  switch (op) {
    case ipc::Op::kAllocPd:
      if (len != 0) return EINVAL;
      return AllocPd(app, reply);
    case ipc::Op::kDeallocPd:
      if (!Parse(body, len, &h)) return EINVAL;
      return DeallocPd(app, h.handle);
    case ipc::Op::kRegMr: {
      ipc::RegMrReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      return RegMr(app, r, fds, nfds, reply);
    }
    case ipc::Op::kDeregMr:
      if (!Parse(body, len, &h)) return EINVAL;
      return DeregMr(app, h.handle);
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
      return CreateCq(app, r, reply, reply_fds);
    }
    case ipc::Op::kDestroyCq:
      if (!Parse(body, len, &h)) return EINVAL;
      return DestroyCq(app, h.handle);
    case ipc::Op::kCreateQp: {
      ipc::CreateQpReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      return CreateQp(app, r, reply, reply_fds);
    }
    case ipc::Op::kConnectQp: {
      ipc::ConnectQpReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      return ConnectQp(app, r, reply);
    }
    case ipc::Op::kDestroyQp:
      if (!Parse(body, len, &h)) return EINVAL;
      return DestroyQp(app, h.handle);
    case ipc::Op::kQueryQp: {
      if (!Parse(body, len, &h)) return EINVAL;
      QpMeta* qp = app->qps.Get(h.handle);
      if (qp == nullptr) return EINVAL;
      ipc::QueryQpRep rep;
      ipc::QpStatus st = qp->pending != nullptr && qp->pending->error ? ipc::QpStatus::kError
                                                                      : ipc::QpStatus::kIdle;
      if (qp->shard != kUnplaced) {
        OnShard(app, static_cast<uint16_t>(qp->shard),
                [&](ShardService* sh, AppPart* part) { st = sh->QueryQp(part, h.handle); });
      }
      rep.status = static_cast<uint32_t>(st);
      Reply(reply, rep);
      return 0;
    }
    case ipc::Op::kModifyQp: {
      ipc::ModifyQpReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      QpMeta* qp = app->qps.Get(r.qp);
      if (qp == nullptr || r.retry_cnt > 7 || r.rnr_retry > 7 || r.min_rnr_timer > 31) {
        return EINVAL;
      }
      if (qp->shard == kUnplaced) {
        qp->pending->tuning = Modified(qp->pending->tuning, r);
        return 0;
      }
      int err = 0;
      OnShard(app, static_cast<uint16_t>(qp->shard), [&](ShardService* sh, AppPart* part) {
        const QpObj* o = part->qps.Get(r.qp);
        err = o != nullptr ? sh->UpdateQp(part, r.qp, Modified(o->tuning, r)) : EINVAL;
      });
      return err;
    }
    case ipc::Op::kSetQpError: {
      if (!Parse(body, len, &h)) return EINVAL;
      QpMeta* qp = app->qps.Get(h.handle);
      if (qp == nullptr) return EINVAL;
      if (qp->shard == kUnplaced) {
        // Its receives complete in its application's home lane.
        OnShard(app, app->home, [&](ShardService* sh, AppPart* part) {
          sh->FlushUnplaced(part, qp->pending.get());
        });
      } else {
        OnShard(app, static_cast<uint16_t>(qp->shard),
                [&](ShardService* sh, AppPart* part) { sh->SetQpError(part, h.handle); });
      }
      return 0;
    }
    case ipc::Op::kCreateSrq: {
      ipc::CreateSrqReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      return CreateSrq(app, r, reply, reply_fds);
    }
    case ipc::Op::kDestroySrq:
      if (!Parse(body, len, &h)) return EINVAL;
      return DestroySrq(app, h.handle);
    case ipc::Op::kModifySrq: {
      ipc::ModifySrqReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      SrqMeta* srq = app->srqs.Get(r.srq);
      if (srq == nullptr) return EINVAL;
      int err = 0;
      OnShard(app, srq->shard,
              [&](ShardService* sh, AppPart* part) { err = sh->ArmSrq(part, r.srq, r.srq_limit); });
      return err;
    }
    case ipc::Op::kQuerySrq: {
      if (!Parse(body, len, &h)) return EINVAL;
      SrqMeta* srq = app->srqs.Get(h.handle);
      if (srq == nullptr) return EINVAL;
      ipc::QuerySrqRep rep;
      int err = 0;
      OnShard(app, srq->shard,
              [&](ShardService* sh, AppPart* part) { err = sh->QuerySrq(part, h.handle, &rep); });
      if (err == 0) Reply(reply, rep);
      return err;
    }
    default: return EOPNOTSUPP;
  }
}

int Server::AllocPd(App* app, std::vector<uint8_t>* reply) {
  if (app->pds.size() >= cfg_.limits.max_pds) return ENOMEM;
  const uint32_t h = app->pds.Add(std::make_unique<PdMeta>());
  if (h == 0) return ENOMEM;
  std::vector<int> errs(shards_.size());
  OnEveryShard(app,
               [&](ShardService* sh, AppPart* part) { errs[sh->index()] = sh->AllocPd(part, h); });
  if (const int err = FirstError(errs); err != 0) {
    OnEveryShard(app, [&](ShardService* sh, AppPart* part) { sh->DeallocPd(part, h); });
    app->pds.Remove(h);
    return err;
  }
  Reply(reply, ipc::HandleMsg{h, 0});
  return 0;
}

int Server::DeallocPd(App* app, uint32_t h) {
  PdMeta* pd = app->pds.Get(h);
  if (pd == nullptr) return EINVAL;
  if (pd->users != 0) return EBUSY;
  OnEveryShard(app, [&](ShardService* sh, AppPart* part) { sh->DeallocPd(part, h); });
  app->pds.Remove(h);
  return 0;
}

int Server::RegMr(App* app, const ipc::RegMrReq& r, const int* fds, int nfds,
                  std::vector<uint8_t>* reply) {
  const AppLimits& lim = cfg_.limits;
  PdMeta* pd = app->pds.Get(r.pd);
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
  const bool fd_ok = r.memory == static_cast<uint32_t>(ipc::MrMemory::kSharedFd) && nfds == 1 &&
                     r.map_va <= r.addr && r.addr + r.length <= r.map_va + r.map_len;
  const int fd = fd_ok ? fds[0] : -1;
  auto meta = std::make_unique<MrMeta>();
  meta->pd = r.pd;
  meta->length = r.length;
  const uint32_t h = app->mrs.Add(std::move(meta));
  if (h == 0) return ENOMEM;
  // Shard 0 makes the keys; the others take the region under the same ones,
  // so a peer's rkey is good on whichever shard its QP's packets reach.
  transport::MrInfo keys;
  bool shared = false;
  int err = 0;
  OnShard(app, 0, [&](ShardService* sh, AppPart* part) {
    err = sh->RegMr(part, h, r, acc, fd, &keys, &shared);
  });
  if (err == 0 && shards_.size() > 1) {
    std::vector<int> errs(shards_.size());
    OnEveryShard(app, [&](ShardService* sh, AppPart* part) {
      if (sh->index() == 0) return;
      transport::MrInfo k = keys;
      bool s = false;
      errs[sh->index()] = sh->RegMr(part, h, r, acc, fd, &k, &s);
    });
    err = FirstError(errs);
    if (err != 0) {
      OnEveryShard(app, [&](ShardService* sh, AppPart* part) { sh->DeregMr(part, h); });
    }
  }
  if (err != 0) {
    app->mrs.Remove(h);
    return err;
  }
  pd->users++;
  app->mr_bytes += r.length;
  ipc::RegMrRep rep;
  rep.handle = h;
  rep.lkey = keys.lkey;
  rep.rkey = keys.rkey;
  rep.memory =
      static_cast<uint32_t>(shared ? ipc::MrMemory::kSharedFd : ipc::MrMemory::kCrossMemory);
  Reply(reply, rep);
  return 0;
}

int Server::DeregMr(App* app, uint32_t h) {
  MrMeta* mr = app->mrs.Get(h);
  if (mr == nullptr) return EINVAL;
  OnEveryShard(app, [&](ShardService* sh, AppPart* part) { sh->DeregMr(part, h); });
  app->mr_bytes -= mr->length;
  app->pds.Get(mr->pd)->users--;
  app->mrs.Remove(h);
  return 0;
}

int Server::CreateCq(App* app, const ipc::CreateCqReq& r, std::vector<uint8_t>* reply,
                     std::vector<int>* reply_fds) {
  const AppLimits& lim = cfg_.limits;
  if (r.depth == 0 || r.depth > lim.max_cqe) return EINVAL;
  if (app->cqs.size() >= lim.max_cqs) return ENOMEM;
  ChannelObj* ch = r.channel != 0 ? app->channels.Get(r.channel) : nullptr;
  if (r.channel != 0 && ch == nullptr) return EINVAL;
  const uint32_t depth = ipc::RingDepth(r.depth);
  auto seg = Segment::Create("metaroce-cq", ipc::CqSegmentBytes(depth, app->lanes));
  if (!seg.ok()) return ENOMEM;
  auto meta = std::make_unique<CqMeta>();
  CqMeta* cq = meta.get();
  cq->seg = std::move(*seg);
  cq->depth = depth;
  cq->channel = r.channel;
  const uint32_t h = app->cqs.Add(std::move(meta));
  if (h == 0) return ENOMEM;
  const int efd = ch != nullptr ? ch->efd : -1;
  std::vector<int> errs(shards_.size());
  OnEveryShard(app, [&](ShardService* sh, AppPart* part) {
    errs[sh->index()] = sh->CreateCq(part, h, cq->seg.get(), depth, efd);
  });
  if (const int err = FirstError(errs); err != 0) {
    OnEveryShard(app, [&](ShardService* sh, AppPart* part) { sh->DestroyCq(part, h); });
    app->cqs.Remove(h);
    return err;
  }
  if (ch != nullptr) ch->users++;
  Reply(reply, ipc::CreateCqRep{h, depth, cq->seg->bytes()});
  reply_fds->push_back(cq->seg->fd());
  return 0;
}

int Server::DestroyCq(App* app, uint32_t h) {
  CqMeta* cq = app->cqs.Get(h);
  if (cq == nullptr) return EINVAL;
  if (cq->users != 0) return EBUSY;
  OnEveryShard(app, [&](ShardService* sh, AppPart* part) { sh->DestroyCq(part, h); });
  if (ChannelObj* ch = app->channels.Get(cq->channel)) ch->users--;
  app->cqs.Remove(h);
  return 0;
}

int Server::CreateQp(App* app, const ipc::CreateQpReq& r, std::vector<uint8_t>* reply,
                     std::vector<int>* reply_fds) {
  const AppLimits& lim = cfg_.limits;
  PdMeta* pd = app->pds.Get(r.pd);
  CqMeta* scq = app->cqs.Get(r.send_cq);
  CqMeta* rcq = app->cqs.Get(r.recv_cq);
  if (pd == nullptr || scq == nullptr || rcq == nullptr) return EINVAL;
  SrqMeta* srq = r.srq != 0 ? app->srqs.Get(r.srq) : nullptr;
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
  const auto shards = static_cast<uint16_t>(shards_.size());
  // A QP on an SRQ lives on the SRQ's shard, and its number says so.
  const uint32_t qpn = NewQpn(srq != nullptr ? FixedQpnTag(srq->shard) : PairQpnTag(shards));
  auto o = std::make_unique<QpObj>();
  QpObj* qp = o.get();
  qp->tuning.max_send_wr = sq_depth;
  qp->tuning.max_recv_wr = rq_depth;
  qp->tuning.max_sge = ipc::kMaxSge;
  qp->tuning.sq_sig_all = r.sq_sig_all != 0;
  qp->qpn = qpn;
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
  auto meta = std::make_unique<QpMeta>();
  meta->qpn = qpn;
  meta->pd = r.pd;
  meta->send_cq = r.send_cq;
  meta->recv_cq = r.recv_cq;
  meta->srq = r.srq;
  meta->pending = std::move(o);
  const uint32_t h = app->qps.Add(std::move(meta));
  if (h == 0) return ENOMEM;
  qp->handle = h;
  qpns_.insert(qpn);
  pd->users++;
  scq->users++;
  rcq->users++;
  if (srq != nullptr) srq->users++;
  ipc::CreateQpRep rep;
  rep.handle = h;
  rep.qpn = qpn;
  rep.sq_depth = sq_depth;
  rep.rq_depth = rq_depth;
  rep.max_send_wr = r.max_send_wr;
  rep.max_recv_wr = srq != nullptr ? 0 : r.max_recv_wr;
  rep.max_send_sge = qp->max_send_sge;
  rep.max_recv_sge = qp->max_recv_sge;
  rep.max_inline = r.max_inline;
  rep.lane = srq != nullptr ? srq->shard : ipc::kNoLane;
  rep.segment_bytes = qp->seg->bytes();
  Reply(reply, rep);
  reply_fds->push_back(qp->seg->fd());
  return 0;
}

int Server::ConnectQp(App* app, const ipc::ConnectQpReq& r, std::vector<uint8_t>* reply) {
  QpMeta* qp = app->qps.Get(r.qp);
  if (qp == nullptr || qp->shard != kUnplaced || qp->pending->error || r.dest_qpn == 0 ||
      r.dest_qpn >= transport::kQpnSpace) {
    return EINVAL;
  }
  const runtime::Shard& first = rt_->shard(0);
  const wire::IpAddr self = first.address().ip;
  transport::PeerAddr peer;
  if (!PeerIp(r, self, &peer.ip)) return EINVAL;
  // Shard 0's port is the daemon's base port; the peer QP's number says which
  // of the peer daemon's shards holds it.
  peer.udp_port = static_cast<uint16_t>(first.udp_port() + PeerShardOf(r.dest_qpn, self, peer.ip));
  const SrqMeta* srq = qp->srq != 0 ? app->srqs.Get(qp->srq) : nullptr;
  const uint16_t shard =
      srq != nullptr ? srq->shard : PairShard(self, peer.ip, static_cast<uint16_t>(shards_.size()));
  int err = 0;
  OnShard(app, shard, [&](ShardService* sh, AppPart* part) {
    err = sh->PlaceQp(part, &qp->pending, peer, r.dest_qpn);
  });
  if (err != 0) return err;
  qp->shard = shard;
  Reply(reply, ipc::ConnectQpRep{shard, 0});
  return 0;
}

int Server::DestroyQp(App* app, uint32_t h) {
  QpMeta* qp = app->qps.Get(h);
  if (qp == nullptr) return EINVAL;
  if (qp->shard != kUnplaced) {
    OnShard(app, static_cast<uint16_t>(qp->shard),
            [&](ShardService* sh, AppPart* part) { sh->DestroyQp(part, h); });
  }
  qpns_.erase(qp->qpn);
  if (PdMeta* pd = app->pds.Get(qp->pd)) pd->users--;
  if (CqMeta* cq = app->cqs.Get(qp->send_cq)) cq->users--;
  if (CqMeta* cq = app->cqs.Get(qp->recv_cq)) cq->users--;
  if (SrqMeta* srq = app->srqs.Get(qp->srq)) srq->users--;
  app->qps.Remove(h);
  return 0;
}

int Server::CreateSrq(App* app, const ipc::CreateSrqReq& r, std::vector<uint8_t>* reply,
                      std::vector<int>* reply_fds) {
  const AppLimits& lim = cfg_.limits;
  PdMeta* pd = app->pds.Get(r.pd);
  if (pd == nullptr || r.max_wr == 0 || r.max_wr > lim.max_qp_wr || r.max_sge == 0 ||
      r.max_sge > ipc::kMaxSge || r.srq_limit > r.max_wr) {
    return EINVAL;
  }
  if (app->srqs.size() >= std::min(lim.max_srqs, ipc::kMaxSrqsPerApp)) return ENOMEM;
  const uint32_t depth = ipc::RingDepth(r.max_wr);
  auto seg = Segment::Create("metaroce-srq", ipc::SrqSegmentBytes(depth));
  if (!seg.ok()) return ENOMEM;
  auto meta = std::make_unique<SrqMeta>();
  meta->pd = r.pd;
  meta->shard = app->home;
  const uint32_t h = app->srqs.Add(std::move(meta));
  if (h == 0) return ENOMEM;
  auto o = std::make_unique<SrqObj>();
  o->handle = h;
  o->pd = r.pd;
  o->seg = std::move(*seg);
  o->depth = depth;
  o->max_wr = r.max_wr;
  o->max_sge = r.max_sge;
  o->limit = r.srq_limit;
  const ipc::CreateSrqRep rep{h, depth, r.max_wr, r.max_sge, o->seg->bytes(), app->home, 0};
  const int seg_fd = o->seg->fd();
  int err = 0;
  OnShard(app, app->home, [&](ShardService* sh, AppPart* part) { err = sh->CreateSrq(part, &o); });
  if (err != 0) {
    app->srqs.Remove(h);
    return err;
  }
  pd->users++;
  Reply(reply, rep);
  reply_fds->push_back(seg_fd);
  return 0;
}

int Server::DestroySrq(App* app, uint32_t h) {
  SrqMeta* srq = app->srqs.Get(h);
  if (srq == nullptr) return EINVAL;
  if (srq->users != 0) return EBUSY;
  OnShard(app, srq->shard, [&](ShardService* sh, AppPart* part) { sh->DestroySrq(part, h); });
  if (PdMeta* pd = app->pds.Get(srq->pd)) pd->users--;
  app->srqs.Remove(h);
  return 0;
}

}  // namespace metaroce::daemon
