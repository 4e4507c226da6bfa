/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Queue pairs: create (plain and extended), the RC state machine with the
// attribute masks of the IB specification, query, destroy.

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "verbs_private.h"

namespace metaroce::verbs {
namespace {

constexpr uint64_t kSupportedSendOps =
    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
    IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

constexpr unsigned kQpAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

struct MaskName {
  int bit;
  const char* name;
};
constexpr MaskName kMaskNames[] = {
    {IBV_QP_STATE, "IBV_QP_STATE"},
    {IBV_QP_CUR_STATE, "IBV_QP_CUR_STATE"},
    {IBV_QP_EN_SQD_ASYNC_NOTIFY, "IBV_QP_EN_SQD_ASYNC_NOTIFY"},
    {IBV_QP_ACCESS_FLAGS, "IBV_QP_ACCESS_FLAGS"},
    {IBV_QP_PKEY_INDEX, "IBV_QP_PKEY_INDEX"},
    {IBV_QP_PORT, "IBV_QP_PORT"},
    {IBV_QP_QKEY, "IBV_QP_QKEY"},
    {IBV_QP_AV, "IBV_QP_AV"},
    {IBV_QP_PATH_MTU, "IBV_QP_PATH_MTU"},
    {IBV_QP_TIMEOUT, "IBV_QP_TIMEOUT"},
    {IBV_QP_RETRY_CNT, "IBV_QP_RETRY_CNT"},
    {IBV_QP_RNR_RETRY, "IBV_QP_RNR_RETRY"},
    {IBV_QP_RQ_PSN, "IBV_QP_RQ_PSN"},
    {IBV_QP_MAX_QP_RD_ATOMIC, "IBV_QP_MAX_QP_RD_ATOMIC"},
    {IBV_QP_ALT_PATH, "IBV_QP_ALT_PATH"},
    {IBV_QP_MIN_RNR_TIMER, "IBV_QP_MIN_RNR_TIMER"},
    {IBV_QP_SQ_PSN, "IBV_QP_SQ_PSN"},
    {IBV_QP_MAX_DEST_RD_ATOMIC, "IBV_QP_MAX_DEST_RD_ATOMIC"},
    {IBV_QP_PATH_MIG_STATE, "IBV_QP_PATH_MIG_STATE"},
    {IBV_QP_CAP, "IBV_QP_CAP"},
    {IBV_QP_DEST_QPN, "IBV_QP_DEST_QPN"},
    {IBV_QP_RATE_LIMIT, "IBV_QP_RATE_LIMIT"},
};

const char* MaskBitName(int bits) {
  for (const MaskName& m : kMaskNames) {
    if ((bits & m.bit) != 0) return m.name;
  }
  return "an unknown bit";
}

const char* StateName(int s) {
  switch (s) {
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_SQD: return "SQD";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_ERR: return "ERR";
    default: return "an unknown state";
  }
}

// Required and optional attribute masks of an RC transition (IB spec
// 11.2.4.2 / ibv_modify_qp(3)); false when the transition does not exist.
bool Transition(int cur, int next, int* required, int* optional) {
  *required = 0;
  *optional = 0;
  if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) return true;  // from any state
  switch (cur) {
    case IBV_QPS_RESET:
      if (next != IBV_QPS_INIT) return false;
      *required = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
      return true;
    case IBV_QPS_INIT:
      if (next == IBV_QPS_INIT) {
        *optional = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        return true;
      }
      if (next != IBV_QPS_RTR) return false;
      *required = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      *optional = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
      return true;
    case IBV_QPS_RTR:
      if (next != IBV_QPS_RTS) return false;
      *required = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                  IBV_QP_MAX_QP_RD_ATOMIC;
      *optional = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
                  IBV_QP_PATH_MIG_STATE;
      return true;
    case IBV_QPS_RTS:
      if (next == IBV_QPS_RTS) {
        *optional = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
                    IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER;
        return true;
      }
      if (next == IBV_QPS_SQD) {
        *optional = IBV_QP_EN_SQD_ASYNC_NOTIFY;
        return true;
      }
      return false;
    default: return false;
  }
}

int Invalid(const char* fmt, const char* what, int a = 0, int b = 0) {
  if (DebugEnabled()) {
    char line[200];
    snprintf(line, sizeof(line), fmt, what, a, b);
    Debug("ibv_modify_qp: %s", line);
  }
  return EINVAL;
}

// Range checks of the values the mask names.
int CheckValues(Context* c, const ibv_qp_attr* a, int mask) {
  if ((mask & IBV_QP_PORT) != 0 && a->port_num != 1)
    return Invalid("%s %d", "port_num", a->port_num);
  if ((mask & IBV_QP_PKEY_INDEX) != 0 && a->pkey_index != 0) {
    return Invalid("%s %d (the table has index 0)", "pkey_index", a->pkey_index);
  }
  if ((mask & IBV_QP_ACCESS_FLAGS) != 0 && (a->qp_access_flags & ~kQpAccess) != 0) {
    return Invalid("%s 0x%x", "qp_access_flags", static_cast<int>(a->qp_access_flags));
  }
  if ((mask & IBV_QP_PATH_MTU) != 0 && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096)) {
    return Invalid("%s %d", "path_mtu", a->path_mtu);
  }
  const int max_rd = static_cast<int>(c->hello.max_qp_rd_atom);
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0 && a->max_rd_atomic > max_rd) {
    return Invalid("%s %d above max_qp_rd_atom %d", "max_rd_atomic", a->max_rd_atomic, max_rd);
  }
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0 && a->max_dest_rd_atomic > max_rd) {
    return Invalid("%s %d above max_qp_rd_atom %d", "max_dest_rd_atomic", a->max_dest_rd_atomic,
                   max_rd);
  }
  if ((mask & IBV_QP_TIMEOUT) != 0 && a->timeout > 31)
    return Invalid("%s %d", "timeout", a->timeout);
  if ((mask & IBV_QP_RETRY_CNT) != 0 && a->retry_cnt > 7) {
    return Invalid("%s %d", "retry_cnt", a->retry_cnt);
  }
  if ((mask & IBV_QP_RNR_RETRY) != 0 && a->rnr_retry > 7) {
    return Invalid("%s %d", "rnr_retry", a->rnr_retry);
  }
  if ((mask & IBV_QP_MIN_RNR_TIMER) != 0 && a->min_rnr_timer > 31) {
    return Invalid("%s %d", "min_rnr_timer", a->min_rnr_timer);
  }
  if ((mask & IBV_QP_DEST_QPN) != 0 && a->dest_qp_num >= (1u << 24)) {
    return Invalid("%s %d", "dest_qp_num", static_cast<int>(a->dest_qp_num));
  }
  if ((mask & IBV_QP_AV) != 0) {
    static const uint8_t zero[16] = {};
    const bool has_gid =
        a->ah_attr.is_global != 0 && memcmp(a->ah_attr.grh.dgid.raw, zero, 16) != 0;
    if (!has_gid && a->ah_attr.dlid == 0) {
      return Invalid("%s: neither a GRH destination GID nor a DLID", "ah_attr");
    }
    if (a->ah_attr.is_global != 0 && a->ah_attr.grh.sgid_index != 0) {
      return Invalid("%s %d (the GID table has index 0)", "ah_attr.grh.sgid_index",
                     a->ah_attr.grh.sgid_index);
    }
  }
  return 0;
}

