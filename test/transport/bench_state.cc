/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Figure 3 of bench_transport: state size per connection, path and QP, from
// sizeof and owned heap, cross-checked against what operator new handed out.

#include <malloc.h>

#include <cstdlib>
#include <vector>

#include "bench_pair.h"

// ---- Heap accounting: every operator new/delete of the process ----
//
// Figure 3 compares its sizeof-based accounting with what the engine really
// allocated. Single-threaded, so plain counters do.

namespace {
size_t g_heap_bytes = 0;  // usable bytes currently held through operator new
}  // namespace

void* operator new(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) std::abort();
  g_heap_bytes += malloc_usable_size(p);
  return p;
}
void* operator new[](size_t n) { return ::operator new(n); }
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_heap_bytes -= malloc_usable_size(p);
  std::free(p);
}
void operator delete[](void* p) noexcept { ::operator delete(p); }
void operator delete(void* p, size_t) noexcept { ::operator delete(p); }
void operator delete[](void* p, size_t) noexcept { ::operator delete(p); }

namespace metaroce::bench {
namespace {

// =====================================================================
// Figure 3: state size
// =====================================================================

// Heap of an engine ring: nothing until its first push.
template <typename T>
size_t QueueHeap(const tr::Ring<T>& r) {
  return r.capacity() * sizeof(T);
}

template <typename T>
size_t VecHeap(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

size_t ChunkSetHeap(const tr::ChunkSet& s) { return s.size() > 64 ? (s.size() + 63) / 64 * 8 : 0; }

size_t SgHeap(const tr::SgList& sg) {
  return sg.capacity() > 4 ? sg.capacity() * sizeof(tr::Sge) : 0;
}

struct StateRow {
  uint16_t paths = 0;
  size_t connection = 0;  ///< sizeof(Connection)
  size_t tx_paths = 0;    ///< paths.capacity() * sizeof(TxPath)
  size_t rx_paths = 0;    ///< rx_paths.capacity() * sizeof(RxPath)
  size_t queues = 0;      ///< rings and small vectors of the connection
  size_t msgs = 0;        ///< message pool (empty when idle)
  size_t index = 0;       ///< entries in the engine's connection maps
  size_t total = 0;
  size_t ring_entries = 0;
  double counted = 0;   ///< operator new bytes per connection while connecting
  double per_path = 0;  ///< (total - total of 1 path) / (paths - 1)
};

struct QpSize {
  size_t qp = 0, window = 0, queues = 0, index = 0, total = 0;
  uint32_t window_msgs = 0;
  double counted = 0;
};

struct StateFigure {
  std::vector<StateRow> rows;
  QpSize qp;
  size_t ring_entries = 0;         ///< in-flight ring entries per path
  BusyState busy_small, busy_big;  ///< after 64-B and after 1-MiB WRITE traffic
  double wall_s = 0;
};

StateRow MeasureConn(uint16_t paths) {
  StateRow r;
  r.paths = paths;
  Pair p(paths);
  p.AddQpPair(256);
  // A first connection of each engine, to another peer, makes what an engine
  // allocates once (its lookup cache, its ring of replies sent without a
  // connection); what follows is per connection.
  p.AddIdleConnections(1);
  const size_t before = g_heap_bytes;
  p.Connect();
  // Both engines made one connection each, with the same number of paths.
  r.counted = static_cast<double>(g_heap_bytes - before) / 2;
  const tr::Connection* c = tr::EnginePeer::ConnTo(p.a(), p.addr_b().ip);
  if (c == nullptr) Die("no connection");
  r.connection = sizeof(tr::Connection);
  r.ring_entries = c->paths.empty() ? 0 : c->paths[0].ring.capacity();
  r.tx_paths = VecHeap(c->paths);
  for (const tr::TxPath& tp : c->paths) r.tx_paths += VecHeap(tp.ring);
  r.rx_paths = VecHeap(c->rx_paths);
  r.queues = QueueHeap(c->ready) + QueueHeap(c->retx) + QueueHeap(c->naks) +
             QueueHeap(c->probe_replies) + QueueHeap(c->ack_queue) + VecHeap(c->qps) +
             VecHeap(c->dirty) + VecHeap(c->free_msgs) + VecHeap(c->encap);
  r.msgs = VecHeap(c->msgs);
  for (const tr::TxMsg& m : c->msgs) {
    r.msgs += ChunkSetHeap(m.delivered) + ChunkSetHeap(m.resp_received) + SgHeap(m.sg);
  }
  // One slot in conns, conn_by_peer and conn_order, plus absl's control byte.
  r.index = sizeof(std::pair<const uint32_t, std::unique_ptr<tr::Connection>>) + 1 +
            sizeof(std::pair<const wire::IpAddr, uint32_t>) + 1 + sizeof(uint32_t);
  r.total = r.connection + r.tx_paths + r.rx_paths + r.queues + r.msgs + r.index;
  return r;
}

}  // namespace

void FillBusy(Pair& p, BusyState* busy) {
  const tr::Connection* c = tr::EnginePeer::ConnTo(p.a(), p.addr_b().ip);
  if (c == nullptr) Die("no connection");
  busy->msg_slots = c->msgs.size();
  busy->msg_bytes = VecHeap(c->msgs);
  for (const tr::TxMsg& m : c->msgs) {
    busy->msg_bytes += ChunkSetHeap(m.delivered) + ChunkSetHeap(m.resp_received) + SgHeap(m.sg);
  }
  for (uint32_t qpn : p.qb()) {
    const tr::Qp* q = tr::EnginePeer::FindQp(p.b(), qpn);
    if (q == nullptr || q->window.size() < busy->window_slots) continue;
    busy->window_slots = q->window.size();
    busy->window_bytes = VecHeap(q->window);
    for (const tr::RxMsg& m : q->window) busy->window_bytes += ChunkSetHeap(m.got);
  }
  for (uint32_t qpn : p.qa()) {
    const tr::Qp* q = tr::EnginePeer::FindQp(p.a(), qpn);
    if (q != nullptr) busy->sq_bytes = std::max(busy->sq_bytes, QueueHeap(q->sq));
  }
}

namespace {

QpSize MeasureQp() {
  QpSize s;
  Pair p(kNumPaths);
  p.AddQpPair(256);  // the maps exist; what follows is per QP
  constexpr int kQps = 16;
  const size_t before = g_heap_bytes;
  tr::QpAttr at;
  at.pd = p.pd_a();
  at.send_cq = at.recv_cq = p.cq_a();
  uint32_t last = 0;
  for (int i = 0; i < kQps; i++) last = Must(p.a().CreateQp(at), "CreateQp");
  s.counted = static_cast<double>(g_heap_bytes - before) / kQps;
  const tr::Qp* q = tr::EnginePeer::FindQp(p.a(), last);
  if (q == nullptr) Die("no QP");
  s.qp = sizeof(tr::Qp);
  s.window_msgs = static_cast<uint32_t>(q->window.size());
  s.window = VecHeap(q->window);
  for (const tr::RxMsg& m : q->window) s.window += ChunkSetHeap(m.got);
  s.queues = QueueHeap(q->sq) + QueueHeap(q->rq);
  s.index = sizeof(std::pair<const uint32_t, std::unique_ptr<tr::Qp>>) + 1;
  s.total = s.qp + s.window + s.queues + s.index;
  return s;
}

StateFigure RunStateFigure() {
  const Clock::time_point wall0 = Clock::now();
  StateFigure f;
  for (uint16_t n : {uint16_t{1}, uint16_t{8}, uint16_t{128}}) f.rows.push_back(MeasureConn(n));
  for (StateRow& r : f.rows) {
    if (r.paths > 1) {
      r.per_path = static_cast<double>(r.total - f.rows[0].total) / (r.paths - 1);
    }
  }
  f.ring_entries = f.rows[0].ring_entries;
  RunCost("state: 64 B WRITEs", 64, 4, 128, 16, 0.05, &f.busy_small);
  RunCost("state: 1 MiB WRITEs", kMsgBytes, 4, 2, 1, 0.05, &f.busy_big);
  f.qp = MeasureQp();
  f.wall_s = SecondsSince(wall0);
  return f;
}

void PrintStateText(const StateFigure& f) {
  std::printf("== Figure 3: engine state per idle connection ==\n");
  std::printf(
      "# connection established between two in-process engines (both num_paths = N), no traffic "
      "yet.\n# Accounting: sizeof(Connection) + paths.capacity() x sizeof(TxPath) + "
      "rx_paths.capacity() x\n# sizeof(RxPath) + queues (rings, empty until used; small vectors; "
      "header "
      "templates)\n# + message pool + map entries.\n# 'counted' = bytes operator new handed out "
      "per connection "
      "while connecting (both engines / 2),\n# each engine's second connection (the first made its "
      "one-time allocations).\n");
  std::printf(
      "# sizeof: Connection %zu, TxPath %zu + in-flight ring %zu x Inflight %zu, RxPath "
      "%zu,\n#   TxMsg %zu, Qp %zu, RxMsg %zu\n",
      sizeof(tr::Connection), sizeof(tr::TxPath), f.ring_entries, sizeof(tr::Inflight),
      sizeof(tr::RxPath), sizeof(tr::TxMsg), sizeof(tr::Qp), sizeof(tr::RxMsg));
  std::printf("%5s | %10s %10s %10s %8s %6s %6s | %10s %10s | %9s\n", "paths", "Connection",
              "TxPaths", "RxPaths", "queues", "msgs", "index", "total B", "counted B", "per path");
  for (const StateRow& r : f.rows) {
    char per[32] = "-";
    if (r.paths > 1) std::snprintf(per, sizeof(per), "%.0f", r.per_path);
    std::printf("%5u | %10zu %10zu %10zu %8zu %6zu %6zu | %10zu %10.0f | %9s\n", r.paths,
                r.connection, r.tx_paths, r.rx_paths, r.queues, r.msgs, r.index, r.total, r.counted,
                per);
  }
  std::printf(
      "# per QP (idle; receive window ring %u slots): Qp %zu + receive window %zu + queues "
      "%zu\n#   + map entry %zu = %zu B; counted %.0f B per QP (16 created)\n",
      f.qp.window_msgs, f.qp.qp, f.qp.window, f.qp.queues, f.qp.index, f.qp.total, f.qp.counted);
  std::printf(
      "# each message posted grows the connection's pool by sizeof(TxMsg) = %zu B (+%zu "
      "B of chunk bitmap for a 1 MiB message); the pool is never shrunk\n",
      sizeof(tr::TxMsg), size_t{(kMsgBytes / 4096 + 63) / 64 * 8});
  for (const auto& [what, b] : {std::pair<const char*, const BusyState*>{
                                    "4 QPs x 128 outstanding 64 B WRITEs", &f.busy_small},
                                {"4 QPs x 2 outstanding 1 MiB WRITEs", &f.busy_big}}) {
    std::printf(
        "# after traffic (%s): sender's message pool %zu slots = %zu B, largest send "
        "queue %zu B;\n#   receiver's largest stream window %zu slots = %zu B\n",
        what, b->msg_slots, b->msg_bytes, b->sq_bytes, b->window_slots, b->window_bytes);
  }
  std::printf("# (%.1f s wall for figure 3)\n\n", f.wall_s);
}

void StateJson(Json& j, const StateFigure& f) {
  j.Open("state", '{');
  j.Open("sizeof", '{');
  j.Int("Connection", sizeof(tr::Connection));
  j.Int("TxPath", sizeof(tr::TxPath));
  j.Int("Inflight", sizeof(tr::Inflight));
  j.Int("RxPath", sizeof(tr::RxPath));
  j.Int("TxMsg", sizeof(tr::TxMsg));
  j.Int("Qp", sizeof(tr::Qp));
  j.Int("RxMsg", sizeof(tr::RxMsg));
  j.Close('}');
  j.Open("connections", '[');
  for (const StateRow& r : f.rows) {
    j.Open(nullptr, '{');
    j.Int("paths", r.paths);
    j.Int("connection", r.connection);
    j.Int("tx_paths", r.tx_paths);
    j.Int("rx_paths", r.rx_paths);
    j.Int("queues", r.queues);
    j.Int("msgs", r.msgs);
    j.Int("index", r.index);
    j.Int("total", r.total);
    j.Num("counted", r.counted);
    if (r.paths > 1) j.Num("per_path", r.per_path);
    j.Close('}');
  }
  j.Close(']');
  j.Open("qp", '{');
  j.Int("window_msgs", f.qp.window_msgs);
  j.Int("qp", f.qp.qp);
  j.Int("window", f.qp.window);
  j.Int("queues", f.qp.queues);
  j.Int("index", f.qp.index);
  j.Int("total", f.qp.total);
  j.Num("counted", f.qp.counted);
  j.Close('}');
  for (const auto& [key, b] : {std::pair<const char*, const BusyState*>{"after_64b", &f.busy_small},
                               {"after_1mib", &f.busy_big}}) {
    j.Open(key, '{');
    j.Int("msg_slots", b->msg_slots);
    j.Int("msg_bytes", b->msg_bytes);
    j.Int("sq_bytes", b->sq_bytes);
    j.Int("window_slots", b->window_slots);
    j.Int("window_bytes", b->window_bytes);
    j.Close('}');
  }
  j.Num("wall_s", f.wall_s);
  j.Close('}');
}

}  // namespace

void StateFigureMain(const Options& o, Json& j) {
  const StateFigure f = RunStateFigure();
  if (o.json) {
    StateJson(j, f);
  } else {
    PrintStateText(f);
  }
  (void)o;
}

}  // namespace metaroce::bench
