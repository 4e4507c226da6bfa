/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// End to end over the simulated fabric, for the engine hardening of wire
// format v1: a peer restarted with the identical configuration, data that
// reaches a QP before it is connected, READs longer than the message-probe
// budget, DestroyQp with queued responses, a blackholed path under ping-pong
// traffic, lost RNR NAKs and the RNR delay, and the restart of the accepting
// side of a connection. Every success is checked against the bytes at its
// destination; every bound is in simulated time.

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "mr_wire.h"
#include "sim_pair.h"

namespace metaroce::testing {
namespace {

using namespace transport;

constexpr sim::SimTime kUs = sim::kPsPerUs;
constexpr sim::SimTime kMs = sim::kPsPerMs;

// ---- Byte patterns: each tag fills a buffer no other tag reproduces ----

uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Byte i depends only on the tag and i: a prefix of a pattern is the pattern.
void Pattern(uint8_t* dst, size_t len, uint64_t tag) {
  for (size_t i = 0; i < len; i += 8) {
    const uint64_t v = Mix((tag << 32) ^ (i / 8));
    std::memcpy(dst + i, &v, std::min<size_t>(8, len - i));
  }
}

bool HasPattern(const uint8_t* p, size_t len, uint64_t tag) {
  std::vector<uint8_t> want(len);
  Pattern(want.data(), len, tag);
  return std::memcmp(p, want.data(), len) == 0;
}

// ---- A tap between a host and its engine: sees, and may drop, what the host receives ----

class Tap : public sim::Endpoint {
 public:
  explicit Tap(sim::EngineNode& inner) : inner_(inner) { inner_.host()->Attach(this); }
  ~Tap() override {
    if (inner_.host()->endpoint() == this) inner_.host()->Attach(&inner_);
  }
  /** Called with every packet that parses, before the engine sees it. */
  std::function<void(sim::SimTime now, const wire::Packet& p)> see;
  /** True: the engine never sees the packet (a loss that hits only such packets). */
  std::function<bool(sim::SimTime now, const wire::Packet& p)> drop;
  uint64_t dropped = 0;

  void OnFrame(sim::SimTime now, std::span<const uint8_t> frame) override {
    wire::ParseOptions opt;
    wire::FrameInfo info;
    wire::Packet p;
    if (wire::ParseFrame(frame, opt, &info, &p) == wire::ParseError::kOk) {
      if (see) see(now, p);
      if (drop && drop(now, p)) {
        dropped++;
        return;
      }
    }
    inner_.OnFrame(now, frame);
  }
  void OnTimer(sim::SimTime now) override { inner_.OnTimer(now); }
  void OnTxReady(sim::SimTime now) override { inner_.OnTxReady(now); }

 private:
  sim::EngineNode& inner_;
};

uint32_t NsOf(sim::SimTime t) { return static_cast<uint32_t>(t / sim::kPsPerNs); }

// ---- A ledger of work requests and receives: a success means the bytes are in place ----

class Ledger {
 public:
  struct Op {
    std::string name;
    int side = 0;
    Opcode opcode = Opcode::kWrite;
    uint32_t len = 0;
    const uint8_t* dst = nullptr;  ///< WRITE: where its bytes must be
    int target = -1;               ///< SEND: the receiving QP (endpoint id)
    bool done = false;
    WcStatus status = WcStatus::kSuccess;
    sim::SimTime at = 0;  ///< completion time
  };
  struct Recv {
    int ep = -1;
    const uint8_t* buf = nullptr;
    bool done = false;
    WcStatus status = WcStatus::kSuccess;
    uint32_t byte_len = 0;
    sim::SimTime at = 0;
  };

  uint64_t NewId() { return next_id_++; }
  void AddOp(uint64_t id, Op op) { ops_[id] = std::move(op); }
  void AddRecv(uint64_t id, Recv r) { recvs_[id] = r; }
  const Op& op(uint64_t id) const { return ops_.at(id); }
  const std::map<uint64_t, Op>& ops() const { return ops_; }
  const std::map<uint64_t, Recv>& recvs() const { return recvs_; }
  const std::vector<std::string>& violations() const { return violations_; }

  /** Receives first (a SEND completes after its receive), then work requests. */
  void Take(const std::vector<Completion>& cs, sim::SimTime now) {
    for (const Completion& c : cs) {
      if (c.opcode == WcOpcode::kRecv || c.opcode == WcOpcode::kRecvRdmaWithImm) TakeRecv(c, now);
    }
    for (const Completion& c : cs) {
      if (c.opcode != WcOpcode::kRecv && c.opcode != WcOpcode::kRecvRdmaWithImm) TakeOp(c, now);
    }
  }

 private:
  void Violation(const std::string& s) { violations_.push_back(s); }

  void TakeRecv(const Completion& c, sim::SimTime now) {
    auto it = recvs_.find(c.wr_id);
    if (it == recvs_.end())
      return Violation("completion for unknown receive " + std::to_string(c.wr_id));
    Recv& r = it->second;
    if (r.done) return Violation("receive " + std::to_string(c.wr_id) + " completed twice");
    r.done = true;
    r.status = c.status;
    r.byte_len = c.byte_len;
    r.at = now;
    if (c.status != WcStatus::kSuccess) return;
    for (const auto& [id, op] : ops_) {
      if (op.opcode == Opcode::kSend && op.target == r.ep && op.len == c.byte_len &&
          HasPattern(r.buf, op.len, id)) {
        return;
      }
    }
    Violation("receive " + std::to_string(c.wr_id) + " succeeded (" + std::to_string(c.byte_len) +
              " bytes) but holds no SEND's bytes");
  }

