/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Completion channels and completion queues: the CQ ring (consumer side),
// arming, completion events, and the extended (ibv_cq_ex) polling API.

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "mr_ipc_futex.h"
#include "verbs_private.h"

namespace metaroce::verbs {
namespace {

// Empty polls between two checks of the daemon (a syscall).
constexpr uint32_t kDeadCheckEvery = 1024;

// Entries ready in lane @p l of @p cq (cq->mu held); -1 when the lane is corrupt.
int64_t Ready(const Cq* cq, const CqLaneView& l) {
  const uint32_t prod = l.idx->prod.v.load(std::memory_order_acquire);
  const uint32_t n = prod - l.cons;
  if (n > cq->depth) return -1;
  return n;
}

// The next lane from cq->next_lane on with entries ready, taking its turn
// (cq->mu held); nullptr with *ready 0 when every lane is empty, -1 when one
// is corrupt.
CqLaneView* ReadyLane(Cq* cq, int64_t* ready) {
  for (uint32_t i = 0; i < cq->lanes; i++) {
    const uint32_t at =
        cq->next_lane + i < cq->lanes ? cq->next_lane + i : cq->next_lane + i - cq->lanes;
    CqLaneView& l = cq->lane[at];
    *ready = Ready(cq, l);
    if (*ready == 0) continue;
    cq->next_lane = at + 1 < cq->lanes ? at + 1 : 0;
    return *ready < 0 ? nullptr : &l;
  }
  *ready = 0;
  return nullptr;
}

// Gives back @p l's entries up to its cons.
void Consumed(CqLaneView* l) { l->idx->cons.v.store(l->cons, std::memory_order_release); }

// ---- Polls that sleep ($METAROCE_POLL_SPIN_US; doc/verbs.md, "Polls that sleep") ----
//
// Where the daemon shares the cores with the applications, a program that
// spins on an empty CQ (perftest's ib_write_bw client) takes the CPU the
// daemon needs to produce the completion it waits for. With
// METAROCE_POLL_SPIN_US set, a thread whose CQ polls found nothing for that
// long sleeps in the next one until the daemon publishes a completion of
// this application, on any CQ (AppSegment::poll_wait), or kPollSleepMaxNs
// pass; then the poll returns what it finds, maybe nothing, as a poll does.
// The streak is the thread's, over all its CQs, so that a program that polls
// several CQs in turn sleeps only when all are empty. Off by default: verbs
// programs expect polls that return at once, and the wake costs latency.

// Largest METAROCE_POLL_SPIN_US.
constexpr uint64_t kPollSpinMaxUs = 60'000'000;
// Longest sleep in one poll: the wake may never come (a completion of a CQ
// another thread drains); the program polls again after it.
constexpr uint64_t kPollSleepMaxNs = 200'000;
// Empty polls between two reads of the clock.
constexpr uint32_t kPollClockEvery = 16;

struct PollStreak {
  uint64_t since_ns = 0;  ///< the first empty poll's clock reading (0: none yet)
  uint32_t polls = 0;     ///< empty polls in a row
};
thread_local PollStreak t_streak;

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

void PollFound() { t_streak = PollStreak{}; }

// An empty poll of @p cq (cq->mu held): counts it, and once the streak is
// long enough, sleeps until a completion or kPollSleepMaxNs.
void PollFoundNothing(Cq* cq) {
  const Context* c = cq->ctx;
  if (c->poll_spin_ns == kNoPollSleep || ++t_streak.polls % kPollClockEvery != 0) return;
  const uint64_t now = MonotonicNs();
  if (t_streak.since_ns == 0) t_streak.since_ns = now;
  if (now - t_streak.since_ns < c->poll_spin_ns) return;
  std::atomic<uint32_t>& word = c->app->poll_wait.v;
  word.store(1, std::memory_order_seq_cst);  // then look a last time: see mr_ipc_ring.h
  int64_t ready = 0;
  if (ReadyLane(cq, &ready) != nullptr || ready != 0) return;
  if (c->app->daemon_gone.v.load(std::memory_order_relaxed) != 0) return;
  ipc::FutexWait(&word, 1, kPollSleepMaxNs);
}

// Called with nothing to return: -1 once the daemon is gone (or the ring is
// unusable), else 0 (after a sleep until a completion, maybe: above).
int EmptyResult(Cq* cq) {
  if (cq->ctx->gone.load(std::memory_order_relaxed)) return -1;
  if (cq->seg->overflow.v.load(std::memory_order_relaxed) != 0) return -1;
  if (++cq->empty_polls % kDeadCheckEvery == 0 && CheckDaemon(cq->ctx)) return -1;
  PollFoundNothing(cq);
  return 0;
}

void ToWc(const ipc::CqEntry& e, ibv_wc* wc) {
  wc->wr_id = e.wr_id;
  wc->status = static_cast<ibv_wc_status>(e.status);
  wc->opcode = static_cast<ibv_wc_opcode>(e.opcode);
  wc->vendor_err = 0;
  wc->byte_len = e.byte_len;
  wc->imm_data = e.imm_data;
  wc->qp_num = e.qp_num;
  wc->src_qp = e.src_qp;
  wc->wc_flags = e.wc_flags;
  wc->pkey_index = 0;
  wc->slid = 0;
  wc->sl = 0;
  wc->dlid_path_bits = 0;
}

// ---- extended CQ (ibv_cq_ex) ----

Cq* ExCq(ibv_cq_ex* cq) { return reinterpret_cast<Cq*>(cq); }

void SetCurrent(Cq* cq, CqLaneView* l) {
  cq->cur_lane = l;
  cq->cur = &l->entries[l->cons & (cq->depth - 1)];
  cq->cqx.wr_id = cq->cur->wr_id;
  cq->cqx.status = static_cast<ibv_wc_status>(cq->cur->status);
}

// Makes the next ready entry current: 0, ENOENT (none) or EIO.
int TakeCurrent(Cq* cq) {
  int64_t n = 0;
  CqLaneView* l = ReadyLane(cq, &n);
  if (l == nullptr) {
    cq->cur = nullptr;
    return n < 0 ? EIO : ENOENT;
  }
  SetCurrent(cq, l);
  return 0;
}

// The current entry is consumed.
void Advance(Cq* cq) {
  cq->cur_lane->cons++;
  Consumed(cq->cur_lane);
  cq->cur = nullptr;
}

int StartPoll(ibv_cq_ex* cqx, ibv_poll_cq_attr* attr) {
  Cq* cq = ExCq(cqx);
  if (attr != nullptr && attr->comp_mask != 0) return EINVAL;
  cq->mu.lock();
  int err = TakeCurrent(cq);
  if (err == ENOENT && EmptyResult(cq) != 0) err = EIO;
  if (err != 0) {
    cq->mu.unlock();
    return err;
  }
  cq->empty_polls = 0;
  PollFound();
  return 0;
}

int NextPoll(ibv_cq_ex* cqx) {
  Cq* cq = ExCq(cqx);
  Advance(cq);
  return TakeCurrent(cq);
}

void EndPoll(ibv_cq_ex* cqx) {
  Cq* cq = ExCq(cqx);
  if (cq->cur != nullptr) Advance(cq);
  cq->mu.unlock();
}

ibv_wc_opcode ReadOpcode(ibv_cq_ex* cq) {
  return static_cast<ibv_wc_opcode>(ExCq(cq)->cur->opcode);
}
uint32_t ReadVendorErr(ibv_cq_ex*) { return 0; }
uint32_t ReadByteLen(ibv_cq_ex* cq) { return ExCq(cq)->cur->byte_len; }
__be32 ReadImmData(ibv_cq_ex* cq) { return ExCq(cq)->cur->imm_data; }
uint32_t ReadQpNum(ibv_cq_ex* cq) { return ExCq(cq)->cur->qp_num; }
uint32_t ReadSrcQp(ibv_cq_ex* cq) { return ExCq(cq)->cur->src_qp; }
unsigned int ReadWcFlags(ibv_cq_ex* cq) { return ExCq(cq)->cur->wc_flags; }
uint32_t ReadSlid(ibv_cq_ex*) { return 0; }
uint8_t ReadSl(ibv_cq_ex*) { return 0; }
uint8_t ReadDlidPathBits(ibv_cq_ex*) { return 0; }

Cq* NewCq(ibv_context* context, uint32_t cqe, void* cq_context, ibv_comp_channel* channel,
          int comp_vector) {
  Context* c = ToCtx(context);
  const uint32_t max_cqe = std::min(c->hello.max_cqe, ipc::kMaxRingDepth);
  if (cqe < 1 || cqe > max_cqe) {
    Debug("create_cq: cqe %u outside 1..%u", cqe, max_cqe);
    errno = EINVAL;
    return nullptr;
  }
  if (comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
    Debug("create_cq: comp_vector %d (the device has %d)", comp_vector, context->num_comp_vectors);
    errno = EINVAL;
    return nullptr;
  }
  Channel* ch = channel != nullptr ? reinterpret_cast<Channel*>(channel) : nullptr;
  if (ch != nullptr && ch->ctx != c) {
    errno = EINVAL;
    return nullptr;
  }
  ipc::CreateCqReq req;
  req.depth = cqe;
  req.channel = ch != nullptr ? ch->handle : 0;
  ipc::CreateCqRep rep;
  int fd = -1;
  int err =
      Request(c, ipc::Op::kCreateCq, &req, sizeof(req), &rep, sizeof(rep), nullptr, 0, &fd, 1);
  if (err != 0) {
    errno = err;
    return nullptr;
  }
  const bool sane = rep.depth >= cqe && rep.depth <= ipc::kMaxRingDepth &&
                    (rep.depth & (rep.depth - 1)) == 0 &&
                    rep.segment_bytes == ipc::CqSegmentBytes(rep.depth, c->lanes);
  void* seg = sane ? MapSegment(fd, rep.segment_bytes) : nullptr;
  if (!sane) close(fd);
  if (seg == nullptr) {
    RequestHandle(c, ipc::Op::kDestroyCq, rep.handle);
    errno = EPROTO;
    return nullptr;
  }
  auto* cq = new Cq();
  cq->ctx = c;
  cq->handle = rep.handle;
  cq->depth = rep.depth;
  cq->seg = static_cast<ipc::CqSegment*>(seg);
  cq->seg_bytes = rep.segment_bytes;
  cq->lanes = c->lanes;
  for (uint32_t l = 0; l < c->lanes; l++) {
    CqLaneView& v = cq->lane[l];
    v.idx = ipc::LaneOf(cq->seg, l);
    v.entries = reinterpret_cast<ipc::CqEntry*>(static_cast<char*>(seg) +
                                                ipc::CqEntriesOffset(rep.depth, c->lanes, l));
    v.cons = v.idx->cons.v.load(std::memory_order_relaxed);
  }
  cq->events_seen = cq->seg->events.v.load(std::memory_order_relaxed);
  cq->channel = ch;
  ibv_cq_ex& x = cq->cqx;
  x.context = context;
  x.channel = channel;
  x.cq_context = cq_context;
  x.handle = rep.handle;
  x.cqe = static_cast<int>(rep.depth);
  pthread_mutex_init(&x.mutex, nullptr);
  pthread_cond_init(&x.cond, nullptr);
  if (ch != nullptr) {
    std::lock_guard<std::mutex> lock(ch->mu);
    ch->cqs.push_back(cq);
    ch->ch.refcnt++;
  }
  std::lock_guard<std::mutex> lock(c->obj_mu);
  c->cqs[cq->handle] = cq;
  return cq;
}

}  // namespace

int PollCq(ibv_cq* ibcq, int n, ibv_wc* wc) {
  Cq* cq = ToCq(ibcq);
  std::lock_guard<std::mutex> lock(cq->mu);
  int got = 0;
  while (got < n) {
    int64_t ready = 0;
    CqLaneView* l = ReadyLane(cq, &ready);
    if (ready < 0) return -1;
    if (l == nullptr) break;
    const int k = static_cast<int>(std::min<int64_t>(ready, n - got));
    for (int i = 0; i < k; i++) ToWc(l->entries[(l->cons + i) & (cq->depth - 1)], &wc[got + i]);
    l->cons += k;
    Consumed(l);
    got += k;
  }
  if (got == 0) return n <= 0 ? 0 : EmptyResult(cq);
  cq->empty_polls = 0;
  PollFound();
  return got;
}

uint64_t PollSpinNs() {
  const char* v = getenv("METAROCE_POLL_SPIN_US");
  if (v == nullptr || *v == '\0' || strcmp(v, "off") == 0) return kNoPollSleep;
  char* end = nullptr;
  errno = 0;
  const unsigned long long us = strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || *v < '0' || *v > '9' || us > kPollSpinMaxUs) {
    static std::once_flag once;
    std::call_once(once, [v] {
      fprintf(stderr,
              "metaroce: METAROCE_POLL_SPIN_US=%s: want \"off\" or microseconds 0..%llu; "
              "CQ polls spin\n",
              v, static_cast<unsigned long long>(kPollSpinMaxUs));
    });
    return kNoPollSleep;
  }
  return us * 1'000;
}