// Copies the attributes @p mask names into the QP's record.
void Record(Qp* qp, const ibv_qp_attr* a, int mask) {
  ibv_qp_attr& r = qp->attr;
  if (mask & IBV_QP_ACCESS_FLAGS) r.qp_access_flags = a->qp_access_flags;
  if (mask & IBV_QP_PKEY_INDEX) r.pkey_index = a->pkey_index;
  if (mask & IBV_QP_PORT) r.port_num = a->port_num;
  if (mask & IBV_QP_QKEY) r.qkey = a->qkey;
  if (mask & IBV_QP_AV) r.ah_attr = a->ah_attr;
  if (mask & IBV_QP_PATH_MTU) r.path_mtu = a->path_mtu;
  if (mask & IBV_QP_TIMEOUT) r.timeout = a->timeout;
  if (mask & IBV_QP_RETRY_CNT) r.retry_cnt = a->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) r.rnr_retry = a->rnr_retry;
  if (mask & IBV_QP_RQ_PSN) r.rq_psn = a->rq_psn;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) r.max_rd_atomic = a->max_rd_atomic;
  if (mask & IBV_QP_ALT_PATH) {
    r.alt_ah_attr = a->alt_ah_attr;
    r.alt_pkey_index = a->alt_pkey_index;
    r.alt_port_num = a->alt_port_num;
    r.alt_timeout = a->alt_timeout;
  }
  if (mask & IBV_QP_MIN_RNR_TIMER) r.min_rnr_timer = a->min_rnr_timer;
  if (mask & IBV_QP_SQ_PSN) r.sq_psn = a->sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) r.max_dest_rd_atomic = a->max_dest_rd_atomic;
  if (mask & IBV_QP_PATH_MIG_STATE) r.path_mig_state = a->path_mig_state;
  if (mask & IBV_QP_DEST_QPN) r.dest_qp_num = a->dest_qp_num;
}

