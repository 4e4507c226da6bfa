/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// What a daemon serving several applications needs from one engine: two QPs
// of the engine connected to each other (two applications on one host; the
// engine's packets to its own address come straight back and the connection
// is its own peer), memory accesses tagged with the PD's owner, failures of
// unreachable memory turned into verbs errors, QP numbers that name their
// shard, ready-CQ lists and an explicit move to the error state.

#include <array>
#include <cstring>
#include <vector>

#include "engine_unit_fixture.h"

namespace metaroce::transport::unit {
namespace {

constexpr uint64_t kOwnerA = 0xa11ce;
constexpr uint64_t kOwnerB = 0xb0b;
constexpr size_t kRegion = 256 * 1024;

class LoopbackTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(EngineConfig{}); }

  void Start(EngineConfig cfg) {
    cfg.local_ip = LocalIp();
    cfg.local_mac = LocalMac();
    cfg.num_paths = 4;
    auto e = Engine::Create(cfg, &mem_);
    ASSERT_TRUE(e.ok()) << e.status();
    eng_ = std::move(*e);
    for (int side = 0; side < 2; side++) {
      End& x = end_[side];
      x.pd = *eng_->AllocPd(side == 0 ? kOwnerA : kOwnerB);
      x.cq = *eng_->CreateCq(1024);
      QpAttr qa;
      qa.pd = x.pd;
      qa.send_cq = qa.recv_cq = x.cq;
      auto q = eng_->CreateQp(qa);
      ASSERT_TRUE(q.ok()) << q.status();
      x.qpn = *q;
      x.buf.assign(kRegion, 0);
      x.mr = *eng_->RegMr(x.pd, Va(side, 0), kRegion, access::kAll);
    }
    const PeerAddr self{cfg.local_ip, cfg.local_mac, cfg.udp_port};
    ASSERT_TRUE(eng_->ConnectQp(end_[0].qpn, self, end_[1].qpn).ok());
    ASSERT_TRUE(eng_->ConnectQp(end_[1].qpn, self, end_[0].qpn).ok());
  }

  // Restarts with QP numbers ending in 5 over 4 bits.
  void StartTagged() {
    EngineConfig cfg;
    cfg.qpn_tag_bits = 4;
    cfg.qpn_tag = 5;
    eng_.reset();
    Start(cfg);
  }

  uint64_t Va(int side, size_t off) {
    return reinterpret_cast<uint64_t>(end_[side].buf.data()) + off;
  }

  SendWr Wr(Opcode op, size_t len, uint64_t id = 1) {
    SendWr w;
    w.wr_id = id;
    w.opcode = op;
    w.sg.push_back({Va(0, 0), static_cast<uint32_t>(len), end_[0].mr.lkey});
    w.remote_addr = Va(1, 64 * 1024);
    w.rkey = end_[1].mr.rkey;
    return w;
  }

  void PostRecvB(size_t len) {
    RecvWr r;
    r.wr_id = 77;
    r.sg.push_back({Va(1, 128 * 1024), static_cast<uint32_t>(len), end_[1].mr.lkey});
    ASSERT_TRUE(eng_->PostRecv(end_[1].qpn, r).ok());
  }

  // Runs the engine, its output looped back into it, until @p want
  // completions arrived on @p side's CQ (or a simulated second passed).
  std::vector<Completion> Run(int side, size_t want, int steps = 1'000'000) {
    std::vector<Completion> got;
    std::array<TxSlot, 16> slots;
    std::vector<std::vector<uint8_t>> bufs(slots.size(), std::vector<uint8_t>(kSlotBytes));
    for (int i = 0; i < steps && got.size() < want; i++) {
      now_ += 1000;
      for (size_t s = 0; s < slots.size(); s++) {
        slots[s] = TxSlot{};
        slots[s].buf = bufs[s].data();
        slots[s].cap = kSlotBytes;
      }
      const size_t n = eng_->PollTx(now_, slots);
      for (size_t s = 0; s < n; s++) eng_->OnFrame(now_, {bufs[s].data(), slots[s].len});
      std::array<Completion, 16> c;
      const size_t k = eng_->PollCq(end_[side].cq, c);
      got.insert(got.end(), c.begin(), c.begin() + k);
    }
    return got;
  }