int ReqNotifyCq(ibv_cq* ibcq, int solicited_only) {
  Cq* cq = ToCq(ibcq);
  if (cq->ctx->gone.load(std::memory_order_relaxed)) return EIO;
  // seq_cst: the daemon publishes a completion, then reads this flag; we set
  // it, then read its producer index. Either it sees the flag or the program's
  // next poll sees the completion (a store-load pair needs a full fence).
  cq->seg->arm.v.store(solicited_only != 0 ? 2 : 1, std::memory_order_seq_cst);
  return 0;
}

ibv_cq_ex* CreateCqEx(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  constexpr uint64_t kSupported = IBV_WC_STANDARD_FLAGS;
  if ((attr->wc_flags & ~kSupported) != 0) {
    MR_UNSUPPORTED("ibv_create_cq_ex",
                   "only the standard wc_flags: no completion timestamps, cvlan, flow tag, tm");
    return nullptr;
  }
  if ((attr->comp_mask & ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS)) != 0 ||
      ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) != 0 &&
       (attr->flags & ~static_cast<uint32_t>(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) != 0)) {
    MR_UNSUPPORTED("ibv_create_cq_ex", "parent domains and CQ flags other than SINGLE_THREADED");
    return nullptr;
  }
  Cq* cq = NewCq(context, attr->cqe, attr->cq_context, attr->channel,
                 static_cast<int>(attr->comp_vector));
  if (cq == nullptr) return nullptr;
  cq->wc_flags = attr->wc_flags;
  ibv_cq_ex& x = cq->cqx;
  x.start_poll = StartPoll;
  x.next_poll = NextPoll;
  x.end_poll = EndPoll;
  x.read_opcode = ReadOpcode;
  x.read_vendor_err = ReadVendorErr;
  x.read_byte_len = ReadByteLen;
  x.read_imm_data = ReadImmData;
  x.read_qp_num = ReadQpNum;
  x.read_src_qp = ReadSrcQp;
  x.read_wc_flags = ReadWcFlags;
  x.read_slid = ReadSlid;
  x.read_sl = ReadSl;
  x.read_dlid_path_bits = ReadDlidPathBits;
  return &cq->cqx;
}

}  // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  Context* c = ToCtx(context);
  const int efd = eventfd(0, EFD_CLOEXEC);
  if (efd < 0) return nullptr;
  ipc::HandleMsg rep;
  const int err = Request(c, ipc::Op::kCreateCompChannel, nullptr, 0, &rep, sizeof(rep), &efd, 1);
  if (err != 0) {
    close(efd);
    errno = err;
    return nullptr;
  }
  auto* ch = new Channel();
  ch->ch.context = context;
  ch->ch.fd = efd;
  ch->ch.refcnt = 0;
  ch->ctx = c;
  ch->handle = rep.handle;
  return &ch->ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  auto* ch = reinterpret_cast<Channel*>(channel);
  {
    std::lock_guard<std::mutex> lock(ch->mu);
    if (ch->ch.refcnt != 0) return EBUSY;
  }
  const int err = RequestHandle(ch->ctx, ipc::Op::kDestroyCompChannel, ch->handle);
  if (err != 0 && err != EIO) return err;
  close(ch->ch.fd);
  delete ch;
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  if (cqe < 1) {
    errno = EINVAL;
    return nullptr;
  }
  Cq* cq = NewCq(context, static_cast<uint32_t>(cqe), cq_context, channel, comp_vector);
  return cq != nullptr ? reinterpret_cast<ibv_cq*>(&cq->cqx) : nullptr;
}