void SetState(Qp* qp, int s) {
  qp->state.store(s, std::memory_order_release);
  qp->qpx.qp_base.state = static_cast<ibv_qp_state>(s);
}

int Modify(Qp* qp, ibv_qp_attr* attr, int mask) {
  Context* c = qp->ctx;
  std::lock_guard<std::mutex> lock(qp->ctl_mu);
  const int cur = qp->state.load(std::memory_order_relaxed);
  if ((mask & IBV_QP_CUR_STATE) != 0 && attr->cur_qp_state != cur) {
    return Invalid("%s %d is not the QP's state %d", "cur_qp_state", attr->cur_qp_state, cur);
  }
  const int next = (mask & IBV_QP_STATE) != 0 ? attr->qp_state : cur;
  int required, optional;
  if (!Transition(cur, next, &required, &optional)) {
    if (DebugEnabled()) {
      Debug("ibv_modify_qp: no transition %s -> %s", StateName(cur), StateName(next));
    }
    return EINVAL;
  }
  if (next == IBV_QPS_SQD) {
    MR_UNSUPPORTED("ibv_modify_qp", "the SQD state");
    return EOPNOTSUPP;
  }
  const int given = mask & ~IBV_QP_STATE;
  if ((given & required) != required) {
    if (DebugEnabled()) {
      Debug("ibv_modify_qp: %s -> %s needs %s", StateName(cur), StateName(next),
            MaskBitName(required & ~given));
    }
    return EINVAL;
  }
  if ((given & ~(required | optional)) != 0) {
    if (DebugEnabled()) {
      Debug("ibv_modify_qp: %s -> %s does not take %s", StateName(cur), StateName(next),
            MaskBitName(given & ~(required | optional)));
    }
    return EINVAL;
  }
  const int err = CheckValues(c, attr, given);
  if (err != 0) return err;
  if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
    // The daemon has no reset: only a QP that never reached it may go back.
    if (qp->connected || qp->ever_posted.load(std::memory_order_relaxed) ||
        (cur != IBV_QPS_INIT && cur != IBV_QPS_ERR)) {
      MR_UNSUPPORTED("ibv_modify_qp",
                     "to RESET once the QP was connected or has work posted: destroy it");
      return EOPNOTSUPP;
    }
  }
  const int tuned =
      given & (IBV_QP_ACCESS_FLAGS | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER);
  if (tuned != 0) {
    // Before the connection: the QP's access rights hold from its first packet.
    ipc::ModifyQpReq req;
    req.qp = qp->handle;
    if (tuned & IBV_QP_ACCESS_FLAGS) {
      req.mask |= ipc::modify::kAccess;
      req.access_flags = attr->qp_access_flags;
    }
    if (tuned & IBV_QP_RETRY_CNT) {
      req.mask |= ipc::modify::kRetryCnt;
      req.retry_cnt = static_cast<uint8_t>(attr->retry_cnt);
    }
    if (tuned & IBV_QP_RNR_RETRY) {
      req.mask |= ipc::modify::kRnrRetry;
      req.rnr_retry = static_cast<uint8_t>(attr->rnr_retry);
    }
    if (tuned & IBV_QP_MIN_RNR_TIMER) {
      req.mask |= ipc::modify::kMinRnrTimer;
      req.min_rnr_timer = static_cast<uint8_t>(attr->min_rnr_timer);
    }
    const int e = Request(c, ipc::Op::kModifyQp, &req, sizeof(req), nullptr, 0);
    if (e != 0) return e;
  }
  if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
    ipc::ConnectQpReq req;
    req.qp = qp->handle;
    req.dest_qpn = attr->dest_qp_num;
    if (attr->ah_attr.is_global != 0) memcpy(req.dest_gid, attr->ah_attr.grh.dgid.raw, 16);
    req.dest_lid = attr->ah_attr.dlid;
    req.min_rnr_timer = attr->min_rnr_timer;
    // retry_cnt and rnr_retry follow with RTR->RTS (kModifyQp); timeout is
    // not used: metaroce's timers follow each path's measured RTT.
    ipc::ConnectQpRep rep;
    const int e = Request(c, ipc::Op::kConnectQp, &req, sizeof(req), &rep, sizeof(rep));
    if (e != 0) return e;
    if (rep.lane >= c->lanes) return EPROTO;
    qp->connected = true;
    // The daemon took what was posted until now; what a racing post_recv
    // published after that, before it could see the lane, is rung for here.
    qp->lane.store(rep.lane, std::memory_order_seq_cst);
    if (qp->qpx.qp_base.srq == nullptr) {
      RingDoorbell(c, qp->lane, qp->handle, ipc::DoorbellKind::kRq, &qp->seg->rq_doorbell);
    }
  }
  if (next == IBV_QPS_ERR && cur != IBV_QPS_ERR) {
    const int e = RequestHandle(c, ipc::Op::kSetQpError, qp->handle);
    if (e != 0 && e != EIO) return e;
  }
  Record(qp, attr, given);
  if (next == IBV_QPS_RESET) {
    const ibv_qp_cap cap = qp->cap;
    qp->attr = ibv_qp_attr{};
    qp->attr.cap = cap;
  }
  SetState(qp, next);
  return 0;
}

