/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The data path's producer side: ibv_post_send / ibv_post_recv /
// ibv_post_srq_recv (through ibv_context_ops) and the ibv_wr_* builder API of
// struct ibv_qp_ex, all writing ring entries in the QP or SRQ segment and
// ringing the daemon's doorbell. No system call here.

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "verbs_private.h"

namespace metaroce::verbs {

void RingDoorbell(Context* c, const std::atomic<uint32_t>& placed, uint32_t handle,
                  ipc::DoorbellKind kind, ipc::RingIndex* flag) {
  // seq_cst after the producer index's store: if the QP is placed after this
  // load, its placement (ConnectQp) rings the doorbell for what we posted.
  const uint32_t lane = placed.load(std::memory_order_seq_cst);
  if (lane == ipc::kNoLane) return;
  // The daemon clears the flag before it drains the ring and re-reads the
  // producer index after clearing it: a 1 here means it will see our entries.
  if (flag->v.exchange(1, std::memory_order_seq_cst) != 0) return;
  ipc::AppLane* l = c->lane(lane);
  std::lock_guard<std::mutex> lock(c->db_mu);
  uint32_t& prod = c->db_prod[lane];
  ipc::Doorbell& d = l->doorbells[prod & (ipc::kDoorbellSlots - 1)];
  d.handle = handle;
  d.kind = static_cast<uint32_t>(kind);
  prod++;
  // seq_cst against the shard's store of shard_asleep (mr_ipc_ring.h).
  l->db_prod.v.store(prod, std::memory_order_seq_cst);
  if (c->kick_fd[lane] >= 0 && l->shard_asleep.v.load(std::memory_order_seq_cst) != 0) {
    const uint64_t one = 1;
    ssize_t n = write(c->kick_fd[lane], &one, sizeof(one));
    (void)n;  // a full counter wakes the shard as well
  }
}

namespace {

bool KnownOpcode(uint32_t op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD: return true;
    default: return false;
  }
}

bool InlineAllowed(uint32_t op) {
  return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND ||
         op == IBV_WR_SEND_WITH_IMM;
}

constexpr unsigned kSendFlags =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

// Free send slots for a new entry at sq_posted + staged (sq_mu held).
bool SqHasRoom(Qp* qp, uint32_t staged) {
  const uint32_t retired = qp->seg->sq_retired.v.load(std::memory_order_acquire);
  return qp->sq_posted + staged - retired < qp->cap.max_send_wr;
}

ipc::SqEntry* SqSlot(Qp* qp, uint32_t staged) {
  return &qp->sq[(qp->sq_posted + staged) & (qp->sq_depth - 1)];
}

// Fills @p e from @p wr; 0 or the errno.
int FillSend(Qp* qp, const ibv_send_wr* wr, ipc::SqEntry* e) {
  if (!KnownOpcode(wr->opcode)) {
    Debug("post_send: opcode %d is not supported", wr->opcode);
    return EINVAL;
  }
  if ((wr->send_flags & ~kSendFlags) != 0) {
    Debug("post_send: send_flags 0x%x", wr->send_flags);
    return EINVAL;
  }
  if (wr->num_sge < 0) return EINVAL;
  e->wr_id = wr->wr_id;
  e->opcode = wr->opcode;
  e->send_flags = wr->send_flags;
  e->imm_data = (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM || wr->opcode == IBV_WR_SEND_WITH_IMM)
                    ? wr->imm_data
                    : 0;
  e->rkey = 0;
  e->remote_addr = 0;
  e->compare_add = 0;
  e->swap = 0;
  switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
      e->remote_addr = wr->wr.rdma.remote_addr;
      e->rkey = wr->wr.rdma.rkey;
      break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      e->remote_addr = wr->wr.atomic.remote_addr;
      e->rkey = wr->wr.atomic.rkey;
      e->compare_add = wr->wr.atomic.compare_add;
      e->swap = wr->wr.atomic.swap;
      break;
    default: break;
  }
  if ((wr->send_flags & IBV_SEND_INLINE) != 0) {
    if (!InlineAllowed(wr->opcode)) {
      Debug("post_send: IBV_SEND_INLINE with opcode %d", wr->opcode);
      return EINVAL;
    }
    size_t total = 0;
    for (int i = 0; i < wr->num_sge; i++) total += wr->sg_list[i].length;
    if (total > qp->cap.max_inline_data) {
      Debug("post_send: %zu inline bytes, max_inline_data %u", total, qp->cap.max_inline_data);
      return EINVAL;
    }
    size_t off = 0;
    for (int i = 0; i < wr->num_sge; i++) {
      const ibv_sge& s = wr->sg_list[i];
      memcpy(e->inline_data + off, reinterpret_cast<const void*>(s.addr), s.length);
      off += s.length;
    }
    e->inline_len = static_cast<uint32_t>(total);
    e->num_sge = 0;
    return 0;
  }
  if (static_cast<uint32_t>(wr->num_sge) > qp->cap.max_send_sge) {
    Debug("post_send: %d SGEs, max_send_sge %u", wr->num_sge, qp->cap.max_send_sge);
    return EINVAL;
  }
  e->inline_len = 0;
  e->num_sge = static_cast<uint32_t>(wr->num_sge);
  for (int i = 0; i < wr->num_sge; i++) {
    e->sge[i].addr = wr->sg_list[i].addr;
    e->sge[i].length = wr->sg_list[i].length;
    e->sge[i].lkey = wr->sg_list[i].lkey;
  }
  return 0;
}

