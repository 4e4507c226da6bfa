/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A shard's part of the applications' verbs objects: the engine calls the
// control thread's requests (registry.cc) come down to, already checked there.
// Every PD, MR and CQ of an application is on every shard (an MR under the
// same keys everywhere); a QP is on the shard of its host pair, from RTR on.

#include <infiniband/verbs.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon.h"
#include "mr_log.h"
#include "request.h"

namespace metaroce::daemon {

App::~App() {
  if (async_efd >= 0) close(async_efd);
  for (const int fd : kick_efds) close(fd);
}

ChannelObj::~ChannelObj() {
  if (efd >= 0) close(efd);
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

uint64_t ShardService::Submit(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = ++work_submitted_;
  work_.push_back(std::move(fn));
  has_work_.store(true, std::memory_order_seq_cst);
  Kick();
  return ticket;
}

void ShardService::Wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return work_done_ >= ticket; });
}

void ShardService::RunOnShard(const std::function<void()>& fn) { Wait(Submit(fn)); }

void ShardService::AttachPart(AppPart* part) {
  parts_.push_back(part);
  mem_.Attach(part->app->id, part->mem.get());
  PublishApps();
}

int ShardService::AllocPd(AppPart* part, uint32_t h) {
  auto pd = engine().AllocPd(part->app->id);
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
  part->pds.Put(h, std::move(o));
  return 0;
}

void ShardService::DeallocPd(AppPart* part, uint32_t h) {
  std::unique_ptr<PdObj> pd = part->pds.Remove(h);
  if (pd == nullptr) return;
  (void)engine().DeregMr(pd->inline_lkey);
  (void)engine().DeallocPd(pd->engine_pd);
}

int ShardService::RegMr(AppPart* part, uint32_t h, const ipc::RegMrReq& r, uint32_t acc, int fd,
                        transport::MrInfo* keys, bool* shared) {
  PdObj* pd = part->pds.Get(r.pd);
  if (pd == nullptr) return EINVAL;
  uint64_t mapping = 0;
  if (fd >= 0) mapping = part->mem->AddMapping(fd, r.map_va, r.map_len, r.map_offset);
  auto mr = keys->lkey != 0 ? engine().RegMr(pd->engine_pd, r.addr, r.length, acc, *keys)
                            : engine().RegMr(pd->engine_pd, r.addr, r.length, acc);
  if (!mr.ok()) {
    if (mapping != 0) part->mem->ReleaseMapping(mapping);
    return ErrnoOf(mr.status());
  }
  auto o = std::make_unique<MrObj>();
  o->lkey = mr->lkey;
  o->mapping = mapping;
  part->mrs.Put(h, std::move(o));
  *keys = *mr;
  *shared = mapping != 0;
  return 0;
}

void ShardService::DeregMr(AppPart* part, uint32_t h) {
  std::unique_ptr<MrObj> mr = part->mrs.Remove(h);
  if (mr == nullptr) return;
  (void)engine().DeregMr(mr->lkey);
  if (mr->mapping != 0) part->mem->ReleaseMapping(mr->mapping);
}

int ShardService::CreateCq(AppPart* part, uint32_t h, Segment* seg, uint32_t depth,
                           int channel_efd) {
  auto cq = engine().CreateCq(depth);
  if (!cq.ok()) return ErrnoOf(cq.status());
  auto o = std::make_unique<CqObj>();
  o->handle = h;
  o->engine_cq = *cq;
  o->seg = seg;
  o->depth = depth;
  o->lanes = part->app->lanes;
  o->channel_efd = channel_efd;
  part->cqs.Put(h, std::move(o));
  cq_owner_[*cq] = Owner{part, h};
  return 0;
}

void ShardService::DestroyCq(AppPart* part, uint32_t h) {
  std::unique_ptr<CqObj> cq = part->cqs.Remove(h);
  if (cq == nullptr) return;
  (void)engine().DestroyCq(cq->engine_cq);
  cq_owner_.erase(cq->engine_cq);
  std::erase_if(cq_backlog_, [&](const auto& b) { return b.first == part && b.second == h; });
}

