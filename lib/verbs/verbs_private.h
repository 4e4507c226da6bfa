/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The verbs shim's objects (doc/verbs.md). Each verbs object the application
 * holds is embedded in a shim object, as rdma-core providers do: the
 * application gets a pointer to the embedded ibv_* struct, which is always the
 * shim object's first member, so the shim gets back to its object with a cast
 * (ToCtx(), ToCq(), ToQp(), ToSrq()...).
 *
 * Locking: one mutex per context serialises control requests on the daemon
 * socket (Request()); the data path takes per-QP (send and receive apart),
 * per-SRQ and per-CQ locks only, and never makes a system call.
 */

#ifndef METAROCE_VERBS_PRIVATE_H
#define METAROCE_VERBS_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

// Everything verbs.h declares is part of the exported ABI: default visibility
// for those declarations, the version script decides what is exported.
#pragma GCC visibility push(default)
#include <infiniband/verbs.h>
#pragma GCC visibility pop

#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#include "mr_ipc.h"
#include "mr_ipc_ring.h"

/** Definition of an exported function that verbs.h does not declare. */
#define MR_EXPORT extern "C" __attribute__((visibility("default")))

namespace metaroce::verbs {

/**
 * Prints "metaroce: FN is not supported (WHY)" once per call site and sets
 * errno to EOPNOTSUPP.
 */
#define MR_UNSUPPORTED(fn, why)                                                     \
  do {                                                                              \
    static std::atomic<bool> mr_logged_{false};                                     \
    if (!mr_logged_.exchange(true)) ::metaroce::verbs::LogUnsupported((fn), (why)); \
    errno = EOPNOTSUPP;                                                             \
  } while (0)

void LogUnsupported(const char* fn, const char* why);
/** True when METAROCE_DEBUG is set: the shim explains every EINVAL it returns. */
bool DebugEnabled();
/** One line to stderr ("metaroce: ...") when DebugEnabled(). */
void Debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

struct Context;
struct Cq;
struct Qp;
struct Srq;

/** The device's max_qp_wr (also max_srq_wr): the daemon's limit within the rings'. */
inline uint32_t MaxWr(const ipc::HelloRep& h) { return std::min(h.max_qp_wr, ipc::kMaxRingDepth); }
/** The device's max_sge (also max_srq_sge). */
inline uint32_t MaxSge(const ipc::HelloRep& h) { return std::min(h.max_sge, ipc::kMaxSge); }

/** The one device, process-wide, refreshed by every ibv_get_device_list. */
struct Device {
  ibv_device dev;  ///< what the application holds
  ipc::HelloRep hello;
};

struct Pd {
  ibv_pd pd;
  Context* ctx;
};

struct Mr {
  ibv_mr mr;
  uint32_t memory;  ///< ipc::MrMemory the daemon uses
};

struct Ah {
  ibv_ah ah;
  ibv_ah_attr attr;
};

struct Channel {
  ibv_comp_channel ch;
  Context* ctx;
  uint32_t handle;
  std::mutex mu;         ///< cqs and every attached CQ's events_seen
  std::vector<Cq*> cqs;  ///< CQs attached to this channel
};

/** One lane of a CQ: the completions one shard of the daemon writes. */
struct CqLaneView {
  ipc::CqLane* idx;
  ipc::CqEntry* entries;
  uint32_t cons;  ///< our copy of idx->cons
};

struct Cq {
  ibv_cq_ex cqx;  ///< starts like struct ibv_cq: the application's ibv_cq* points here
  Context* ctx;
  uint32_t handle;
  uint32_t depth;
  ipc::CqSegment* seg;
  size_t seg_bytes;
  uint32_t lanes;
  CqLaneView lane[ipc::kMaxLanes];
  uint32_t next_lane;  ///< where the next poll starts looking (the lanes take turns)
  Channel* channel;
  uint64_t wc_flags;  ///< extended CQ: IBV_WC_EX_WITH_* asked for
  std::mutex mu;      ///< the consumer side of the rings
  uint32_t empty_polls;
  uint32_t events_seen;     ///< completion events returned by ibv_get_cq_event (channel->mu)
  const ipc::CqEntry* cur;  ///< extended polling: the entry start/next_poll made current
  CqLaneView* cur_lane;     ///< ... and its lane
};

struct Qp {
  ibv_qp_ex qpx;  ///< qpx.qp_base is the application's ibv_qp; its srq: receives go there
  Context* ctx;
  uint32_t handle;
  ipc::QpSegment* seg;
  size_t seg_bytes;
  ipc::SqEntry* sq;
  ipc::RqEntry* rq;
  uint32_t sq_depth;
  uint32_t rq_depth;
  ibv_qp_cap cap;  ///< as granted (clamped to the ring constants; no receives on an SRQ)
  /** Where its doorbells go: the daemon shard that holds it; ipc::kNoLane until RTR. */
  std::atomic<uint32_t> lane{ipc::kNoLane};
  int sq_sig_all;
  Cq* send_cq;
  Cq* recv_cq;
  uint64_t send_ops_flags;  ///< IBV_QP_EX_WITH_*, 0: created without the extended API
  std::atomic<int> state{IBV_QPS_RESET};