// Publishes @p n staged send entries (sq_mu held).
void PublishSq(Qp* qp, uint32_t n) {
  if (n == 0) return;
  qp->ever_posted.store(true, std::memory_order_relaxed);
  qp->sq_posted += n;
  qp->seg->sq_prod.v.store(qp->sq_posted, std::memory_order_seq_cst);
  RingDoorbell(qp->ctx, qp->lane, qp->handle, ipc::DoorbellKind::kSq, &qp->seg->sq_doorbell);
}

// ---- ibv_wr_* ----

Qp* WrQp(ibv_qp_ex* q) { return reinterpret_cast<Qp*>(q); }

void WrStart(ibv_qp_ex* q) {
  Qp* qp = WrQp(q);
  qp->sq_mu.lock();
  qp->wr_staged = 0;
  qp->wr_err = 0;
  if (qp->ctx->gone.load(std::memory_order_relaxed)) {
    qp->wr_err = EIO;
  } else if (qp->state.load(std::memory_order_acquire) != IBV_QPS_RTS) {
    Debug("wr_start: the QP is not in RTS");
    qp->wr_err = EINVAL;
  }
}

int WrComplete(ibv_qp_ex* q) {
  Qp* qp = WrQp(q);
  const int err = qp->wr_err;
  if (err == 0) PublishSq(qp, qp->wr_staged);
  qp->wr_staged = 0;
  qp->wr_err = 0;
  qp->sq_mu.unlock();
  return err;
}

void WrAbort(ibv_qp_ex* q) {
  Qp* qp = WrQp(q);
  qp->wr_staged = 0;
  qp->wr_err = 0;
  qp->sq_mu.unlock();
}

void WrFail(Qp* qp, int err) {
  if (qp->wr_err == 0) qp->wr_err = err;
}

// Begins a new staged WR of @p opcode; nullptr after an error.
ipc::SqEntry* WrBegin(ibv_qp_ex* q, uint32_t opcode, uint64_t op_flag) {
  Qp* qp = WrQp(q);
  if (qp->wr_err != 0) return nullptr;
  if (qp->send_ops_flags != 0 && (qp->send_ops_flags & op_flag) == 0) {
    Debug("wr_*: opcode %u not in the QP's send_ops_flags", opcode);
    WrFail(qp, EINVAL);
    return nullptr;
  }
  if ((q->wr_flags & ~kSendFlags) != 0) {
    WrFail(qp, EINVAL);
    return nullptr;
  }
  if (!SqHasRoom(qp, qp->wr_staged)) {
    WrFail(qp, ENOMEM);
    return nullptr;
  }
  ipc::SqEntry* e = SqSlot(qp, qp->wr_staged);
  qp->wr_staged++;
  e->wr_id = q->wr_id;
  e->opcode = opcode;
  e->send_flags = q->wr_flags & ~static_cast<unsigned>(IBV_SEND_INLINE);
  e->imm_data = 0;
  e->num_sge = 0;
  e->rkey = 0;
  e->inline_len = 0;
  e->remote_addr = 0;
  e->compare_add = 0;
  e->swap = 0;
  return e;
}