  // New QPs on both sides (numbered @p qpns, 0: by the engine), connected to
  // each other; a WRITE between them succeeds.
  void ReconnectAndWrite(std::array<uint32_t, 2> qpns = {0, 0}) {
    for (int side = 0; side < 2; side++) {
      QpAttr qa;
      qa.pd = end_[side].pd;
      qa.send_cq = qa.recv_cq = end_[side].cq;
      auto q = qpns[side] != 0 ? eng_->CreateQp(qa, qpns[side]) : eng_->CreateQp(qa);
      ASSERT_TRUE(q.ok()) << q.status();
      ASSERT_TRUE(qpns[side] == 0 || *q == qpns[side]);
      end_[side].qpn = *q;
    }
    const PeerAddr self{LocalIp(), LocalMac(), wire::kDefaultUdpPort};
    ASSERT_TRUE(eng_->ConnectQp(end_[0].qpn, self, end_[1].qpn).ok());
    ASSERT_TRUE(eng_->ConnectQp(end_[1].qpn, self, end_[0].qpn).ok());
    std::array<Completion, 64> stale;
    while (eng_->PollCq(end_[0].cq, stale) != 0) {
    }
    ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kWrite, 60'000, 99)).ok());
    std::vector<Completion> c = Run(0, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].wr_id, 99u);
    EXPECT_EQ(c[0].status, WcStatus::kSuccess) << WcStatusName(c[0].status);
  }

  struct End {
    uint32_t pd = 0, cq = 0, qpn = 0;
    MrInfo mr;
    std::vector<uint8_t> buf;
  };
  RecordingMemory mem_;
  std::unique_ptr<Engine> eng_;
  std::array<End, 2> end_;
  TimeNs now_ = 1'000'000;
};

TEST_F(LoopbackTest, TwoQpsOfOneEngineShareOneConnectionToItself) {
  for (size_t i = 0; i < 60'000; i++) end_[0].buf[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kWrite, 60'000, 1)).ok());
  PostRecvB(4096);
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kSend, 3000, 2)).ok());
  std::memset(end_[1].buf.data() + 200 * 1024, 0x5a, 8);
  SendWr rd = Wr(Opcode::kRead, 8, 3);
  rd.sg[0].addr = Va(0, 100'000);
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, rd).ok());
  SendWr fa = Wr(Opcode::kAtomicFetchAdd, 8, 4);
  fa.sg[0].addr = Va(0, 100'008);
  fa.remote_addr = Va(1, 200 * 1024);  // not where the READ reads: nothing orders the two
  fa.compare_add = 5;
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, fa).ok());

  std::vector<Completion> a = Run(0, 4);
  ASSERT_EQ(a.size(), 4u);
  for (const Completion& c : a) EXPECT_EQ(c.status, WcStatus::kSuccess) << WcStatusName(c.status);
  std::vector<Completion> b = Run(1, 1);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].wr_id, 77u);
  EXPECT_EQ(b[0].byte_len, 3000u);
  // The READ ran after the WRITE on the same stream: it sees the written bytes.
  EXPECT_EQ(0, std::memcmp(end_[0].buf.data(), end_[1].buf.data() + 64 * 1024, 60'000));
  EXPECT_EQ(0, std::memcmp(end_[0].buf.data(), end_[1].buf.data() + 128 * 1024, 3000));
  EXPECT_EQ(0, std::memcmp(end_[0].buf.data(), end_[0].buf.data() + 100'000, 8));
  uint64_t after;
  std::memcpy(&after, end_[1].buf.data() + 200 * 1024, 8);
  uint64_t before;
  std::memcpy(&before, end_[0].buf.data() + 100'008, 8);
  EXPECT_EQ(before, 0x5a5a5a5a5a5a5a5au);
  EXPECT_EQ(after, before + 5);

  const std::vector<ConnInfo> conns = eng_->GetConnections();
  ASSERT_EQ(conns.size(), 1u);
  EXPECT_EQ(conns[0].num_qps, 2u);
  EXPECT_EQ(conns[0].remote_conn_id, conns[0].conn_id);
  EXPECT_EQ(conns[0].state, ConnInfo::State::kUp);
}

TEST_F(LoopbackTest, EveryMemoryAccessCarriesItsPdOwner) {
  PostRecvB(4096);
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kWrite, 5000, 1)).ok());
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kSend, 100, 2)).ok());
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kRead, 100, 3)).ok());
  ASSERT_EQ(Run(0, 3).size(), 3u);
  size_t a = 0, b = 0;
  for (uint64_t o : mem_.owners) {
    ASSERT_TRUE(o == kOwnerA || o == kOwnerB) << o;
    (o == kOwnerA ? a : b)++;
  }
  // A gathers the WRITE and the SEND and places the READ; B places both and serves the READ.
  EXPECT_GT(a, 0u);
  EXPECT_GT(b, 0u);
}

