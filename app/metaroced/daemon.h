/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// metaroced's pieces (doc/daemon.md): the control thread (control.cc) accepts
// applications and keeps their objects (registry.cc: checks, limits,
// references, which shard holds what), turning each request into work for the
// shards; each shard's thread runs that work on its part of each application
// (objects.cc, srq.cc: engine objects) and the fast path (dataplane.cc: rings
// <-> engine); memory.cc reaches application memory for the engine.

#ifndef METAROCE_APP_METAROCED_DAEMON_H
#define METAROCE_APP_METAROCED_DAEMON_H

#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "config.h"
#include "mr_ipc.h"
#include "mr_ipc_ring.h"
#include "mr_runtime.h"
#include "mr_transport.h"
#include "placement.h"

namespace metaroce::daemon {

/** Addresses at and above this are the daemon's inline windows, never application memory. */
inline constexpr uint64_t kInlineVaBase = uint64_t{1} << 60;
/** Each QP slot of an application has a window this large (its send ring). */
inline constexpr int kInlineWindowShift = 32;
inline constexpr uint64_t kInlineVaBytes = uint64_t{ipc::kMaxQpsPerApp} << kInlineWindowShift;
static_assert(ipc::QpSegmentBytes(ipc::kMaxRingDepth, ipc::kMaxRingDepth) <
              (uint64_t{1} << kInlineWindowShift));

/** A memfd the daemon created and mapped (a ring segment). */
class Segment {
 public:
  /** Creates and maps @p bytes of zeroes; errors name @p what. */
  static absl::StatusOr<std::unique_ptr<Segment>> Create(const char* what, size_t bytes);
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  int fd() const { return fd_; }
  size_t bytes() const { return bytes_; }
  template <typename T>
  T* at(size_t offset = 0) const {
    return reinterpret_cast<T*>(static_cast<uint8_t*>(base_) + offset);
  }

 private:
  Segment() = default;
  int fd_ = -1;
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

/**
 * One application's address space as the engine reaches it: regions backed by
 * a memfd it passed (mapped here: plain copies), the inline windows of its
 * send rings, and cross-memory attach (process_vm_readv/writev) for the rest.
 * Used by its shard's thread only, except `gone`.
 */
class AppMemory {
 public:
  AppMemory(pid_t pid) : pid_(pid) {}
  ~AppMemory();

  bool Read(uint64_t va, void* dst, size_t len);
  bool Write(uint64_t va, const void* src, size_t len);
  /** 8-byte atomics: CPU atomics on a shared mapping; read-modify-write over CMA (not atomic
   * against the application's own CPU accesses). */
  bool Atomic(uint64_t va, bool cas, uint64_t a, uint64_t b, uint64_t* old);

  /**
   * Maps @p fd's [offset, offset + len) (sealed against shrinking) as the
   * application's [va, va + len). Returns the mapping's key, or 0 when it
   * cannot be used (the caller falls back to cross-memory attach).
   */
  uint64_t AddMapping(int fd, uint64_t va, uint64_t len, uint64_t offset);
  /** Drops one user of the mapping @p key; unmapped with its last. */
  void ReleaseMapping(uint64_t key);

  /** QP slot @p slot's send ring (daemon view), for its inline window; nullptr to clear. */
  void SetInlineWindow(uint32_t slot, uint8_t* ring, size_t bytes);

  /** The application is gone: nothing is read or written for it any more. */
  std::atomic<bool> gone{false};
  pid_t pid() const { return pid_; }
  uint64_t cma_calls() const { return cma_calls_; }
  uint64_t shared_copies() const { return shared_copies_; }

 private:
  struct Mapping {
    uint64_t len = 0;
    uint8_t* ptr = nullptr;  // daemon address of va
    void* base = nullptr;    // what mmap returned
    size_t map_bytes = 0;
    uint32_t users = 0;
  };
  uint8_t* Find(uint64_t va, size_t len);