// The WR the setters apply to; nullptr after an error or before a builder.
ipc::SqEntry* WrCurrent(Qp* qp) {
  if (qp->wr_err != 0) return nullptr;
  if (qp->wr_staged == 0) {
    WrFail(qp, EINVAL);
    return nullptr;
  }
  return SqSlot(qp, qp->wr_staged - 1);
}

void WrRdmaWrite(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr) {
  if (ipc::SqEntry* e = WrBegin(q, IBV_WR_RDMA_WRITE, IBV_QP_EX_WITH_RDMA_WRITE)) {
    e->rkey = rkey;
    e->remote_addr = raddr;
  }
}

void WrRdmaWriteImm(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr, __be32 imm) {
  if (ipc::SqEntry* e =
          WrBegin(q, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)) {
    e->rkey = rkey;
    e->remote_addr = raddr;
    e->imm_data = imm;
  }
}

void WrSend(ibv_qp_ex* q) { WrBegin(q, IBV_WR_SEND, IBV_QP_EX_WITH_SEND); }

void WrSendImm(ibv_qp_ex* q, __be32 imm) {
  if (ipc::SqEntry* e = WrBegin(q, IBV_WR_SEND_WITH_IMM, IBV_QP_EX_WITH_SEND_WITH_IMM)) {
    e->imm_data = imm;
  }
}

void WrRdmaRead(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr) {
  if (ipc::SqEntry* e = WrBegin(q, IBV_WR_RDMA_READ, IBV_QP_EX_WITH_RDMA_READ)) {
    e->rkey = rkey;
    e->remote_addr = raddr;
  }
}

void WrCmpSwp(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr, uint64_t compare, uint64_t swap) {
  if (ipc::SqEntry* e = WrBegin(q, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)) {
    e->rkey = rkey;
    e->remote_addr = raddr;
    e->compare_add = compare;
    e->swap = swap;
  }
}

void WrFetchAdd(ibv_qp_ex* q, uint32_t rkey, uint64_t raddr, uint64_t add) {
  if (ipc::SqEntry* e =
          WrBegin(q, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)) {
    e->rkey = rkey;
    e->remote_addr = raddr;
    e->compare_add = add;
  }
}

void WrSetSge(ibv_qp_ex* q, uint32_t lkey, uint64_t addr, uint32_t length) {
  Qp* qp = WrQp(q);
  if (ipc::SqEntry* e = WrCurrent(qp)) {
    if (qp->cap.max_send_sge < 1) return WrFail(qp, EINVAL);
    e->send_flags &= ~static_cast<unsigned>(IBV_SEND_INLINE);
    e->inline_len = 0;
    e->num_sge = 1;
    e->sge[0] = {addr, length, lkey};
  }
}

void WrSetSgeList(ibv_qp_ex* q, size_t n, const ibv_sge* list) {
  Qp* qp = WrQp(q);
  if (ipc::SqEntry* e = WrCurrent(qp)) {
    if (n > qp->cap.max_send_sge) {
      Debug("wr_set_sge_list: %zu SGEs, max_send_sge %u", n, qp->cap.max_send_sge);
      return WrFail(qp, EINVAL);
    }
    e->send_flags &= ~static_cast<unsigned>(IBV_SEND_INLINE);
    e->inline_len = 0;
    e->num_sge = static_cast<uint32_t>(n);
    for (size_t i = 0; i < n; i++) e->sge[i] = {list[i].addr, list[i].length, list[i].lkey};
  }
}

void WrSetInlineList(ibv_qp_ex* q, size_t n, const ibv_data_buf* bufs) {
  Qp* qp = WrQp(q);
  if (ipc::SqEntry* e = WrCurrent(qp)) {
    if (!InlineAllowed(e->opcode)) return WrFail(qp, EINVAL);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += bufs[i].length;
    if (total > qp->cap.max_inline_data) {
      Debug("wr_set_inline_data: %zu bytes, max_inline_data %u", total, qp->cap.max_inline_data);
      return WrFail(qp, EINVAL);
    }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
      memcpy(e->inline_data + off, bufs[i].addr, bufs[i].length);
      off += bufs[i].length;
    }
    e->send_flags |= IBV_SEND_INLINE;
    e->num_sge = 0;
    e->inline_len = static_cast<uint32_t>(total);
  }
}

void WrSetInline(ibv_qp_ex* q, void* addr, size_t length) {
  const ibv_data_buf b = {addr, length};
  WrSetInlineList(q, 1, &b);
}