  std::mutex ctl_mu;                     ///< modify/query of this QP
  ibv_qp_attr attr{};                    ///< every attribute the application set
  bool connected = false;                ///< kConnectQp was sent
  std::atomic<bool> ever_posted{false};  ///< a work request reached a ring

  std::mutex sq_mu;        ///< send ring producer (post_send, and wr_start..wr_complete)
  uint32_t sq_posted = 0;  ///< our copy of seg->sq_prod
  std::mutex rq_mu;
  uint32_t rq_posted = 0;

  // ibv_wr_* session (under sq_mu, held from wr_start to wr_complete/wr_abort).
  uint32_t wr_staged = 0;  ///< entries written past sq_posted, not yet published
  int wr_err = 0;          ///< first error of the session
};

struct Srq {
  ibv_srq srq;  ///< what the application holds
  Context* ctx;
  uint32_t handle;
  ipc::SrqSegment* seg;
  size_t seg_bytes;
  ipc::RqEntry* entries;
  uint32_t depth;
  uint32_t max_wr;  ///< as granted
  uint32_t max_sge;
  std::atomic<uint32_t> lane{ipc::kNoLane};  ///< where its doorbells go
  std::mutex mu;                             ///< the producer side of the ring
  uint32_t posted = 0;                       ///< our copy of seg->prod
};

struct Context {
  verbs_context vctx;  ///< the application gets &vctx.context
  Device* dev;
  int sock = -1;
  ipc::HelloRep hello{};
  ipc::AppSegment* app = nullptr;
  uint32_t lanes = 0;         ///< of every segment (hello.lanes)
  bool own_async_fd = false;  ///< the daemon sent no eventfd: ours, only we signal it
  /**
   * How long a thread's CQ polls find nothing before it sleeps in the next
   * one until a completion (cq.cc, "Polls that sleep"); kNoPollSleep: never.
   */
  uint64_t poll_spin_ns = 0;
  /** Per lane: wakes the lane's shard while it sleeps (-1: never asleep). */
  int kick_fd[ipc::kMaxLanes];

  std::mutex ctl_mu;  ///< one control request at a time on the socket
  uint32_t seq = 0;

  std::mutex db_mu;  ///< the doorbell rings' producer
  uint32_t db_prod[ipc::kMaxLanes] = {};

  ipc::AppLane* lane(uint32_t l) const { return ipc::LaneOf(app, l); }

  std::mutex obj_mu;  ///< handle -> object, for async events
  std::unordered_map<uint32_t, Qp*> qps;
  std::unordered_map<uint32_t, Cq*> cqs;
  std::unordered_map<uint32_t, Srq*> srqs;

