/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Shared receive queues. A QP on an SRQ has no receives of its own: when the
// first packet of a message that consumes one arrives, the SRQ's oldest
// receives are bound to the QP up to that message's receive number, so the
// QP's receive queue looks exactly like one the application filled itself.

#include "absl/strings/str_cat.h"
#include "engine_private.h"

namespace metaroce::transport {

absl::StatusOr<uint32_t> EngineImpl::CreateSrq(uint32_t pd, uint32_t max_wr, uint32_t max_sge) {
  auto it = pds.find(pd);
  if (it == pds.end()) return absl::NotFoundError(absl::StrCat("no PD ", pd));
  if (max_wr == 0 || max_wr > (1u << 20) || max_sge == 0) {
    return absl::InvalidArgumentError("SRQ max_wr must be 1..2^20 and max_sge at least 1");
  }
  const uint32_t id = next_srq++;
  Srq& s = srqs[id];
  s.pd = pd;
  s.owner = it->second.owner;
  s.max_wr = max_wr;
  s.max_sge = max_sge;
  it->second.srqs++;
  return id;
}

absl::Status EngineImpl::DestroySrq(uint32_t srq) {
  auto it = srqs.find(srq);
  if (it == srqs.end()) return absl::NotFoundError(absl::StrCat("no SRQ ", srq));
  if (it->second.qps != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("SRQ ", srq, " is used by ", it->second.qps, " QPs"));
  }
  pds[it->second.pd].srqs--;
  srqs.erase(it);
  return absl::OkStatus();
}

absl::Status EngineImpl::ArmSrqLimit(uint32_t srq, uint32_t limit) {
  auto it = srqs.find(srq);
  if (it == srqs.end()) return absl::NotFoundError(absl::StrCat("no SRQ ", srq));
  if (limit > it->second.max_wr) {
    return absl::InvalidArgumentError(
        absl::StrCat("SRQ limit ", limit, " exceeds its max_wr ", it->second.max_wr));
  }
  it->second.limit = limit;
  return absl::OkStatus();
}

absl::StatusOr<SrqInfo> EngineImpl::QuerySrq(uint32_t srq) const {
  auto it = srqs.find(srq);
  if (it == srqs.end()) return absl::NotFoundError(absl::StrCat("no SRQ ", srq));
  const Srq& s = it->second;
  return SrqInfo{s.max_wr, s.max_sge, s.limit, static_cast<uint32_t>(s.pool.size())};
}

absl::Status EngineImpl::PostSrqRecv(uint32_t srq, const RecvWr& wr) {
  auto it = srqs.find(srq);
  if (it == srqs.end()) return absl::NotFoundError(absl::StrCat("no SRQ ", srq));
  Srq& s = it->second;
  if (s.pool.size() >= s.max_wr) {
    return absl::ResourceExhaustedError(absl::StrCat("SRQ ", srq, " is full (", s.max_wr, ")"));
  }
  absl::StatusOr<PostedRecv> r = MakeRecv(s.pd, s.max_sge, wr);
  if (!r.ok()) return r.status();
  s.pool.push_back(*std::move(r));
  return absl::OkStatus();
}

bool EngineImpl::ReceivePosted(Qp* qp, uint32_t recv_seq, uint32_t msn) {
  const uint32_t ahead = recv_seq - qp->rq_base;
  if (ahead < qp->rq.size()) return true;
  if (qp->attr.srq == 0) return false;
  // Messages from msn_next on consume receives rq_base, rq_base + 1, ...: an
  // honest peer's receive number is never further ahead than its message
  // number, which the stream window bounds. A peer that claims more binds
  // nothing (and gets RNR NAKs).
  if (ahead > msn - qp->msn_next) return false;
  Srq& s = srqs[qp->attr.srq];
  const size_t need = ahead + 1 - qp->rq.size();
  if (s.pool.size() < need) return false;
  for (size_t i = 0; i < need; i++) {
    qp->rq.push_back(std::move(s.pool.front()));
    s.pool.pop_front();
  }
  if (s.limit != 0 && s.pool.size() < s.limit) {
    s.limit = 0;  // fires once; the application arms it again
    events.push_back(AsyncEvent{AsyncEvent::Type::kSrqLimit, qp->attr.srq});
  }
  return true;
}

}  // namespace metaroce::transport
