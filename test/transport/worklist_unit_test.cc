/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The engine's work lists (timers.cc): a poll visits only connections that
// had something happen to them, idle ones wait in the timer heap at their
// exact deadline, and a connection with more to send than one poll's slots
// does not starve the others. (Builds with -Dengine_checks=true also check
// every connection against the lists on each poll.)

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "engine_unit_fixture.h"

namespace metaroce::transport::unit {
namespace {

constexpr uint32_t kPeers = 16;
constexpr size_t kMsgBytes = 64;

/** One host engine and kPeers peer engines, frames routed by destination IP. */
class WorkListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = MakeEngine(LocalIp(), LocalMac(), 1);
    host_pd_ = *host_->AllocPd();
    host_cq_ = *host_->CreateCq(4096);
    src_.assign(kMsgBytes, 0x5a);
    src_mr_ =
        *host_->RegMr(host_pd_, reinterpret_cast<uint64_t>(src_.data()), src_.size(), access::kAll);
    for (uint32_t i = 0; i < kPeers; i++) {
      Peer& p = peers_.emplace_back();
      p.addr = {wire::IpAddr::V4(10, 0, 1, static_cast<uint8_t>(i + 1)),
                wire::MacAddr{{2, 0, 0, 1, 0, static_cast<uint8_t>(i + 1)}}, wire::kDefaultUdpPort};
      p.eng = MakeEngine(p.addr.ip, p.addr.mac, 100 + i);
      QpAttr qa;
      qa.max_send_wr = 1024;
      qa.pd = *p.eng->AllocPd();
      qa.send_cq = qa.recv_cq = *p.eng->CreateCq(64);
      p.dst.assign(1 << 16, 0);
      p.mr = *p.eng->RegMr(qa.pd, reinterpret_cast<uint64_t>(p.dst.data()), p.dst.size(),
                           access::kAll);
      const uint32_t peer_qp = *p.eng->CreateQp(qa);
      qa.pd = host_pd_;
      qa.send_cq = qa.recv_cq = host_cq_;
      p.host_qp = *host_->CreateQp(qa);
      const PeerAddr host_addr{LocalIp(), LocalMac(), wire::kDefaultUdpPort};
      ASSERT_TRUE(host_->ConnectQp(p.host_qp, p.addr, peer_qp).ok());
      ASSERT_TRUE(p.eng->ConnectQp(peer_qp, host_addr, p.host_qp).ok());
    }
    for (int i = 0; i < 100; i++) Round(kSlotCount);
    const std::vector<ConnInfo> conns = host_->GetConnections();
    ASSERT_EQ(conns.size(), kPeers);
    for (const ConnInfo& c : conns) ASSERT_EQ(c.state, ConnInfo::State::kUp);
    // Past every handshake timer: idle from here on.
    now_ += 4 * config::kRtoInitialNs;
    Round(kSlotCount);
  }

  std::unique_ptr<Engine> MakeEngine(const wire::IpAddr& ip, const wire::MacAddr& mac,
                                     uint64_t seed) {
    EngineConfig cfg = BaseConfig();
    cfg.local_ip = ip;
    cfg.local_mac = mac;
    cfg.num_paths = 8;
    cfg.seed = seed;
    auto e = Engine::Create(cfg, &mem_);
    EXPECT_TRUE(e.ok()) << e.status();
    return std::move(*e);
  }

  /**
   * One poll of the host into @p nslots slots, its frames delivered; then
   * every peer polled until quiet. Returns how many host frames went to each
   * peer (by index).
   */
  std::map<uint32_t, size_t> Round(size_t nslots) {
    now_ += 1000;
    const std::map<uint32_t, size_t> to = Deliver(host_->PollTx(now_, Slots(nslots)));
    for (Peer& p : peers_) {
      const size_t m = p.eng->PollTx(now_, Slots(kSlotCount));
      for (size_t s = 0; s < m; s++) host_->OnFrame(now_, {tx_[s].buf, tx_[s].len});
    }
    return to;
  }