  pid_t pid_;
  std::map<uint64_t, Mapping> maps_;  // by application address
  struct Window {
    uint8_t* ring = nullptr;
    size_t bytes = 0;
  };
  std::vector<Window> windows_;
  uint64_t cma_calls_ = 0;
  uint64_t shared_copies_ = 0;
};

/** A shard's MemoryAccess: the owner tag is the application id. */
class DaemonMemory final : public transport::MemoryAccess {
 public:
  bool Write(uint64_t owner, uint64_t va, const void* src, size_t len) override;
  bool Read(uint64_t owner, uint64_t va, void* dst, size_t len) override;
  bool FetchAdd(uint64_t owner, uint64_t va, uint64_t add, uint64_t* old) override;
  bool CompareSwap(uint64_t owner, uint64_t va, uint64_t compare, uint64_t swap,
                   uint64_t* old) override;
  void Attach(uint64_t owner, AppMemory* m) { apps_[owner] = m; }
  void Detach(uint64_t owner) { apps_.erase(owner); }

 private:
  AppMemory* Of(uint64_t owner);
  absl::flat_hash_map<uint64_t, AppMemory*> apps_;
};

/**
 * Objects by handle: slot index + 1 in the low 16 bits, a generation above,
 * so a stale handle never matches. The handles come from a HandleTable
 * (Put); a shard keeps each application's objects so, under the handles the
 * control thread gave them.
 */
template <typename T>
class HandleSlots {
 public:
  static constexpr uint32_t kMaxSlots = 0xffff;
  /** Slot index of a valid handle (for per-slot side tables). */
  static uint32_t SlotOf(uint32_t h) { return (h & 0xffff) - 1; }
  /** Stores @p obj under @p h, whose slot must be empty. */
  void Put(uint32_t h, std::unique_ptr<T> obj) {
    const uint32_t i = SlotOf(h);
    if (i >= slots_.size()) slots_.resize(i + 1);
    slots_[i] = Slot{h >> 16, std::move(obj)};
    count_++;
  }
  T* Get(uint32_t h) const {
    const uint32_t i = SlotOf(h);
    if ((h & 0xffff) == 0 || i >= slots_.size() || slots_[i].gen != h >> 16) return nullptr;
    return slots_[i].obj.get();
  }
  std::unique_ptr<T> Remove(uint32_t h) {
    if (Get(h) == nullptr) return nullptr;
    count_--;
    return std::move(slots_[SlotOf(h)].obj);
  }
  uint32_t size() const { return count_; }
  /** Calls @p f(handle, T&) for each object. */
  template <typename F>
  void ForEach(F f) const {
    for (uint32_t i = 0; i < slots_.size(); i++) {
      if (slots_[i].obj) f(slots_[i].gen << 16 | (i + 1), *slots_[i].obj);
    }
  }
  /** The handles of every object (to remove them while walking). */
  std::vector<uint32_t> Handles() const {
    std::vector<uint32_t> hs;
    ForEach([&](uint32_t h, const T&) { hs.push_back(h); });
    return hs;
  }

 private:
  struct Slot {
    uint32_t gen = 0;
    std::unique_ptr<T> obj;
  };
  std::vector<Slot> slots_;
  uint32_t count_ = 0;
};

/** HandleSlots that hands out the handles: a freed slot comes back under a new generation. */
template <typename T>
class HandleTable {
 public:
  static constexpr uint32_t kMaxSlots = HandleSlots<T>::kMaxSlots;
  /** Stores @p obj; 0 if every slot is used. */
  uint32_t Add(std::unique_ptr<T> obj) {
    uint32_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      if (gens_.size() >= kMaxSlots) return 0;
      i = static_cast<uint32_t>(gens_.size());
      gens_.push_back(0);
    }
    gens_[i] = (gens_[i] + 1) & 0xffff;
    if (gens_[i] == 0) gens_[i] = 1;
    const uint32_t h = gens_[i] << 16 | (i + 1);
    slots_.Put(h, std::move(obj));
    return h;
  }
  T* Get(uint32_t h) const { return slots_.Get(h); }
  std::unique_ptr<T> Remove(uint32_t h) {
    std::unique_ptr<T> o = slots_.Remove(h);
    if (o) free_.push_back(HandleSlots<T>::SlotOf(h));
    return o;
  }
  uint32_t size() const { return slots_.size(); }
  template <typename F>
  void ForEach(F f) const {
    slots_.ForEach(f);
  }
  std::vector<uint32_t> Handles() const { return slots_.Handles(); }

