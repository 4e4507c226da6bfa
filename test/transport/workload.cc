/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "workload.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include "absl/strings/str_cat.h"

namespace metaroce::testing {

using namespace transport;

namespace {

constexpr uint32_t kCqDepth = 1 << 16;

struct Op {
  Opcode opcode = Opcode::kWrite;
  uint32_t len = 0;
  uint64_t src = 0;     ///< requester: source bytes (WRITE/SEND) or result slot (READ/ATOMIC)
  uint64_t remote = 0;  ///< target address at the responder
  uint32_t imm = 0;
  uint64_t add_or_cmp = 0, swap = 0;
  uint64_t expect_orig = 0;
  uint64_t recv_buf = 0;  ///< receive-consuming: the buffer the responder posted
  uint32_t recv_room = 0;
  const uint8_t* expect = nullptr;  ///< READ: what must arrive (bytes at the responder)
  bool fence = false;
};

// Node memory at a fixed address when the address space allows, so the
// addresses inside packets, and with them the fabric's trace hash, are the
// same from run to run.
class NodeMemory {
 public:
  void Allocate(size_t bytes, uint32_t index) {
    size_ = bytes;
    void* want = reinterpret_cast<void*>(0x600000000000ull + uint64_t{index} * 0x10000000000ull);
    void* p = mmap(want, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) {
      p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (p == MAP_FAILED) std::abort();
    data_ = static_cast<uint8_t*>(p);
  }
  ~NodeMemory() {
    if (data_ != nullptr) munmap(data_, size_);
  }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

struct Node {
  sim::EngineNode* sim = nullptr;
  uint32_t pd = 0, cq = 0;
  MrInfo mr;
  NodeMemory mem;
  size_t used = 0;
  uint64_t Alloc(size_t n) {
    used = (used + 63) & ~size_t{63};
    const uint64_t a = reinterpret_cast<uint64_t>(mem.data()) + used;
    used += n;
    return a;
  }
};

// One stream: QP `qpn` on node `from` talks to QP `peer_qpn` on node `to`.
struct Stream {
  uint32_t from = 0, to = 0;
  uint32_t qpn = 0, peer_qpn = 0;
  std::vector<Op> ops;
  size_t posted = 0, completed = 0;
  std::deque<size_t> recv_expect;     ///< ops (by index) the responder's receives will complete
  uint64_t fa_word = 0, cs_word = 0;  ///< at the responder
  uint64_t fa_model = 0, cs_model = 0;
};

uint8_t* Ptr(uint64_t a) { return reinterpret_cast<uint8_t*>(a); }

}  // namespace

struct Workload::Impl {
  sim::Fabric* fabric;
  WorkloadConfig cfg;
  std::mt19937_64 rng;
  std::deque<Node> nodes;  // NodeMemory does not move
  std::vector<Stream> streams;
  std::string error;
  uint64_t ops_completed = 0, bytes_moved = 0;

  void Fail(std::string e) {
    if (error.empty()) error = std::move(e);
  }

  uint32_t RandomLen() {
    if (cfg.big_msg_bytes != 0 && rng() % 16 == 0) return cfg.big_msg_bytes;
    if (rng() % 8 == 0) return 0;
    const uint32_t bits = static_cast<uint32_t>(rng() % 17);
    return std::min<uint32_t>(cfg.max_msg_bytes, 1 + static_cast<uint32_t>(rng() % (1u << bits)));
  }

