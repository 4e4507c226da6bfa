/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "fake_daemon.h"

#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "mr_ipc.h"
#include "mr_ipc_futex.h"
#include "mr_ipc_ring.h"
#include "mr_ipc_socket.h"

namespace metaroce::test {
namespace {

using namespace metaroce::ipc;

void* MapFd(int fd, size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

int NewSegment(size_t bytes, void** map) {
  const int fd = memfd_create("fake-metaroced", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) return -1;
  *map = MapFd(fd, bytes);
  return fd;
}

// As a daemon of three shards: each SRQ is on lane handle % kLanes, each QP on
// its SRQ's lane or, from RTR on (as metaroced places it), on lane
// handle % kLanes, so the shim's lanes (doorbells, completions, async events)
// all take part. No kick eventfds are sent: the lanes' "shards" never sleep.
constexpr uint32_t kLanes = 3;
uint32_t LaneOfHandle(uint32_t handle) { return handle % kLanes; }

struct FMr {
  uint32_t pd, access, lkey, rkey;
  uint64_t addr, length, iova;
  uint32_t memory;
  uint8_t* base = nullptr;  // daemon address of map_va
  uint64_t map_va = 0, map_len = 0;
};

struct FCq {
  CqSegment* seg;
  uint32_t depth;
  uint32_t prod[kLanes] = {};
  int channel_fd = -1;
};

struct FQp {
  QpSegment* seg;
  uint32_t lane;
  uint32_t sq_depth, rq_depth, qpn;
  uint32_t send_cq, recv_cq;
  bool sig_all;
  QpStatus status = QpStatus::kIdle;
  uint32_t modifies = 0;      // kModifyQp requests seen
  uint32_t access_flags = 0;  // the last qp_access_flags given
  uint32_t dest_qpn = 0;
  uint32_t sq_cons = 0, rq_cons = 0;
  uint32_t max_send_wr;
  uint32_t srq = 0;  // receives come from this SRQ, 0: its own ring
};

struct FSrq {
  SrqSegment* seg;
  uint32_t lane;
  uint32_t depth, max_sge;
  uint32_t limit = 0;  // armed: IBV_EVENT_SRQ_LIMIT_REACHED once it holds fewer
  uint32_t seen = 0;   // prod as of the last doorbell: the entries the daemon knows of
  uint32_t cons = 0;
};

struct Client {
  int sock;
  pid_t pid = 0;
  AppSegment* app = nullptr;
  int async_fd = -1;
  uint32_t next_handle = 1;
  uint32_t db_cons[kLanes] = {};
  std::map<uint32_t, int> channels;  // handle -> eventfd
  std::map<uint32_t, bool> pds;
  std::map<uint32_t, FMr> mrs;
  std::map<uint32_t, FCq> cqs;
  std::map<uint32_t, FQp> qps;
  std::map<uint32_t, FSrq> srqs;
};

std::mutex g_mu;
std::vector<std::unique_ptr<Client>> g_clients;

// A completion of a QP on lane @p lane.
void PushCqe(Client* c, uint32_t cq_handle, uint32_t lane, const CqEntry& e, bool solicited) {
  auto it = c->cqs.find(cq_handle);
  if (it == c->cqs.end() || lane >= kLanes) return;  // a QP completes only once placed
  FCq& cq = it->second;
  CqLane* l = LaneOf(cq.seg, lane);
  uint32_t& prod = cq.prod[lane];
  const uint32_t cons = l->cons.v.load(std::memory_order_acquire);
  if (prod - cons >= cq.depth) {
    cq.seg->overflow.v.store(1, std::memory_order_release);
    return;
  }
  CqEntry* ring = reinterpret_cast<CqEntry*>(reinterpret_cast<char*>(cq.seg) +
                                             CqEntriesOffset(cq.depth, kLanes, lane));
  ring[prod & (cq.depth - 1)] = e;
  prod++;
  l->prod.v.store(prod, std::memory_order_seq_cst);
  // A thread asleep in a poll (METAROCE_POLL_SPIN_US), as metaroced wakes it.
  std::atomic<uint32_t>& waiting = c->app->poll_wait.v;
  if (waiting.load(std::memory_order_seq_cst) != 0 && waiting.exchange(0) != 0) {
    FutexWakeAll(&waiting);
  }
  const uint32_t arm = cq.seg->arm.v.load(std::memory_order_acquire);
  if (arm == 1 || (arm == 2 && solicited)) {
    cq.seg->arm.v.store(0, std::memory_order_relaxed);
    cq.seg->events.v.fetch_add(1, std::memory_order_release);
    const uint64_t one = 1;
    if (cq.channel_fd >= 0 && write(cq.channel_fd, &one, sizeof(one)) < 0) perror("eventfd");
  }
}

// An async event about @p handle, on its lane.
void PushAsync(Client* c, uint32_t event_type, uint32_t handle) {
  AppLane* l = LaneOf(c->app, LaneOfHandle(handle));
  const uint32_t ap = l->async_prod.v.load(std::memory_order_relaxed);
  l->async[ap & (kAsyncSlots - 1)] = {event_type, handle};
  l->async_prod.v.store(ap + 1, std::memory_order_release);
  const uint64_t one = 1;
  if (write(c->async_fd, &one, sizeof(one)) < 0) perror("eventfd");
}

// The daemon address of [addr, addr + len) of an MR with @p key, or nullptr.
uint8_t* Resolve(Client* c, uint32_t key, bool remote, uint64_t addr, uint64_t len, uint32_t need) {
  for (auto& [h, mr] : c->mrs) {
    if ((remote ? mr.rkey : mr.lkey) != key) continue;
    const uint64_t va = remote ? addr - mr.iova + mr.addr : addr;
    if (va < mr.addr || va + len > mr.addr + mr.length) return nullptr;
    if ((mr.access & need) != need) return nullptr;
    if (mr.base == nullptr) return reinterpret_cast<uint8_t*>(1);  // cross memory: caller copies
    return mr.base + (va - mr.map_va);
  }
  return nullptr;
}

bool CopyIn(Client* c, uint8_t* dst_or_null, uint64_t app_va, void* buf, size_t len, bool write) {
  // Moves between @p buf and the application's @p app_va.
  if (dst_or_null != reinterpret_cast<uint8_t*>(1)) {
    if (write) {
      memcpy(dst_or_null, buf, len);
    } else {
      memcpy(buf, dst_or_null, len);
    }
    return true;
  }
  iovec local{buf, len};
  iovec remote{reinterpret_cast<void*>(app_va), len};
  const ssize_t n = write ? process_vm_writev(c->pid, &local, 1, &remote, 1, 0)
                          : process_vm_readv(c->pid, &local, 1, &remote, 1, 0);
  return n == static_cast<ssize_t>(len);
}

// Gathers a send entry's local data.
bool Gather(Client* c, const SqEntry& e, std::vector<uint8_t>* out) {
  if ((e.send_flags & IBV_SEND_INLINE) != 0) {
    out->assign(e.inline_data, e.inline_data + e.inline_len);
    return true;
  }
  out->clear();
  for (uint32_t i = 0; i < e.num_sge && i < kMaxSge; i++) {
    const Sge& s = e.sge[i];
    uint8_t* p = Resolve(c, s.lkey, false, s.addr, s.length, 0);
    if (p == nullptr) return false;
    const size_t off = out->size();
    out->resize(off + s.length);
    if (!CopyIn(c, p, s.addr, out->data() + off, s.length, false)) return false;
  }
  return true;
}

FQp* ByQpn(Client* c, uint32_t qpn) {
  for (auto& [h, q] : c->qps) {
    if (q.qpn == qpn) return &q;
  }
  return nullptr;
}

uint8_t WcOpcode(uint32_t op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: return IBV_WC_SEND;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
    default: return IBV_WC_FETCH_ADD;
  }
}

// Takes @p srq's next receive the doorbells announced, as the daemon does.
bool TakeSrqRecv(Client* c, uint32_t handle, RqEntry* out) {
  auto it = c->srqs.find(handle);
  if (it == c->srqs.end()) return false;
  FSrq& s = it->second;
  if (s.seen == s.cons) return false;
  const RqEntry* ring =
      reinterpret_cast<RqEntry*>(reinterpret_cast<char*>(s.seg) + kSrqEntriesOffset);
  *out = ring[s.cons & (s.depth - 1)];
  s.cons++;
  s.seg->cons.v.store(s.cons, std::memory_order_release);
  if (s.limit != 0 && s.seen - s.cons < s.limit) {
    s.limit = 0;  // fires once, as verbs: the application arms it again
    PushAsync(c, IBV_EVENT_SRQ_LIMIT_REACHED, handle);
  }
  return true;
}

// Takes @p q's next posted receive, from its SRQ if it has one.
bool TakeRecv(Client* c, FQp* q, RqEntry* out) {
  if (q->srq != 0) return TakeSrqRecv(c, q->srq, out);
  if (q->seg->rq_prod.v.load(std::memory_order_acquire) == q->rq_cons) return false;
  const RqEntry* rq =
      reinterpret_cast<RqEntry*>(reinterpret_cast<char*>(q->seg) + RqOffset(q->sq_depth));
  *out = rq[q->rq_cons & (q->rq_depth - 1)];
  q->rq_cons++;
  q->seg->rq_cons.v.store(q->rq_cons, std::memory_order_release);
  q->seg->rq_retired.v.store(q->rq_cons, std::memory_order_release);
  return true;
}

// Executes one send entry of @p q (loopback to its dest QP); the WC status.
uint8_t Execute(Client* c, FQp& q, const SqEntry& e, uint32_t* byte_len) {
  if (q.status == QpStatus::kError) return IBV_WC_WR_FLUSH_ERR;
  FQp* peer = ByQpn(c, q.dest_qpn);
  std::vector<uint8_t> data;
  *byte_len = 0;
  switch (e.opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: {
      if (!Gather(c, e, &data)) return IBV_WC_LOC_PROT_ERR;
      uint8_t* d = Resolve(c, e.rkey, true, e.remote_addr, data.size(), IBV_ACCESS_REMOTE_WRITE);
      if (d == nullptr) return IBV_WC_REM_ACCESS_ERR;
      const uint64_t va = e.remote_addr;
      if (!CopyIn(c, d, va, data.data(), data.size(), true)) return IBV_WC_REM_ACCESS_ERR;
      *byte_len = static_cast<uint32_t>(data.size());
      return IBV_WC_SUCCESS;
    }
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: {
      if (!Gather(c, e, &data)) return IBV_WC_LOC_PROT_ERR;
      if (peer == nullptr) return IBV_WC_RETRY_EXC_ERR;
      RqEntry r;
      if (!TakeRecv(c, peer, &r)) return IBV_WC_RNR_RETRY_EXC_ERR;
      size_t off = 0;
      for (uint32_t i = 0; i < r.num_sge && off < data.size(); i++) {
        const size_t n = std::min<size_t>(r.sge[i].length, data.size() - off);
        uint8_t* d = Resolve(c, r.sge[i].lkey, false, r.sge[i].addr, n, IBV_ACCESS_LOCAL_WRITE);
        if (d == nullptr || !CopyIn(c, d, r.sge[i].addr, data.data() + off, n, true)) break;
        off += n;
      }
      CqEntry w;
      w.wr_id = r.wr_id;
      w.byte_len = static_cast<uint32_t>(off);
      w.qp_num = peer->qpn;
      w.src_qp = q.qpn;
      w.status = off == data.size() ? IBV_WC_SUCCESS : IBV_WC_LOC_LEN_ERR;
      w.opcode = IBV_WC_RECV;
      if (e.opcode == IBV_WR_SEND_WITH_IMM) {
        w.wc_flags = IBV_WC_WITH_IMM;
        w.imm_data = e.imm_data;
      }
      PushCqe(c, peer->recv_cq, peer->lane, w, (e.send_flags & IBV_SEND_SOLICITED) != 0);
      *byte_len = static_cast<uint32_t>(data.size());
      return IBV_WC_SUCCESS;
    }
    case IBV_WR_RDMA_READ: {
      uint64_t len = 0;
      for (uint32_t i = 0; i < e.num_sge; i++) len += e.sge[i].length;
      uint8_t* s = Resolve(c, e.rkey, true, e.remote_addr, len, IBV_ACCESS_REMOTE_READ);
      if (s == nullptr) return IBV_WC_REM_ACCESS_ERR;
      data.resize(len);
      if (!CopyIn(c, s, e.remote_addr, data.data(), len, false)) return IBV_WC_REM_ACCESS_ERR;
      size_t off = 0;
      for (uint32_t i = 0; i < e.num_sge; i++) {
        uint8_t* d = Resolve(c, e.sge[i].lkey, false, e.sge[i].addr, e.sge[i].length,
                             IBV_ACCESS_LOCAL_WRITE);
        if (d == nullptr) return IBV_WC_LOC_PROT_ERR;
        CopyIn(c, d, e.sge[i].addr, data.data() + off, e.sge[i].length, true);
        off += e.sge[i].length;
      }
      *byte_len = static_cast<uint32_t>(len);
      return IBV_WC_SUCCESS;
    }
    default: {  // atomics: 8 bytes at remote_addr, the old value to sge[0]
      uint8_t* t = Resolve(c, e.rkey, true, e.remote_addr, 8, IBV_ACCESS_REMOTE_ATOMIC);
      if (t == nullptr || e.num_sge != 1) return IBV_WC_REM_ACCESS_ERR;
      uint64_t old;
      CopyIn(c, t, e.remote_addr, &old, 8, false);
      uint64_t nv = e.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ? old + e.compare_add
                    : old == e.compare_add                  ? e.swap
                                                            : old;
      CopyIn(c, t, e.remote_addr, &nv, 8, true);
      uint8_t* d = Resolve(c, e.sge[0].lkey, false, e.sge[0].addr, 8, IBV_ACCESS_LOCAL_WRITE);
      if (d == nullptr) return IBV_WC_LOC_PROT_ERR;
      CopyIn(c, d, e.sge[0].addr, &old, 8, true);
      *byte_len = 8;
      return IBV_WC_SUCCESS;
    }
  }
}

void DrainSq(Client* c, FQp& q) {
  q.seg->sq_doorbell.v.store(0, std::memory_order_seq_cst);
  const uint32_t prod = q.seg->sq_prod.v.load(std::memory_order_seq_cst);
  if (prod - q.sq_cons > q.max_send_wr) {
    q.status = QpStatus::kError;  // corrupt ring
    q.seg->status.v.store(static_cast<uint32_t>(q.status));
    return;
  }
  SqEntry* sq = reinterpret_cast<SqEntry*>(reinterpret_cast<char*>(q.seg) + kSqOffset);
  while (q.sq_cons != prod) {
    const SqEntry e = sq[q.sq_cons & (q.sq_depth - 1)];
    uint32_t len = 0;
    const uint8_t st = Execute(c, q, e, &len);
    q.sq_cons++;
    q.seg->sq_cons.v.store(q.sq_cons, std::memory_order_release);
    if (st != IBV_WC_SUCCESS && q.status != QpStatus::kError) {
      q.status = QpStatus::kError;
      q.seg->status.v.store(static_cast<uint32_t>(q.status));
    }
    if (q.sig_all || (e.send_flags & IBV_SEND_SIGNALED) != 0 || st != IBV_WC_SUCCESS) {
      CqEntry w;
      w.wr_id = e.wr_id;
      w.status = st;
      w.opcode = WcOpcode(e.opcode);
      w.byte_len = len;
      w.qp_num = q.qpn;
      PushCqe(c, q.send_cq, q.lane, w, false);
    }
    q.seg->sq_retired.v.store(q.sq_cons, std::memory_order_release);
  }
}

void DrainSrqDoorbell(FSrq& s) {
  s.seg->doorbell.v.store(0, std::memory_order_seq_cst);
  s.seen = s.seg->prod.v.load(std::memory_order_seq_cst);
}

void TakeDoorbell(Client* c, const Doorbell& d) {
  if (d.kind == static_cast<uint32_t>(DoorbellKind::kSrq)) {
    auto s = c->srqs.find(d.handle);
    if (s != c->srqs.end()) DrainSrqDoorbell(s->second);
    return;
  }
  auto it = c->qps.find(d.handle);
  if (it == c->qps.end()) return;
  if (d.kind == static_cast<uint32_t>(DoorbellKind::kSq)) {
    DrainSq(c, it->second);
  } else {
    it->second.seg->rq_doorbell.v.store(0, std::memory_order_seq_cst);
  }
}

void Executor() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      for (auto& cp : g_clients) {
        Client* c = cp.get();
        if (c->app == nullptr) continue;
        for (uint32_t lane = 0; lane < kLanes; lane++) {
          AppLane* l = LaneOf(c->app, lane);
          const uint32_t prod = l->db_prod.v.load(std::memory_order_acquire);
          uint32_t& cons = c->db_cons[lane];
          while (cons != prod) {
            const Doorbell d = l->doorbells[cons & (kDoorbellSlots - 1)];
            cons++;
            l->db_cons.v.store(cons, std::memory_order_release);
            // A doorbell on another lane than its object's is the shim's bug.
            auto q = c->qps.find(d.handle);
            auto sr = c->srqs.find(d.handle);
            const uint32_t want = q != c->qps.end()     ? q->second.lane
                                  : sr != c->srqs.end() ? sr->second.lane
                                                        : lane;
            if (want != lane) {
              fprintf(stderr, "fake-metaroced: doorbell of %u on lane %u\n", d.handle, lane);
              abort();
            }
            TakeDoorbell(c, d);
          }
        }
      }
    }
    usleep(50);
  }
}