int ShardService::PlaceQp(AppPart* part, std::unique_ptr<QpObj>* qpp,
                          const transport::PeerAddr& peer, uint32_t dest_qpn) {
  QpObj* qp = qpp->get();
  PdObj* pd = part->pds.Get(qp->pd);
  CqObj* scq = part->cqs.Get(qp->send_cq);
  CqObj* rcq = part->cqs.Get(qp->recv_cq);
  SrqObj* srq = qp->srq != 0 ? part->srqs.Get(qp->srq) : nullptr;
  if (pd == nullptr || scq == nullptr || rcq == nullptr || (qp->srq != 0 && srq == nullptr)) {
    return EINVAL;
  }
  transport::QpAttr qa = qp->tuning;
  qa.pd = pd->engine_pd;
  qa.send_cq = scq->engine_cq;
  qa.recv_cq = rcq->engine_cq;
  qa.srq = srq != nullptr ? srq->engine_srq : 0;
  auto created = engine().CreateQp(qa, qp->qpn);
  if (!created.ok()) return ErrnoOf(created.status());
  transport::PeerAddr to = peer;
  const transport::PeerAddr self = shard_->address();
  if (to.ip == self.ip && to.udp_port == self.udp_port) to.mac = self.mac;
  if (absl::Status st = engine().ConnectQp(qp->qpn, to, dest_qpn); !st.ok()) {
    MR_LOG(WARNING, "metaroced: app %llu: connect QP %u to %s: %s",
           static_cast<unsigned long long>(part->app->id), qp->qpn, to.ip.ToString().c_str(),
           std::string(st.message()).c_str());
    (void)engine().DestroyQp(qp->qpn);
    return ErrnoOf(st);
  }
  qp->tuning = qa;
  qp->connected = true;
  const uint32_t h = qp->handle;
  part->mem->SetInlineWindow(HandleSlots<QpObj>::SlotOf(h), qp->seg->at<uint8_t>(),
                             qp->seg->bytes());
  qp_owner_[qp->qpn] = Owner{part, h};
  part->qps.Put(h, std::move(*qpp));
  // What was posted before RTR is in the engine before the peer can send.
  DrainRq(part, qp);
  return 0;
}

void ShardService::DestroyQp(AppPart* part, uint32_t h) {
  std::unique_ptr<QpObj> qp = part->qps.Remove(h);
  if (qp == nullptr) return;
  (void)engine().DestroyQp(qp->qpn);
  qp_owner_.erase(qp->qpn);
  part->mem->SetInlineWindow(HandleSlots<QpObj>::SlotOf(h), nullptr, 0);
}

ipc::QpStatus ShardService::QueryQp(AppPart* part, uint32_t h) {
  QpObj* qp = part->qps.Get(h);
  if (qp == nullptr) return ipc::QpStatus::kIdle;
  const transport::QpState st = engine().GetQpState(qp->qpn);
  return st == transport::QpState::kError   ? ipc::QpStatus::kError
         : st == transport::QpState::kReady ? ipc::QpStatus::kReady
                                            : ipc::QpStatus::kIdle;
}

int ShardService::UpdateQp(AppPart* part, uint32_t h, const transport::QpAttr& a) {
  QpObj* qp = part->qps.Get(h);
  if (qp == nullptr) return EINVAL;
  if (absl::Status s = engine().UpdateQp(qp->qpn, a); !s.ok()) return ErrnoOf(s);
  qp->tuning = a;
  return 0;
}

void ShardService::SetQpError(AppPart* part, uint32_t h) {
  if (QpObj* qp = part->qps.Get(h)) FailQp(part, qp);
}

void ShardService::FlushUnplaced(AppPart* part, QpObj* qp) {
  ipc::QpSegment* h = qp->head();
  h->status.v.store(static_cast<uint32_t>(ipc::QpStatus::kError), std::memory_order_release);
  if (qp->error) return;
  qp->error = true;
  CqObj* cq = part->cqs.Get(qp->recv_cq);
  const uint32_t prod = h->rq_prod.v.load(std::memory_order_acquire);
  if (qp->srq != 0 || cq == nullptr || prod - qp->rq_cons > qp->rq_depth) return;
  uint32_t written = 0;
  for (; qp->rq_cons != prod; qp->rq_cons++) {
    ipc::CqEntry e;
    e.wr_id = qp->rq()[qp->rq_cons & (qp->rq_depth - 1)].wr_id;
    e.status = IBV_WC_WR_FLUSH_ERR;
    e.opcode = IBV_WC_RECV;
    e.qp_num = qp->qpn;
    if (!WriteCompletion(cq, e)) break;  // a full CQ: the rest is lost, as on overflow
    written++;
  }
  qp->rq_retired = qp->rq_cons;
  h->rq_cons.v.store(qp->rq_cons, std::memory_order_release);
  h->rq_retired.v.store(qp->rq_retired, std::memory_order_release);
  PublishCompletions(part, cq, written);
}

void ShardService::DetachPart(AppPart* part) {
  part->mem->gone.store(true);
  for (const uint32_t h : part->qps.Handles()) DestroyQp(part, h);
  for (const uint32_t h : part->srqs.Handles()) DestroySrq(part, h);
  for (const uint32_t h : part->cqs.Handles()) DestroyCq(part, h);
  for (const uint32_t h : part->mrs.Handles()) DeregMr(part, h);
  for (const uint32_t h : part->pds.Handles()) DeallocPd(part, h);
  mem_.Detach(part->app->id);
  std::erase(parts_, part);
  std::erase_if(cq_backlog_, [&](const auto& b) { return b.first == part; });
  PublishApps();
}

}  // namespace metaroce::daemon
