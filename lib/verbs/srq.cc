/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Shared receive queues: create, modify (the limit), query, destroy. Posting
// is in post.cc, with the QP receive ring it shares its code with.

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "verbs_private.h"

namespace metaroce::verbs {
namespace {

constexpr int kSrqMask = IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT;

// Whether the daemon's reply grants at least @p a in a ring the shim can use.
bool Sane(const ipc::CreateSrqRep& rep, const ibv_srq_attr& a, uint32_t lanes) {
  const bool pow2 = rep.depth != 0 && (rep.depth & (rep.depth - 1)) == 0;
  return pow2 && rep.depth <= ipc::kMaxRingDepth && rep.lane < lanes && rep.max_wr >= a.max_wr &&
         rep.max_wr <= rep.depth && rep.max_sge >= a.max_sge &&
         rep.segment_bytes == ipc::SrqSegmentBytes(rep.depth);
}

Srq* NewSrq(ibv_pd* pd, ibv_srq_init_attr* init, const ipc::CreateSrqRep& rep, void* seg) {
  auto* srq = new Srq();
  srq->ctx = ToCtx(pd->context);
  srq->handle = rep.handle;
  srq->seg = static_cast<ipc::SrqSegment*>(seg);
  srq->seg_bytes = rep.segment_bytes;
  srq->entries = reinterpret_cast<ipc::RqEntry*>(static_cast<char*>(seg) + ipc::kSrqEntriesOffset);
  srq->depth = rep.depth;
  srq->max_wr = rep.max_wr;
  srq->max_sge = std::min(rep.max_sge, ipc::kMaxSge);
  srq->lane.store(rep.lane, std::memory_order_relaxed);
  srq->posted = srq->seg->prod.v.load(std::memory_order_relaxed);
  ibv_srq& b = srq->srq;
  b.context = pd->context;
  b.srq_context = init->srq_context;
  b.pd = pd;
  b.handle = rep.handle;
  b.events_completed = 0;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  return srq;
}

}  // namespace
}  // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* init) {
  Context* c = ToCtx(pd->context);
  ibv_srq_attr& a = init->attr;
  const uint32_t max_wr = MaxWr(c->hello);
  const uint32_t max_sge = MaxSge(c->hello);
  if (a.max_wr < 1 || a.max_wr > max_wr || a.max_sge < 1 || a.max_sge > max_sge) {
    Debug("create_srq: max_wr %u (1..%u), max_sge %u (1..%u)", a.max_wr, max_wr, a.max_sge,
          max_sge);
    errno = EINVAL;
    return nullptr;
  }
  ipc::CreateSrqReq req;
  req.pd = pd->handle;
  req.max_wr = a.max_wr;
  req.max_sge = a.max_sge;
  req.srq_limit = 0;  // ibv_create_srq(3): srq_limit is irrelevant here; ibv_modify_srq arms it
  ipc::CreateSrqRep rep;
  int fd = -1;
  const int err =
      Request(c, ipc::Op::kCreateSrq, &req, sizeof(req), &rep, sizeof(rep), nullptr, 0, &fd, 1);
  if (err != 0) {
    errno = err;
    return nullptr;
  }
  const bool sane = Sane(rep, a, c->lanes);
  void* seg = sane ? MapSegment(fd, rep.segment_bytes) : nullptr;
  if (!sane) close(fd);
  if (seg == nullptr) {
    RequestHandle(c, ipc::Op::kDestroySrq, rep.handle);
    errno = EPROTO;
    return nullptr;
  }
  Srq* srq = NewSrq(pd, init, rep, seg);
  a.max_wr = srq->max_wr;
  a.max_sge = srq->max_sge;
  std::lock_guard<std::mutex> lock(c->obj_mu);
  c->srqs[srq->handle] = srq;
  return &srq->srq;
}

int ibv_modify_srq(ibv_srq* ibsrq, ibv_srq_attr* attr, int attr_mask) {
  Srq* srq = ToSrq(ibsrq);
  if ((attr_mask & ~kSrqMask) != 0) {
    Debug("modify_srq: unknown attr_mask bits 0x%x", attr_mask & ~kSrqMask);
    return EINVAL;
  }
  if ((attr_mask & IBV_SRQ_MAX_WR) != 0) {
    MR_UNSUPPORTED("ibv_modify_srq", "IBV_SRQ_MAX_WR: create the SRQ with the depth needed");
    return EOPNOTSUPP;
  }
  if ((attr_mask & IBV_SRQ_LIMIT) == 0) return 0;
  if (attr->srq_limit > srq->max_wr) {
    Debug("modify_srq: srq_limit %u above max_wr %u", attr->srq_limit, srq->max_wr);
    return EINVAL;
  }
  ipc::ModifySrqReq req;
  req.srq = srq->handle;
  req.srq_limit = attr->srq_limit;
  return Request(srq->ctx, ipc::Op::kModifySrq, &req, sizeof(req), nullptr, 0);
}

int ibv_query_srq(ibv_srq* ibsrq, ibv_srq_attr* attr) {
  Srq* srq = ToSrq(ibsrq);
  ipc::HandleMsg req;
  req.handle = srq->handle;
  ipc::QuerySrqRep rep;
  const int err = Request(srq->ctx, ipc::Op::kQuerySrq, &req, sizeof(req), &rep, sizeof(rep));
  if (err != 0) return err;
  attr->max_wr = rep.max_wr;
  attr->max_sge = std::min(rep.max_sge, ipc::kMaxSge);
  attr->srq_limit = rep.srq_limit;
  return 0;
}

int ibv_destroy_srq(ibv_srq* ibsrq) {
  Srq* srq = ToSrq(ibsrq);
  Context* c = srq->ctx;
  const int err = RequestHandle(c, ipc::Op::kDestroySrq, srq->handle);
  if (err != 0 && err != EIO) return err;  // EBUSY: a QP still uses it
  {
    std::lock_guard<std::mutex> lock(c->obj_mu);
    c->srqs.erase(srq->handle);
  }
  munmap(srq->seg, srq->seg_bytes);
  pthread_cond_destroy(&ibsrq->cond);
  pthread_mutex_destroy(&ibsrq->mutex);
  delete srq;
  return 0;
}