template <typename T>
bool Body(const char* buf, ssize_t n, T* out) {
  if (static_cast<size_t>(n) < sizeof(CtlHeader) + sizeof(T)) return false;
  memcpy(out, buf + sizeof(CtlHeader), sizeof(T));
  return true;
}

void Reply(Client* c, const CtlHeader& rq, int status, const void* body, size_t len,
           const int* fds = nullptr, int nfds = 0) {
  CtlHeader h = rq;
  h.status = status;
  SendCtl(c->sock, h, status == 0 ? body : nullptr, status == 0 ? len : 0,
          status == 0 ? fds : nullptr, status == 0 ? nfds : 0);
}

// One control datagram from @p c; false when the client is gone.
bool Serve(Client* c) {
  alignas(8) char buf[kMaxCtlBytes];
  int fds[kMaxCtlFds];
  int nfds = 0;
  const ssize_t n = RecvCtl(c->sock, buf, sizeof(buf), fds, &nfds);
  if (n <= 0) return false;
  CtlHeader h;
  memcpy(&h, buf, sizeof(h));
  std::lock_guard<std::mutex> lock(g_mu);
  HandleMsg hm;
  switch (static_cast<Op>(h.op)) {
    case Op::kHello: {
      HelloRep r;
      r.app_id = 7;
      snprintf(r.device_name, sizeof(r.device_name), "metaroce0");
      r.node_guid = 0x0002c9fffe123456ull;
      const uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
      memcpy(r.gid, gid, 16);
      r.lid = 1;
      r.udp_port = 4791;
      r.mtu_bytes = 4096;
      r.max_msg_bytes = 1ull << 31;
      r.max_mr_bytes = 1ull << 34;
      r.max_qp = 256;
      r.max_cq = 256;
      r.max_mr = 1024;
      r.max_pd = 64;
      r.max_qp_wr = 4096;
      r.max_cqe = 65536;
      r.max_sge = 16;
      r.max_inline = 256;
      r.max_qp_rd_atom = 16;
      r.max_comp_channels = 64;
      r.link_speed_mbps = 100000;
      r.max_srq = 32;
      r.lanes = kLanes;
      void* map = nullptr;
      const int seg = NewSegment(AppSegmentBytes(kLanes), &map);
      c->app = static_cast<AppSegment*>(map);
      c->async_fd = eventfd(0, EFD_CLOEXEC);
      const int out[2] = {seg, c->async_fd};
      Reply(c, h, 0, &r, sizeof(r), out, 2);
      close(seg);
      break;
    }
    case Op::kAllocPd:
      hm.handle = c->next_handle++;
      c->pds[hm.handle] = true;
      Reply(c, h, 0, &hm, sizeof(hm));
      break;
    case Op::kDeallocPd:
      if (!Body(buf, n, &hm) || c->pds.erase(hm.handle) == 0) {
        Reply(c, h, EINVAL, nullptr, 0);
      } else {
        Reply(c, h, 0, nullptr, 0);
      }
      break;
    case Op::kRegMr: {
      RegMrReq q;
      if (!Body(buf, n, &q) || c->pds.count(q.pd) == 0) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      FMr mr{};
      mr.pd = q.pd;
      mr.access = q.access;
      mr.addr = q.addr;
      mr.length = q.length;
      mr.iova = q.iova;
      mr.memory = q.memory;
      if (q.memory == static_cast<uint32_t>(MrMemory::kSharedFd) && nfds == 1) {
        void* p = mmap(nullptr, q.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0],
                       static_cast<off_t>(q.map_offset));
        if (p != MAP_FAILED) {
          mr.base = static_cast<uint8_t*>(p);
          mr.map_va = q.map_va;
          mr.map_len = q.map_len;
        } else {
          mr.memory = static_cast<uint32_t>(MrMemory::kCrossMemory);
        }
      } else {
        mr.memory = static_cast<uint32_t>(MrMemory::kCrossMemory);
      }
      CloseFds(fds, nfds);
      const uint32_t handle = c->next_handle++;
      mr.lkey = 0x1000 + handle;
      mr.rkey = 0x2000 + handle;
      c->mrs[handle] = mr;
      RegMrRep r{handle, mr.lkey, mr.rkey, mr.memory};
      Reply(c, h, 0, &r, sizeof(r));
      break;
    }
    case Op::kDeregMr: {
      auto it = Body(buf, n, &hm) ? c->mrs.find(hm.handle) : c->mrs.end();
      if (it == c->mrs.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      if (it->second.base != nullptr) munmap(it->second.base, it->second.map_len);
      c->mrs.erase(it);
      Reply(c, h, 0, nullptr, 0);
      break;
    }
    case Op::kCreateCompChannel:
      if (nfds != 1) {
        CloseFds(fds, nfds);
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      hm.handle = c->next_handle++;
      c->channels[hm.handle] = fds[0];
      Reply(c, h, 0, &hm, sizeof(hm));
      break;
    case Op::kDestroyCompChannel: {
      auto it = Body(buf, n, &hm) ? c->channels.find(hm.handle) : c->channels.end();
      if (it == c->channels.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      close(it->second);
      c->channels.erase(it);
      Reply(c, h, 0, nullptr, 0);
      break;
    }
    case Op::kCreateCq: {
      CreateCqReq q;
      if (!Body(buf, n, &q) || q.depth == 0 || q.depth > kMaxRingDepth ||
          (q.channel != 0 && c->channels.count(q.channel) == 0)) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      FCq cq{};
      cq.depth = RingDepth(q.depth);
      void* map = nullptr;
      const int fd = NewSegment(CqSegmentBytes(cq.depth, kLanes), &map);
      cq.seg = static_cast<CqSegment*>(map);
      cq.channel_fd = q.channel != 0 ? c->channels[q.channel] : -1;
      const uint32_t handle = c->next_handle++;
      c->cqs[handle] = cq;
      CreateCqRep r{handle, cq.depth, CqSegmentBytes(cq.depth, kLanes)};
      Reply(c, h, 0, &r, sizeof(r), &fd, 1);
      close(fd);
      break;
    }
    case Op::kDestroyCq: {
      auto it = Body(buf, n, &hm) ? c->cqs.find(hm.handle) : c->cqs.end();
      if (it == c->cqs.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      bool busy = false;
      for (auto& [qh, qp] : c->qps) busy |= qp.send_cq == hm.handle || qp.recv_cq == hm.handle;
      if (busy) {
        Reply(c, h, EBUSY, nullptr, 0);
        break;
      }
      munmap(it->second.seg, CqSegmentBytes(it->second.depth, kLanes));
      c->cqs.erase(it);
      Reply(c, h, 0, nullptr, 0);
      break;
    }
    case Op::kCreateQp: {
      CreateQpReq q;
      if (!Body(buf, n, &q) || c->pds.count(q.pd) == 0 || c->cqs.count(q.send_cq) == 0 ||
          c->cqs.count(q.recv_cq) == 0 || (q.srq != 0 && c->srqs.count(q.srq) == 0)) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      FQp qp{};
      qp.srq = q.srq;
      qp.sq_depth = RingDepth(q.max_send_wr);
      qp.rq_depth = q.srq != 0 ? 1 : RingDepth(q.max_recv_wr);
      qp.send_cq = q.send_cq;
      qp.recv_cq = q.recv_cq;
      qp.sig_all = q.sq_sig_all != 0;
      qp.max_send_wr = q.max_send_wr;
      const uint32_t handle = c->next_handle++;
      qp.qpn = 0x100 + handle;
      qp.lane = q.srq != 0 ? c->srqs[q.srq].lane : kNoLane;
      void* map = nullptr;
      const size_t bytes = QpSegmentBytes(qp.sq_depth, qp.rq_depth);
      const int fd = NewSegment(bytes, &map);
      qp.seg = static_cast<QpSegment*>(map);
      c->qps[handle] = qp;
      CreateQpRep r;
      r.handle = handle;
      r.qpn = qp.qpn;
      r.sq_depth = qp.sq_depth;
      r.rq_depth = qp.rq_depth;
      r.max_send_wr = q.max_send_wr;
      r.max_recv_wr = q.srq != 0 ? 0 : q.max_recv_wr;
      r.max_send_sge = q.max_send_sge;
      r.max_recv_sge = q.srq != 0 ? 0 : q.max_recv_sge;
      r.max_inline = q.max_inline < 64 ? 64 : q.max_inline;  // grants more than asked
      r.segment_bytes = bytes;
      r.lane = qp.lane;
      Reply(c, h, 0, &r, sizeof(r), &fd, 1);
      close(fd);
      break;
    }
    case Op::kConnectQp: {
      ConnectQpReq q;
      auto it = Body(buf, n, &q) ? c->qps.find(q.qp) : c->qps.end();
      if (it == c->qps.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      it->second.dest_qpn = q.dest_qpn;
      it->second.status = QpStatus::kReady;
      it->second.seg->status.v.store(static_cast<uint32_t>(QpStatus::kReady));
      if (it->second.lane == kNoLane) it->second.lane = LaneOfHandle(it->first);
      ConnectQpRep r{it->second.lane, 0};
      Reply(c, h, 0, &r, sizeof(r));
      break;
    }
    case Op::kQueryQp: {
      auto it = Body(buf, n, &hm) ? c->qps.find(hm.handle) : c->qps.end();
      if (it == c->qps.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      QueryQpRep r;
      r.status = static_cast<uint32_t>(it->second.status);
      Reply(c, h, 0, &r, sizeof(r));
      break;
    }
    case Op::kModifyQp: {
      ModifyQpReq r;
      auto it = Body(buf, n, &r) ? c->qps.find(r.qp) : c->qps.end();
      if (it == c->qps.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      it->second.modifies++;
      it->second.access_flags =
          (r.mask & modify::kAccess) ? r.access_flags : it->second.access_flags;
      Reply(c, h, 0, nullptr, 0);
      break;
    }
    case Op::kSetQpError: {
      auto it = Body(buf, n, &hm) ? c->qps.find(hm.handle) : c->qps.end();
      if (it == c->qps.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      it->second.status = QpStatus::kError;
      it->second.seg->status.v.store(static_cast<uint32_t>(QpStatus::kError));
      // An async event, as a real daemon reports a QP it failed.
      PushAsync(c, IBV_EVENT_QP_LAST_WQE_REACHED, hm.handle);
      Reply(c, h, 0, nullptr, 0);
      break;
    }
    case Op::kDestroyQp: {
      auto it = Body(buf, n, &hm) ? c->qps.find(hm.handle) : c->qps.end();
      if (it == c->qps.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      munmap(it->second.seg, QpSegmentBytes(it->second.sq_depth, it->second.rq_depth));
      c->qps.erase(it);
      Reply(c, h, 0, nullptr, 0);
      break;
    }
    case Op::kCreateSrq: {
      CreateSrqReq q;
      if (!Body(buf, n, &q) || c->pds.count(q.pd) == 0 || q.max_wr == 0 ||
          q.max_wr > kMaxRingDepth || q.max_sge == 0 || q.max_sge > kMaxSge) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      FSrq s{};
      s.depth = RingDepth(q.max_wr);
      s.max_sge = q.max_sge;
      s.limit = q.srq_limit;
      void* map = nullptr;
      const int fd = NewSegment(SrqSegmentBytes(s.depth), &map);
      s.seg = static_cast<SrqSegment*>(map);
      const uint32_t handle = c->next_handle++;
      s.lane = LaneOfHandle(handle);
      c->srqs[handle] = s;
      // Grants the whole ring, more than asked unless max_wr is a power of two.
      CreateSrqRep r{handle, s.depth, s.depth, s.max_sge, SrqSegmentBytes(s.depth), s.lane, 0};
      Reply(c, h, 0, &r, sizeof(r), &fd, 1);
      close(fd);
      break;
    }
    case Op::kDestroySrq: {
      auto it = Body(buf, n, &hm) ? c->srqs.find(hm.handle) : c->srqs.end();
      if (it == c->srqs.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      bool busy = false;
      for (auto& [qh, qp] : c->qps) busy |= qp.srq == hm.handle;
      if (busy) {
        Reply(c, h, EBUSY, nullptr, 0);
        break;
      }
      munmap(it->second.seg, SrqSegmentBytes(it->second.depth));
      c->srqs.erase(it);
      Reply(c, h, 0, nullptr, 0);
      break;
    }
    case Op::kModifySrq: {
      ModifySrqReq q;
      auto it = Body(buf, n, &q) ? c->srqs.find(q.srq) : c->srqs.end();
      if (it == c->srqs.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      it->second.limit = q.srq_limit;  // unchecked: the shim's check is under test
      Reply(c, h, 0, nullptr, 0);
      break;
    }
    case Op::kQuerySrq: {
      auto it = Body(buf, n, &hm) ? c->srqs.find(hm.handle) : c->srqs.end();
      if (it == c->srqs.end()) {
        Reply(c, h, EINVAL, nullptr, 0);
        break;
      }
      const FSrq& s = it->second;
      QuerySrqRep r{s.depth, s.max_sge, s.limit, s.seen - s.cons};
      Reply(c, h, 0, &r, sizeof(r));
      break;
    }
    default: CloseFds(fds, nfds); Reply(c, h, EOPNOTSUPP, nullptr, 0);
  }
  return true;
}

}  // namespace

int RunFakeDaemon(const char* socket_path) {
  const int ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  // Bound under a temporary name and renamed once listening: whoever waits
  // for the path to appear can connect at once (bind creates it before listen).
  const std::string tmp = std::string(socket_path) + ".new";
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", tmp.c_str());
  unlink(tmp.c_str());
  if (ls < 0 || bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      listen(ls, 16) != 0 || rename(tmp.c_str(), socket_path) != 0) {
    perror("fake metaroced: listen");
    return 1;
  }
  std::thread(Executor).detach();
  for (;;) {
    std::vector<pollfd> p{{ls, POLLIN, 0}};
    std::vector<Client*> who{nullptr};
    {
      std::lock_guard<std::mutex> lock(g_mu);
      for (auto& c : g_clients) {
        p.push_back({c->sock, POLLIN, 0});
        who.push_back(c.get());
      }
    }
    if (poll(p.data(), p.size(), -1) < 0) continue;
    if ((p[0].revents & POLLIN) != 0) {
      const int s = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
      if (s >= 0) {
        auto c = std::make_unique<Client>();
        c->sock = s;
        ucred cr{};
        socklen_t l = sizeof(cr);
        if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &l) == 0) c->pid = cr.pid;
        std::lock_guard<std::mutex> lock(g_mu);
        g_clients.push_back(std::move(c));
      }
    }
    for (size_t i = 1; i < p.size(); i++) {
      if (p[i].revents == 0) continue;
      if (!Serve(who[i])) {
        std::lock_guard<std::mutex> lock(g_mu);
        for (auto it = g_clients.begin(); it != g_clients.end(); ++it) {
          if (it->get() == who[i]) {
            close((*it)->sock);
            g_clients.erase(it);  // segments stay mapped: the executor may not race them
            break;
          }
        }
      }
    }
  }
}

}  // namespace metaroce::test