  std::atomic<bool> gone{false};  ///< the daemon died or shut down
  std::mutex async_mu;
  bool fatal_delivered = false;
};

/** Context::poll_spin_ns: polls spin, they never sleep. */
inline constexpr uint64_t kNoPollSleep = ~uint64_t{0};

/** container_of(c, struct verbs_context, context); vctx is Context's first member. */
inline Context* ToCtx(ibv_context* c) {
  return reinterpret_cast<Context*>(reinterpret_cast<char*>(c) - offsetof(verbs_context, context));
}
inline ibv_context* AppCtx(Context* c) { return &c->vctx.context; }

// ---- daemon_link.cc ----
/** The socket path: $METAROCE_SOCKET, else ipc::kDefaultSocketPath. */
const char* SocketPath();
/**
 * Connects to the daemon and says Hello. On success *sock is the session's
 * socket and fds[0..*nfds) the reply's descriptors. Returns 0 or an errno.
 */
int OpenSession(int* sock, ipc::HelloRep* rep, int* fds, int* nfds);
/**
 * One control request on @p c's socket and its reply. @p rep receives
 * exactly @p rep_len bytes of the reply body (a shorter body is EPROTO);
 * @p want_fds descriptors must come with a successful reply (EPROTO if not)
 * and land in @p fds_out. Returns 0, the daemon's errno, or EIO once the
 * daemon is gone.
 */
int Request(Context* c, ipc::Op op, const void* req, size_t req_len, void* rep, size_t rep_len,
            const int* fds_in = nullptr, int nfds_in = 0, int* fds_out = nullptr, int want_fds = 0);
/** Request() for a HandleMsg body and no reply body. */
int RequestHandle(Context* c, ipc::Op op, uint32_t handle);
/** Checks now whether the daemon is gone (socket EOF, app segment flag). */
bool CheckDaemon(Context* c);
/** Records the daemon's death: every blocked call wakes, DEVICE_FATAL is queued. */
void MarkGone(Context* c);
/** Maps @p bytes of @p fd shared read-write after checking its size; closes fd. */
void* MapSegment(int fd, size_t bytes);

// ---- device.cc ----
int QueryPortImpl(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t len);
int QueryDeviceExImpl(ibv_context* ctx, const ibv_query_device_ex_input* input,
                      ibv_device_attr_ex* attr, size_t attr_size);

// ---- cq.cc ----
/**
 * Context::poll_spin_ns: $METAROCE_POLL_SPIN_US in ns, or kNoPollSleep when it
 * is unset, empty or "off". A bad value is reported on stderr once and
 * polls spin.
 */
uint64_t PollSpinNs();
int PollCq(ibv_cq* cq, int n, ibv_wc* wc);
int ReqNotifyCq(ibv_cq* cq, int solicited_only);
ibv_cq_ex* CreateCqEx(ibv_context* ctx, ibv_cq_init_attr_ex* attr);
inline Cq* ToCq(ibv_cq* cq) { return reinterpret_cast<Cq*>(cq); }

// ---- qp.cc ----
ibv_qp* CreateQpEx(ibv_context* ctx, ibv_qp_init_attr_ex* attr);
inline Qp* ToQp(ibv_qp* qp) { return reinterpret_cast<Qp*>(qp); }

// ---- srq.cc ----
inline Srq* ToSrq(ibv_srq* srq) { return reinterpret_cast<Srq*>(srq); }

// ---- post.cc ----
int PostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int PostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int PostSrqRecv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
/** Fills the ibv_wr_* function pointers of @p qp. */
void InitWrOps(Qp* qp);
/**
 * Tells the shard of lane @p lane that @p handle's ring @p kind has new
 * entries, unless already told. Call it after publishing the entries
 * (seq_cst): a QP not placed yet (lane ipc::kNoLane) is told at RTR.
 */
void RingDoorbell(Context* c, const std::atomic<uint32_t>& lane, uint32_t handle,
                  ipc::DoorbellKind kind, ipc::RingIndex* flag);

}  // namespace metaroce::verbs

#endif  // METAROCE_VERBS_PRIVATE_H
