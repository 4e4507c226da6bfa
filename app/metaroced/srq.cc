/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Shared receive queues on a shard (their application's home; their QPs live
// there too): the engine's SRQ, and the ring whose entries move into it as
// they are taken (the engine binds them to QPs as messages arrive, so a ring
// slot is free again once taken).

#include <infiniband/verbs.h>

#include "daemon.h"
#include "request.h"

namespace metaroce::daemon {

int ShardService::CreateSrq(AppPart* part, std::unique_ptr<SrqObj>* srqp) {
  SrqObj* srq = srqp->get();
  PdObj* pd = part->pds.Get(srq->pd);
  if (pd == nullptr) return EINVAL;
  // The engine holds what the ring held: as many receives as it has slots.
  auto id = engine().CreateSrq(pd->engine_pd, srq->depth, srq->max_sge);
  if (!id.ok()) return ErrnoOf(id.status());
  if (srq->limit != 0) (void)engine().ArmSrqLimit(*id, srq->limit);
  srq->engine_srq = *id;
  srq_owner_[*id] = Owner{part, srq->handle};
  part->srqs.Put(srq->handle, std::move(*srqp));
  return 0;
}

void ShardService::DestroySrq(AppPart* part, uint32_t h) {
  std::unique_ptr<SrqObj> srq = part->srqs.Remove(h);
  if (srq == nullptr) return;
  (void)engine().DestroySrq(srq->engine_srq);
  srq_owner_.erase(srq->engine_srq);
}

int ShardService::ArmSrq(AppPart* part, uint32_t h, uint32_t limit) {
  SrqObj* srq = part->srqs.Get(h);
  if (srq == nullptr) return EINVAL;
  return ErrnoOf(engine().ArmSrqLimit(srq->engine_srq, limit));
}

int ShardService::QuerySrq(AppPart* part, uint32_t h, ipc::QuerySrqRep* rep) {
  SrqObj* srq = part->srqs.Get(h);
  if (srq == nullptr) return EINVAL;
  auto info = engine().QuerySrq(srq->engine_srq);
  if (!info.ok()) return ErrnoOf(info.status());
  *rep = ipc::QuerySrqRep{srq->max_wr, srq->max_sge, info->limit, info->posted};
  return 0;
}

void ShardService::FailSrq(AppPart* part, SrqObj* srq) {
  part->bad_entries++;
  if (srq->error) return;
  srq->error = true;
  srq->head()->error.v.store(1, std::memory_order_release);
  DeliverAsync(part, IBV_EVENT_SRQ_ERR, srq->handle);
}

void ShardService::DrainSrq(AppPart* part, SrqObj* srq) {
  ipc::SrqSegment* h = srq->head();
  h->doorbell.v.store(0, std::memory_order_seq_cst);
  const uint32_t prod = h->prod.v.load(std::memory_order_seq_cst);
  const uint32_t n = prod - srq->cons;
  if (n == 0) return;
  if (n > srq->depth) FailSrq(part, srq);
  for (; !srq->error && srq->cons != prod; srq->cons++) {
    // Each field read once: the application may rewrite the entry meanwhile.
    const ipc::RqEntry* e = &srq->ring()[srq->cons & (srq->depth - 1)];
    transport::RecvWr wr;
    wr.wr_id = e->wr_id;  // completions carry it as it is: slots are not tracked
    const uint32_t num_sge = e->num_sge;
    if (num_sge > srq->max_sge) {
      FailSrq(part, srq);
      break;
    }
    for (uint32_t i = 0; i < num_sge; i++) {
      const ipc::Sge g = e->sge[i];
      wr.sg.push_back({g.addr, g.length, g.lkey});
    }
    const absl::Status st = engine().PostSrqRecv(srq->engine_srq, wr);
    if (st.code() == absl::StatusCode::kResourceExhausted) {
      MarkStalled(srq, &part->stalled_srqs);  // the rest waits in the ring
      break;
    }
    if (!st.ok()) {
      FailSrq(part, srq);  // an lkey not of its PD, or one without local write
      break;
    }
    part->recvs_posted++;
  }
  if (srq->error) srq->cons = prod;  // nothing more of it is taken
  h->cons.v.store(srq->cons, std::memory_order_release);
}

}  // namespace metaroce::daemon