  void Plan(Stream& s) {
    Node& req = nodes[s.from];
    Node& rsp = nodes[s.to];
    s.fa_word = rsp.Alloc(8);
    s.cs_word = rsp.Alloc(8);
    s.fa_model = rng();
    s.cs_model = rng() % 4;
    std::memcpy(Ptr(s.fa_word), &s.fa_model, 8);
    std::memcpy(Ptr(s.cs_word), &s.cs_model, 8);
    std::vector<Opcode> kinds;
    if (cfg.writes) kinds.insert(kinds.end(), {Opcode::kWrite, Opcode::kWrite, Opcode::kWriteImm});
    if (cfg.sends) kinds.insert(kinds.end(), {Opcode::kSend, Opcode::kSendImm});
    if (cfg.reads) kinds.push_back(Opcode::kRead);
    if (cfg.atomics) kinds.insert(kinds.end(), {Opcode::kAtomicFetchAdd, Opcode::kAtomicCompSwap});
    int last_write = -1;
    for (uint32_t i = 0; i < cfg.ops_per_qp; i++) {
      Op op;
      op.opcode = kinds[rng() % kinds.size()];
      op.imm = static_cast<uint32_t>(rng());
      op.fence = i > 0 && rng() % 8 == 0;
      switch (op.opcode) {
        case Opcode::kWrite:
        case Opcode::kWriteImm:
        case Opcode::kSend:
        case Opcode::kSendImm: {
          op.len = RandomLen();
          op.src = req.Alloc(op.len);
          for (uint32_t k = 0; k < op.len; k++) Ptr(op.src)[k] = static_cast<uint8_t>(rng());
          if (op.opcode == Opcode::kWrite || op.opcode == Opcode::kWriteImm) {
            op.remote = rsp.Alloc(op.len);
            last_write = static_cast<int>(i);
          }
          if (op.opcode != Opcode::kWrite) {
            // The responder posts a receive; a SEND's may be larger than needed.
            op.recv_room = op.opcode == Opcode::kWriteImm ? 0 : op.len + rng() % 64;
            op.recv_buf = rsp.Alloc(op.recv_room);
          }
          break;
        }
        case Opcode::kRead: {
          // Half the READs read back an earlier WRITE of this stream: they
          // must see its bytes, as the READ executes after it.
          if (last_write >= 0 && rng() % 2 == 0 && s.ops[last_write].len > 0) {
            const Op& w = s.ops[last_write];
            op.len = 1 + static_cast<uint32_t>(rng() % w.len);
            op.remote = w.remote;
            op.expect = Ptr(w.src);
          } else {
            op.len = RandomLen();
            op.remote = rsp.Alloc(op.len);
            for (uint32_t k = 0; k < op.len; k++) Ptr(op.remote)[k] = static_cast<uint8_t>(rng());
            op.expect = Ptr(op.remote);
          }
          op.src = req.Alloc(op.len);
          break;
        }
        case Opcode::kAtomicFetchAdd:
          op.len = 8;
          op.src = req.Alloc(8);
          op.remote = s.fa_word;
          op.add_or_cmp = rng() % 1000;
          op.expect_orig = s.fa_model;
          s.fa_model += op.add_or_cmp;
          break;
        case Opcode::kAtomicCompSwap:
          op.len = 8;
          op.src = req.Alloc(8);
          op.remote = s.cs_word;
          op.add_or_cmp = rng() % 2 ? s.cs_model : rng() % 4;
          op.swap = rng() % 4;
          op.expect_orig = s.cs_model;
          if (s.cs_model == op.add_or_cmp) s.cs_model = op.swap;
          break;
      }
      s.ops.push_back(op);
    }
  }

  void PostReceives(Stream& s) {
    Node& rsp = nodes[s.to];
    for (size_t i = 0; i < s.ops.size(); i++) {
      const Op& op = s.ops[i];
      if (op.opcode != Opcode::kSend && op.opcode != Opcode::kSendImm &&
          op.opcode != Opcode::kWriteImm) {
        continue;
      }
      RecvWr r;
      r.wr_id = i;
      if (op.recv_room != 0) r.sg.push_back({op.recv_buf, op.recv_room, rsp.mr.lkey});
      auto st = rsp.sim->engine().PostRecv(s.peer_qpn, r);
      if (!st.ok()) Fail(absl::StrCat("PostRecv: ", st.message()));
      s.recv_expect.push_back(i);
    }
  }