  /** Hands the host's first @p n frames to their peers; returns how many went to each. */
  std::map<uint32_t, size_t> Deliver(size_t n) {
    std::map<uint32_t, size_t> to;
    for (size_t s = 0; s < n; s++) {
      const uint32_t i = PeerOf(tx_[s]);
      if (i < kPeers) {
        to[i]++;
        peers_[i].eng->OnFrame(now_, {tx_[s].buf, tx_[s].len});
      }
    }
    return to;
  }

  std::span<TxSlot> Slots(size_t n) {
    bufs_.resize(kSlotCount, std::vector<uint8_t>(kSlotBytes));
    for (size_t s = 0; s < kSlotCount; s++) {
      tx_[s] = TxSlot{};
      tx_[s].buf = bufs_[s].data();
      tx_[s].cap = kSlotBytes;
    }
    return {tx_.data(), n};
  }

  uint32_t PeerOf(const TxSlot& s) const {
    wire::ParseOptions opt;
    wire::FrameInfo info;
    wire::Packet pkt;
    if (wire::ParseFrame({s.buf, s.len}, opt, &info, &pkt) != wire::ParseError::kOk)
      return UINT32_MAX;
    for (uint32_t i = 0; i < kPeers; i++) {
      if (peers_[i].addr.ip == info.dst) return i;
    }
    return UINT32_MAX;
  }

  void PostWrites(uint32_t peer, uint32_t count) {
    Peer& p = peers_[peer];
    for (uint32_t k = 0; k < count; k++) {
      SendWr wr;
      wr.wr_id = k;
      wr.opcode = Opcode::kWrite;
      wr.sg.push_back({reinterpret_cast<uint64_t>(src_.data()), kMsgBytes, src_mr_.lkey});
      wr.remote_addr = reinterpret_cast<uint64_t>(p.dst.data()) + (k % 1024) * kMsgBytes;
      wr.rkey = p.mr.rkey;
      ASSERT_TRUE(host_->PostSend(now_, p.host_qp, wr).ok());
    }
  }

  uint32_t ConnIdOf(uint32_t peer) {
    for (const ConnInfo& c : host_->GetConnections()) {
      if (c.peer.ip == peers_[peer].addr.ip) return c.conn_id;
    }
    return 0;
  }

  static constexpr size_t kSlotCount = 32;
  struct Peer {
    PeerAddr addr;
    std::unique_ptr<Engine> eng;
    uint32_t host_qp = 0;
    std::vector<uint8_t> dst;
    MrInfo mr;
  };
  ProcessMemory mem_;  // before the engines: they use it until destroyed
  std::unique_ptr<Engine> host_;
  uint32_t host_pd_ = 0, host_cq_ = 0;
  std::vector<uint8_t> src_;
  MrInfo src_mr_;
  std::vector<Peer> peers_;
  std::array<TxSlot, kSlotCount> tx_{};
  std::vector<std::vector<uint8_t>> bufs_;
  TimeNs now_ = 1'000'000;
};

TEST_F(WorkListTest, IdleConnectionsAreOffTheActiveListAndWaitAtTheirExactDeadline) {
  EXPECT_TRUE(EnginePeer::Active(*host_).empty());
  EXPECT_FALSE(host_->HasPendingTx());
  // The first thing due is a keep-alive timer, and nothing happens before it.
  const TimeNs due = host_->NextDeadline();
  ASSERT_NE(due, kNever);
  EXPECT_GE(due, now_ + config::kKeepaliveNs - 8 * config::kRtoInitialNs);
  now_ = due - 1000 - 1;
  EXPECT_TRUE(Round(kSlotCount).empty());
  EXPECT_TRUE(EnginePeer::Active(*host_).empty());
  EXPECT_EQ(host_->NextDeadline(), due);
  // At the deadline the connections' timers run: a keep-alive to each idle
  // peer, whose answer puts its connection in line once more; then the next
  // deadline is later and the line empty again.
  now_ = due - 1000;
  EXPECT_EQ(Round(kSlotCount).size(), kPeers);
  EXPECT_EQ(host_->stats().keepalives, kPeers);
  Round(kSlotCount);
  EXPECT_GT(host_->NextDeadline(), due);
  EXPECT_TRUE(EnginePeer::Active(*host_).empty());
}