 private:
  HandleSlots<T> slots_;
  std::vector<uint32_t> gens_;
  std::vector<uint32_t> free_;
};

// ---- Objects as a shard's engine holds them (AppPart) ----

struct PdObj {
  uint32_t engine_pd = 0;
  uint32_t inline_lkey = 0;  ///< the PD's region over the inline windows (local read only)
};

struct MrObj {
  uint32_t lkey = 0;
  uint64_t mapping = 0;  ///< AppMemory mapping key, 0: cross-memory attach
};

/** A shard's lane of a CQ: its engine CQ and the ring it fills. */
struct CqObj {
  uint32_t handle = 0;
  uint32_t engine_cq = 0;
  Segment* seg = nullptr;  ///< the CQ's (CqMeta owns it)
  uint32_t depth = 0;
  uint32_t lanes = 0;
  uint32_t prod = 0;     ///< entries written into this shard's lane (the daemon's own copy)
  int channel_efd = -1;  ///< its completion channel's eventfd (the channel outlives it), -1: none
  bool backlog = false;  ///< completions wait in the engine for room in the ring
  bool overflowed = false;
  ipc::CqSegment* head() const { return seg->at<ipc::CqSegment>(); }
  ipc::CqLane* lane(uint32_t l) const { return ipc::LaneOf(head(), l); }
  ipc::CqEntry* ring(uint32_t l) const {
    return seg->at<ipc::CqEntry>(ipc::CqEntriesOffset(depth, lanes, l));
  }
};

struct QpObj {
  uint32_t handle = 0;
  uint32_t qpn = 0;
  uint32_t pd = 0, send_cq = 0, recv_cq = 0;
  bool sq_sig_all = false;
  transport::QpAttr tuning;  ///< the engine QP's attributes as kModifyQp last set them
  uint32_t max_send_sge = 0, max_recv_sge = 0, max_inline = 0;
  std::unique_ptr<Segment> seg;
  uint32_t sq_depth = 0, rq_depth = 0;
  uint32_t sq_cons = 0, rq_cons = 0;         ///< entries taken (the daemon's own copies)
  uint32_t sq_retired = 0, rq_retired = 0;   ///< written to the segment as they move
  std::vector<uint64_t> sq_wr_id, rq_wr_id;  ///< the application's wr_id by ring position
  uint32_t srq = 0;                          ///< its SRQ's handle, 0: its own receive ring
  bool connected = false;
  bool stalled = false;  ///< the engine's queue was full: drain again next iteration
  bool error = false;
  ipc::QpSegment* head() const { return seg->at<ipc::QpSegment>(); }
  ipc::SqEntry* sq() const { return seg->at<ipc::SqEntry>(ipc::kSqOffset); }
  ipc::RqEntry* rq() const { return seg->at<ipc::RqEntry>(ipc::RqOffset(sq_depth)); }
};

/** @p obj's ring waits for room in the engine: the next iteration drains it again. */
template <typename Obj>
void MarkStalled(Obj* obj, std::vector<uint32_t>* stalled) {
  if (obj->stalled) return;
  obj->stalled = true;
  stalled->push_back(obj->handle);
}

/** A shared receive queue: its ring's entries move into the engine's SRQ as they are taken. */
struct SrqObj {
  uint32_t handle = 0;
  uint32_t engine_srq = 0;
  uint32_t pd = 0;
  std::unique_ptr<Segment> seg;
  uint32_t depth = 0;
  uint32_t max_wr = 0;  ///< granted (what the application asked for; the ring may hold more)
  uint32_t max_sge = 0;
  uint32_t limit = 0;    ///< the limit to arm at creation, 0: none
  uint32_t cons = 0;     ///< entries taken (the daemon's own copy)
  bool stalled = false;  ///< the engine's SRQ was full: drain again next iteration
  bool error = false;    ///< the application broke it: nothing more is taken
  ipc::SrqSegment* head() const { return seg->at<ipc::SrqSegment>(); }
  ipc::RqEntry* ring() const { return seg->at<ipc::RqEntry>(ipc::kSrqEntriesOffset); }
};

// ---- What the control thread keeps of each object (App): checks, limits, references ----

/** A QP not on any shard yet: it goes to its host pair's (or its SRQ's) at RTR. */
inline constexpr int kUnplaced = -1;

struct PdMeta {
  uint32_t users = 0;  ///< MRs, QPs and SRQs in it
};

struct MrMeta {
  uint32_t pd = 0;
  uint64_t length = 0;
};

struct ChannelObj {
  int efd = -1;
  uint32_t users = 0;
  ~ChannelObj();
};

struct CqMeta {
  std::unique_ptr<Segment> seg;  ///< every shard fills its lane of it
  uint32_t depth = 0;
  uint32_t channel = 0;
  uint32_t users = 0;  ///< QPs completing into it
};

struct QpMeta {
  uint32_t qpn = 0;
  uint32_t pd = 0, send_cq = 0, recv_cq = 0, srq = 0;
  int shard = kUnplaced;
  std::unique_ptr<QpObj>
      pending;  ///< the object until it is placed (its receives wait in its ring)
};

struct SrqMeta {
  uint32_t pd = 0;
  uint32_t users = 0;  ///< QPs taking receives from it
  uint16_t shard = 0;  ///< its application's home: its QPs live there too
};

/** One application as /metaroced/apps reports it (telemetry.cc). */
struct AppRow {
  uint64_t id = 0;
  pid_t pid = 0;
  uid_t uid = 0;
  uint16_t shard = 0;  ///< where it attached; its QPs are on their host pairs' shards
  uint32_t pds = 0, mrs = 0, cqs = 0, qps = 0, srqs = 0;
  uint64_t mr_bytes = 0, wrs_posted = 0, recvs_posted = 0, completions = 0, bad_entries = 0;
  uint64_t poll_wakes = 0;  ///< CQ polls of it woken (AppSegment::poll_wait)
};

/** The telemetry command listing every attached application. */
inline constexpr char kCmdApps[] = "/metaroced/apps";
/** Registers kCmdApps with DPDK telemetry (served once EAL is up). */
absl::Status RegisterAppTelemetry();

class ShardService;
struct AppPart;

/**
 * One attached application (one verbs context), as the control thread keeps
 * it: the session, the segments, and every object's checks and references.
 * The engine objects live in its parts, one per shard.
 */
struct App {
  uint64_t id = 0;  ///< never reused; the engine owner tag of its PDs
  pid_t pid = 0;
  uid_t uid = 0;
  int sock = -1;
  int pidfd = -1;     ///< readable once the process is gone (even if a child kept the socket)
  uint16_t home = 0;  ///< the shard it attached to (round robin): QPs it fails before RTR
  std::unique_ptr<Segment> seg;  ///< ipc::AppSegment
  uint32_t lanes = 0;            ///< of its segments: the daemon's shards
  int async_efd = -1;
  /**
   * Per lane, written by the application to wake the lane's sleeping shard;
   * its own, so it can only miss its own.
   */
  std::vector<int> kick_efds;
  HandleTable<PdMeta> pds;
  HandleTable<MrMeta> mrs;
  HandleTable<ChannelObj> channels;
  HandleTable<CqMeta> cqs;
  HandleTable<QpMeta> qps;
  HandleTable<SrqMeta> srqs;
  uint64_t mr_bytes = 0;
  /** [shard]: each used by its shard's thread only (and by the control thread while it runs none).
   */
  std::vector<std::unique_ptr<AppPart>> parts;
  ipc::AppSegment* head() const { return seg->at<ipc::AppSegment>(); }
  ipc::AppLane* lane(uint32_t l) const { return ipc::LaneOf(head(), l); }
  ~App();
};

/** An application's part on one shard: its engine objects and its fast path there. */
struct AppPart {
  App* app = nullptr;  ///< read only here: id, pid, segments, eventfds
  uint16_t shard = 0;
  std::unique_ptr<AppMemory> mem;
  HandleSlots<PdObj> pds;  ///< every PD, MR and CQ of the application is on every shard
  HandleSlots<MrObj> mrs;
  HandleSlots<CqObj> cqs;
  HandleSlots<QpObj> qps;  ///< the QPs and SRQs placed on this shard
  HandleSlots<SrqObj> srqs;
  uint32_t db_cons = 0;     ///< of this shard's lane
  uint32_t async_prod = 0;  ///< of this shard's lane
  bool corrupt = false;     ///< it broke its doorbell ring: nothing more is taken from it
  // Counters (telemetry).
  uint64_t wrs_posted = 0, recvs_posted = 0, completions = 0, bad_entries = 0;
  uint64_t poll_wakes = 0;  ///< wakes of its threads asleep in a CQ poll
  /** Handles of the QPs and SRQs marked stalled: an iteration retries these, not every object. */
  std::vector<uint32_t> stalled_qps, stalled_srqs;
  ipc::AppLane* lane() const { return app->lane(shard); }
  /**
   * Whether a QP or SRQ of it lives here: only then can its doorbells come to
   * this shard's lane, so a shard polls and sleeps on the parts that hold one.
   */
  bool Holds() const { return qps.size() + srqs.size() != 0; }
};

/**
 * A shard's half of the daemon: work handed over by the control thread and,
 * every iteration, the fast path of the application parts it holds. Runs on
 * the shard's thread, except Submit().
 */
class ShardService {
 public:
  ShardService(const DaemonConfig& cfg, uint16_t index);
  ~ShardService();
  ShardService(const ShardService&) = delete;
  ShardService& operator=(const ShardService&) = delete;
  /** Wakes the shard if it sleeps (handed-over work, stop). Any thread. */
  void Kick();
  DaemonMemory* memory() { return &mem_; }
  void set_shard(runtime::Shard* s) { shard_ = s; }
  runtime::Shard* shard() const { return shard_; }
  uint16_t index() const { return index_; }