  void PostMore(Stream& s) {
    Node& req = nodes[s.from];
    while (s.posted < s.ops.size() && s.posted - s.completed < cfg.max_outstanding) {
      const Op& op = s.ops[s.posted];
      SendWr wr;
      wr.wr_id = s.posted;
      wr.opcode = op.opcode;
      wr.flags = send_flags::kSignaled | (op.fence ? send_flags::kFence : 0);
      if (op.len != 0 || op.opcode == Opcode::kRead) {
        if (op.len != 0) wr.sg.push_back({op.src, op.len, req.mr.lkey});
      }
      wr.remote_addr = op.remote;
      wr.rkey = nodes[s.to].mr.rkey;
      wr.imm = op.imm;
      wr.compare_add = op.add_or_cmp;
      wr.swap = op.swap;
      auto st = req.sim->engine().PostSend(req.sim->NowNs(), s.qpn, wr);
      if (!st.ok()) {
        Fail(absl::StrCat("PostSend: ", st.message()));
        return;
      }
      s.posted++;
    }
  }

  Stream* FindStream(uint32_t node, uint32_t qpn, bool as_requester) {
    for (Stream& s : streams) {
      if (as_requester ? (s.from == node && s.qpn == qpn) : (s.to == node && s.peer_qpn == qpn)) {
        return &s;
      }
    }
    return nullptr;
  }

  void OnSendCompletion(Stream& s, const Completion& c) {
    if (s.completed >= s.posted || c.wr_id != s.completed) {
      Fail(absl::StrCat("send completion wr_id ", c.wr_id, " out of posting order (expected ",
                        s.completed, ")"));
      return;
    }
    if (c.status != WcStatus::kSuccess) {
      Fail(absl::StrCat("op ", c.wr_id, " (opcode ", static_cast<int>(s.ops[c.wr_id].opcode), ", ",
                        s.ops[c.wr_id].len, " bytes) failed: ", WcStatusName(c.status)));
      if (std::getenv("MR_WORKLOAD_DEBUG") != nullptr) {
        for (const Node& n : nodes) {
          const EngineStats& st = n.sim->engine().stats();
          std::fprintf(stderr,
                       "  node stats: conn_fail %lu path_fail %lu retx %lu lost_sack %lu "
                       "lost_rto %lu naks %lu rx_beyond %lu bad_chunk %lu unknown_conn %lu\n",
                       (unsigned long)st.conn_failures, (unsigned long)st.path_failures,
                       (unsigned long)st.tx_retransmits, (unsigned long)st.lost_detected_sack,
                       (unsigned long)st.lost_detected_rto, (unsigned long)st.tx_naks,
                       (unsigned long)st.rx_beyond_window, (unsigned long)st.rx_bad_chunk,
                       (unsigned long)st.rx_unknown_conn);
        }
        Completion more[64];
        size_t n;
        while ((n = nodes[s.from].sim->engine().PollCq(nodes[s.from].cq, more)) > 0) {
          for (size_t k = 0; k < n; k++) {
            std::fprintf(stderr, "  then qp %u wr %lu %s\n", more[k].qp_num,
                         static_cast<unsigned long>(more[k].wr_id), WcStatusName(more[k].status));
          }
        }
      }
      return;
    }
    const Op& op = s.ops[c.wr_id];
    switch (op.opcode) {
      case Opcode::kWrite:
      case Opcode::kWriteImm:
        if (std::memcmp(Ptr(op.remote), Ptr(op.src), op.len) != 0) {
          Fail(absl::StrCat("WRITE ", c.wr_id, " (", op.len, " bytes) completed but not placed"));
        }
        break;
      case Opcode::kRead:
        if (std::memcmp(Ptr(op.src), op.expect, op.len) != 0) {
          Fail(absl::StrCat("READ ", c.wr_id, " (", op.len, " bytes) returned wrong bytes"));
        }
        break;
      case Opcode::kAtomicFetchAdd:
      case Opcode::kAtomicCompSwap: {
        uint64_t got;
        std::memcpy(&got, Ptr(op.src), 8);
        if (got != op.expect_orig) {
          Fail(absl::StrCat("ATOMIC ", c.wr_id, " returned ", got, ", expected ", op.expect_orig));
        }
        break;
      }
      default: break;
    }
    s.completed++;
    ops_completed++;
    bytes_moved += op.len;
  }