  void TakeOp(const Completion& c, sim::SimTime now) {
    auto it = ops_.find(c.wr_id);
    if (it == ops_.end()) return Violation("completion for unknown WR " + std::to_string(c.wr_id));
    Op& op = it->second;
    if (op.done) return Violation(op.name + " completed twice");
    op.done = true;
    op.status = c.status;
    op.at = now;
    if (c.status != WcStatus::kSuccess) return;
    if (op.opcode == Opcode::kWrite) {
      if (!HasPattern(op.dst, op.len, c.wr_id)) {
        Violation(op.name + " completed with success but its bytes are not at the destination");
      }
      return;
    }
    for (const auto& [rid, r] : recvs_) {
      if (r.ep == op.target && r.done && r.status == WcStatus::kSuccess && r.byte_len == op.len &&
          HasPattern(r.buf, op.len, c.wr_id)) {
        return;
      }
    }
    Violation(op.name + " completed with success but no receive of its target holds its bytes");
  }

  uint64_t next_id_ = 1000;
  std::map<uint64_t, Op> ops_;
  std::map<uint64_t, Recv> recvs_;
  std::vector<std::string> violations_;
};

std::string Join(const std::vector<std::string>& v, size_t max = 12) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size() && i < max; i++) s << "\n  " << v[i];
  if (v.size() > max) s << "\n  ... " << v.size() - max << " more";
  return s.str();
}

// ---- 1. A peer restarted with the identical configuration ----