  /** Runs @p fn on the shard's thread and waits for it. Any thread but the shard's. */
  void RunOnShard(const std::function<void()>& fn);
  /** Hands @p fn to the shard's thread; Wait(ticket) waits for it. */
  uint64_t Submit(std::function<void()> fn);
  void Wait(uint64_t ticket);
  /** One iteration: handed-over work, then the applications' rings. Shard thread. */
  void Iterate();
  /** Logs the shard's applications, connections and paths (SIGUSR1). Shard thread. */
  void LogState();
  /** Whether any application still has work in flight (SIGTERM waits for none). */
  bool Busy() const;

  // ---- The control thread's requests, on the shard thread (objects.cc, srq.cc) ----
  // Each returns 0 or an errno value for the application, and leaves nothing behind on error.
  void AttachPart(AppPart* part);
  /** Destroys everything @p part holds; its QPs' peers see their streams end. */
  void DetachPart(AppPart* part);
  int AllocPd(AppPart* part, uint32_t h);
  void DeallocPd(AppPart* part, uint32_t h);
  /**
   * Registers the region of @p r under handle @p h with engine access @p acc;
   * @p keys: in, the keys another shard gave it (zero: new keys); out, the keys.
   * @p fd: the memfd backing it (-1: cross-memory attach); *shared says whether it is mapped.
   */
  int RegMr(AppPart* part, uint32_t h, const ipc::RegMrReq& r, uint32_t acc, int fd,
            transport::MrInfo* keys, bool* shared);
  void DeregMr(AppPart* part, uint32_t h);
  int CreateCq(AppPart* part, uint32_t h, Segment* seg, uint32_t depth, int channel_efd);
  void DestroyCq(AppPart* part, uint32_t h);
  /**
   * Places @p qp here, connected to @p dest_qpn at @p peer, and takes the
   * receives waiting in its ring. On error nothing is placed and the QP
   * stays with the caller.
   */
  int PlaceQp(AppPart* part, std::unique_ptr<QpObj>* qp, const transport::PeerAddr& peer,
              uint32_t dest_qpn);
  void DestroyQp(AppPart* part, uint32_t h);
  ipc::QpStatus QueryQp(AppPart* part, uint32_t h);
  int UpdateQp(AppPart* part, uint32_t h, const transport::QpAttr& a);
  void SetQpError(AppPart* part, uint32_t h);
  /** Completes the receives waiting in unplaced @p qp's ring with flush errors (its error state).
   */
  void FlushUnplaced(AppPart* part, QpObj* qp);
  /** Creates @p srq's engine SRQ and keeps it here; on error it stays with the caller. */
  int CreateSrq(AppPart* part, std::unique_ptr<SrqObj>* srq);
  void DestroySrq(AppPart* part, uint32_t h);
  int ArmSrq(AppPart* part, uint32_t h, uint32_t limit);
  int QuerySrq(AppPart* part, uint32_t h, ipc::QuerySrqRep* rep);