// The responder's memory is out of reach (its application unmapped it or
// died): the requester gets a remote access error, never a success.
TEST_F(LoopbackTest, UnreachableResponderMemoryIsARemoteAccessError) {
  const Opcode ops[] = {Opcode::kWrite, Opcode::kRead, Opcode::kAtomicFetchAdd, Opcode::kSend};
  for (Opcode op : ops) {
    SCOPED_TRACE(static_cast<int>(op));
    eng_.reset();
    mem_.unreachable_owner = kOwnerB;
    Start(EngineConfig{});
    if (op == Opcode::kSend) PostRecvB(4096);
    const size_t len = op == Opcode::kAtomicFetchAdd ? 8 : 3000;
    ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(op, len)).ok());
    std::vector<Completion> c = Run(0, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, WcStatus::kRemAccessErr) << WcStatusName(c[0].status);
  }
}

TEST_F(LoopbackTest, UnreachableRequesterMemoryIsALocalProtectionError) {
  mem_.unreachable_owner = kOwnerA;
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kWrite, 3000)).ok());
  std::vector<Completion> c = Run(0, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kLocProtErr) << WcStatusName(c[0].status);
}

TEST_F(LoopbackTest, QpNumbersCarryTheirTagAndFitIn24Bits) {
  ASSERT_NO_FATAL_FAILURE(StartTagged());
  for (int i = 0; i < 200; i++) {
    QpAttr qa;
    qa.pd = end_[0].pd;
    qa.send_cq = qa.recv_cq = end_[0].cq;
    auto q = eng_->CreateQp(qa);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(*q % 16, 5u);
    EXPECT_LT(*q, kQpnSpace);
    EXPECT_NE(*q, 0u);
  }
  EngineConfig bad;
  bad.local_ip = LocalIp();
  bad.qpn_tag_bits = 2;
  bad.qpn_tag = 4;
  EXPECT_FALSE(Engine::Create(bad, &mem_).ok());
  bad.qpn_tag_bits = kMaxQpnTagBits + 1;
  bad.qpn_tag = 0;
  EXPECT_FALSE(Engine::Create(bad, &mem_).ok());
}