// A and B exchange 64 KiB WRITEs and SENDs in both directions; mid-transfer
// B's engine dies and a new one starts on the same host with the identical
// EngineConfig (same seed, same address). The new B (a) connects a QP to A's
// old QP number (stale out-of-band information) and posts to it, and (b)
// both sides connect fresh QPs and transfer. No work request or receive of
// either incarnation may succeed unless its bytes are in place.
TEST(PeerRestart, IdenticallyConfiguredRestartCompletesNothingFalsely) {
  constexpr uint32_t kMsg = 64 << 10;
  Pair::Options o;
  o.mem_bytes = 16 << 20;  // 256 slots of 64 KiB
  Pair p(o);
  Ledger L;
  bool alive[2] = {true, true};
  // Slots per side: sources [0, 64), WRITE targets [64, 128), receive buffers [128, 192).
  int src_next[2] = {0, 0}, dst_next[2] = {64, 64}, rcv_next[2] = {128, 128};
  auto slot = [](int k) { return uint64_t(k) * kMsg; };
  enum Ep { kA0, kOldB0, kNewBStale, kA1, kNewB1 };

  auto post_op = [&](int side, uint32_t qpn, int target, Opcode opc, const std::string& who) {
    const uint64_t id = L.NewId();
    const int s = src_next[side]++;
    Pattern(p.Mem(side).data() + slot(s), kMsg, id);
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = opc;
    wr.sg.push_back({p.Base(side) + slot(s), kMsg, p.Mr(side).lkey});
    Ledger::Op op;
    op.name = who + (opc == Opcode::kWrite ? " WRITE " : " SEND ") + std::to_string(id);
    op.side = side;
    op.opcode = opc;
    op.len = kMsg;
    op.target = target;
    if (opc == Opcode::kWrite) {
      const int d = dst_next[1 - side]++;
      wr.remote_addr = p.Base(1 - side) + slot(d);
      wr.rkey = p.Mr(1 - side).rkey;
      op.dst = p.Mem(1 - side).data() + slot(d);
    }
    L.AddOp(id, op);
    EXPECT_TRUE(p.PostOn(side, qpn, wr).ok());
    return id;
  };
  auto post_recv = [&](int side, uint32_t qpn, int ep) {
    const uint64_t id = L.NewId();
    const int r = rcv_next[side]++;
    RecvWr rw;
    rw.wr_id = id;
    rw.sg.push_back({p.Base(side) + slot(r), kMsg, p.Mr(side).lkey});
    L.AddRecv(id, Ledger::Recv{ep, p.Mem(side).data() + slot(r)});
    EXPECT_TRUE(p.E(side).PostRecv(qpn, rw).ok());
  };
  auto step = [&](sim::SimTime dt) {
    p.fabric().RunUntil(p.fabric().Now() + dt);
    std::vector<Completion> all;
    for (int i = 0; i < 2; i++) {
      if (!alive[i]) continue;
      auto v = p.Poll(i);
      all.insert(all.end(), v.begin(), v.end());
    }
    L.Take(all, p.fabric().Now());
  };
  auto count = [&](const std::vector<uint64_t>& ids, bool success_only) {
    size_t n = 0;
    for (uint64_t id : ids) {
      const auto& op = L.op(id);
      n += op.done && (!success_only || op.status == WcStatus::kSuccess);
    }
    return n;
  };

  // ---- The first incarnation: 24 messages each way, WRITE and SEND alternating.
  const uint32_t qa0 = p.Qpn(0), qb0 = p.Qpn(1);
  for (int k = 0; k < 24; k++) post_recv(0, qa0, kA0);
  for (int k = 0; k < 16; k++) post_recv(1, qb0, kOldB0);
  std::vector<uint64_t> a_old, b_old;
  for (int k = 0; k < 24; k++) {
    const Opcode opc = k % 2 == 0 ? Opcode::kWrite : Opcode::kSend;
    a_old.push_back(post_op(0, qa0, kOldB0, opc, "A(old)"));
    b_old.push_back(post_op(1, qb0, kA0, opc, "old B"));
  }
  // Mid-transfer: some of each side's messages completed, many are in flight.
  for (int i = 0; i < 2000 && (count(a_old, true) < 6 || count(b_old, true) < 6); i++) step(kUs);
  ASSERT_GE(count(a_old, true), 6u);
  ASSERT_GE(count(b_old, true), 6u);
  ASSERT_LT(count(a_old, false), a_old.size()) << "the restart must come mid-transfer";
  ASSERT_LT(count(b_old, false), b_old.size()) << "the restart must come mid-transfer";

  // ---- B's engine dies; 1 ms later a new one starts with the identical configuration.
  p.Kill(1);
  alive[1] = false;
  for (int i = 0; i < 100; i++) step(10 * kUs);
  p.Restart(1);
  alive[1] = true;
  const sim::SimTime restarted_at = p.fabric().Now();

  // (a) The new B connects a QP to A's old QP number and posts to it.
  const uint32_t qb_stale = p.Qpn(1);
  ASSERT_TRUE(p.Connect(1, qb_stale, qa0).ok());
  for (int k = 0; k < 8; k++) post_recv(1, qb_stale, kNewBStale);
  std::vector<uint64_t> b_stale;
  for (int k = 0; k < 8; k++) {
    b_stale.push_back(
        post_op(1, qb_stale, kA0, k % 2 == 0 ? Opcode::kWrite : Opcode::kSend, "new B (stale QP)"));
  }
  for (int i = 0; i < 100; i++) step(10 * kUs);

  // (b) Both sides exchange fresh QP numbers and transfer.
  const uint32_t qa1 = p.AddQp(0), qb1 = p.AddQp(1);
  ASSERT_TRUE(p.Connect(0, qa1, qb1).ok());
  ASSERT_TRUE(p.Connect(1, qb1, qa1).ok());
  for (int k = 0; k < 4; k++) post_recv(0, qa1, kA1);
  for (int k = 0; k < 4; k++) post_recv(1, qb1, kNewB1);
  std::vector<uint64_t> fresh;
  const sim::SimTime fresh_at = p.fabric().Now();
  for (int k = 0; k < 8; k++) {
    const Opcode opc = k % 2 == 0 ? Opcode::kWrite : Opcode::kSend;
    fresh.push_back(post_op(0, qa1, kNewB1, opc, "A(fresh)"));
    fresh.push_back(post_op(1, qb1, kA1, opc, "new B (fresh)"));
  }

  // Every work request the living engines hold completes: A's old ones, the
  // new B's on the stale QP, the fresh ones. (The old B's unfinished ones
  // died with it.)
  std::vector<uint64_t> living = a_old;
  living.insert(living.end(), b_stale.begin(), b_stale.end());
  living.insert(living.end(), fresh.begin(), fresh.end());
  while (count(living, false) < living.size() &&
         p.fabric().Now() < restarted_at + 2 * sim::kPsPerSec) {
    step(10 * kUs);
  }

  EXPECT_TRUE(L.violations().empty())
      << L.violations().size() << " false completions:" << Join(L.violations());
  for (uint64_t id : a_old) {
    const auto& op = L.op(id);
    ASSERT_TRUE(op.done) << op.name << " never completed";
    if (op.at > restarted_at) {
      // Bounded: the new incarnation's handshake ends the old connection.
      EXPECT_LT(op.at - restarted_at, 10 * kMs) << op.name << ": " << WcStatusName(op.status);
    }
  }
  for (uint64_t id : b_stale) {
    const auto& op = L.op(id);
    ASSERT_TRUE(op.done) << op.name << " never completed";
    EXPECT_LT(op.at - restarted_at, sim::kPsPerSec) << op.name;
  }
  for (uint64_t id : fresh) {
    const auto& op = L.op(id);
    ASSERT_TRUE(op.done) << op.name << " never completed";
    EXPECT_EQ(op.status, WcStatus::kSuccess) << op.name << ": " << WcStatusName(op.status);
    EXPECT_LT(op.at - fresh_at, 20 * kMs) << op.name;
  }
  for (const auto& [id, r] : L.recvs()) {
    if (r.ep != kA1 && r.ep != kNewB1) continue;
    EXPECT_TRUE(r.done && r.status == WcStatus::kSuccess)
        << "fresh receive " << id << ": " << (r.done ? WcStatusName(r.status) : "not completed");
  }
  EXPECT_EQ(p.E(0).GetQpState(qa0), QpState::kError) << "A's QP to the old B outlived it";
  EXPECT_GE(p.E(0).stats().conn_restarts, 1u);
}

// ---- 2. Data that reaches a QP before its side called ConnectQp ----