  void OnRecvCompletion(Stream& s, const Completion& c) {
    if (s.recv_expect.empty() || c.wr_id != s.recv_expect.front()) {
      Fail(absl::StrCat("receive completion ", c.wr_id, " out of message order"));
      return;
    }
    s.recv_expect.pop_front();
    if (c.status != WcStatus::kSuccess) {
      Fail(absl::StrCat("receive ", c.wr_id, " failed: ", WcStatusName(c.status)));
      return;
    }
    const Op& op = s.ops[c.wr_id];
    const bool imm = op.opcode != Opcode::kSend;
    if (c.byte_len != op.len || c.has_imm != imm || (imm && c.imm != op.imm)) {
      Fail(absl::StrCat("receive ", c.wr_id, ": byte_len/imm wrong"));
      return;
    }
    if (op.opcode != Opcode::kWriteImm && std::memcmp(Ptr(op.recv_buf), Ptr(op.src), op.len) != 0) {
      Fail(absl::StrCat("SEND ", c.wr_id, " received wrong bytes"));
      return;
    }
    // Every earlier WRITE of the stream (and the WRITE_IMM itself) is placed.
    for (size_t i = 0; i <= c.wr_id; i++) {
      const Op& w = s.ops[i];
      if ((w.opcode == Opcode::kWrite || w.opcode == Opcode::kWriteImm) &&
          std::memcmp(Ptr(w.remote), Ptr(w.src), w.len) != 0) {
        Fail(absl::StrCat("receive of message ", c.wr_id, " completed before WRITE ", i,
                          " was placed"));
        return;
      }
    }
  }

  bool AllDone() const {
    for (const Stream& s : streams) {
      if (s.completed < s.ops.size() || !s.recv_expect.empty()) return false;
    }
    return true;
  }