int ibv_destroy_cq(ibv_cq* ibcq) {
  Cq* cq = ToCq(ibcq);
  Context* c = cq->ctx;
  const int err = RequestHandle(c, ipc::Op::kDestroyCq, cq->handle);
  if (err != 0 && err != EIO) return err;  // EBUSY: a QP still uses it
  {
    std::lock_guard<std::mutex> lock(c->obj_mu);
    c->cqs.erase(cq->handle);
  }
  if (cq->channel != nullptr) {
    std::lock_guard<std::mutex> lock(cq->channel->mu);
    auto& v = cq->channel->cqs;
    v.erase(std::remove(v.begin(), v.end(), cq), v.end());
    cq->channel->ch.refcnt--;
  }
  munmap(cq->seg, cq->seg_bytes);
  pthread_cond_destroy(&cq->cqx.cond);
  pthread_mutex_destroy(&cq->cqx.mutex);
  delete cq;
  return 0;
}

int ibv_resize_cq(ibv_cq*, int) {
  MR_UNSUPPORTED("ibv_resize_cq", "create the CQ with the depth needed");
  return EOPNOTSUPP;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq_out, void** cq_context) {
  auto* ch = reinterpret_cast<Channel*>(channel);
  Context* c = ch->ctx;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(ch->mu);
      for (Cq* cq : ch->cqs) {
        const uint32_t ev = cq->seg->events.v.load(std::memory_order_acquire);
        if (ev != cq->events_seen) {
          cq->events_seen++;
          *cq_out = reinterpret_cast<ibv_cq*>(&cq->cqx);
          *cq_context = cq->cqx.cq_context;
          return 0;
        }
      }
    }
    if (CheckDaemon(c)) {
      errno = EIO;
      return -1;
    }
    uint64_t v;
    const int fl = fcntl(ch->ch.fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK) != 0) {
      if (read(ch->ch.fd, &v, sizeof(v)) == sizeof(v)) continue;
      // Nothing was signalled: one last look (an event may have raced the read).
      std::lock_guard<std::mutex> lock(ch->mu);
      for (Cq* cq : ch->cqs) {
        if (cq->seg->events.v.load(std::memory_order_acquire) != cq->events_seen) {
          cq->events_seen++;
          *cq_out = reinterpret_cast<ibv_cq*>(&cq->cqx);
          *cq_context = cq->cqx.cq_context;
          return 0;
        }
      }
      errno = EAGAIN;
      return -1;
    }
    pollfd p[2] = {{ch->ch.fd, POLLIN, 0}, {c->sock, POLLIN, 0}};
    const int r = poll(p, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && CheckDaemon(c)) {
      errno = EIO;
      return -1;
    }
    if ((p[0].revents & POLLIN) != 0 && read(ch->ch.fd, &v, sizeof(v)) < 0 && errno != EAGAIN) {
      return -1;
    }
    if (p[1].revents != 0 && (p[0].revents & POLLIN) == 0) {
      // The socket is readable but the daemon lives: a stray datagram a
      // control request will consume; do not spin on it.
      poll(p, 1, 1);
    }
  }
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}