TEST_F(WorkListTest, WorkPutsOnlyItsConnectionOnTheActiveList) {
  PostWrites(3, 4);
  EXPECT_EQ(EnginePeer::Active(*host_), std::vector<uint32_t>{ConnIdOf(3)});
  EXPECT_TRUE(host_->HasPendingTx());
  const std::map<uint32_t, size_t> to = Round(kSlotCount);
  ASSERT_EQ(to.size(), 1u);
  EXPECT_EQ(to.begin()->first, 3u);
  EXPECT_EQ(to.begin()->second, 4u);
  // The peer's ACK touched the connection; once settled it leaves the list.
  for (int i = 0; i < 10; i++) Round(kSlotCount);
  EXPECT_TRUE(EnginePeer::Active(*host_).empty());
  std::array<Completion, 8> wc;
  ASSERT_EQ(host_->PollCq(host_cq_, wc), 4u);
  for (size_t i = 0; i < 4; i++) EXPECT_EQ(wc[i].status, WcStatus::kSuccess);
  EXPECT_FALSE(host_->HasPendingTx());
}

// Two connections with more to send than a poll has slots take turns: the one
// served first does not stay first because it queued its own next message.
TEST_F(WorkListTest, AConnectionThatFillsEveryPollDoesNotStarveAnother) {
  PostWrites(0, 256);
  PostWrites(1, 256);
  constexpr size_t kFew = 4;
  size_t polls_with_0 = 0, polls_with_1 = 0;
  for (int i = 0; i < 8; i++) {
    const std::map<uint32_t, size_t> to = Round(kFew);
    polls_with_0 += to.contains(0);
    polls_with_1 += to.contains(1);
  }
  EXPECT_GE(polls_with_0, 3u);
  EXPECT_GE(polls_with_1, 3u);
}

// A poll whose slots run out leaves the rest of the line where it is, first
// at the next poll, and they are due at once: neither the poll nor the
// deadline asked of the engine after it looks at the connections it did not
// reach (mr-sim's all-to-all sent each packet past 62 of them, twice).
TEST_F(WorkListTest, ConnectionsAPollDidNotReachKeepTheirPlaceAndAreDueAtOnce) {
  std::vector<uint32_t> line;
  for (uint32_t i = 0; i < kPeers; i++) {
    PostWrites(i, 2);
    line.push_back(ConnIdOf(i));
  }
  EXPECT_EQ(EnginePeer::Active(*host_), line);
  now_ += 1000;
  ASSERT_EQ(host_->PollTx(now_, Slots(1)), 1u);
  EXPECT_EQ(Deliver(1), (std::map<uint32_t, size_t>{{0, 1}}));
  // Peer 0's connection filled the slots and may have more: behind the others.
  std::rotate(line.begin(), line.begin() + 1, line.end());
  EXPECT_EQ(EnginePeer::Active(*host_), line);
  EXPECT_EQ(host_->NextDeadline(), 0);
  EXPECT_TRUE(host_->HasPendingTx());
  // The next poll starts where this one stopped.
  now_ += 1000;
  ASSERT_EQ(host_->PollTx(now_, Slots(2)), 2u);
  EXPECT_EQ(Deliver(2), (std::map<uint32_t, size_t>{{1, 2}}));
  // With room for everyone every WRITE completes, the line empties, and the
  // deadline is a timer's again.
  size_t done = 0;
  std::array<Completion, 2 * kPeers> wc;
  for (int i = 0; i < 200 && done < wc.size(); i++) {
    Round(kSlotCount);
    done += host_->PollCq(host_cq_, std::span(wc).subspan(done));
  }
  EXPECT_EQ(done, wc.size());
  for (int i = 0; i < 10; i++) Round(kSlotCount);
  EXPECT_TRUE(EnginePeer::Active(*host_).empty());
  EXPECT_GT(host_->NextDeadline(), now_);
}

}  // namespace
}  // namespace metaroce::transport::unit