int Query(Qp* qp, ibv_qp_attr* attr, ibv_qp_init_attr* init) {
  std::lock_guard<std::mutex> lock(qp->ctl_mu);
  int s = qp->state.load(std::memory_order_relaxed);
  if (s != IBV_QPS_RESET && s != IBV_QPS_ERR) {
    ipc::HandleMsg req;
    req.handle = qp->handle;
    ipc::QueryQpRep rep;
    const int err = Request(qp->ctx, ipc::Op::kQueryQp, &req, sizeof(req), &rep, sizeof(rep));
    if (err == EIO || (err == 0 && rep.status == static_cast<uint32_t>(ipc::QpStatus::kError))) {
      SetState(qp, IBV_QPS_ERR);
      s = IBV_QPS_ERR;
    } else if (err != 0) {
      return err;
    }
  }
  *attr = qp->attr;
  attr->qp_state = static_cast<ibv_qp_state>(s);
  attr->cur_qp_state = attr->qp_state;
  attr->cap = qp->cap;
  attr->port_num = 1;
  attr->sq_draining = 0;
  memset(init, 0, sizeof(*init));
  ibv_qp& b = qp->qpx.qp_base;
  init->qp_context = b.qp_context;
  init->send_cq = b.send_cq;
  init->recv_cq = b.recv_cq;
  init->srq = b.srq;
  init->cap = qp->cap;
  init->qp_type = b.qp_type;
  init->sq_sig_all = qp->sq_sig_all;
  return 0;
}

