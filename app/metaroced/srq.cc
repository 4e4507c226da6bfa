/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Shared receive queues of the applications: the objects, and the ring whose
// entries move into the engine's SRQ as they are taken (the engine binds them
// to QPs as messages arrive, so a ring slot is free again once taken).

#include <infiniband/verbs.h>

#include "daemon.h"
#include "request.h"

namespace metaroce::daemon {

int ShardService::ExecuteSrq(App* app, ipc::Op op, const uint8_t* body, size_t len,
                             std::vector<uint8_t>* reply, std::vector<int>* reply_fds) {
  const AppLimits& lim = cfg_.limits;
  switch (op) {
    case ipc::Op::kCreateSrq: {
      ipc::CreateSrqReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      PdObj* pd = app->pds.Get(r.pd);
      if (pd == nullptr || r.max_wr == 0 || r.max_wr > lim.max_qp_wr || r.max_sge == 0 ||
          r.max_sge > ipc::kMaxSge || r.srq_limit > r.max_wr) {
        return EINVAL;
      }
      if (app->srqs.size() >= std::min(lim.max_srqs, ipc::kMaxSrqsPerApp)) return ENOMEM;
      const uint32_t depth = ipc::RingDepth(r.max_wr);
      auto seg = Segment::Create("metaroce-srq", ipc::SrqSegmentBytes(depth));
      if (!seg.ok()) return ENOMEM;
      // The engine holds what the ring held: as many receives as it has slots.
      auto id = engine().CreateSrq(pd->engine_pd, depth, r.max_sge);
      if (!id.ok()) return ErrnoOf(id.status());
      if (r.srq_limit != 0) (void)engine().ArmSrqLimit(*id, r.srq_limit);
      auto o = std::make_unique<SrqObj>();
      SrqObj* srq = o.get();
      srq->engine_srq = *id;
      srq->pd = r.pd;
      srq->seg = std::move(*seg);
      srq->depth = depth;
      srq->max_wr = r.max_wr;
      srq->max_sge = r.max_sge;
      const uint32_t handle = app->srqs.Add(std::move(o));
      if (handle == 0) {
        (void)engine().DestroySrq(*id);
        return ENOMEM;
      }
      srq->handle = handle;
      pd->users++;
      srq_owner_[*id] = Owner{app, handle};
      Reply(reply,
            ipc::CreateSrqRep{handle, depth, r.max_wr, r.max_sge, srq->seg->bytes(), index_, 0});
      reply_fds->push_back(srq->seg->fd());
      return 0;
    }
    case ipc::Op::kDestroySrq: {
      ipc::HandleMsg h;
      if (!Parse(body, len, &h)) return EINVAL;
      return DestroySrq(app, h.handle);
    }
    case ipc::Op::kModifySrq: {
      ipc::ModifySrqReq r;
      if (!Parse(body, len, &r)) return EINVAL;
      SrqObj* srq = app->srqs.Get(r.srq);
      if (srq == nullptr) return EINVAL;
      return ErrnoOf(engine().ArmSrqLimit(srq->engine_srq, r.srq_limit));
    }
    case ipc::Op::kQuerySrq: {
      ipc::HandleMsg h;
      if (!Parse(body, len, &h)) return EINVAL;
      SrqObj* srq = app->srqs.Get(h.handle);
      if (srq == nullptr) return EINVAL;
      auto info = engine().QuerySrq(srq->engine_srq);
      if (!info.ok()) return ErrnoOf(info.status());
      Reply(reply, ipc::QuerySrqRep{srq->max_wr, srq->max_sge, info->limit, info->posted});
      return 0;
    }
    default: return EOPNOTSUPP;
  }
}

int ShardService::DestroySrq(App* app, uint32_t h) {
  SrqObj* srq = app->srqs.Get(h);
  if (srq == nullptr) return EINVAL;
  if (srq->users != 0) return EBUSY;
  if (absl::Status s = engine().DestroySrq(srq->engine_srq); !s.ok()) return ErrnoOf(s);
  srq_owner_.erase(srq->engine_srq);
  if (PdObj* pd = app->pds.Get(srq->pd)) pd->users--;
  app->srqs.Remove(h);
  return 0;
}

void ShardService::FailSrq(App* app, SrqObj* srq) {
  app->bad_entries++;
  if (srq->error) return;
  srq->error = true;
  srq->head()->error.v.store(1, std::memory_order_release);
  DeliverAsync(app, IBV_EVENT_SRQ_ERR, srq->handle);
}

void ShardService::DrainSrq(App* app, SrqObj* srq) {
  ipc::SrqSegment* h = srq->head();
  h->doorbell.v.store(0, std::memory_order_seq_cst);
  const uint32_t prod = h->prod.v.load(std::memory_order_seq_cst);
  const uint32_t n = prod - srq->cons;
  if (n == 0) return;
  if (n > srq->depth) FailSrq(app, srq);
  for (; !srq->error && srq->cons != prod; srq->cons++) {
    // Each field read once: the application may rewrite the entry meanwhile.
    const ipc::RqEntry* e = &srq->ring()[srq->cons & (srq->depth - 1)];
    transport::RecvWr wr;
    wr.wr_id = e->wr_id;  // completions carry it as it is: slots are not tracked
    const uint32_t num_sge = e->num_sge;
    if (num_sge > srq->max_sge) {
      FailSrq(app, srq);
      break;
    }
    for (uint32_t i = 0; i < num_sge; i++) {
      const ipc::Sge g = e->sge[i];
      wr.sg.push_back({g.addr, g.length, g.lkey});
    }
    const absl::Status st = engine().PostSrqRecv(srq->engine_srq, wr);
    if (st.code() == absl::StatusCode::kResourceExhausted) {
      MarkStalled(srq, &app->stalled_srqs);  // the rest waits in the ring
      break;
    }
    if (!st.ok()) {
      FailSrq(app, srq);  // an lkey not of its PD, or one without local write
      break;
    }
    app->recvs_posted++;
  }
  if (srq->error) srq->cons = prod;  // nothing more of it is taken
  h->cons.v.store(srq->cons, std::memory_order_release);
}

}  // namespace metaroce::daemon