TEST_F(LoopbackTest, AQpTakesTheNumberItsCallerChose) {
  ASSERT_NO_FATAL_FAILURE(StartTagged());
  QpAttr qa;
  qa.pd = end_[0].pd;
  qa.send_cq = qa.recv_cq = end_[0].cq;
  for (const uint32_t bad : {0u, 0x1234u, kQpnSpace | 5u}) {
    EXPECT_EQ(eng_->CreateQp(qa, bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(eng_->CreateQp(qa, end_[1].qpn).status().code(), absl::StatusCode::kAlreadyExists);
  ReconnectAndWrite({0xabc5, 0xfffff5});
  EXPECT_EQ(eng_->GetQpState(0xabc5), QpState::kReady);
}

TEST_F(LoopbackTest, ARegionReplicatedUnderAnotherEnginesKeysServesThem) {
  // Another engine (another shard of the daemon) registered a region first:
  // this one takes the region under the same keys, however its own table looks.
  RecordingMemory mem2;
  EngineConfig cfg;
  cfg.local_ip = LocalIp();
  auto other = Engine::Create(cfg, &mem2);
  ASSERT_TRUE(other.ok()) << other.status();
  const uint32_t pd2 = *(*other)->AllocPd(kOwnerB);
  MrInfo keys;
  for (int i = 0; i < 40; i++) keys = *(*other)->RegMr(pd2, 0x1000 * (i + 1), 0x1000, 0);
  const MrInfo mine = end_[1].mr;
  ASSERT_TRUE(eng_->DeregMr(mine.lkey).ok());
  auto r = eng_->RegMr(end_[1].pd, Va(1, 0), kRegion, access::kAll, keys);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->lkey, keys.lkey);
  EXPECT_EQ(r->rkey, keys.rkey);
  EXPECT_EQ(eng_->RegMr(end_[1].pd, Va(1, 0), kRegion, access::kAll, keys).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(eng_->RegMr(end_[1].pd, Va(1, 0), kRegion, access::kAll, MrInfo{keys.lkey & 0xffff, 0})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // The slots skipped over serve plain registrations, none of them the taken one.
  for (int i = 0; i < 60; i++) {
    auto m = eng_->RegMr(end_[0].pd, Va(0, 0), 64, 0);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_NE(m->lkey & 0xffff, keys.lkey & 0xffff);
  }
  // Remote peers reach the region by the replicated rkey, and only by it.
  end_[1].mr = *r;
  for (size_t i = 0; i < 60'000; i++) end_[0].buf[i] = static_cast<uint8_t>(i * 5 + 1);
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kWrite, 60'000, 1)).ok());
  std::vector<Completion> c = Run(0, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess) << WcStatusName(c[0].status);
  EXPECT_EQ(std::memcmp(end_[1].buf.data() + 64 * 1024, end_[0].buf.data(), 60'000), 0);
  SendWr stale = Wr(Opcode::kWrite, 100, 2);
  stale.rkey = mine.rkey;
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, stale).ok());
  c = Run(0, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRemAccessErr) << WcStatusName(c[0].status);
}

TEST_F(LoopbackTest, ReadyCqsListEachCqWithNewCompletionsOnce) {
  std::array<uint32_t, 8> ready;
  EXPECT_EQ(eng_->TakeReadyCqs(ready), 0u);
  PostRecvB(4096);
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kSend, 100, 1)).ok());
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kWrite, 100, 2)).ok());
  ASSERT_EQ(Run(0, 2).size(), 2u);
  const size_t n = eng_->TakeReadyCqs(ready);
  ASSERT_EQ(n, 2u);
  EXPECT_NE(ready[0], ready[1]);
  for (size_t i = 0; i < n; i++) EXPECT_TRUE(ready[i] == end_[0].cq || ready[i] == end_[1].cq);
  EXPECT_EQ(eng_->TakeReadyCqs(ready), 0u);
}

TEST_F(LoopbackTest, SetQpErrorFlushesReceivesAndSends) {
  PostRecvB(4096);
  PostRecvB(4096);
  ASSERT_TRUE(eng_->SetQpError(end_[1].qpn).ok());
  EXPECT_EQ(eng_->GetQpState(end_[1].qpn), QpState::kError);
  std::array<Completion, 4> c;
  ASSERT_EQ(eng_->PollCq(end_[1].cq, c), 2u);
  EXPECT_EQ(c[0].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(c[1].status, WcStatus::kWrFlushErr);
  EXPECT_FALSE(eng_->SetQpError(12345).ok());
}

}  // namespace
}  // namespace metaroce::transport::unit