// A connects and posts at once; B's engine accepts the connection (A's
// CONN_REQ arrives) but B's QP is connected only 1.5 ms later, after A's data
// was dropped as addressed to an unknown stream.
TEST(EarlyData, MessagesThatArriveBeforeConnectQpAreDelivered) {
  constexpr uint32_t kMsg = 64 << 10;
  Pair::Options o;
  o.connect_b = false;
  Pair p(o);
  // B's receives are posted; its QP is not connected yet.
  for (uint64_t id : {51, 52}) {
    RecvWr r;
    r.wr_id = id;
    r.sg.push_back({p.Base(1) + (2 << 20) + (id - 51) * kMsg, kMsg, p.Mr(1).lkey});
    ASSERT_TRUE(p.E(1).PostRecv(p.Qpn(1), r).ok());
  }
  // A: WRITE_IMM, SEND, WRITE (64 KiB each) and a one-packet WRITE.
  for (uint64_t tag = 1; tag <= 4; tag++) Pattern(p.Mem(0).data() + tag * kMsg, kMsg, tag);
  SendWr wi = p.Wr(Opcode::kWriteImm, 1 * kMsg, kMsg, 0, 1);
  wi.imm = 0xfeed;
  ASSERT_TRUE(p.Post(0, wi).ok());
  ASSERT_TRUE(p.Post(0, p.Wr(Opcode::kSend, 2 * kMsg, kMsg, 0, 2)).ok());
  ASSERT_TRUE(p.Post(0, p.Wr(Opcode::kWrite, 3 * kMsg, kMsg, kMsg, 3)).ok());
  ASSERT_TRUE(p.Post(0, p.Wr(Opcode::kWrite, 4 * kMsg, 1000, 2 * kMsg, 4)).ok());
  p.fabric().RunUntil(p.fabric().Now() + 1500 * kUs);
  ASSERT_GT(p.E(1).stats().rx_unknown_stream, 0u) << "the data must come before ConnectQp";
  EXPECT_TRUE(p.Poll(0).empty());
  EXPECT_TRUE(p.Poll(1).empty());

  ASSERT_TRUE(p.Connect(1, p.Qpn(1), p.Qpn(0)).ok());
  const sim::SimTime connected_at = p.fabric().Now();
  auto c = p.Wait(0, 4, sim::kPsPerSec);
  const sim::SimTime done_at = p.fabric().Now();
  ASSERT_EQ(c.size(), 4u);
  for (size_t i = 0; i < 4; i++) {
    EXPECT_EQ(c[i].wr_id, i + 1);
    EXPECT_EQ(c[i].status, WcStatus::kSuccess)
        << "WR " << i + 1 << ": " << WcStatusName(c[i].status);
  }
  EXPECT_LT(done_at - connected_at, 20 * kMs);
  EXPECT_TRUE(HasPattern(p.Mem(1).data(), kMsg, 1)) << "WRITE_IMM bytes";
  EXPECT_TRUE(HasPattern(p.Mem(1).data() + kMsg, kMsg, 3)) << "WRITE bytes";
  EXPECT_TRUE(HasPattern(p.Mem(1).data() + 2 * kMsg, 1000, 4)) << "small WRITE bytes";
  auto r = p.Wait(1, 2, 10 * kMs);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].wr_id, 51u);
  EXPECT_EQ(r[0].status, WcStatus::kSuccess);
  EXPECT_EQ(r[0].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(r[0].imm, 0xfeedu);
  EXPECT_EQ(r[1].wr_id, 52u);
  EXPECT_EQ(r[1].status, WcStatus::kSuccess);
  EXPECT_EQ(r[1].byte_len, kMsg);
  EXPECT_TRUE(HasPattern(p.Mem(1).data() + (2 << 20) + kMsg, kMsg, 2)) << "SEND bytes";
}

// ---- 3. A READ longer than the whole message-probe budget ----

// retry_cnt 1 and message probes every 2-4 us: the budget is spent ~100 us
// after the request was delivered, but a 40 MiB response takes about 1 ms.
TEST(LongRead, ReadOutlastingTheProbeBudgetCompletes) {
  for (double loss : {0.0, 0.01}) {
    SCOPED_TRACE(loss);
    constexpr uint32_t kLen = 40 << 20;
    Pair::Options o;
    o.mem_bytes = kLen + (1 << 20);
    o.qp.retry_cnt = 1;
    o.cfg.msg_probe_min_ns = 2'000;
    o.cfg.msg_probe_max_ns = 4'000;
    Pair p(o);
    if (loss > 0) {
      sim::FaultConfig f;
      f.loss_probability = loss;
      ASSERT_TRUE(p.fabric().SetAllLinkFaults(f).ok());
    }
    Pattern(p.Mem(1).data(), kLen, 77);
    const sim::SimTime start = p.fabric().Now();
    ASSERT_TRUE(p.Post(0, p.Wr(Opcode::kRead, 0, kLen, 0, 1)).ok());
    auto c = p.Wait(0, 1, 2 * sim::kPsPerSec);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, WcStatus::kSuccess) << WcStatusName(c[0].status);
    EXPECT_EQ(c[0].byte_len, kLen);
    EXPECT_TRUE(HasPattern(p.Mem(0).data(), kLen, 77)) << "READ bytes";
    // The test means something only if the READ outlasted the probe budget.
    EXPECT_GT(p.fabric().Now() - start, 500 * kUs);
    if (loss == 0) {
      // The QP still works.
      Pattern(p.Mem(0).data() + kLen, 4096, 78);
      ASSERT_TRUE(p.Post(0, p.Wr(Opcode::kWrite, kLen, 4096, kLen, 2)).ok());
      c = p.Wait(0, 2, 10 * kMs);
      ASSERT_EQ(c.size(), 2u);
      EXPECT_EQ(c[1].status, WcStatus::kSuccess) << WcStatusName(c[1].status);
      EXPECT_TRUE(HasPattern(p.Mem(1).data() + kLen, 4096, 78));
    }
  }
}

// ---- 4. DestroyQp with queued READ/ATOMIC responses ----