ibv_qp* CreateQp(ibv_context* context, ibv_qp_init_attr_ex* a, ibv_qp_cap* writeback) {
  Context* c = ToCtx(context);
  constexpr uint32_t kMask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if ((a->comp_mask & ~kMask) != 0) {
    MR_UNSUPPORTED("ibv_create_qp_ex",
                   "only IBV_QP_INIT_ATTR_PD and IBV_QP_INIT_ATTR_SEND_OPS_FLAGS");
    return nullptr;
  }
  if ((a->comp_mask & IBV_QP_INIT_ATTR_PD) == 0 || a->pd == nullptr) {
    Debug("create_qp: no PD");
    errno = EINVAL;
    return nullptr;
  }
  if (a->qp_type != IBV_QPT_RC) {
    MR_UNSUPPORTED("ibv_create_qp", "only IBV_QPT_RC queue pairs");
    return nullptr;
  }
  const uint64_t ops =
      (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0 ? a->send_ops_flags : 0;
  if ((ops & ~kSupportedSendOps) != 0) {
    MR_UNSUPPORTED("ibv_create_qp_ex",
                   "send_ops_flags beyond WRITE, WRITE_WITH_IMM, SEND, SEND_WITH_IMM, RDMA_READ, "
                   "ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD");
    return nullptr;
  }
  if (a->send_cq == nullptr || a->recv_cq == nullptr || ToCq(a->send_cq)->ctx != c ||
      ToCq(a->recv_cq)->ctx != c || a->pd->context != context) {
    Debug("create_qp: send_cq and recv_cq must be CQs of this context");
    errno = EINVAL;
    return nullptr;
  }
  Srq* srq = a->srq != nullptr ? ToSrq(a->srq) : nullptr;
  if (srq != nullptr && srq->ctx != c) {
    Debug("create_qp: the SRQ belongs to another context");
    errno = EINVAL;
    return nullptr;
  }
  ibv_qp_cap cap = a->cap;
  if (srq != nullptr) {
    // The QP receives through the SRQ: verbs ignores its receive caps.
    cap.max_recv_wr = 0;
    cap.max_recv_sge = 0;
  }
  const uint32_t max_wr = MaxWr(c->hello);
  const uint32_t max_sge = MaxSge(c->hello);
  const uint32_t max_inline = std::min(c->hello.max_inline, ipc::kMaxInlineBytes);
  if (cap.max_send_wr > max_wr || cap.max_recv_wr > max_wr || cap.max_send_sge > max_sge ||
      cap.max_recv_sge > max_sge || cap.max_inline_data > max_inline) {
    Debug("create_qp: cap above the device's (wr %u, sge %u, inline %u)", max_wr, max_sge,
          max_inline);
    errno = EINVAL;
    return nullptr;
  }
  ipc::CreateQpReq req;
  req.pd = a->pd->handle;
  req.send_cq = ToCq(a->send_cq)->handle;
  req.recv_cq = ToCq(a->recv_cq)->handle;
  req.max_send_wr = cap.max_send_wr;
  req.max_recv_wr = cap.max_recv_wr;
  req.max_send_sge = cap.max_send_sge;
  req.max_recv_sge = cap.max_recv_sge;
  req.max_inline = cap.max_inline_data;
  req.sq_sig_all = a->sq_sig_all != 0 ? 1 : 0;
  req.srq = srq != nullptr ? srq->handle : 0;
  ipc::CreateQpRep rep;
  int fd = -1;
  const int err =
      Request(c, ipc::Op::kCreateQp, &req, sizeof(req), &rep, sizeof(rep), nullptr, 0, &fd, 1);
  if (err != 0) {
    errno = err;
    return nullptr;
  }
  auto pow2 = [](uint32_t d) { return d != 0 && (d & (d - 1)) == 0 && d <= ipc::kMaxRingDepth; };
  const bool sane = pow2(rep.sq_depth) && pow2(rep.rq_depth) && rep.max_send_wr <= rep.sq_depth &&
                    rep.max_recv_wr <= rep.rq_depth && rep.max_send_wr >= cap.max_send_wr &&
                    rep.max_recv_wr >= cap.max_recv_wr && rep.max_send_sge >= cap.max_send_sge &&
                    rep.max_recv_sge >= cap.max_recv_sge && rep.max_inline >= cap.max_inline_data &&
                    rep.qpn < (1u << 24) && (rep.lane < c->lanes || rep.lane == ipc::kNoLane) &&
                    rep.segment_bytes == ipc::QpSegmentBytes(rep.sq_depth, rep.rq_depth);
  void* seg = sane ? MapSegment(fd, rep.segment_bytes) : nullptr;
  if (!sane) close(fd);
  if (seg == nullptr) {
    RequestHandle(c, ipc::Op::kDestroyQp, rep.handle);
    errno = EPROTO;
    return nullptr;
  }
  auto* qp = new Qp();
  qp->ctx = c;
  qp->handle = rep.handle;
  qp->seg = static_cast<ipc::QpSegment*>(seg);
  qp->seg_bytes = rep.segment_bytes;
  qp->sq = reinterpret_cast<ipc::SqEntry*>(static_cast<char*>(seg) + ipc::kSqOffset);
  qp->rq = reinterpret_cast<ipc::RqEntry*>(static_cast<char*>(seg) + ipc::RqOffset(rep.sq_depth));
  qp->lane.store(rep.lane, std::memory_order_relaxed);
  qp->sq_depth = rep.sq_depth;
  qp->rq_depth = rep.rq_depth;
  qp->cap.max_send_wr = rep.max_send_wr;
  qp->cap.max_recv_wr = srq != nullptr ? 0 : rep.max_recv_wr;
  qp->cap.max_send_sge = std::min(rep.max_send_sge, ipc::kMaxSge);
  qp->cap.max_recv_sge = srq != nullptr ? 0 : std::min(rep.max_recv_sge, ipc::kMaxSge);
  qp->cap.max_inline_data = std::min(rep.max_inline, ipc::kMaxInlineBytes);
  qp->sq_sig_all = a->sq_sig_all != 0 ? 1 : 0;
  qp->send_cq = ToCq(a->send_cq);
  qp->recv_cq = ToCq(a->recv_cq);
  qp->send_ops_flags = ops;
  qp->sq_posted = qp->seg->sq_prod.v.load(std::memory_order_relaxed);
  qp->rq_posted = qp->seg->rq_prod.v.load(std::memory_order_relaxed);
  qp->attr.cap = qp->cap;
  qp->attr.port_num = 1;
  ibv_qp& b = qp->qpx.qp_base;
  b.context = context;
  b.qp_context = a->qp_context;
  b.pd = a->pd;
  b.send_cq = a->send_cq;
  b.recv_cq = a->recv_cq;
  b.srq = a->srq;
  b.handle = rep.handle;
  b.qp_num = rep.qpn;
  b.state = IBV_QPS_RESET;
  b.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&b.mutex, nullptr);
  pthread_cond_init(&b.cond, nullptr);
  InitWrOps(qp);
  if (writeback != nullptr) *writeback = qp->cap;
  std::lock_guard<std::mutex> lock(c->obj_mu);
  c->qps[qp->handle] = qp;
  return &b;
}

}  // namespace

ibv_qp* CreateQpEx(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  return CreateQp(context, attr, &attr->cap);
}

}  // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  ibv_qp_init_attr_ex ex;
  memset(&ex, 0, sizeof(ex));
  memcpy(&ex, init, sizeof(*init));
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  return CreateQp(pd->context, &ex, &init->cap);
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  return Modify(ToQp(qp), attr, attr_mask);
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int, ibv_qp_init_attr* init_attr) {
  return Query(ToQp(qp), attr, init_attr);
}

int ibv_destroy_qp(ibv_qp* ibqp) {
  Qp* qp = ToQp(ibqp);
  Context* c = qp->ctx;
  const int err = RequestHandle(c, ipc::Op::kDestroyQp, qp->handle);
  if (err != 0 && err != EIO) return err;
  {
    std::lock_guard<std::mutex> lock(c->obj_mu);
    c->qps.erase(qp->handle);
  }
  munmap(qp->seg, qp->seg_bytes);
  pthread_cond_destroy(&ibqp->cond);
  pthread_mutex_destroy(&ibqp->mutex);
  delete qp;
  return 0;
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) { return &ToQp(qp)->qpx; }

int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) {
  // Placement is out of order (packets are sprayed): data is not in order
  // before the completion.
  return 0;
}
