/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The applications' fast path, once per shard iteration: doorbells -> send
// and receive entries -> the engine; the engine's completions -> CQ rings
// (and completion channels); asynchronous events -> the application's event
// ring. Everything read from shared memory is copied out first and checked:
// an application can only break its own objects.

#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "daemon.h"
#include "mr_ipc_futex.h"
#include "mr_log.h"
#include "mr_telemetry.h"

namespace metaroce::daemon {
namespace {

using transport::Completion;
using transport::Opcode;
using transport::WcOpcode;
using transport::WcStatus;

bool OpcodeOf(uint32_t ibv, Opcode* op) {
  switch (ibv) {
    case IBV_WR_RDMA_WRITE: *op = Opcode::kWrite; return true;
    case IBV_WR_RDMA_WRITE_WITH_IMM: *op = Opcode::kWriteImm; return true;
    case IBV_WR_SEND: *op = Opcode::kSend; return true;
    case IBV_WR_SEND_WITH_IMM: *op = Opcode::kSendImm; return true;
    case IBV_WR_RDMA_READ: *op = Opcode::kRead; return true;
    case IBV_WR_ATOMIC_CMP_AND_SWP: *op = Opcode::kAtomicCompSwap; return true;
    case IBV_WR_ATOMIC_FETCH_AND_ADD: *op = Opcode::kAtomicFetchAdd; return true;
    default: return false;
  }
}

uint8_t IbvStatus(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess: return IBV_WC_SUCCESS;
    case WcStatus::kLocLenErr: return IBV_WC_LOC_LEN_ERR;
    case WcStatus::kLocQpOpErr: return IBV_WC_LOC_QP_OP_ERR;
    case WcStatus::kLocProtErr: return IBV_WC_LOC_PROT_ERR;
    case WcStatus::kWrFlushErr: return IBV_WC_WR_FLUSH_ERR;
    case WcStatus::kBadRespErr: return IBV_WC_BAD_RESP_ERR;
    case WcStatus::kRemInvReqErr: return IBV_WC_REM_INV_REQ_ERR;
    case WcStatus::kRemAccessErr: return IBV_WC_REM_ACCESS_ERR;
    case WcStatus::kRemOpErr: return IBV_WC_REM_OP_ERR;
    case WcStatus::kRetryExcErr: return IBV_WC_RETRY_EXC_ERR;
    case WcStatus::kRnrRetryExcErr: return IBV_WC_RNR_RETRY_EXC_ERR;
    case WcStatus::kGeneralErr: return IBV_WC_GENERAL_ERR;
  }
  return IBV_WC_GENERAL_ERR;
}

uint8_t IbvOpcode(WcOpcode o) {
  switch (o) {
    case WcOpcode::kSend: return IBV_WC_SEND;
    case WcOpcode::kRdmaWrite: return IBV_WC_RDMA_WRITE;
    case WcOpcode::kRdmaRead: return IBV_WC_RDMA_READ;
    case WcOpcode::kCompSwap: return IBV_WC_COMP_SWAP;
    case WcOpcode::kFetchAdd: return IBV_WC_FETCH_ADD;
    case WcOpcode::kRecv: return IBV_WC_RECV;
    case WcOpcode::kRecvRdmaWithImm: return IBV_WC_RECV_RDMA_WITH_IMM;
  }
  return IBV_WC_SEND;
}

/** Longest wait for events: telemetry and the stop flag are looked at this often at least. */
constexpr transport::TimeNs kMaxWaitNs = 100'000'000;

timespec Timespec(transport::TimeNs ns) {
  return timespec{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

bool IsReceive(WcOpcode o) { return o == WcOpcode::kRecv || o == WcOpcode::kRecvRdmaWithImm; }

void Signal(int efd) {
  const uint64_t one = 1;
  ssize_t n = write(efd, &one, sizeof(one));
  (void)n;  // a full eventfd counter is already signalled
}

// Drains again each object of @p table listed in @p stalled (handles, cleared
// first: a drain that stalls again lists its object anew); @p scratch holds
// the list meanwhile.
template <typename Obj, typename Drain>
void RetryStalled(const HandleSlots<Obj>& table, std::vector<uint32_t>* stalled,
                  std::vector<uint32_t>* scratch, Drain&& drain) {
  scratch->clear();
  scratch->swap(*stalled);
  for (const uint32_t h : *scratch) {
    if (Obj* o = table.Get(h); o != nullptr && o->stalled) {
      o->stalled = false;
      drain(o);
    }
  }
}

}  // namespace

void ShardService::Iterate() {
  bool did = false;
  if (has_work_.load(std::memory_order_acquire)) {
    did = true;
    std::vector<std::function<void()>> work;
    {
      std::lock_guard<std::mutex> lock(mu_);
      work.swap(work_);
      has_work_.store(false, std::memory_order_relaxed);
    }
    for (auto& fn : work) fn();
    {
      std::lock_guard<std::mutex> lock(mu_);
      work_done_ += work.size();
    }
    cv_.notify_all();
  }
  for (AppPart* part : parts_) {
    if (part->Holds()) did |= PollPart(part) != 0;
  }
  // Completions: CQs the engine filled, then those still waiting for ring room.
  std::array<uint32_t, 64> ready;
  for (;;) {
    const size_t n = engine().TakeReadyCqs(ready);
    for (size_t i = 0; i < n; i++) {
      auto it = cq_owner_.find(ready[i]);
      if (it == cq_owner_.end()) continue;
      if (CqObj* cq = it->second.part->cqs.Get(it->second.handle)) {
        did |= MoveCompletions(it->second.part, cq) != 0;
      }
    }
    if (n < ready.size()) break;
  }
  if (!cq_backlog_.empty()) {
    std::vector<std::pair<AppPart*, uint32_t>> again;
    again.swap(cq_backlog_);
    for (auto& [part, h] : again) {
      if (CqObj* cq = part->cqs.Get(h)) {
        cq->backlog = false;
        did |= MoveCompletions(part, cq) != 0;
      }
    }
  }
  PollEngineEvents();
  if (cfg_.telemetry && shard_->Now() - apps_published_at_ >= telemetry::kTelemetryPublishNs) {
    PublishApps();
  }
  MaybeSleep(did);
}

void ShardService::MaybeSleep(bool did_work) {
  // Idle iterations before the shard sleeps. Few: on a host whose cores the
  // applications spin on, every idle poll is CPU an application needs to
  // answer (64 made ib_write_lat 28-38 us here, 2 makes it 7-9 us); bursts
  // keep the shard awake anyway, as each iteration with work resets the count.
  static constexpr uint32_t kIdleIterationsBeforeSleep = 2;
  if (cfg_.idle_sleep_ns == 0) return;
  const runtime::ShardStats& st = shard_->stats();
  const uint64_t busy = st.iterations.Get() - st.idle_polls.Get();
  if (did_work || busy != last_busy_iterations_) {
    last_busy_iterations_ = busy;
    idle_iterations_ = 0;
    return;
  }
  if (++idle_iterations_ < kIdleIterationsBeforeSleep) return;
  if (!slack_set_) {
    prctl(PR_SET_TIMERSLACK, 1UL);  // wake when asked, not 50 us later
    slack_set_ = true;
  }
  if (engine().HasPendingTx() || has_work_.load(std::memory_order_acquire)) return;
  const transport::TimeNs now = shard_->Now();
  const transport::TimeNs deadline = engine().NextDeadline();
  if (deadline <= now) return;
  // A port that can wake the shard lets it sleep until something happens
  // (long enough for the scheduler to hand it the CPU at once when it
  // wakes); otherwise, or while completions wait for an application to
  // make room in its CQ ring (which it does not announce), it naps
  // idle_sleep_us at a time.
  const int rx_fd = shard_->RxEventFd();
  if (rx_fd >= 0 && kick_fd_ >= 0 && cq_backlog_.empty()) {
    WaitForEvents(rx_fd, std::min(deadline - now, kMaxWaitNs));
    return;
  }
  const transport::TimeNs ns = std::min<transport::TimeNs>(cfg_.idle_sleep_ns, deadline - now);
  if (ns < 1'000) return;
  const timespec ts = Timespec(ns);
  nanosleep(&ts, nullptr);
}

void ShardService::WaitForEvents(int rx_fd, transport::TimeNs timeout_ns) {
  for (AppPart* part : parts_) {
    if (part->Holds()) part->lane()->shard_asleep.v.store(1, std::memory_order_seq_cst);
  }
  bool pending = has_work_.load(std::memory_order_seq_cst);
  for (AppPart* part : parts_) {
    pending |=
        part->Holds() && part->lane()->db_prod.v.load(std::memory_order_seq_cst) != part->db_cons;
  }
  if (!pending) {
    // The port, the shard's own kick (handed-over work) and each
    // application's: one that drains its own eventfd only delays itself.
    wait_fds_.clear();
    wait_fds_.push_back({rx_fd, POLLIN, 0});
    wait_fds_.push_back({kick_fd_, POLLIN, 0});
    for (const AppPart* part : parts_) {
      if (part->Holds()) wait_fds_.push_back({part->app->kick_efds[index_], POLLIN, 0});
    }
    const timespec ts = Timespec(timeout_ns);
    if (ppoll(wait_fds_.data(), wait_fds_.size(), &ts, nullptr) > 0) {
      for (size_t i = 1; i < wait_fds_.size(); i++) {
        if ((wait_fds_[i].revents & POLLIN) == 0) continue;
        uint64_t n;
        ssize_t r = read(wait_fds_[i].fd, &n, sizeof(n));
        (void)r;
      }
    }
  }
  for (AppPart* part : parts_) part->lane()->shard_asleep.v.store(0, std::memory_order_relaxed);
  idle_iterations_ = 0;
}

bool ShardService::Busy() const {
  for (const AppPart* part : parts_) {
    bool busy = false;
    part->qps.ForEach([&](uint32_t, const QpObj& qp) {
      busy |= qp.connected && !qp.error && qp.sq_cons != qp.sq_retired;
    });
    if (busy) return true;
  }
  return false;
}

void ShardService::LogState() {
  for (const AppPart* part : parts_) {
    MR_LOG(NOTICE,
           "metaroced: shard %u app %llu pid %d: %u QPs %u SRQs here, %u CQs %u MRs, %llu WRs "
           "%llu receives %llu completions %llu bad entries",
           index_, static_cast<unsigned long long>(part->app->id), part->app->pid, part->qps.size(),
           part->srqs.size(), part->cqs.size(), part->mrs.size(),
           static_cast<unsigned long long>(part->wrs_posted),
           static_cast<unsigned long long>(part->recvs_posted),
           static_cast<unsigned long long>(part->completions),
           static_cast<unsigned long long>(part->bad_entries));
  }
  const transport::EngineStats& es = engine().stats();
  MR_LOG(NOTICE,
         "metaroced: shard %u engine: %llu packets out, %llu in, %llu retransmitted, %llu "
         "tail-loss probes, %llu message probes, %llu RNR/resend NAKs, %llu acks",
         index_, static_cast<unsigned long long>(es.tx_packets),
         static_cast<unsigned long long>(es.rx_packets),
         static_cast<unsigned long long>(es.tx_retransmits),
         static_cast<unsigned long long>(es.tail_loss_probes),
         static_cast<unsigned long long>(es.msg_probes),
         static_cast<unsigned long long>(es.tx_naks), static_cast<unsigned long long>(es.tx_acks));
  for (const transport::ConnInfo& c : engine().GetConnections()) {
    uint32_t active = 0;
    for (const transport::PathInfo& p : c.paths) active += p.active;
    MR_LOG(NOTICE,
           "metaroced: shard %u conn %08x->%08x %s:%u %s: %u QPs, paths %u/%zu active, %u in "
           "flight, %llu retransmitted, %llu lost",
           index_, c.conn_id, c.remote_conn_id, c.peer.ip.ToString().c_str(), c.peer.udp_port,
           transport::ConnStateName(c.state), c.num_qps, active, c.paths.size(), c.inflight,
           static_cast<unsigned long long>(c.retx_pkts),
           static_cast<unsigned long long>(c.lost_pkts));
  }
}

uint32_t ShardService::PollPart(AppPart* part) {
  ipc::AppLane* s = part->lane();
  const uint32_t prod = s->db_prod.v.load(std::memory_order_acquire);
  const uint32_t n = prod - part->db_cons;
  if (n > ipc::kDoorbellSlots) {
    if (!part->corrupt) {
      MR_LOG(WARNING,
             "metaroced: app %llu (pid %d) broke its doorbell ring of shard %u: nothing more is "
             "taken from it",
             static_cast<unsigned long long>(part->app->id), part->app->pid, index_);
    }
    part->corrupt = true;
    return 0;
  }
  // Take the entries first, then drain: a QP's flag is cleared only after its
  // doorbell left the ring, so the ring holds at most one per QP and queue.
  std::array<ipc::Doorbell, 64> taken;
  const uint32_t k = std::min<uint32_t>(n, taken.size());
  for (uint32_t i = 0; i < k; i++) {
    taken[i] = s->doorbells[(part->db_cons + i) & (ipc::kDoorbellSlots - 1)];
  }
  part->db_cons += k;
  s->db_cons.v.store(part->db_cons, std::memory_order_release);
  for (uint32_t i = 0; i < k; i++) {
    const ipc::Doorbell d = taken[i];
    if (d.kind == static_cast<uint32_t>(ipc::DoorbellKind::kSrq)) {
      if (SrqObj* srq = part->srqs.Get(d.handle)) {
        DrainSrq(part, srq);
      } else {
        part->bad_entries++;
      }
      continue;
    }
    QpObj* qp = part->qps.Get(d.handle);
    if (qp == nullptr) {
      part->bad_entries++;
      continue;
    }
    if (d.kind == static_cast<uint32_t>(ipc::DoorbellKind::kSq)) {
      DrainSq(part, qp);
    } else if (d.kind == static_cast<uint32_t>(ipc::DoorbellKind::kRq)) {
      DrainRq(part, qp);
    } else {
      part->bad_entries++;
    }
  }
  // Queues whose engine queue was full: their entries wait in the ring. Only
  // those are visited (a drain that stalls again lists its queue anew).
  RetryStalled(part->qps, &part->stalled_qps, &retry_, [&](QpObj* qp) {
    DrainSq(part, qp);
    DrainRq(part, qp);
  });
  RetryStalled(part->srqs, &part->stalled_srqs, &retry_, [&](SrqObj* srq) { DrainSrq(part, srq); });
  return k;
}

void ShardService::FailQp(AppPart* part, QpObj* qp) {
  if (!qp->error) {
    qp->error = true;
    (void)engine().SetQpError(qp->qpn);
  }
  qp->head()->status.v.store(static_cast<uint32_t>(ipc::QpStatus::kError),
                             std::memory_order_release);
  (void)part;
}

void ShardService::DrainSq(AppPart* part, QpObj* qp) {
  ipc::QpSegment* h = qp->head();
  h->sq_doorbell.v.store(0, std::memory_order_seq_cst);
  const uint32_t prod = h->sq_prod.v.load(std::memory_order_seq_cst);
  const uint32_t n = prod - qp->sq_cons;
  if (n == 0) return;
  if (n > qp->sq_depth || prod - qp->sq_retired > qp->sq_depth) {
    part->bad_entries++;
    FailQp(part, qp);
    qp->sq_cons = prod;  // nothing of it is taken
    return;
  }
  PdObj* pd = part->pds.Get(qp->pd);
  const transport::TimeNs now = shard_->Now();
  for (; qp->sq_cons != prod; qp->sq_cons++) {
    const uint32_t pos = qp->sq_cons;
    const uint32_t slot = pos & (qp->sq_depth - 1);
    // Each field read once: the application may rewrite the entry meanwhile.
    const ipc::SqEntry& src = qp->sq()[slot];
    struct {
      uint64_t wr_id;
      uint32_t opcode, send_flags, imm_data, num_sge, rkey, inline_len;
      uint64_t remote_addr, compare_add, swap;
    } e = {src.wr_id, src.opcode,     src.send_flags,  src.imm_data,    src.num_sge,
           src.rkey,  src.inline_len, src.remote_addr, src.compare_add, src.swap};
    transport::SendWr wr;
    wr.wr_id = pos;
    bool ok = OpcodeOf(e.opcode, &wr.opcode) && !qp->error && qp->connected;
    wr.flags = 0;
    if ((e.send_flags & IBV_SEND_SIGNALED) != 0 || qp->sq_sig_all) {
      wr.flags |= transport::send_flags::kSignaled;
    }
    if ((e.send_flags & IBV_SEND_FENCE) != 0) wr.flags |= transport::send_flags::kFence;
    if ((e.send_flags & IBV_SEND_SOLICITED) != 0) wr.flags |= transport::send_flags::kSolicited;
    if ((e.send_flags & IBV_SEND_INLINE) != 0) {
      ok = ok && e.inline_len <= qp->max_inline && pd != nullptr;
      if (ok && e.inline_len != 0) {
        // Read in place from the send ring: the slot is not reused before the WR retires.
        const uint64_t va =
            kInlineVaBase +
            (uint64_t{HandleSlots<QpObj>::SlotOf(qp->handle)} << kInlineWindowShift) +
            ipc::kSqOffset + uint64_t{slot} * sizeof(ipc::SqEntry) +
            offsetof(ipc::SqEntry, inline_data);
        wr.sg.push_back({va, e.inline_len, pd->inline_lkey});
      }
    } else {
      ok = ok && e.num_sge <= qp->max_send_sge;
      for (uint32_t i = 0; ok && i < e.num_sge; i++) {
        const ipc::Sge g = qp->sq()[slot].sge[i];
        wr.sg.push_back({g.addr, g.length, g.lkey});
      }
    }
    wr.imm = e.imm_data;
    wr.remote_addr = e.remote_addr;
    wr.rkey = e.rkey;
    wr.compare_add = e.compare_add;
    wr.swap = e.swap;
    qp->sq_wr_id[slot] = e.wr_id;
    absl::Status st =
        ok ? engine().PostSend(now, qp->qpn, wr) : absl::InvalidArgumentError("bad send entry");
    if (st.code() == absl::StatusCode::kResourceExhausted) {
      MarkStalled(qp,
                  &part->stalled_qps);  // the engine's queue is full: the rest waits in the ring
      return;
    }
    part->wrs_posted++;
    if (!st.ok()) {
      // What the shim checks before posting: only a broken or hostile
      // application gets here. The entry completes with an error and the QP
      // enters the error state, as a NIC does with a malformed WQE.
      if (!qp->error) part->bad_entries++;
      if (CqObj* cq = part->cqs.Get(qp->send_cq); cq != nullptr) {
        ipc::CqEntry ce;
        ce.wr_id = e.wr_id;
        ce.status = qp->error ? IBV_WC_WR_FLUSH_ERR : IBV_WC_LOC_QP_OP_ERR;
        ce.qp_num = qp->qpn;
        PublishCompletions(part, cq, WriteCompletion(cq, ce) ? 1 : 0);
      }
      FailQp(part, qp);
      qp->sq_retired = pos + 1;
      h->sq_retired.v.store(qp->sq_retired, std::memory_order_release);
    }
  }
}

void ShardService::DrainRq(AppPart* part, QpObj* qp) {
  ipc::QpSegment* h = qp->head();
  h->rq_doorbell.v.store(0, std::memory_order_seq_cst);
  const uint32_t prod = h->rq_prod.v.load(std::memory_order_seq_cst);
  const uint32_t n = prod - qp->rq_cons;
  if (n == 0) return;
  if (n > qp->rq_depth || prod - qp->rq_retired > qp->rq_depth) {
    part->bad_entries++;
    FailQp(part, qp);
    qp->rq_cons = prod;
    return;
  }
  for (; qp->rq_cons != prod; qp->rq_cons++) {
    const uint32_t pos = qp->rq_cons;
    const uint32_t slot = pos & (qp->rq_depth - 1);
    const ipc::RqEntry* e = &qp->rq()[slot];
    const uint64_t wr_id = e->wr_id;
    const uint32_t num_sge = e->num_sge;
    transport::RecvWr wr;
    wr.wr_id = pos;
    bool ok = num_sge <= qp->max_recv_sge;
    for (uint32_t i = 0; ok && i < num_sge; i++) {
      const ipc::Sge g = e->sge[i];
      wr.sg.push_back({g.addr, g.length, g.lkey});
    }
    qp->rq_wr_id[slot] = wr_id;
    absl::Status st =
        ok ? engine().PostRecv(qp->qpn, wr) : absl::InvalidArgumentError("bad receive entry");
    if (st.code() == absl::StatusCode::kResourceExhausted) {
      MarkStalled(qp, &part->stalled_qps);
      return;
    }
    part->recvs_posted++;
    if (!st.ok()) {
      part->bad_entries++;
      FailQp(part, qp);
    }
  }
}

bool ShardService::WriteCompletion(CqObj* cq, const ipc::CqEntry& e) {
  // The application's consumer index is untrusted: a value ahead of what was
  // written (or too far behind) leaves no room, so nothing is overwritten.
  const uint32_t cons = cq->lane(index_)->cons.v.load(std::memory_order_acquire);
  if (cq->prod - cons >= cq->depth) return false;
  cq->ring(index_)[cq->prod & (cq->depth - 1)] = e;
  cq->prod++;
  return true;
}

void ShardService::PublishCompletions(AppPart* part, CqObj* cq, uint32_t written) {
  if (written == 0) return;
  part->completions += written;
  ipc::CqSegment* h = cq->head();
  // seq_cst, as ibv_req_notify_cq's store of arm: see lib/verbs/cq.cc. The
  // exchange lets one shard signal each arming.
  cq->lane(index_)->prod.v.store(cq->prod, std::memory_order_seq_cst);
  if (h->arm.v.load(std::memory_order_seq_cst) != 0 && h->arm.v.exchange(0) != 0) {
    h->events.v.fetch_add(1, std::memory_order_release);
    if (cq->channel_efd >= 0) Signal(cq->channel_efd);
  }
  // A thread of the application sleeps in a CQ poll: wake it (lib/verbs/cq.cc).
  std::atomic<uint32_t>& waiting = part->app->head()->poll_wait.v;
  if (waiting.load(std::memory_order_seq_cst) != 0 && waiting.exchange(0) != 0) {
    part->poll_wakes++;
    ipc::FutexWakeAll(&waiting);
  }
}

uint32_t ShardService::MoveCompletions(AppPart* part, CqObj* cq) {
  const uint32_t cons = cq->lane(index_)->cons.v.load(std::memory_order_acquire);
  const uint32_t used = cq->prod - cons;
  uint32_t room = used <= cq->depth ? cq->depth - used : 0;
  std::array<Completion, 32> c;
  uint32_t written = 0;
  while (room != 0) {
    const size_t n = engine().PollCq(cq->engine_cq, {c.data(), std::min<size_t>(room, c.size())});
    if (n == 0) break;
    for (size_t i = 0; i < n; i++) {
      const Completion& x = c[i];
      ipc::CqEntry e;
      e.status = IbvStatus(x.status);
      e.opcode = IbvOpcode(x.opcode);
      e.byte_len = x.byte_len;
      e.qp_num = x.qp_num;
      if (x.has_imm) {
        e.imm_data = x.imm;
        e.wc_flags = IBV_WC_WITH_IMM;
      }
      e.wr_id = x.wr_id;
      auto it = qp_owner_.find(x.qp_num);
      QpObj* qp = it != qp_owner_.end() ? it->second.part->qps.Get(it->second.handle) : nullptr;
      if (qp != nullptr) {
        const uint32_t pos = static_cast<uint32_t>(x.wr_id);
        if (IsReceive(x.opcode)) {
          if (qp->srq == 0) {  // an SRQ receive's wr_id is the application's own
            e.wr_id = qp->rq_wr_id[pos & (qp->rq_depth - 1)];
            qp->rq_retired = pos + 1;
            qp->head()->rq_retired.v.store(qp->rq_retired, std::memory_order_release);
          }
        } else {
          e.wr_id = qp->sq_wr_id[pos & (qp->sq_depth - 1)];
          qp->sq_retired = pos + 1;
          qp->head()->sq_retired.v.store(qp->sq_retired, std::memory_order_release);
        }
        if (x.status != WcStatus::kSuccess &&
            engine().GetQpState(qp->qpn) == transport::QpState::kError) {
          qp->error = true;
          qp->head()->status.v.store(static_cast<uint32_t>(ipc::QpStatus::kError),
                                     std::memory_order_release);
        }
      }
      WriteCompletion(cq, e);  // room was counted: it fits
      written++;
    }
    room -= static_cast<uint32_t>(n);
  }
  if (room == 0 && !cq->backlog && engine().CqPending(cq->engine_cq) != 0) {
    // The ring is full; what the engine still holds moves when there is room.
    cq->backlog = true;
    cq_backlog_.push_back({part, cq->handle});
  }
  PublishCompletions(part, cq, written);
  return written;
}

void ShardService::DeliverAsync(AppPart* part, uint32_t type, uint32_t handle) {
  ipc::AppLane* s = part->lane();
  const uint32_t cons = s->async_cons.v.load(std::memory_order_acquire);
  if (part->async_prod - cons >= ipc::kAsyncSlots) return;  // the application is not reading them
  s->async[part->async_prod & (ipc::kAsyncSlots - 1)] = ipc::AsyncEntry{type, handle};
  part->async_prod++;
  s->async_prod.v.store(part->async_prod, std::memory_order_release);
  Signal(part->app->async_efd);
}

void ShardService::PollEngineEvents() {
  std::array<transport::AsyncEvent, 16> ev;
  for (;;) {
    const size_t n = engine().PollAsyncEvents(ev);
    for (size_t i = 0; i < n; i++) {
      if (ev[i].type == transport::AsyncEvent::Type::kSrqLimit) {
        auto it = srq_owner_.find(ev[i].id);
        if (it != srq_owner_.end()) {
          DeliverAsync(it->second.part, IBV_EVENT_SRQ_LIMIT_REACHED, it->second.handle);
        }
      } else if (ev[i].type == transport::AsyncEvent::Type::kCqError) {
        auto it = cq_owner_.find(ev[i].id);
        if (it == cq_owner_.end()) continue;
        if (CqObj* cq = it->second.part->cqs.Get(it->second.handle)) {
          cq->overflowed = true;
          cq->head()->overflow.v.store(1, std::memory_order_release);
        }
        DeliverAsync(it->second.part, IBV_EVENT_CQ_ERR, it->second.handle);
      } else {
        auto it = qp_owner_.find(ev[i].id);
        if (it == qp_owner_.end()) continue;
        if (QpObj* qp = it->second.part->qps.Get(it->second.handle)) {
          qp->error = true;
          qp->head()->status.v.store(static_cast<uint32_t>(ipc::QpStatus::kError),
                                     std::memory_order_release);
        }
        DeliverAsync(it->second.part, IBV_EVENT_QP_FATAL, it->second.handle);
      }
    }
    if (n < ev.size()) break;
  }
}

}  // namespace metaroce::daemon