// Two QP pairs between A and B. A posts a 16 MiB READ and two atomics on pair
// 1; B destroys its pair-1 QP while the READ response is being sent.
struct DestroyedResponder {
  static constexpr uint32_t kRead = 16 << 20;
  static constexpr uint64_t kAtomicOff = 17 << 20;
  Pair p{MakeOptions()};
  uint32_t qa2 = 0, qb2 = 0;

  static Pair::Options MakeOptions() {
    Pair::Options o;
    o.mem_bytes = 24 << 20;
    return o;
  }

  // Returns false (with a test failure) if the response was not caught mid-flight.
  bool DestroyMidResponse() {
    qa2 = p.AddQp(0);
    qb2 = p.AddQp(1);
    EXPECT_TRUE(p.Connect(0, qa2, qb2).ok());
    EXPECT_TRUE(p.Connect(1, qb2, qa2).ok());
    Pattern(p.Mem(1).data(), kRead, 5);
    EXPECT_TRUE(p.Post(0, p.Wr(Opcode::kRead, 0, kRead, 0, 1)).ok());
    for (uint64_t id : {2, 3}) {
      SendWr fa = p.Wr(Opcode::kAtomicFetchAdd, kAtomicOff + id * 8, 8, kAtomicOff, id);
      fa.compare_add = 1;
      EXPECT_TRUE(p.Post(0, fa).ok());
    }
    // Until the first response chunk landed.
    for (int i = 0; i < 1000 && !HasPattern(p.Mem(0).data(), 4096, 5); i++) {
      p.fabric().RunUntil(p.fabric().Now() + kUs);
    }
    const bool flowing = HasPattern(p.Mem(0).data(), 4096, 5);
    const bool done = HasPattern(p.Mem(0).data() + kRead - 4096, 4096, 5);
    EXPECT_TRUE(flowing && !done) << "the response must be caught while it is sent";
    EXPECT_TRUE(p.E(1).DestroyQp(p.Qpn(1)).ok());
    return flowing && !done;
  }
};

TEST(DestroyQp, QueuedResponsesDoNotStopTheConnectionsOtherQps) {
  DestroyedResponder d;
  ASSERT_TRUE(d.DestroyMidResponse());
  Pair& p = d.p;
  constexpr uint32_t kMsg = 64 << 10;
  constexpr uint64_t kDst = 18 << 20, kSrc = 21 << 20, kReadSrc = 20 << 20;
  // Pair 2, afterwards: WRITEs both ways and a READ (whose response B sends).
  for (int side = 0; side < 2; side++) {
    for (int k = 0; k < 8; k++) {
      const uint64_t tag = 100 * (side + 1) + k;
      Pattern(p.Mem(side).data() + kSrc + k * kMsg, kMsg, tag);
      ASSERT_TRUE(
          p.PostOn(side, side == 0 ? d.qa2 : d.qb2,
                   p.WrFrom(side, Opcode::kWrite, kSrc + k * kMsg, kMsg, kDst + k * kMsg, tag))
              .ok());
    }
  }
  Pattern(p.Mem(1).data() + kReadSrc, 256 << 10, 300);
  ASSERT_TRUE(p.PostOn(0, d.qa2, p.Wr(Opcode::kRead, kReadSrc, 256 << 10, kReadSrc, 300)).ok());
  const sim::SimTime posted = p.fabric().Now();
  std::map<uint64_t, Completion> got[2];
  sim::SimTime last = 0;
  while (p.fabric().Now() < posted + 20 * kMs) {
    p.fabric().RunUntil(p.fabric().Now() + 5 * kUs);
    for (int side = 0; side < 2; side++) {
      for (const Completion& c : p.Poll(side)) {
        if (c.qp_num != (side == 0 ? d.qa2 : d.qb2)) continue;
        got[side][c.wr_id] = c;
        last = p.fabric().Now();
      }
    }
    if (got[0].size() == 9 && got[1].size() == 8) break;
  }
  EXPECT_EQ(got[0].size(), 9u) << "pair 2 stalled behind the destroyed QP's response (A side)";
  EXPECT_EQ(got[1].size(), 8u) << "pair 2 stalled behind the destroyed QP's response (B side)";
  for (int side = 0; side < 2; side++) {
    for (const auto& [id, c] : got[side]) {
      EXPECT_EQ(c.status, WcStatus::kSuccess) << "WR " << id << ": " << WcStatusName(c.status);
    }
    for (int k = 0; k < 8; k++) {
      EXPECT_TRUE(HasPattern(p.Mem(1 - side).data() + kDst + k * kMsg, kMsg, 100 * (side + 1) + k))
          << "WRITE " << 100 * (side + 1) + k;
    }
  }
  EXPECT_TRUE(HasPattern(p.Mem(0).data() + kReadSrc, 256 << 10, 300)) << "pair-2 READ bytes";
  EXPECT_LT(last - posted, 2 * kMs) << "pair 2 was slowed down";
}

// The requester's READ and atomics whose responder QP was destroyed
// mid-response end (with an error) in bounded time; nothing hangs.
TEST(DestroyQp, RequestsWhoseResponderQpIsDestroyedComplete) {
  DestroyedResponder d;
  ASSERT_TRUE(d.DestroyMidResponse());
  Pair& p = d.p;
  auto c = p.Wait(0, 3, 2 * sim::kPsPerSec);
  ASSERT_EQ(c.size(), 3u) << "the pair-1 READ/atomics hung after the responder's QP was destroyed";
  for (const Completion& e : c) {
    if (e.wr_id == 1) {
      EXPECT_NE(e.status, WcStatus::kSuccess) << "the READ cannot have all its bytes";
    }
  }
}