void WrUnsupported(Qp* qp, const char* fn, const char* why) {
  if (qp->wr_err != 0) return;
  MR_UNSUPPORTED(fn, why);
  WrFail(qp, EOPNOTSUPP);
}

void WrBindMw(ibv_qp_ex* q, ibv_mw*, uint32_t, const ibv_mw_bind_info*) {
  WrUnsupported(WrQp(q), "ibv_wr_bind_mw", "no memory windows");
}
void WrLocalInv(ibv_qp_ex* q, uint32_t) {
  WrUnsupported(WrQp(q), "ibv_wr_local_inv", "no memory windows");
}
void WrSendInv(ibv_qp_ex* q, uint32_t) {
  WrUnsupported(WrQp(q), "ibv_wr_send_inv", "no memory windows");
}
void WrSendTso(ibv_qp_ex* q, void*, uint16_t, uint16_t) {
  WrUnsupported(WrQp(q), "ibv_wr_send_tso", "raw packet QPs only");
}
void WrSetUdAddr(ibv_qp_ex* q, ibv_ah*, uint32_t, uint32_t) {
  WrUnsupported(WrQp(q), "ibv_wr_set_ud_addr", "UD QPs only; metaroce has RC");
}
void WrSetXrcSrqn(ibv_qp_ex* q, uint32_t) {
  WrUnsupported(WrQp(q), "ibv_wr_set_xrc_srqn", "no XRC");
}
void WrAtomicWrite(ibv_qp_ex* q, uint32_t, uint64_t, const void*) {
  WrUnsupported(WrQp(q), "ibv_wr_atomic_write", "no ATOMIC_WRITE");
}

// ---- receive rings ----

// A QP's receive ring or an SRQ's: the same entries under the same protocol,
// only where the indices live differs.
struct RecvRing {
  Context* ctx;
  const std::atomic<uint32_t>* lane;
  uint32_t handle;
  ipc::DoorbellKind kind;
  const char* verb;  // for Debug()
  ipc::RqEntry* entries;
  uint32_t depth;
  uint32_t room;  // at most this many entries between *freed and *prod
  uint32_t max_sge;
  uint32_t* posted;  // our copy of *prod (the ring's lock held)
  ipc::RingIndex* prod;
  const ipc::RingIndex* freed;  // the daemon's: the slots before it are free again
  ipc::RingIndex* doorbell;
};

// 0 if @p wr may be the ring's @p n-th new entry, else the errno.
int CheckRecv(const RecvRing& r, uint32_t n, const ibv_recv_wr* wr) {
  if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > r.max_sge) {
    Debug("%s: %d SGEs, at most %u", r.verb, wr->num_sge, r.max_sge);
    return EINVAL;
  }
  if (*r.posted + n - r.freed->v.load(std::memory_order_acquire) >= r.room) return ENOMEM;
  return 0;
}

void FillRecv(const ibv_recv_wr* wr, ipc::RqEntry* e) {
  e->wr_id = wr->wr_id;
  e->num_sge = static_cast<uint32_t>(wr->num_sge);
  for (int i = 0; i < wr->num_sge; i++) {
    e->sge[i] = {wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
  }
}

// Writes the chain @p wr into @p r (its lock held) up to the first WR that
// @p refuse (the owner's state: 0 or an errno) or CheckRecv turns down; then
// publishes what it wrote and rings the doorbell.
template <typename Refuse>
int PostRecvRing(const RecvRing& r, ibv_recv_wr* wr, ibv_recv_wr** bad_wr, Refuse refuse) {
  int err = 0;
  uint32_t n = 0;
  for (; wr != nullptr; wr = wr->next) {
    err = r.ctx->gone.load(std::memory_order_relaxed) ? EIO : refuse();
    if (err == 0) err = CheckRecv(r, n, wr);
    if (err != 0) break;
    FillRecv(wr, &r.entries[(*r.posted + n) & (r.depth - 1)]);
    n++;
  }
  if (n != 0) {
    *r.posted += n;
    r.prod->v.store(*r.posted, std::memory_order_seq_cst);
    RingDoorbell(r.ctx, *r.lane, r.handle, r.kind, r.doorbell);
  }
  if (err != 0 && bad_wr != nullptr) *bad_wr = wr;
  return err;
}

}  // namespace