 private:
  friend struct Dataplane;
  // dataplane.cc
  /** Doorbells taken. */
  uint32_t PollPart(AppPart* part);
  /** Sleeps when nothing happened for a while (dataplane.idle_sleep_us). */
  void MaybeSleep(bool did_work);
  /**
   * Sleeps until packets arrive on @p rx_fd, an application kicks, or
   * @p timeout_ns passes, unless a doorbell or handed-over work came in
   * after the applications were told that the shard sleeps.
   */
  void WaitForEvents(int rx_fd, transport::TimeNs timeout_ns);
  void DrainSq(AppPart* part, QpObj* qp);
  void DrainRq(AppPart* part, QpObj* qp);
  // srq.cc
  void DrainSrq(AppPart* part, SrqObj* srq);
  /** The application broke @p srq's ring: it takes nothing more (IBV_EVENT_SRQ_ERR). */
  void FailSrq(AppPart* part, SrqObj* srq);
  /** Completions written. */
  uint32_t MoveCompletions(AppPart* part, CqObj* cq);
  /** Writes @p e into this shard's lane of @p cq; false when the lane is full. */
  bool WriteCompletion(CqObj* cq, const ipc::CqEntry& e);
  /** Publishes what WriteCompletion wrote and signals the channel of an armed CQ. */
  void PublishCompletions(AppPart* part, CqObj* cq, uint32_t written);
  void DeliverAsync(AppPart* part, uint32_t type, uint32_t handle);
  /** Publishes this shard's applications for kCmdApps (telemetry.cc). */
  void PublishApps();
  void PollEngineEvents();
  void FailQp(AppPart* part, QpObj* qp);