// ---- 5. A blackholed path under ping-pong traffic ----

// One single-packet WRITE in flight at a time on a 2-leaf x 4-spine fabric, 8
// paths; one leaf-spine link dies. A packet on a path through it is repaired
// on another path within microseconds, and the path is failed.
class PingPong {
 public:
  explicit PingPong(Pair& p) : p_(p) {}
  /** One WRITE round trip; its latency, or kSimTimeNever (with a failure). */
  sim::SimTime Ping(uint64_t tag, bool kick_only = false) {
    const uint64_t off = (tag % 256) * kLen;
    Pattern(p_.Mem(0).data() + off, kLen, tag);
    const sim::SimTime start = p_.fabric().Now();
    EXPECT_TRUE(p_.Post(0, p_.Wr(Opcode::kWrite, off, kLen, (1 << 20) + off, tag)).ok());
    n_++;
    if (kick_only) return 0;
    return Finish(tag, start);
  }
  sim::SimTime Finish(uint64_t tag, sim::SimTime start) {
    auto c = p_.Wait(0, n_, sim::kPsPerSec);
    if (c.size() != n_) {
      ADD_FAILURE() << "WRITE " << tag << " did not complete";
      return sim::kSimTimeNever;
    }
    EXPECT_EQ(c.back().wr_id, tag);
    EXPECT_EQ(c.back().status, WcStatus::kSuccess) << WcStatusName(c.back().status);
    const uint64_t off = (tag % 256) * kLen;
    EXPECT_TRUE(HasPattern(p_.Mem(1).data() + (1 << 20) + off, kLen, tag)) << "WRITE " << tag;
    return p_.fabric().Now() - start;
  }

 private:
  static constexpr uint32_t kLen = 1024;
  Pair& p_;
  size_t n_ = 0;
};

TEST(Blackhole, PingPongOverADeadSpineLinkFailsThePathAndStaysFast) {
  // Each spine in turn: its link to A's leaf carries some paths' data, or
  // some paths' ACKs, or both.
  for (uint32_t spine = 0; spine < 4; spine++) {
    SCOPED_TRACE(spine);
    Pair::Options o;
    o.leaf_spine = true;
    o.cfg.num_paths = 8;
    Pair p(o);
    PingPong pp(p);
    bool warm = true;
    for (uint64_t t = 1; t <= 20; t++) warm &= pp.Ping(t) != sim::kSimTimeNever;
    ASSERT_TRUE(warm);
    ASSERT_EQ(p.E(0).stats().path_failures, 0u);
    const sim::SimTime cut_at = p.fabric().Now();
    sim::FaultConfig cut;
    cut.blackhole_at_ps = cut_at;
    ASSERT_TRUE(p.fabric().SetLinkFaults(p.topo().fabric_link(0, spine), cut).ok());
    std::vector<sim::SimTime> lat;
    size_t failed_at_op = SIZE_MAX;
    sim::SimTime failed_at = 0;
    for (uint64_t i = 0; i < 300; i++) {
      lat.push_back(pp.Ping(1000 + i));
      if (failed_at_op == SIZE_MAX && p.E(0).stats().path_failures > 0) {
        failed_at_op = i;
        failed_at = p.fabric().Now();
      }
    }
    // A path through the dead link is failed after its three timeouts
    // (RTO 100, 200, 400 us: rescued round trips meanwhile carry the others'
    // progress), i.e. within a millisecond and some tens of round trips.
    ASSERT_NE(failed_at_op, SIZE_MAX) << "no path was failed";
    EXPECT_LT(failed_at_op, 100u);
    EXPECT_LT(failed_at - cut_at, kMs)
        << "first path failure " << (failed_at - cut_at) / kUs << " us after the cut";
    // No round trip waits for a (backed-off) RTO: at worst a tail-loss probe
    // and its rescue on another path; once the paths are failed, none at all.
    const sim::SimTime slowest = *std::max_element(lat.begin(), lat.end());
    const sim::SimTime slowest_late = *std::max_element(lat.begin() + 100, lat.end());
    EXPECT_LT(slowest, 2 * kMs) << "a round trip took " << slowest / kUs << " us";
    EXPECT_LT(slowest_late, 500 * kUs)
        << "a round trip after the first 100 took " << slowest_late / kUs << " us";
    uint64_t path_failures = 0;
    for (const PathInfo& pi : p.E(0).GetPaths(p.host(1)->ipv4())) path_failures += pi.failures;
    EXPECT_GT(path_failures, 0u);
    EXPECT_EQ(p.E(0).stats().conn_failures, 0u);
    EXPECT_EQ(p.E(1).stats().conn_failures, 0u);
  }
}