void InitWrOps(Qp* qp) {
  ibv_qp_ex& q = qp->qpx;
  q.wr_atomic_cmp_swp = WrCmpSwp;
  q.wr_atomic_fetch_add = WrFetchAdd;
  q.wr_bind_mw = WrBindMw;
  q.wr_local_inv = WrLocalInv;
  q.wr_rdma_read = WrRdmaRead;
  q.wr_rdma_write = WrRdmaWrite;
  q.wr_rdma_write_imm = WrRdmaWriteImm;
  q.wr_send = WrSend;
  q.wr_send_imm = WrSendImm;
  q.wr_send_inv = WrSendInv;
  q.wr_send_tso = WrSendTso;
  q.wr_set_ud_addr = WrSetUdAddr;
  q.wr_set_xrc_srqn = WrSetXrcSrqn;
  q.wr_set_inline_data = WrSetInline;
  q.wr_set_inline_data_list = WrSetInlineList;
  q.wr_set_sge = WrSetSge;
  q.wr_set_sge_list = WrSetSgeList;
  q.wr_start = WrStart;
  q.wr_complete = WrComplete;
  q.wr_abort = WrAbort;
  q.wr_atomic_write = WrAtomicWrite;
}

int PostSend(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Qp* qp = ToQp(ibqp);
  std::lock_guard<std::mutex> lock(qp->sq_mu);
  int err = 0;
  uint32_t n = 0;
  for (; wr != nullptr; wr = wr->next) {
    if (qp->ctx->gone.load(std::memory_order_relaxed)) {
      err = EIO;
    } else if (qp->state.load(std::memory_order_acquire) != IBV_QPS_RTS) {
      Debug("post_send: the QP is not in RTS");
      err = EINVAL;
    } else if (!SqHasRoom(qp, n)) {
      err = ENOMEM;
    } else {
      err = FillSend(qp, wr, SqSlot(qp, n));
    }
    if (err != 0) break;
    n++;
  }
  PublishSq(qp, n);
  if (err != 0 && bad_wr != nullptr) *bad_wr = wr;
  return err;
}

int PostRecv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Qp* qp = ToQp(ibqp);
  if (ibqp->srq != nullptr) {
    Debug("post_recv: the QP receives through its SRQ (ibv_post_srq_recv)");
    if (bad_wr != nullptr) *bad_wr = wr;
    return EINVAL;
  }
  std::lock_guard<std::mutex> lock(qp->rq_mu);
  const RecvRing r = {.ctx = qp->ctx,
                      .lane = &qp->lane,
                      .handle = qp->handle,
                      .kind = ipc::DoorbellKind::kRq,
                      .verb = "post_recv",
                      .entries = qp->rq,
                      .depth = qp->rq_depth,
                      .room = qp->cap.max_recv_wr,
                      .max_sge = qp->cap.max_recv_sge,
                      .posted = &qp->rq_posted,
                      .prod = &qp->seg->rq_prod,
                      .freed = &qp->seg->rq_retired,
                      .doorbell = &qp->seg->rq_doorbell};
  const uint32_t before = qp->rq_posted;
  const int err = PostRecvRing(r, wr, bad_wr, [qp] {
    if (qp->state.load(std::memory_order_acquire) != IBV_QPS_RESET) return 0;
    Debug("post_recv: the QP is in RESET");
    return EINVAL;
  });
  if (qp->rq_posted != before) qp->ever_posted.store(true, std::memory_order_relaxed);
  return err;
}

int PostSrqRecv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Srq* srq = ToSrq(ibsrq);
  std::lock_guard<std::mutex> lock(srq->mu);
  // Slots are free once the daemon took their entries (cons), whether or not
  // the receives completed: the whole ring is room.
  const RecvRing r = {.ctx = srq->ctx,
                      .lane = &srq->lane,
                      .handle = srq->handle,
                      .kind = ipc::DoorbellKind::kSrq,
                      .verb = "post_srq_recv",
                      .entries = srq->entries,
                      .depth = srq->depth,
                      .room = srq->depth,
                      .max_sge = srq->max_sge,
                      .posted = &srq->posted,
                      .prod = &srq->seg->prod,
                      .freed = &srq->seg->cons,
                      .doorbell = &srq->seg->doorbell};
  return PostRecvRing(r, wr, bad_wr, [srq] {
    if (srq->seg->error.v.load(std::memory_order_acquire) == 0) return 0;
    Debug("post_srq_recv: the daemon failed the SRQ (IBV_EVENT_SRQ_ERR)");
    return EIO;
  });
}

}  // namespace metaroce::verbs