  transport::Engine& engine() { return shard_->engine(); }

  const DaemonConfig& cfg_;
  uint16_t index_;
  runtime::Shard* shard_ = nullptr;
  DaemonMemory mem_;
  std::vector<AppPart*> parts_;
  /** Engine QP number -> its application part and handle; engine CQ and SRQ -> the same. */
  struct Owner {
    AppPart* part = nullptr;
    uint32_t handle = 0;
  };
  absl::flat_hash_map<uint32_t, Owner> qp_owner_;
  absl::flat_hash_map<uint32_t, Owner> cq_owner_;
  absl::flat_hash_map<uint32_t, Owner> srq_owner_;
  std::vector<std::pair<AppPart*, uint32_t>> cq_backlog_;
  std::vector<uint32_t> retry_;        ///< PollPart: the stalled list of the part it polls
  uint64_t last_busy_iterations_ = 0;  ///< the shard's iterations that moved packets, last seen
  uint32_t idle_iterations_ = 0;
  bool slack_set_ = false;
  int kick_fd_ = -1;
  std::vector<pollfd> wait_fds_;  ///< WaitForEvents' descriptors (kept: no allocation per sleep)
  transport::TimeNs apps_published_at_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::function<void()>> work_;
  uint64_t work_submitted_ = 0, work_done_ = 0;
  std::atomic<bool> has_work_{false};
};

/** The control thread: the socket, sessions, every application's objects, shutdown. */
class Server {
 public:
  Server(const DaemonConfig& cfg, runtime::Runtime* rt, std::vector<ShardService*> shards);
  ~Server();
  /** Creates the socket (an error says which path and why). */
  absl::Status Listen();
  /** Serves until SIGTERM/SIGINT (blocked in every thread; read here through a signalfd). */
  void Serve();
  /** Detaches every application (they see end of file: device fatal). */
  void CloseAll();
  /** Applications attached now. */
  size_t num_apps() const { return apps_.size(); }