// The contrast (spec 8.2): while the whole peer stalls, every path is silent
// alike, and the tail-loss rescue on another path must not make any path
// look bad. Four stalls of 3 ms under ping-pong; no path may fail during one.
TEST(Blackhole, AWholePeerStallUnderPingPongFailsNoPath) {
  Pair::Options o;
  o.leaf_spine = true;
  o.cfg.num_paths = 8;
  Pair p(o);
  PingPong pp(p);
  uint64_t tag = 1;
  for (; tag <= 20; tag++) pp.Ping(tag);
  for (int stall = 0; stall < 4; stall++) {
    SCOPED_TRACE(stall);
    const EngineStats before = p.E(0).stats();
    p.host(1)->Attach(nullptr);  // B is descheduled: nothing it receives is seen
    const sim::SimTime start = p.fabric().Now();
    pp.Ping(tag, /*kick_only=*/true);
    p.fabric().RunUntil(p.fabric().Now() + 3 * kMs);
    const EngineStats& during = p.E(0).stats();
    EXPECT_EQ(during.path_failures - before.path_failures, 0u)
        << "paths failed while the whole peer stalled (of them for loss: "
        << during.path_loss_failures - before.path_loss_failures << "; "
        << during.tx_data_pkts - before.tx_data_pkts << " data packets sent for one 1 KiB WRITE)";
    p.host(1)->Attach(&p.node(1));
    p.node(1).Kick();
    pp.Finish(tag++, start);
    for (int k = 0; k < 10; k++) pp.Ping(tag++);
  }
  EXPECT_EQ(p.E(0).stats().conn_failures, 0u);
}

// ---- 6. Receiver not ready ----

// The receiver posts its receive only after it sent RNR NAKs, and those NAKs
// are lost (all of them, or every other one): the SEND and the WRITE_IMM
// still complete with the right bytes.
TEST(Rnr, LostRnrNaksDoNotLoseTheMessage) {
  for (int mode : {0, 1}) {
    SCOPED_TRACE(mode == 0 ? "every RNR NAK lost" : "every other RNR NAK lost");
    constexpr uint32_t kLen = 40 << 10;  // 10 chunks
    Pair::Options o;
    o.qp.min_rnr_delay_ns = 50'000;
    Pair p(o);
    Tap tap(p.node(0));
    int rnr_naks = 0;
    tap.drop = [&](sim::SimTime, const wire::Packet& pk) {
      if (pk.type != wire::PacketType::kNak || pk.nak.code != wire::NakCode::kReceiverNotReady) {
        return false;
      }
      return mode == 0 || rnr_naks++ % 2 == 0;
    };
    Pattern(p.Mem(0).data(), kLen, 11);
    Pattern(p.Mem(0).data() + kLen, kLen, 12);
    ASSERT_TRUE(p.Post(0, p.Wr(Opcode::kSend, 0, kLen, 0, 1)).ok());
    SendWr wi = p.Wr(Opcode::kWriteImm, kLen, kLen, 0, 2);
    wi.imm = 0xabc;
    ASSERT_TRUE(p.Post(0, wi).ok());
    for (int i = 0; i < 1000 && p.E(1).stats().tx_naks == 0; i++) {
      p.fabric().RunUntil(p.fabric().Now() + kUs);
    }
    ASSERT_GT(p.E(1).stats().tx_naks, 0u);
    p.fabric().RunUntil(p.fabric().Now() + 300 * kUs);
    EXPECT_TRUE(p.Poll(0).empty());
    for (uint64_t id : {51, 52}) {
      RecvWr r;
      r.wr_id = id;
      r.sg.push_back({p.Base(1) + (id - 50) * (1 << 20), 64 << 10, p.Mr(1).lkey});
      ASSERT_TRUE(p.E(1).PostRecv(p.Qpn(1), r).ok());
    }
    const sim::SimTime posted = p.fabric().Now();
    auto c = p.Wait(0, 2, sim::kPsPerSec);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].status, WcStatus::kSuccess) << WcStatusName(c[0].status);
    EXPECT_EQ(c[1].status, WcStatus::kSuccess) << WcStatusName(c[1].status);
    EXPECT_LT(p.fabric().Now() - posted, 50 * kMs);
    EXPECT_GT(tap.dropped, 0u);
    auto r = p.Wait(1, 2, 10 * kMs);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].wr_id, 51u);
    EXPECT_EQ(r[0].status, WcStatus::kSuccess);
    EXPECT_EQ(r[0].byte_len, kLen);
    EXPECT_TRUE(HasPattern(p.Mem(1).data() + (1 << 20), kLen, 11)) << "SEND bytes";
    EXPECT_EQ(r[1].wr_id, 52u);
    EXPECT_EQ(r[1].status, WcStatus::kSuccess);
    EXPECT_EQ(r[1].imm, 0xabcu);
    EXPECT_TRUE(HasPattern(p.Mem(1).data(), kLen, 12)) << "WRITE_IMM bytes";
  }
}