namespace metaroce::transport::unit {
namespace {

// An application killed mid-transfer: its QP is destroyed with work in
// flight, then its peer's. New QPs on the same engine pair work again.
TEST_F(LoopbackTest, QpsDestroyedMidTransferLeaveTheConnectionUsable) {
  for (int i = 0; i < 8; i++) {
    ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kWrite, 60'000, i)).ok());
  }
  // A few packets go out and come back, then the requester vanishes.
  for (int i = 0; i < 3; i++) {
    now_ += 1000;
    std::array<TxSlot, 4> slots;
    std::vector<std::vector<uint8_t>> bufs(slots.size(), std::vector<uint8_t>(kSlotBytes));
    for (size_t s = 0; s < slots.size(); s++) {
      slots[s].buf = bufs[s].data();
      slots[s].cap = kSlotBytes;
    }
    const size_t n = eng_->PollTx(now_, slots);
    for (size_t s = 0; s < n; s++) eng_->OnFrame(now_, {bufs[s].data(), slots[s].len});
  }
  ASSERT_TRUE(eng_->DestroyQp(end_[0].qpn).ok());
  ASSERT_TRUE(eng_->DeregMr(end_[0].mr.lkey).ok());
  Run(1, 1, 1'500'000);  // 1.5 s pass; the responder hears nothing more
  end_[0].mr = *eng_->RegMr(end_[0].pd, Va(0, 0), kRegion, access::kAll);
  ASSERT_TRUE(eng_->DestroyQp(end_[1].qpn).ok());
  ReconnectAndWrite();
}

// A connection that had no QPs for longer than conn_fail_after_ns (nothing
// to keep alive) is not "silent" for a QP that joins it: the silence clock
// starts when a QP is there to hear from the peer.
TEST_F(LoopbackTest, AConnectionIdleWithoutQpsTakesNewQps) {
  ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(Opcode::kWrite, 1000, 1)).ok());
  ASSERT_EQ(Run(0, 1).size(), 1u);
  ASSERT_TRUE(eng_->DestroyQp(end_[0].qpn).ok());
  ASSERT_TRUE(eng_->DestroyQp(end_[1].qpn).ok());
  Run(0, 1, 2'000'000);  // 2 s (4 x conn_fail_after_ns), well below conn_idle_ns
  ReconnectAndWrite();
  EXPECT_EQ(eng_->stats().conn_failures, 0u);
}

}  // namespace
}  // namespace metaroce::transport::unit

namespace metaroce::transport::unit {
namespace {

// qp_access_flags: a QP refuses the remote operations it does not allow,
// whatever its regions allow (the NAK says no permission).
TEST_F(LoopbackTest, AQpRefusesRemoteOperationsItsAccessFlagsDoNotAllow) {
  struct Case {
    uint32_t allowed;
    Opcode op;
    WcStatus want;
  };
  const Case cases[] = {
      {0, Opcode::kWrite, WcStatus::kRemAccessErr},
      {access::kRemoteRead, Opcode::kWrite, WcStatus::kRemAccessErr},
      {access::kRemoteRead, Opcode::kRead, WcStatus::kSuccess},
      {access::kRemoteWrite, Opcode::kRead, WcStatus::kRemAccessErr},
      {access::kRemoteWrite, Opcode::kWriteImm, WcStatus::kSuccess},
      {access::kRemoteWrite, Opcode::kAtomicFetchAdd, WcStatus::kRemAccessErr},
      {access::kRemoteAtomic, Opcode::kAtomicCompSwap, WcStatus::kSuccess},
      {0, Opcode::kSend, WcStatus::kSuccess},  // a SEND needs no remote access
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(testing::Message() << "allowed " << k.allowed << " op " << static_cast<int>(k.op));
    eng_.reset();
    Start(EngineConfig{});
    QpAttr a;
    a.remote_access = k.allowed;
    ASSERT_TRUE(eng_->UpdateQp(end_[1].qpn, a).ok());
    const bool receive = k.op == Opcode::kSend || k.op == Opcode::kWriteImm;
    if (receive) PostRecvB(4096);
    const bool atomic = k.op == Opcode::kAtomicFetchAdd || k.op == Opcode::kAtomicCompSwap;
    ASSERT_TRUE(eng_->PostSend(now_, end_[0].qpn, Wr(k.op, atomic ? 8 : 1000)).ok());
    std::vector<Completion> c = Run(0, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, k.want) << WcStatusName(c[0].status);
  }
  QpAttr bad;
  bad.remote_access = access::kLocalWrite;
  EXPECT_FALSE(eng_->UpdateQp(end_[1].qpn, bad).ok());
  EXPECT_FALSE(eng_->UpdateQp(0x777, QpAttr{}).ok());
}

}  // namespace
}  // namespace metaroce::transport::unit