 private:
  void Accept();
  void Handle(App* app);
  void Drop(App* app);
  /** Runs @p fn(shard, its part of @p app) on every shard at once and waits for all. */
  void OnEveryShard(App* app, const std::function<void(ShardService*, AppPart*)>& fn);
  /** Runs @p fn(shard, its part of @p app) on shard @p i and waits. */
  void OnShard(App* app, uint16_t i, const std::function<void(ShardService*, AppPart*)>& fn);
  /** Publishes @p app's object counts for kCmdApps (telemetry.cc). */
  void PublishObjects(const App* app);

  // registry.cc: the requests of an attached application.
  int Execute(App* app, ipc::Op op, const uint8_t* body, size_t len, const int* fds, int nfds,
              std::vector<uint8_t>* reply, std::vector<int>* reply_fds);
  int AllocPd(App* app, std::vector<uint8_t>* reply);
  int DeallocPd(App* app, uint32_t h);
  int RegMr(App* app, const ipc::RegMrReq& r, const int* fds, int nfds,
            std::vector<uint8_t>* reply);
  int DeregMr(App* app, uint32_t h);
  int CreateCq(App* app, const ipc::CreateCqReq& r, std::vector<uint8_t>* reply,
               std::vector<int>* reply_fds);
  int DestroyCq(App* app, uint32_t h);
  int CreateQp(App* app, const ipc::CreateQpReq& r, std::vector<uint8_t>* reply,
               std::vector<int>* reply_fds);
  int ConnectQp(App* app, const ipc::ConnectQpReq& r, std::vector<uint8_t>* reply);
  int DestroyQp(App* app, uint32_t h);
  int CreateSrq(App* app, const ipc::CreateSrqReq& r, std::vector<uint8_t>* reply,
                std::vector<int>* reply_fds);
  int DestroySrq(App* app, uint32_t h);
  /** A QP number no QP of this daemon has, ending in @p tag (placement.h). */
  uint32_t NewQpn(uint32_t tag);

  const DaemonConfig& cfg_;
  runtime::Runtime* rt_;
  std::vector<ShardService*> shards_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int signal_fd_ = -1;
  uint64_t next_app_id_ = 1;
  uint16_t next_shard_ = 0;
  absl::flat_hash_map<int, std::unique_ptr<App>> apps_;  // by socket
  absl::flat_hash_set<uint32_t> qpns_;                   ///< QP numbers in use
  uint32_t next_qpn_ = 0;
};

}  // namespace metaroce::daemon

#endif  // METAROCE_APP_METAROCED_DAEMON_H