  void FinalChecks() {
    for (const Stream& s : streams) {
      uint64_t fa, cs;
      std::memcpy(&fa, Ptr(s.fa_word), 8);
      std::memcpy(&cs, Ptr(s.cs_word), 8);
      if (fa != s.fa_model || cs != s.cs_model) {
        Fail("atomic words differ from the model: an atomic ran twice or not at all");
      }
    }
  }
};

Workload::Workload(sim::Fabric* fabric, std::vector<sim::EngineNode*> sims,
                   const WorkloadConfig& cfg)
    : impl_(std::make_unique<Impl>()) {
  Impl& w = *impl_;
  w.fabric = fabric;
  w.cfg = cfg;
  w.rng.seed(cfg.seed);
  for (size_t i = 0; i < sims.size(); i++) w.nodes.emplace_back();
  const size_t per_node = size_t{sims.size()} * cfg.qps_per_pair * cfg.ops_per_qp *
                              (std::max(cfg.max_msg_bytes, cfg.big_msg_bytes / 8 + 1) * 3 + 512) +
                          (1 << 20);
  for (size_t i = 0; i < sims.size(); i++) {
    Node& n = w.nodes[i];
    n.sim = sims[i];
    Engine& e = n.sim->engine();
    n.pd = *e.AllocPd();
    n.cq = *e.CreateCq(kCqDepth);
    n.mem.Allocate(per_node, i);
    n.mr = *e.RegMr(n.pd, reinterpret_cast<uint64_t>(n.mem.data()), n.mem.size(), access::kAll);
  }
  for (uint32_t a = 0; a < sims.size(); a++) {
    for (uint32_t b = 0; b < sims.size(); b++) {
      if (a == b) continue;
      for (uint32_t q = 0; q < cfg.qps_per_pair; q++) {
        Stream s;
        s.from = a;
        s.to = b;
        QpAttr qa;
        qa.pd = w.nodes[a].pd;
        qa.send_cq = qa.recv_cq = w.nodes[a].cq;
        qa.max_recv_wr = 4096;
        s.qpn = *w.nodes[a].sim->engine().CreateQp(qa);
        qa.pd = w.nodes[b].pd;
        qa.send_cq = qa.recv_cq = w.nodes[b].cq;
        s.peer_qpn = *w.nodes[b].sim->engine().CreateQp(qa);
        w.streams.push_back(s);
      }
    }
  }
  for (Stream& s : w.streams) {
    auto st = w.nodes[s.from].sim->engine().ConnectQp(s.qpn, w.nodes[s.to].sim->Addr(), s.peer_qpn);
    if (st.ok()) {
      st = w.nodes[s.to].sim->engine().ConnectQp(s.peer_qpn, w.nodes[s.from].sim->Addr(), s.qpn);
    }
    if (!st.ok()) w.Fail(absl::StrCat("ConnectQp: ", st.message()));
    w.Plan(s);
    if (w.nodes[s.from].used > w.nodes[s.from].mem.size() ||
        w.nodes[s.to].used > w.nodes[s.to].mem.size()) {
      w.Fail("workload plan does not fit in the node buffers");
    }
  }
}

Workload::~Workload() = default;

WorkloadResult Workload::Run(sim::SimTime limit_ps) {
  Impl& w = *impl_;
  const sim::SimTime start = w.fabric->Now();
  for (Stream& s : w.streams) w.PostReceives(s);
  for (Stream& s : w.streams) w.PostMore(s);
  for (Node& n : w.nodes) n.sim->Kick();
  Completion c[256];
  while (w.error.empty() && !w.AllDone() && w.fabric->Now() - start < limit_ps) {
    w.fabric->RunUntil(w.fabric->Now() + 20 * sim::kPsPerUs);
    for (uint32_t i = 0; i < w.nodes.size(); i++) {
      Node& n = w.nodes[i];
      size_t got;
      while ((got = n.sim->engine().PollCq(n.cq, c)) > 0) {
        for (size_t k = 0; k < got; k++) {
          const bool recv =
              c[k].opcode == WcOpcode::kRecv || c[k].opcode == WcOpcode::kRecvRdmaWithImm;
          Stream* s = w.FindStream(i, c[k].qp_num, !recv);
          if (s == nullptr) {
            w.Fail("completion for an unknown QP");
          } else if (recv) {
            w.OnRecvCompletion(*s, c[k]);
          } else {
            w.OnSendCompletion(*s, c[k]);
          }
          if (!w.error.empty() && std::getenv("MR_WORKLOAD_DEBUG") != nullptr &&
              c[k].status != WcStatus::kSuccess) {
            std::fprintf(stderr, "  node %u qp %u wr %lu opcode %d: %s\n", i, c[k].qp_num,
                         static_cast<unsigned long>(c[k].wr_id), static_cast<int>(c[k].opcode),
                         WcStatusName(c[k].status));
          }
        }
      }
    }
    for (Stream& s : w.streams) w.PostMore(s);
    for (Node& n : w.nodes) n.sim->Kick();
  }
  WorkloadResult r;
  r.finished = w.AllDone();
  if (r.finished) w.FinalChecks();
  if (!r.finished && w.error.empty()) {
    size_t pending = 0;
    for (const Stream& s : w.streams) pending += s.ops.size() - s.completed + s.recv_expect.size();
    w.Fail(absl::StrCat("timed out with ", pending, " operations or receives pending"));
  }
  r.error = w.error;
  r.ops_completed = w.ops_completed;
  r.bytes_moved = w.bytes_moved;
  r.elapsed_ps = w.fabric->Now() - start;
  return r;
}

}  // namespace metaroce::testing