// After an RNR NAK the requester sends nothing of that message until the
// receiver's min_rnr_delay_ns passed, then the whole message again.
TEST(Rnr, RequesterHonoursTheRnrDelay) {
  // 256 chunks, more than the NIC queue holds: the NAK comes back while the
  // engine is still handing out the first attempt.
  constexpr uint32_t kLen = 1 << 20;
  constexpr TimeNs kDelay = 200'000;
  Pair::Options o;
  o.qp.min_rnr_delay_ns = kDelay;
  Pair p(o);
  Tap tap_a(p.node(0)), tap_b(p.node(1));
  std::vector<uint32_t> naks;  // RNR NAK arrivals at A (ns)
  tap_a.see = [&](sim::SimTime now, const wire::Packet& pk) {
    if (pk.type == wire::PacketType::kNak && pk.nak.code == wire::NakCode::kReceiverNotReady) {
      naks.push_back(NsOf(now));
    }
  };
  std::vector<uint32_t> sent;    // tx time of every chunk of the SEND (ns)
  std::vector<uint32_t> starts;  // of those, the first chunk of each attempt
  tap_b.see = [&](sim::SimTime, const wire::Packet& pk) {
    if (pk.type != wire::PacketType::kSend) return;
    sent.push_back(pk.data.tx_ts_ns);
    if (pk.data.msg_offset == 0 && (pk.flags & wire::flags::kRetransmit) == 0) {
      starts.push_back(pk.data.tx_ts_ns);
    }
  };
  Pattern(p.Mem(0).data(), kLen, 21);
  ASSERT_TRUE(p.Post(0, p.Wr(Opcode::kSend, 0, kLen, 0, 1)).ok());
  p.fabric().RunUntil(p.fabric().Now() + kMs);
  RecvWr r;
  r.wr_id = 9;
  r.sg.push_back({p.Base(1), kLen, p.Mr(1).lkey});
  ASSERT_TRUE(p.E(1).PostRecv(p.Qpn(1), r).ok());
  auto c = p.Wait(0, 1, sim::kPsPerSec);
  auto rc = p.Wait(1, 1, 10 * kMs);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(rc.size(), 1u);
  if (c.size() == 1 && rc.size() == 1) {
    EXPECT_EQ(c[0].status, WcStatus::kSuccess) << WcStatusName(c[0].status);
    EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
    EXPECT_EQ(rc[0].byte_len, kLen);
    EXPECT_TRUE(HasPattern(p.Mem(1).data(), kLen, 21)) << "SEND bytes";
  }

  ASSERT_FALSE(naks.empty());
  ASSERT_GE(starts.size(), 2u) << "the message was never sent again";
  // Nothing of the message between the first RNR NAK and the end of its delay.
  size_t early = 0;
  for (uint32_t t : sent) {
    const int32_t d = static_cast<int32_t>(t - naks[0]);
    early += d > 0 && d < static_cast<int32_t>(kDelay);
  }
  EXPECT_EQ(early, 0u) << "chunks of the NAKed message were sent within the RNR delay";
  // Every attempt starts at least the delay after the one before.
  for (size_t k = 1; k < starts.size(); k++) {
    EXPECT_GE(starts[k] - starts[k - 1], kDelay) << "attempt " << k;
  }
  // About one attempt per delay while the receive was missing, and no more
  // packets than the attempts need.
  EXPECT_LE(starts.size(), 1 + 1'000'000 / kDelay + 2);
  EXPECT_LE(sent.size(), starts.size() * (kLen / 4096 + 4));
}

// ---- 7. The accepting side restarts; the survivor only waits on receives ----

TEST(PeerRestart, SurvivorWaitingOnReceivesFailsWhenTheAcceptorRestarts) {
  for (bool reconnect : {false, true}) {
    SCOPED_TRACE(reconnect ? "the new incarnation reconnects" : "the new incarnation stays idle");
    Pair::Options o;
    o.connect_b = false;
    Pair p(o);
    // A opens the connection, B's engine accepts it; then B's QP joins.
    p.node(0).Kick();
    p.fabric().RunUntil(p.fabric().Now() + 200 * kUs);
    auto conns = p.E(1).GetConnections();
    ASSERT_EQ(conns.size(), 1u);
    ASSERT_EQ(conns[0].state, ConnInfo::State::kUp);
    ASSERT_TRUE(p.Connect(1, p.Qpn(1), p.Qpn(0)).ok());
    // A's QP only waits on receives.
    for (uint64_t id = 1; id <= 4; id++) {
      RecvWr r;
      r.wr_id = id;
      r.sg.push_back({p.Base(0) + (1 << 20) + id * 4096, 4096, p.Mr(0).lkey});
      ASSERT_TRUE(p.E(0).PostRecv(p.Qpn(0), r).ok());
    }
    Pattern(p.Mem(1).data(), 4096, 31);
    ASSERT_TRUE(p.Post(1, p.WrFrom(1, Opcode::kSend, 0, 4096, 0, 10)).ok());
    auto sc = p.Wait(1, 1);
    ASSERT_EQ(sc.size(), 1u);
    ASSERT_EQ(sc[0].status, WcStatus::kSuccess);
    auto rc = p.Wait(0, 1);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
    EXPECT_TRUE(HasPattern(p.Mem(0).data() + (1 << 20) + 4096, 4096, 31));

    // B's engine restarts with the identical configuration.
    p.Restart(1);
    const sim::SimTime restarted = p.fabric().Now();
    if (reconnect) {
      // The application reconnects with what it knew: A's QP number.
      ASSERT_TRUE(p.Connect(1, p.Qpn(1), p.Qpn(0)).ok());
    }
    EngineConfig defaults;
    auto c = p.Wait(0, 4, defaults.conn_fail_after_ns * sim::kPsPerNs + 100 * kMs);
    ASSERT_EQ(c.size(), 4u) << "A's receives hung after B restarted";
    for (size_t i = 1; i < 4; i++) {
      EXPECT_EQ(c[i].status, WcStatus::kWrFlushErr) << WcStatusName(c[i].status);
    }
    EXPECT_EQ(p.E(0).GetQpState(p.Qpn(0)), QpState::kError);
    const sim::SimTime took = p.fabric().Now() - restarted;
    if (reconnect) {
      EXPECT_LT(took, 5 * kMs) << "the reconnecting incarnation did not end the old connection";
      EXPECT_GE(p.E(0).stats().conn_restarts, 1u);
    } else {
      EXPECT_LE(took, defaults.conn_fail_after_ns * sim::kPsPerNs + 5 * kUs);
    }
  }
}

}  // namespace
}  // namespace metaroce::testing
