/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// One engine driven by hand: the test plays the remote peer, builds every
// packet it sends with the wire codec and asserts exactly what the engine
// answers (ACK fields, SACK bits, retransmissions, NAKs, probes, drops).

#include "engine_unit_fixture.h"

namespace metaroce::transport::unit {
namespace {

TEST_F(EngineUnitTest, HandshakeEngineInitiates) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 3;
  ASSERT_NO_FATAL_FAILURE(Start(cfg, Open::kEngineInitiates));
  EXPECT_EQ(conn_req_.dst_conn_id, 0u);
  EXPECT_EQ(conn_req_.conn.num_paths, 3u);
  EXPECT_EQ(conn_req_.conn.max_payload, kPayload);
  EXPECT_EQ(conn_req_.conn.min_version, wire::kVersion);
  EXPECT_EQ(conn_req_.conn.max_version, wire::kVersion);
  // After the ACCEPT, work goes to the peer's connection id and stream.
  FillSource(100);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 100));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, PacketType::kWrite);
  EXPECT_EQ(out[0].dst_conn_id, kPeerConnId);
  EXPECT_EQ(out[0].data.stream_id, kPeerQpn);
  EXPECT_EQ(out[0].data.rkey, kRemoteRkey);
  EXPECT_EQ(out[0].data.va, kRemoteVa);
  EXPECT_TRUE(PayloadMatchesSource(out[0]));
}

TEST_F(EngineUnitTest, HandshakeEngineAccepts) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig(), Open::kEngineAccepts));
  EXPECT_EQ(conn_accept_.dst_conn_id, kPeerConnId);
  EXPECT_EQ(conn_accept_.conn.nonce, 0x1234abcdu);
  EXPECT_EQ(conn_accept_.conn.num_paths, 1u);
  EXPECT_EQ(conn_accept_.conn.max_payload, kPayload);
  FeedWrite(0, 0, 0, 0);
  const Packet ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.dst_conn_id, kPeerConnId);
  EXPECT_EQ(ack.ack.cum_psn, 1u);
  EXPECT_EQ(StreamAckOf(ack), 1);
  EXPECT_TRUE(WritePlaced(0));
}

// A CONN_REQ that goes unanswered is sent again after rto_min, then after
// waits that double up to conn_retry_ns; the peer's cookie starts the waits
// over. With one 1 ms wait, a connection under 10 % loss (4 handshake
// packets) stalled a millisecond one time in three (mr-sim's loss sweep).
TEST_F(EngineUnitTest, AnUnansweredConnReqIsResentAfterRtoMinThenBacksOff) {
  cfg_ = BaseConfig();  // rto_min 100 us; conn_retry_ns 1 ms
  auto e = Engine::Create(cfg_, &mem_);
  ASSERT_TRUE(e.ok()) << e.status();
  eng_ = std::move(*e);
  QpAttr qa;
  qa.pd = *eng_->AllocPd();
  qa.send_cq = qa.recv_cq = *eng_->CreateCq(16);
  const uint32_t qpn = *eng_->CreateQp(qa);
  ASSERT_TRUE(eng_->ConnectQp(qpn, {PeerIp(), PeerMac(), wire::kDefaultUdpPort}, kPeerQpn).ok());
  const TimeNs start = now_;
  auto sends_until = [&](TimeNs end, uint32_t* nonce) {
    std::vector<TimeNs> at;
    for (; now_ <= end; now_ += 10'000) {
      for (const Packet& p : Drain(now_)) {
        EXPECT_EQ(p.type, PacketType::kConnReq);
        at.push_back(now_ - start);
        *nonce = p.conn.nonce;
      }
    }
    return at;
  };
  uint32_t nonce = 0;
  EXPECT_EQ(sends_until(start + 3'500'000, &nonce),
            (std::vector<TimeNs>{0, 100'000, 300'000, 700'000, 1'500'000, 2'500'000, 3'500'000}));
  Packet retry = PeerReq(kPeerConnId, kPeerIncarnation, wire::kDefaultUdpPort, nonce);
  retry.type = PacketType::kConnRetry;
  retry.dst_conn_id = eng_->GetConnections().at(0).conn_id;
  retry.conn.cookie = 0x5eed;
  Feed(retry);
  EXPECT_EQ(sends_until(now_ + 300'000, &nonce),
            (std::vector<TimeNs>{3'510'000, 3'610'000, 3'810'000}));
}

// ---- 1. SACK bits, stream ACKs, una_psn ----

TEST_F(EngineUnitTest, SackBitsForGapPattern) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  const uint16_t path = 1;
  for (uint32_t psn : {0u, 1u, 3u, 4u, 7u}) FeedWrite(path, psn, 0, psn);
  const Packet ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.path_id, path);
  EXPECT_EQ(ack.dst_conn_id, kPeerConnId);
  EXPECT_EQ(ack.ack.cum_psn, 2u);
  EXPECT_TRUE(ack.ack.has_sack);
  // Bit i is PSN cum + 1 + i: 3 -> 0, 4 -> 1, 7 -> 4.
  EXPECT_EQ(ack.ack.sack, SackOf({0, 1, 4}));
  EXPECT_EQ(ack.ack.rx_pkts, 5u);
  // Messages 0 and 1 are complete; 2 (PSN 2) is missing.
  EXPECT_EQ(StreamAckOf(ack), 2);
  for (uint32_t msn : {0u, 1u, 3u, 4u, 7u}) EXPECT_TRUE(WritePlaced(msn)) << msn;
  for (uint32_t msn : {2u, 5u, 6u}) EXPECT_FALSE(WritePlaced(msn)) << msn;
  // Another path is independent.
  FeedWrite(0, 0, 0, 2);
  const Packet ack0 = OnlyAck(Drain(now_));
  EXPECT_EQ(ack0.path_id, 0u);
  EXPECT_EQ(ack0.ack.cum_psn, 1u);
  EXPECT_FALSE(ack0.ack.has_sack);
  EXPECT_EQ(StreamAckOf(ack0), 5);  // 2 filled the stream hole: 0..4 accepted
}

TEST_F(EngineUnitTest, SackDuplicateOnlyTriggersAck) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  for (uint32_t psn : {0u, 2u}) FeedWrite(0, psn, 0, psn);
  Drain(now_);
  FeedWrite(0, 2, 0, 2);  // duplicate above cum
  FeedWrite(0, 0, 0, 0);  // duplicate below cum
  const Packet ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 1u);
  EXPECT_EQ(ack.ack.sack, SackOf({0}));
  EXPECT_EQ(eng_->stats().rx_duplicate_pkts, 2u);
  EXPECT_EQ(StreamAckOf(ack), 1);
}

// A chunk that comes again after it was placed, on a new PSN (the sender's
// needless retransmission) or the same (a duplicate the network made), is
// counted where it arrives: the sender cannot tell a needless one from one
// that repaired a loss.
TEST_F(EngineUnitTest, ChunksThatArriveAgainAreCounted) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FeedWrite(0, 0, 0, 0);
  FeedWrite(0, 1, 0, 1);
  EXPECT_EQ(eng_->stats().rx_duplicate_chunks, 0u);
  FeedWrite(0, 2, 0, 0);  // message 0 again, a retransmission
  EXPECT_EQ(eng_->stats().rx_duplicate_chunks, 1u);
  EXPECT_EQ(eng_->stats().rx_duplicate_pkts, 0u);
  FeedWrite(0, 2, 0, 0);  // and that packet once more
  EXPECT_EQ(eng_->stats().rx_duplicate_chunks, 2u);
  EXPECT_EQ(eng_->stats().rx_duplicate_pkts, 1u);
  EXPECT_EQ(StreamAckOf(OnlyAck(Drain(now_))), 2);
}

// A hole filled in order: cum must run over every PSN that already arrived.
TEST_F(EngineUnitTest, SackHoleFillMovesCumOverArrivedRun) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  for (uint32_t psn : {0u, 1u, 3u, 4u, 7u}) FeedWrite(0, psn, 0, psn);
  Drain(now_);
  FeedWrite(0, 2, 0, 2);
  const Packet ack = OnlyAck(Drain(now_));
  // 0..4 arrived: next expected is 5; 7 is bit 7 - 5 - 1 = 1.
  EXPECT_EQ(ack.ack.cum_psn, 5u);
  EXPECT_EQ(ack.ack.sack, SackOf({1}));
  EXPECT_EQ(StreamAckOf(ack), 5);
}

// cum must stop at the first PSN that has not arrived.
TEST_F(EngineUnitTest, SackCumStopsAtMissingPsn) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FeedWrite(0, 0, 0, 0);
  FeedWrite(0, 3, 0, 3);
  Packet ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 1u);
  EXPECT_EQ(ack.ack.sack, SackOf({1}));
  FeedWrite(0, 1, 0, 1);
  ack = OnlyAck(Drain(now_));
  // 0, 1, 3 arrived; PSN 2 is still missing, so cum is 2 and 3 is bit 0.
  EXPECT_EQ(ack.ack.cum_psn, 2u);
  EXPECT_EQ(ack.ack.sack, SackOf({0}));
}

TEST_F(EngineUnitTest, UnaMovesCumOverGivenUpHole) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  for (uint32_t psn : {0u, 1u, 5u, 7u}) FeedWrite(0, psn, 0, psn);
  Packet ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 2u);
  EXPECT_EQ(ack.ack.sack, SackOf({2, 4}));
  EXPECT_EQ(StreamAckOf(ack), 2);
  // The sender gave PSN 2 up and sends message 2 again as PSN 8; it still waits for 3.
  FeedWrite(0, 8, 3, 2);
  ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 3u);
  EXPECT_EQ(ack.ack.sack, SackOf({1, 3, 4}));  // 5, 7, 8
  EXPECT_EQ(StreamAckOf(ack), 3);              // message 3 (PSN 3) still missing
  EXPECT_TRUE(WritePlaced(2));
}

// una_psn lands on PSNs that already arrived: cum must move past them too.
TEST_F(EngineUnitTest, UnaLandingOnArrivedPsnsMovesCumPastThem) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  for (uint32_t psn : {0u, 1u, 3u, 4u, 7u}) FeedWrite(0, psn, 0, psn);
  Drain(now_);
  // PSN 2 was given up; message 2 comes again as PSN 8 with una_psn 3.
  FeedWrite(0, 8, 3, 2);
  const Packet ack = OnlyAck(Drain(now_));
  // cum moves to 3, then over 3 and 4 which arrived: 5. SACK: 7 -> 1, 8 -> 2.
  EXPECT_EQ(ack.ack.cum_psn, 5u);
  EXPECT_EQ(ack.ack.sack, SackOf({1, 2}));
  EXPECT_EQ(StreamAckOf(ack), 5);
}

// ---- 2. The 256-bit window ----

TEST_F(EngineUnitTest, SackWindowBoundary256) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FeedWrite(0, 256, 0, 0);  // cum + 256: bit 255
  Packet ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 0u);
  EXPECT_EQ(ack.ack.sack, SackOf({255}));
  EXPECT_TRUE(WritePlaced(0));
  EXPECT_EQ(eng_->stats().rx_beyond_window, 0u);

  FeedWrite(0, 257, 0, 1);  // cum + 257: cannot be recorded
  EXPECT_TRUE(Drain(now_).empty());
  EXPECT_EQ(eng_->stats().rx_beyond_window, 1u);
  EXPECT_FALSE(WritePlaced(1));

  // Once cum moves, 257 fits (bit 255 again) and 256 is bit 254.
  FeedWrite(0, 0, 0, 2);
  FeedWrite(0, 257, 0, 1);
  ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 1u);
  EXPECT_EQ(ack.ack.sack, SackOf({254, 255}));
  EXPECT_TRUE(WritePlaced(1));
  EXPECT_EQ(eng_->stats().rx_beyond_window, 1u);
}

// ---- 3. PSN wrap-around ----

TEST_F(EngineUnitTest, RxPsnWrapAround) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  ASSERT_TRUE(EnginePeer::SetRxCum(*eng_, eng_conn_, 0, 0xfffffffc));
  uint32_t msn = 0;
  FeedWrite(0, 0xfffffffc, 0xfffffffc, msn++);
  Packet ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 0xfffffffdu);
  EXPECT_FALSE(ack.ack.has_sack);

  // Gaps across 2^32: 0 and 1 are bits 2 and 3 above cum 0xfffffffd.
  FeedWrite(0, 0x00000001, 0xfffffffd, msn++);
  FeedWrite(0, 0x00000000, 0xfffffffd, msn++);
  ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 0xfffffffdu);
  EXPECT_EQ(ack.ack.sack, SackOf({2, 3}));

  // The window edge across the wrap: cum + 256 = 0xfd is accepted, 0xfe is not.
  FeedWrite(0, 0x000000fd, 0xfffffffd, msn++);
  FeedWrite(0, 0x000000fe, 0xfffffffd, 1000);
  ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.sack, SackOf({2, 3, 255}));
  EXPECT_EQ(eng_->stats().rx_beyond_window, 1u);
  EXPECT_FALSE(WritePlaced(1000));

  // cum itself arrives (0xfffffffe and 0xffffffff still missing).
  FeedWrite(0, 0xfffffffd, 0xfffffffd, msn++);
  ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 0xfffffffeu);
  EXPECT_EQ(ack.ack.sack, SackOf({1, 2, 254}));

  // The sender gives 0xfffffffe..1 up: una_psn 2 moves cum across 2^32.
  FeedWrite(0, 0x00000005, 0x00000002, msn++);
  ack = OnlyAck(Drain(now_));
  EXPECT_EQ(ack.ack.cum_psn, 2u);
  EXPECT_EQ(ack.ack.sack, SackOf({2, 250}));  // 5, 0xfd
  for (uint32_t m = 0; m < msn; m++) EXPECT_TRUE(WritePlaced(m)) << m;
}

TEST_F(EngineUnitTest, TxPsnWrapAround) {
  EngineConfig cfg = BaseConfig();
  cfg.initial_window_bytes = 0;  // all 32 packets at once, not slow start's first window
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  constexpr uint32_t kStart = 0xfffffff0;
  ASSERT_TRUE(EnginePeer::SetTxPsn(*eng_, eng_conn_, 0, kStart));
  FillSource(32 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(9, 32 * kPayload));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 32u);
  for (uint32_t i = 0; i < 32; i++) {
    EXPECT_EQ(out[i].type, PacketType::kWrite);
    EXPECT_EQ(out[i].data.psn, kStart + i) << i;
    EXPECT_EQ(out[i].data.una_psn, kStart) << i;
    EXPECT_EQ(out[i].data.msg_offset, i * kPayload);
    EXPECT_TRUE(PayloadMatchesSource(out[i])) << i;
  }
  EXPECT_EQ(out.back().data.psn, 0x0000000fu);

  // Two holes, one on each side of 2^32: cum 0xfffffffe (not arrived by
  // definition), SACK for 0xffffffff..0x0f except 0x02. Bit i is PSN
  // 0xffffffff + i: 0x00 is bit 1, 0x02 bit 3, 0x0f bit 16.
  std::array<uint64_t, wire::kSackWords> sack{};
  sack[0] = ((uint64_t{1} << 17) - 1) & ~(uint64_t{1} << 3);
  Feed(Ack(0, 0xfffffffe, sack));
  out = Drain(now_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data.msg_offset, 14 * kPayload);  // PSN 0xfffffffe carried chunk 14
  EXPECT_EQ(out[1].data.msg_offset, 18 * kPayload);  // PSN 0x02 carried chunk 18
  for (uint32_t i = 0; i < 2; i++) {
    EXPECT_EQ(out[i].type, PacketType::kWrite);
    EXPECT_EQ(out[i].data.psn, 0x10u + i);
    EXPECT_EQ(out[i].data.una_psn, 0x10u);
    EXPECT_NE(out[i].flags & wire::flags::kRetransmit, 0);
    EXPECT_TRUE(PayloadMatchesSource(out[i]));
  }
  EXPECT_EQ(Path(0).inflight, 2u);
  EXPECT_TRUE(PollAll(scq_).empty());

  Feed(Ack(0, 0x12, {}, 1));
  EXPECT_TRUE(Drain(now_).empty());
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 9u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(Path(0).inflight, 0u);
  EXPECT_EQ(EnginePeer::Tx(*eng_, eng_conn_, 0)->una, 0x12u);
}

// ---- 4. Retransmission of exactly the missing PSNs ----

TEST_F(EngineUnitTest, RetransmitsExactlyTheMissingPsn) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FillSource(8 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(5, 8 * kPayload));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 8u);
  for (uint32_t i = 0; i < 8; i++) {
    EXPECT_EQ(out[i].data.psn, i);
    EXPECT_EQ(out[i].data.msg_offset, i * kPayload);
    EXPECT_EQ(out[i].flags & wire::flags::kRetransmit, 0);
    EXPECT_EQ((out[i].flags & wire::flags::kAckReq) != 0, i == 7) << i;
  }
  // PSN 3 missing: cum 3, SACK 4..7.
  const Packet gap_ack = Ack(0, 3, SackOf({0, 1, 2, 3}));
  Feed(gap_ack);
  out = Drain(now_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, PacketType::kWrite);
  EXPECT_EQ(out[0].data.msg_offset, 3 * kPayload);
  EXPECT_EQ(out[0].data.msn, 0u);
  EXPECT_EQ(out[0].data.msg_len, 8 * kPayload);
  EXPECT_NE(out[0].flags & wire::flags::kRetransmit, 0);
  EXPECT_EQ(out[0].data.psn, 8u);  // a new PSN
  EXPECT_TRUE(wire::SeqLt(3, out[0].data.una_psn));
  EXPECT_TRUE(PayloadMatchesSource(out[0]));
  EXPECT_EQ(eng_->stats().tx_retransmits, 1u);
  EXPECT_EQ(eng_->stats().lost_detected_sack, 1u);

  // The same ACK again (reordered, duplicated) declares nothing lost a second time.
  Feed(gap_ack);
  EXPECT_TRUE(Drain(now_).empty());
  // The ACK without the gap: nothing more goes out, the WRITE completes.
  Feed(Ack(0, 9, {}, 1));
  EXPECT_TRUE(Drain(now_).empty());
  EXPECT_EQ(eng_->stats().tx_retransmits, 1u);
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 5u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(done[0].opcode, WcOpcode::kRdmaWrite);
}

TEST_F(EngineUnitTest, RetransmitsSeveralMissingPsns) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FillSource(8 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(5, 8 * kPayload));
  ASSERT_EQ(Drain(now_).size(), 8u);
  // 1 and 4 missing, 6 and 7 not yet known: only 1 and 4 go again.
  Feed(Ack(0, 1, SackOf({0, 1, 3})));  // 2, 3, 5
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data.msg_offset, 1 * kPayload);
  EXPECT_EQ(out[1].data.msg_offset, 4 * kPayload);
  EXPECT_EQ(out[0].data.psn, 8u);
  EXPECT_EQ(out[1].data.psn, 9u);
  // 6 and 7 are still in flight, so the sender still waits for 6.
  EXPECT_EQ(out[0].data.una_psn, 6u);
  EXPECT_EQ(Path(0).inflight, 4u);
}

// ---- 5. Windows ----

TEST_F(EngineUnitTest, PathWindowLimitsInflight) {
  EngineConfig cfg = BaseConfig();
  cfg.path_window_pkts = 4;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(10 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 10 * kPayload));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 4u);
  for (uint32_t i = 0; i < 4; i++) EXPECT_EQ(out[i].data.psn, i);
  EXPECT_EQ(Path(0).inflight, 4u);
  EXPECT_FALSE(eng_->HasPendingTx());
  Feed(Ack(0, 2));
  out = Drain(now_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data.psn, 4u);
  EXPECT_EQ(out[1].data.psn, 5u);
  EXPECT_EQ(out[0].data.msg_offset, 4 * kPayload);
  EXPECT_EQ(out[1].data.msg_offset, 5 * kPayload);
  EXPECT_EQ(out[0].data.una_psn, 2u);
  // A SACK for PSN 4 (bit 1 above cum 2): 2 and 3 are lost behind it, 4 is
  // settled, 5 is still in flight. Three slots open; the two retransmits go first.
  Feed(Ack(0, 2, SackOf({1})));
  out = Drain(now_);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NE(out[0].flags & wire::flags::kRetransmit, 0);
  EXPECT_NE(out[1].flags & wire::flags::kRetransmit, 0);
  EXPECT_EQ(out[0].data.msg_offset, 2 * kPayload);
  EXPECT_EQ(out[1].data.msg_offset, 3 * kPayload);
  EXPECT_EQ(out[2].data.msg_offset, 6 * kPayload);
  EXPECT_EQ(Path(0).inflight, 4u);
}

TEST_F(EngineUnitTest, ConnWindowLimitsAcrossPaths) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_window_pkts = 4;
  cfg.conn_window_pkts = 5;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(12 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 12 * kPayload));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 5u);
  uint32_t on_path[2] = {0, 0};
  for (const Packet& p : out) on_path[p.path_id]++;
  EXPECT_EQ(on_path[0] + on_path[1], 5u);
  EXPECT_LE(on_path[0], 4u);
  EXPECT_LE(on_path[1], 4u);
  EXPECT_GE(on_path[1], 1u);  // sprayed over both paths
  // One packet acknowledged on path 1: exactly one more, whichever path.
  Feed(Ack(1, 1));
  out = Drain(now_);
  EXPECT_EQ(out.size(), 1u);
  // Everything on path 0 acknowledged: exactly that many more.
  const uint32_t p0 = Path(0).inflight;
  Feed(Ack(0, p0));
  out = Drain(now_);
  EXPECT_EQ(out.size(), p0);
  EXPECT_EQ(Path(0).inflight + Path(1).inflight, 5u);
  EXPECT_LE(Path(0).inflight, 4u);
  EXPECT_LE(Path(1).inflight, 4u);
}

// ---- 6. Retransmission timeout, path failure, probing ----

TEST_F(EngineUnitTest, TailLossProbeResendsTheNewestPacket) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FillSource(4 * kPayload);
  const TimeNs t0 = now_;
  ASSERT_NO_FATAL_FAILURE(PostWrite(3, 4 * kPayload));
  ASSERT_EQ(Drain(t0).size(), 4u);
  // No RTT sample yet: the probe waits half the initial RTO, well before the RTO.
  const TimeNs tlp = t0 + cfg_.rto_initial_ns / 2;
  EXPECT_EQ(eng_->NextDeadline(), tlp);
  EXPECT_TRUE(Drain(tlp - 1).empty());
  std::vector<Packet> out = Drain(tlp);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data.msg_offset, 3 * kPayload);  // the newest chunk, as a probe
  EXPECT_EQ(out[0].data.psn, 4u);
  EXPECT_NE(out[0].flags & wire::flags::kAckReq, 0);
  EXPECT_EQ(eng_->stats().tail_loss_probes, 1u);
  // Only one probe per burst: next comes the RTO.
  EXPECT_EQ(eng_->NextDeadline(), t0 + cfg_.rto_initial_ns);
  // The probe's ACK shows PSN 1 missing (0, 2, 3 and the probe arrived): SACK
  // recovery re-sends exactly chunk 1 at once.
  Feed(Ack(0, 1, {0b111}));  // bits 0..2: PSNs 2, 3 and 4
  out = Drain(tlp);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data.msg_offset, 1 * kPayload);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 0u);
}

TEST_F(EngineUnitTest, TheTailLossProbeWaitsForTheReceiversAckDelay) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  constexpr TimeNs kRtt = 10'000;  // 2 RTT is above tlp_min_ns
  FillSource(kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(0, kPayload));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
  now_ += kRtt;
  Packet a = Ack(0, 1, {}, 1);
  a.ack.echo_ts_ns = static_cast<uint32_t>(now_ - kRtt);
  Feed(a);
  ASSERT_EQ(Path(0).srtt_ns, kRtt);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, kPayload));
  const TimeNs t0 = now_;
  ASSERT_EQ(OfType(Drain(t0), PacketType::kWrite).size(), 1u);
  // The ACK of a lone packet may be held ack_delay_ns by the receiver, which
  // srtt leaves out: the probe waits 2 srtt and that hold (RFC 8985's PTO).
  const TimeNs tlp = t0 + 2 * kRtt + cfg_.ack_delay_ns;
  EXPECT_EQ(eng_->NextDeadline(), tlp);
  EXPECT_TRUE(Drain(tlp - 1).empty());
  EXPECT_EQ(eng_->stats().tail_loss_probes, 0u);
  EXPECT_EQ(OfType(Drain(tlp), PacketType::kWrite).size(), 1u);
  EXPECT_EQ(eng_->stats().tail_loss_probes, 1u);
}

/** The RTO alone: no tail-loss probes, and not the wait of a silent peer. */
EngineConfig RtoAlone() {
  EngineConfig cfg = BaseConfig();
  cfg.tail_loss_probe = false;
  cfg.rto_silent_ns = 0;
  return cfg;
}

TEST_F(EngineUnitTest, TheRtoStaysRtoMinAboveASteadyRttSoHostJitterDoesNotFireIt) {
  const EngineConfig cfg = RtoAlone();
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  // Twenty round trips of exactly 300 us: rttvar decays to almost nothing.
  constexpr TimeNs kRtt = 300'000;
  FillSource(kPayload);
  uint32_t psn = 0;
  uint64_t wr = 0;
  ASSERT_NO_FATAL_FAILURE(SteadyRoundTrips(20, kRtt, &psn, &wr));
  ASSERT_NO_FATAL_FAILURE(PostWrite(20, kPayload));
  const TimeNs t0 = now_;
  ASSERT_EQ(OfType(Drain(t0), PacketType::kWrite).size(), 1u);
  // An ACK late by less than rto_min is jitter, not loss (srtt + 4 rttvar alone would fire here).
  EXPECT_TRUE(Drain(t0 + kRtt + cfg.rto_min_ns - 1).empty());
  EXPECT_EQ(eng_->stats().lost_detected_rto, 0u);
  const std::vector<Packet> again =
      OfType(Drain(t0 + kRtt + cfg.rto_min_ns + 1000), PacketType::kWrite);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0].flags & wire::flags::kRetransmit, 0);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 1u);
  EXPECT_EQ(eng_->stats().rto_timeouts, 1u);
}

// A timeout whose oldest packet then turns out to have arrived (its ACK
// echoes a packet sent before the timeout) was a stall, not a loss: its
// window cut is undone and the connection's RTO stays above what that
// packet took, halving each config::kRtoFloorHalfLifeNs. One that the
// retransmission answers was a loss and changes nothing.
TEST_F(EngineUnitTest, ASpuriousTimeoutRaisesTheRtoPastTheStallThatCausedIt) {
  const EngineConfig cfg = RtoAlone();
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  constexpr TimeNs kRtt = 10'000;
  FillSource(kPayload);
  uint32_t psn = 0;
  uint64_t wr = 0;
  // One WRITE answered after @p late; the path's RTO, where it timed out.
  const auto round_trip = [&](TimeNs late) {
    ASSERT_NO_FATAL_FAILURE(PostWrite(wr, kPayload));
    const TimeNs sent = now_;
    ASSERT_EQ(OfType(Drain(sent), PacketType::kWrite).size(), 1u);
    const TimeNs rto = Path(0).rto_ns;
    if (late > rto) {
      now_ = sent + rto;
      const std::vector<Packet> again = OfType(Drain(now_), PacketType::kWrite);
      ASSERT_EQ(again.size(), 1u);
      EXPECT_NE(again[0].flags & wire::flags::kRetransmit, 0);
    }
    now_ = sent + late;
    Feed(TimedAck(0, psn + 1, sent));  // the first transmission's ACK
    if (late > rto) {
      psn++;
      now_ += kRtt;
      Feed(TimedAck(0, psn + 1, sent + rto));  // and the retransmission's
    }
    psn++;
    Feed(Ack(0, psn, {}, static_cast<int64_t>(++wr)));
    now_ += kRtt;
  };
  ASSERT_NO_FATAL_FAILURE(SteadyRoundTrips(8, kRtt, &psn, &wr));
  const TimeNs rto = Path(0).rto_ns;
  ASSERT_LT(rto, 2 * cfg.rto_min_ns);

  // A loss: the first transmission's ACK never comes, the retransmission's does.
  ASSERT_NO_FATAL_FAILURE(PostWrite(wr, kPayload));
  TimeNs sent = now_;
  ASSERT_EQ(OfType(Drain(sent), PacketType::kWrite).size(), 1u);
  now_ = sent + rto;
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
  now_ += kRtt;
  psn += 2;
  Feed(TimedAck(0, psn, now_ - kRtt, static_cast<int64_t>(++wr)));
  EXPECT_EQ(eng_->stats().rto_timeouts, 1u);
  EXPECT_EQ(eng_->stats().spurious_timeouts, 0u);
  EXPECT_LT(Path(0).rto_ns, 2 * cfg.rto_min_ns);
  now_ += kRtt;

  // A stall of 1 ms: the first transmission arrives late, after the timeout.
  const uint32_t cwnd = Path(0).cwnd_bytes;
  constexpr TimeNs kStall = 1'000'000;
  ASSERT_NO_FATAL_FAILURE(round_trip(kStall));
  EXPECT_EQ(eng_->stats().rto_timeouts, 2u);
  EXPECT_EQ(eng_->stats().spurious_timeouts, 1u);
  EXPECT_GE(Path(0).cwnd_bytes, cwnd);  // the cut undone
  const TimeNs floor = EnginePeer::Conn(*eng_, eng_conn_)->rto_floor.ns;
  EXPECT_GE(floor, kStall + kStall / 4);
  EXPECT_GE(Path(0).rto_ns, floor);
  // The next stall like it fires nothing.
  ASSERT_NO_FATAL_FAILURE(round_trip(kStall));
  EXPECT_EQ(eng_->stats().rto_timeouts, 2u);
  // Quiet for a half-life, the floor halves at the next sample.
  now_ += config::kRtoFloorHalfLifeNs;
  ASSERT_NO_FATAL_FAILURE(round_trip(kRtt));
  EXPECT_EQ(EnginePeer::Conn(*eng_, eng_conn_)->rto_floor.ns, floor / 2);
}

// A spurious timeout of a packet held a few round trips (a queue, as a
// long-haul flow's beside short ones) undoes the cut but raises no RTO
// floor: that held its real tail losses back.
TEST_F(EngineUnitTest, ASpuriousTimeoutOfAQueueRaisesNoRtoFloor) {
  ASSERT_NO_FATAL_FAILURE(Start(RtoAlone()));
  constexpr TimeNs kRtt = 100'000;
  FillSource(kPayload);
  uint32_t psn = 0;
  uint64_t wr = 0;
  ASSERT_NO_FATAL_FAILURE(SteadyRoundTrips(8, kRtt, &psn, &wr));
  ASSERT_NO_FATAL_FAILURE(PostWrite(wr, kPayload));
  const TimeNs sent = now_;
  ASSERT_EQ(OfType(Drain(sent), PacketType::kWrite).size(), 1u);
  const TimeNs rto = Path(0).rto_ns;
  ASSERT_LT(rto, 3 * kRtt);
  now_ = sent + rto;
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
  now_ = sent + 3 * kRtt;  // the first transmission's ACK, three round trips late
  Feed(TimedAck(0, psn + 1, sent));
  EXPECT_EQ(eng_->stats().spurious_timeouts, 1u);
  EXPECT_EQ(EnginePeer::Conn(*eng_, eng_conn_)->rto_floor.ns, 0u);
}

// A tail-loss probe whose packet then turns out to have arrived (its ACK,
// echoing a packet sent before the probe, was only late) was needless: the
// peer stalls. The connection's probes then wait past what that packet took
// (at most rto_min), halving each config::kRtoFloorHalfLifeNs, so the next
// stall like it sends no probe. A probe that finds a loss changes nothing.
TEST_F(EngineUnitTest, ANeedlessTailLossProbeMakesTheNextProbesWaitPastTheStall) {
  EngineConfig cfg = BaseConfig();
  cfg.rto_silent_ns = 0;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  constexpr TimeNs kRtt = 10'000;
  constexpr TimeNs kStall = 90'000;  // a stall: over kRtoFloorStallRtts round trips, within the RTO
  static_assert(kStall >= config::kRtoFloorStallRtts * kRtt);
  FillSource(kPayload);
  uint32_t psn = 0;
  uint64_t wr = 0;
  ASSERT_NO_FATAL_FAILURE(SteadyRoundTrips(8, kRtt, &psn, &wr));
  ASSERT_GT(Path(0).rto_ns, kStall);
  // One WRITE answered @p late after it left; the probes it drew.
  const auto round_trip = [&](TimeNs late) -> uint64_t {
    const uint64_t probes = eng_->stats().tail_loss_probes;
    PostWrite(wr, kPayload);
    const TimeNs sent = now_;
    EXPECT_EQ(OfType(Drain(sent), PacketType::kWrite).size(), 1u);
    std::vector<Packet> resent = OfType(Drain(sent + late - 1), PacketType::kWrite);
    now_ = sent + late;
    Feed(TimedAck(0, psn + 1, sent));  // the first transmission's ACK
    psn += 1 + static_cast<uint32_t>(resent.size());
    now_ += kRtt;
    Feed(Ack(0, psn, {}, static_cast<int64_t>(++wr)));  // and the probe's
    now_ += kRtt;
    return eng_->stats().tail_loss_probes - probes;
  };
  // A probe that found a loss: its packet's ACK never came, the probe's did.
  ASSERT_NO_FATAL_FAILURE(PostWrite(wr, kPayload));
  const TimeNs sent = now_;
  ASSERT_EQ(OfType(Drain(sent), PacketType::kWrite).size(), 1u);
  now_ = eng_->NextDeadline();
  ASSERT_LT(now_, sent + kStall);
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
  now_ += kRtt;
  psn += 2;
  Feed(Ack(0, psn, {}, static_cast<int64_t>(++wr)));
  EXPECT_EQ(eng_->stats().tail_loss_probes, 1u);
  EXPECT_EQ(eng_->stats().needless_tail_probes, 0u);
  EXPECT_EQ(EnginePeer::Conn(*eng_, eng_conn_)->tlp_floor.ns, 0u);
  now_ += kRtt;

  // A stall: the probe goes, then the packet's own ACK comes.
  EXPECT_EQ(round_trip(kStall), 1u);
  EXPECT_EQ(eng_->stats().needless_tail_probes, 1u);
  const TimeNs floor = EnginePeer::Conn(*eng_, eng_conn_)->tlp_floor.ns;
  EXPECT_EQ(floor, std::min(kStall + kStall / 4, cfg.rto_min_ns));
  // The next stall like it draws no probe.
  EXPECT_EQ(round_trip(kStall), 0u);
  // Quiet for a half-life, the floor halves at the next sample.
  now_ += config::kRtoFloorHalfLifeNs;
  EXPECT_EQ(round_trip(kRtt), 0u);
  EXPECT_EQ(EnginePeer::Conn(*eng_, eng_conn_)->tlp_floor.ns, floor / 2);
}

TEST_F(EngineUnitTest, APeerThatFallsSilentAfterAnsweringIsProbedUntilRtoSilentThenTimesOut) {
  enum Case { kStall, kHole, kCongested };
  for (const Case k : {kStall, kHole, kCongested}) {
    SCOPED_TRACE(k);
    const bool stall = k != kHole;
    EngineConfig cfg = BaseConfig();
    cfg.num_paths = 2;
    cfg.tail_loss_probe = false;
    cfg.rto_silent_ns = 2'000'000;  // before the keep-alive probe
    ASSERT_NO_FATAL_FAILURE(Start(cfg));
    FillSource(2 * kPayload);
    // A packet on each path at t0; their ACKs come 10 us later (RTO = srtt + rto_min).
    const TimeNs t0 = now_;
    ASSERT_NO_FATAL_FAILURE(OneChunkOnEachPath(1));
    auto answer = [&] {
      for (uint16_t path : {0, 1}) {
        Packet a = TimedAck(path, 1, t0, path == 1 ? 1 : -1);
        a.ack.ce_pkts = k == kCongested ? 1 : 0;  // congested: a queue overflowing, not a stall
        Feed(a);
      }
    };
    // A second pair of packets: before those ACKs (the peer answers after
    // they left, then falls silent: a stall) or after them (the peer was
    // last heard before they left: they went into a hole).
    now_ = t0 + (stall ? 5'000 : 10'000);
    if (!stall) answer();
    ASSERT_NO_FATAL_FAILURE(PostWrite(2, 2 * kPayload));
    const TimeNs sent = now_;
    ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 2u);
    now_ = t0 + 10'000;
    if (stall) answer();
    const TimeNs heard = now_;
    TimeNs rto = 10'000 + cfg.rto_min_ns;
    TimeNs fires_at = sent + rto;
    EXPECT_EQ(eng_->NextDeadline(), fires_at);
    EXPECT_TRUE(Drain(fires_at - 1).empty());
    if (k == kStall) {
      // A stall probe per path at the RTO, the newest packet once more, and
      // again after each backed-off RTO while the peer stays silent.
      const TimeNs give_up = heard + cfg.rto_silent_ns;
      uint64_t probes = 0;
      while (fires_at < give_up) {
        const std::vector<Packet> again = OfType(Drain(fires_at), PacketType::kWrite);
        ASSERT_EQ(again.size(), 2u);
        for (const Packet& a : again) EXPECT_EQ(a.data.msg_offset, a.path_id * kPayload);
        probes += 2;
        EXPECT_EQ(eng_->stats().stall_probes, probes);
        EXPECT_EQ(eng_->stats().lost_detected_rto, 0u);
        rto *= 2;
        fires_at = std::min(fires_at + rto, give_up);
        EXPECT_EQ(eng_->NextDeadline(), fires_at);
      }
      EXPECT_GE(probes, 6u);
      // Silent for rto_silent_ns: the timeout proper, of the packets and the
      // probes older than the (backed-off) RTO.
      EXPECT_TRUE(Drain(give_up - 1).empty());
      EXPECT_EQ(OfType(Drain(give_up), PacketType::kWrite).size(), 2u);
      EXPECT_GE(eng_->stats().lost_detected_rto, 2u);
      EXPECT_LE(eng_->stats().lost_detected_rto, 2u + probes);
      continue;
    }
    EXPECT_EQ(eng_->stats().lost_detected_rto, 0u);
    EXPECT_EQ(OfType(Drain(fires_at), PacketType::kWrite).size(), 2u);
    EXPECT_EQ(eng_->stats().lost_detected_rto, 2u);
    EXPECT_EQ(eng_->stats().stall_probes, 0u);
  }
}

// A window cut for delay alone (the RTT rose, nothing marked: a software
// receiver falling behind) is no congested fabric: a silence after it is a
// stall as any other, probed, not timed out. Over memif and kernel UDP the
// delay signal cuts a window every few round trips, and the rule held back
// by those cuts left 2-4 needless retransmissions per stall and path.
TEST_F(EngineUnitTest, ASilenceAfterADelayCutIsStillAStall) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.tail_loss_probe = false;
  cfg.rto_silent_ns = 2'000'000;
  cfg.cc_delay_target_ns = 5'000;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(4 * kPayload);
  const TimeNs t0 = now_;
  ASSERT_NO_FATAL_FAILURE(OneChunkOnEachPath(1));
  now_ = t0 + 5'000;
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 2 * kPayload));
  const TimeNs sent = now_;
  ASSERT_EQ(OfType(Drain(sent), PacketType::kWrite).size(), 2u);
  // The first packets answered at t0 + 10 us: path 0 in 10 us (the base
  // RTT), path 1's ACK echoing a time 20 us earlier (30 us, above the base
  // and the target: a delay cut). Then nothing.
  now_ = t0 + 10'000;
  Feed(TimedAck(0, 1, t0));
  Feed(TimedAck(1, 1, t0 - 20'000, 1));
  ASSERT_EQ(eng_->stats().cc_delay_cuts, 1u);
  const TimeNs rto_at = sent + 10'000 + cfg.rto_min_ns;  // path 0's
  EXPECT_EQ(eng_->NextDeadline(), rto_at);
  const std::vector<Packet> again = OfType(Drain(rto_at), PacketType::kWrite);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].path_id, 0);
  EXPECT_EQ(eng_->stats().stall_probes, 1u);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 0u);
  EXPECT_EQ(eng_->stats().rto_timeouts, 0u);
}

// A stall probe goes past a full window, as RFC 8985's probe goes past cwnd:
// the window may be full of lost packets, and only the probe's answer tells.
TEST_F(EngineUnitTest, AStallProbeGoesPastAFullWindow) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.tail_loss_probe = false;
  cfg.rto_silent_ns = 2'000'000;
  cfg.conn_window_pkts = 4;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(6 * kPayload);
  const TimeNs t0 = now_;
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 4 * kPayload));
  ASSERT_EQ(OfType(Drain(t0), PacketType::kWrite).size(), 4u);  // two per path: full
  // Each path's first packet answered 10 us later, after its second left.
  now_ = t0 + 10'000;
  for (uint16_t path : {0, 1}) Feed(TimedAck(path, 1, t0));
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 2 * kPayload));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 2u);  // full again
  // Then silence: at the RTO of the second packets, a stall probe per path.
  const TimeNs rto_at = t0 + 10'000 + cfg.rto_min_ns;
  EXPECT_EQ(eng_->NextDeadline(), rto_at);
  EXPECT_EQ(OfType(Drain(rto_at), PacketType::kWrite).size(), 2u);
  EXPECT_EQ(eng_->stats().stall_probes, 2u);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 0u);
}

// A connection's first packets all lost (an incast's first round trip) with
// nothing heard since the handshake: not a stalled peer, the RTO as it is.
// The QP joined the connection while it was connecting; the silence clock
// once restarted at the connection's first timer (the tail-loss probe), as
// if the peer had spoken then, and the RTO waited rto_silent_ns after it.
TEST_F(EngineUnitTest, FirstPacketsAllLostTimeOutAtTheRtoNotAfterAPeerStall) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(2 * kPayload);
  const TimeNs t0 = now_;
  ASSERT_NO_FATAL_FAILURE(OneChunkOnEachPath(1));
  const TimeNs tlp = t0 + cfg.rto_initial_ns / 2;
  EXPECT_EQ(OfType(Drain(tlp), PacketType::kWrite).size(), 2u);  // a probe per path
  EXPECT_EQ(eng_->stats().tail_loss_probes, 2u);
  const TimeNs rto_at = t0 + cfg.rto_initial_ns;
  EXPECT_EQ(eng_->NextDeadline(), rto_at);
  EXPECT_TRUE(Drain(rto_at - 1).empty());
  EXPECT_EQ(OfType(Drain(rto_at), PacketType::kWrite).size(), 2u);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 2u);
}

TEST_F(EngineUnitTest, RtoRetransmitsThenFailsPathAndProbeRevivesIt) {
  EngineConfig cfg = BaseConfig();
  cfg.tail_loss_probe = false;  // the RTO alone
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(4 * kPayload);
  const TimeNs t0 = now_;
  ASSERT_NO_FATAL_FAILURE(PostWrite(3, 4 * kPayload));
  std::vector<wire::FrameInfo> info;
  std::vector<Packet> out = Drain(t0, &info);
  ASSERT_EQ(out.size(), 4u);
  const uint16_t old_port = info[0].src_port;
  EXPECT_EQ(Path(0).src_port, old_port);

  // First timeout after the initial RTO: the same four chunks again, new PSNs.
  EXPECT_EQ(eng_->NextDeadline(), t0 + cfg_.rto_initial_ns);
  EXPECT_TRUE(Drain(t0 + cfg_.rto_initial_ns - 1).empty());
  const TimeNs t1 = t0 + cfg_.rto_initial_ns;
  out = Drain(t1);
  ASSERT_EQ(out.size(), 4u);
  for (uint32_t i = 0; i < 4; i++) {
    EXPECT_EQ(out[i].data.msg_offset, i * kPayload);
    EXPECT_EQ(out[i].data.psn, 4 + i);
    EXPECT_NE(out[i].flags & wire::flags::kRetransmit, 0);
    EXPECT_TRUE(PayloadMatchesSource(out[i]));
  }
  EXPECT_EQ(eng_->stats().lost_detected_rto, 4u);
  EXPECT_TRUE(Path(0).active);

  // Second timeout: the RTO doubled.
  EXPECT_EQ(eng_->NextDeadline(), t1 + 2 * cfg_.rto_initial_ns);
  const TimeNs t2 = t1 + 2 * cfg_.rto_initial_ns;
  out = Drain(t2);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].data.psn, 8u);
  EXPECT_TRUE(Path(0).active);

  // Third timeout: path_fail_timeouts reached; the path fails and sends nothing.
  EXPECT_EQ(eng_->NextDeadline(), t2 + 4 * cfg_.rto_initial_ns);
  const TimeNs t3 = t2 + 4 * cfg_.rto_initial_ns;
  EXPECT_TRUE(Drain(t3).empty());
  EXPECT_FALSE(Path(0).active);
  EXPECT_EQ(Path(0).failures, 1u);
  EXPECT_EQ(eng_->stats().path_failures, 1u);

  // A PROBE on a new source port after the probe interval.
  EXPECT_EQ(eng_->NextDeadline(), t3 + cfg_.path_probe_interval_ns);
  EXPECT_TRUE(Drain(t3 + cfg_.path_probe_interval_ns - 1).empty());
  const TimeNs t4 = t3 + cfg_.path_probe_interval_ns;
  info.clear();
  out = Drain(t4, &info);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, PacketType::kProbe);
  EXPECT_EQ(out[0].path_id, 0u);
  EXPECT_EQ(out[0].dst_conn_id, kPeerConnId);
  const uint16_t new_port = info[0].src_port;
  EXPECT_NE(new_port, old_port);
  EXPECT_FALSE(Path(0).active);

  // The PROBE_REPLY brings the path back; the lost chunks go out on the new port.
  now_ = t4 + 10'000;
  Packet reply;
  reply.type = PacketType::kProbeReply;
  reply.dst_conn_id = eng_conn_;
  reply.path_id = 0;
  reply.probe = out[0].probe;
  Feed(reply);
  EXPECT_TRUE(Path(0).active);
  EXPECT_EQ(Path(0).src_port, new_port);
  info.clear();
  out = Drain(now_, &info);
  ASSERT_EQ(out.size(), 4u);
  for (uint32_t i = 0; i < 4; i++) {
    EXPECT_EQ(out[i].type, PacketType::kWrite);
    EXPECT_EQ(out[i].data.msg_offset, i * kPayload);
    EXPECT_NE(out[i].flags & wire::flags::kRetransmit, 0);
    EXPECT_EQ(info[i].src_port, new_port);
  }
  Feed(Ack(0, out.back().data.psn + 1, {}, 1));
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
}

TEST_F(EngineUnitTest, ProbeReplyWithWrongSeqIsIgnored) {
  EngineConfig cfg = BaseConfig();
  cfg.path_fail_timeouts = 1;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(3, kPayload));
  ASSERT_EQ(Drain(now_).size(), 1u);
  const TimeNs t1 = now_ + cfg.rto_initial_ns;
  EXPECT_TRUE(Drain(t1).empty());
  EXPECT_FALSE(Path(0).active);
  std::vector<Packet> out = Drain(t1 + cfg.path_probe_interval_ns);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].type, PacketType::kProbe);
  Packet reply;
  reply.type = PacketType::kProbeReply;
  reply.dst_conn_id = eng_conn_;
  reply.path_id = 0;
  reply.probe = out[0].probe;
  reply.probe.probe_seq += 1;
  Feed(reply);
  EXPECT_FALSE(Path(0).active);
}

TEST_F(EngineUnitTest, PathsThatAllStallTogetherDoNotFail) {
  // Both paths time out with no ACK anywhere: the peer stalled, not a path.
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_fail_timeouts = 1;
  cfg.tail_loss_probe = false;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(4 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(3, 4 * kPayload));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 4u);
  const TimeNs t1 = now_ + cfg.rto_initial_ns;
  out = Drain(t1);
  EXPECT_EQ(out.size(), 4u);  // everything again, nothing failed
  EXPECT_TRUE(Path(0).active);
  EXPECT_TRUE(Path(1).active);
  EXPECT_EQ(eng_->stats().path_failures, 0u);
}

TEST_F(EngineUnitTest, TimeoutsDoNotCountAsAPathsLossRatio) {
  // A timeout is as often a stall as a loss; the path's consecutive
  // timeouts judge it, its loss ratio counts SACK gaps only.
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_health_window_pkts = 4;
  cfg.path_fail_timeouts = 1000;  // the loss ratio alone
  cfg.tail_loss_probe = false;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(8 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 8 * kPayload));
  std::vector<Packet> out = OfType(Drain(now_), PacketType::kWrite);
  ASSERT_EQ(out.size(), 8u);
  uint32_t next1 = 0;
  for (const Packet& p : out) {
    if (p.path_id == 1) next1 = p.data.psn + 1;
  }
  ASSERT_EQ(next1, 4u);  // four on each path
  now_ += 10'000;
  Feed(Ack(1, next1));
  // Path 0's four time out and go again; more work puts four new packets on it.
  now_ += cfg.rto_initial_ns;
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 8 * kPayload));
  Drain(now_);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 4u);
  EXPECT_GE(Path(0).tx_pkts, 8u);
  EXPECT_TRUE(Path(0).active);
  EXPECT_EQ(eng_->stats().path_loss_failures, 0u);
  EXPECT_EQ(eng_->stats().path_failures, 0u);
}

// A path can fail in the middle of a turn: a new chunk completes its health
// window and its loss ratio gives it up. What it had in flight is lost with it
// and goes again at once, in the same poll, not at the next event.
// Two paths that a loss ratio over @p window packets fails (not timeouts), a
// SACK gap being a loss at once.
EngineConfig LossRatioConfig(uint32_t window) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_health_window_pkts = window;
  cfg.path_fail_timeouts = 1000;
  cfg.reorder_window_ns = 0;
  return cfg;
}

TEST_F(EngineUnitTest, WhatAPathFailedMidTurnHadInFlightGoesAgainInThatPoll) {
  EngineConfig cfg = LossRatioConfig(4);
  cfg.tail_loss_probe = false;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(8 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 8 * kPayload));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 8u);  // four on each path
  ASSERT_EQ(Path(0).tx_pkts, 4u);
  // Path 1 delivered everything, path 0 only its last: three SACK losses.
  now_ += 10'000;
  Feed(Ack(1, 4));
  Feed(Ack(0, 0, {uint64_t{1} << 2}));
  EXPECT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 3u);  // the three again
  EXPECT_EQ(eng_->stats().path_loss_failures, 0u);

  // Path 0's next four complete its window: 3 lost of 4 fails it mid-turn.
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 8 * kPayload));
  const uint64_t retx0 = eng_->stats().tx_retransmits;
  const std::vector<Packet> out = OfType(Drain(now_), PacketType::kWrite);
  ASSERT_EQ(eng_->stats().path_loss_failures, 1u);
  EXPECT_FALSE(Path(0).active);
  EXPECT_EQ(Path(0).inflight, 0u);
  // Its four went again on path 1 with the rest, and nothing is left to send.
  EXPECT_EQ(eng_->stats().tx_retransmits - retx0, 4u);
  size_t again = 0;
  for (const Packet& p : out) again += (p.flags & wire::flags::kRetransmit) != 0;
  EXPECT_EQ(again, 4u);
  EXPECT_FALSE(eng_->HasPendingTx());
}

// A retransmission can fail its own path: a tail-loss probe completes the
// path's health window, the path is given up and what it had in flight is
// queued behind the probe, growing the queue the probe is still at the front
// of. (The stage held a reference into the queue across the send: ASan saw it
// used after the queue grew.)
TEST_F(EngineUnitTest, ARetransmissionThatFailsItsPathQueuesWhatThePathHad) {
  EngineConfig cfg = LossRatioConfig(17);  // path 0's probe is its 17th packet
  cfg.path_fail_loss_pct = 10;             // 2 lost of 17 gives it up
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(20 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 16 * kPayload));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 16u);  // eight on each path
  // Path 1 delivered all; path 0 all but its first two, resent on path 0.
  now_ += 10'000;
  Feed(Ack(1, 8));
  Feed(Ack(0, 0, {uint64_t{0x3f} << 1}));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 2u);
  // Twelve new chunks, six on each path; path 1's are acknowledged.
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 12 * kPayload, 0));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 12u);
  ASSERT_EQ(Path(0).inflight, 8u);
  now_ += 5'000;
  Feed(Ack(1, 14));
  ASSERT_EQ(Path(1).inflight, 0u);
  ASSERT_EQ(eng_->stats().path_loss_failures, 0u);
  // Path 0's tail-loss probe: given up, its eight chunks go again on path 1
  // (more than the queue held: it grows under the probe's entry).
  now_ += 50'000;  // past the probe's wait, before the RTO
  const uint64_t retx0 = eng_->stats().tx_retransmits;
  const std::vector<Packet> out = OfType(Drain(now_), PacketType::kWrite);
  EXPECT_EQ(eng_->stats().tail_loss_probes, 1u);
  ASSERT_EQ(eng_->stats().path_loss_failures, 1u);
  EXPECT_FALSE(Path(0).active);
  EXPECT_EQ(Path(0).inflight, 0u);
  ASSERT_EQ(out.size(), 9u);  // the probe, then the eight chunks on path 1
  EXPECT_EQ(out[0].path_id, 0u);
  for (size_t i = 1; i < out.size(); i++) EXPECT_EQ(out[i].path_id, 1u);
  EXPECT_EQ(eng_->stats().tx_retransmits - retx0, out.size());
}

TEST_F(EngineUnitTest, APathThatStallsWhileAnotherIsAckedFails) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_fail_timeouts = 1;
  cfg.tail_loss_probe = false;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(4 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(3, 4 * kPayload));
  const TimeNs t0 = now_;
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 4u);
  // Path 1 is acknowledged; path 0 never is.
  uint32_t next1 = 0;
  for (const Packet& p : out) {
    if (p.path_id == 1) next1 = p.data.psn + 1;
  }
  ASSERT_GT(next1, 0u);
  now_ += 10'000;
  Feed(Ack(1, next1));
  Drain(now_);
  const TimeNs t1 = t0 + cfg.rto_initial_ns + 20'000;
  Drain(t1);
  EXPECT_FALSE(Path(0).active);
  EXPECT_TRUE(Path(1).active);
  EXPECT_EQ(eng_->stats().path_failures, 1u);
}

// A peer back from a silence answers the paths one by one: the other path's
// ACK, just in, is no proof that a path timing out at that moment is bad.
// Its packets time out (and go again), but it does not fail for it. Over
// kernel UDP a path failed for an ACK that came with the first after 1.9 ms
// of the peer's silence.
TEST_F(EngineUnitTest, APathDoesNotFailTheMomentASilentPeerIsHeardAgain) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_fail_timeouts = 1;
  cfg.tail_loss_probe = false;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(4 * kPayload);
  const TimeNs t0 = now_;
  ASSERT_NO_FATAL_FAILURE(OneChunkOnEachPath(1));
  now_ = t0 + 10'000;
  for (uint16_t path : {0, 1}) Feed(TimedAck(path, 1, t0, path == 1 ? 1 : -1));
  // A packet on each path, then nothing from the peer until path 0's RTO
  // (srtt + rto_min), when path 1's ACK comes in.
  const TimeNs ts = now_ + 10'000;
  now_ = ts;
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 2 * kPayload));
  ASSERT_EQ(OfType(Drain(ts), PacketType::kWrite).size(), 2u);
  const TimeNs rto_at = ts + 10'000 + cfg.rto_min_ns;
  Drain(rto_at - 1);
  now_ = rto_at;
  Feed(TimedAck(1, 2, ts));
  Drain(rto_at);
  EXPECT_EQ(eng_->stats().rto_timeouts, 1u);
  EXPECT_EQ(eng_->stats().path_failures, 0u);
  EXPECT_TRUE(Path(0).active);
}

TEST_F(EngineUnitTest, APathSilentWhileAnotherDeliversLaterPacketsIsReroutedAtItsRescue) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  cfg.path_window_pkts = 4;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  constexpr TimeNs kRtt = 10'000;
  FillSource(10 * kPayload);
  // A round trip of 10 us on each path.
  ASSERT_NO_FATAL_FAILURE(OneChunkOnEachPath(1));
  now_ += kRtt;
  for (uint16_t path : {0, 1}) {
    Packet a = Ack(path, 1);
    a.ack.echo_ts_ns = static_cast<uint32_t>(now_ - kRtt);
    Feed(a);
  }
  const uint16_t dark_port = Path(0).src_port;
  // Four packets on each path at t1; path 0 goes dark.
  const TimeNs t1 = ++now_;
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 8 * kPayload));
  ASSERT_EQ(OfType(Drain(t1), PacketType::kWrite).size(), 8u);
  // Path 1 answers and carries two more (path 0's window is full), which it
  // delivers too: packets sent after path 0's newest.
  now_ = t1 + kRtt;
  Feed(Ack(1, 5));
  ASSERT_NO_FATAL_FAILURE(PostWrite(3, 2 * kPayload));
  for (const Packet& p : OfType(Drain(now_), PacketType::kWrite)) EXPECT_EQ(p.path_id, 1);
  now_ += kRtt;
  Feed(Ack(1, 7));
  // Path 0's tail-loss probe after 2 srtt goes unanswered; at its rescue
  // deadline (twice that) its route is given up, all four packets at once:
  // not at the RTO (rto_min above srtt, 110 us), nor after
  // path_fail_timeouts of them and path_probe_interval_ns.
  const TimeNs rescue = t1 + 4 * kRtt;
  Drain(rescue - 1);
  EXPECT_GE(eng_->stats().tail_loss_probes, 1u);
  EXPECT_EQ(eng_->stats().silent_path_timeouts, 0u);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 0u);
  std::vector<wire::FrameInfo> info;
  std::vector<Packet> out = Drain(rescue, &info);
  EXPECT_EQ(eng_->stats().silent_path_timeouts, 1u);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 4u);
  EXPECT_FALSE(Path(0).active);
  // It is probed at once, from a fresh port (a new route); its chunks go on
  // path 1.
  auto probes_of_path0 = [](const std::vector<Packet>& pkts,
                            const std::vector<wire::FrameInfo>& fi) {
    std::vector<std::pair<Packet, uint16_t>> v;
    for (size_t i = 0; i < pkts.size(); i++) {
      if (pkts[i].type == PacketType::kProbe && pkts[i].path_id == 0) {
        v.emplace_back(pkts[i], fi[i].src_port);
      }
    }
    return v;
  };
  auto first = probes_of_path0(out, info);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_NE(first[0].second, dark_port);
  for (const Packet& p : OfType(out, PacketType::kWrite)) EXPECT_EQ(p.path_id, 1);
  // Unanswered (its route is dark too), the next probe comes 2 srtt later,
  // on yet another port: the peer answers on path 1, so it is not gone.
  Feed(Ack(1, Path(1).inflight + 7));
  info.clear();
  EXPECT_TRUE(probes_of_path0(Drain(rescue + 2 * kRtt - 1, &info), info).empty());
  info.clear();
  out = Drain(rescue + 2 * kRtt, &info);
  auto second = probes_of_path0(out, info);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0].second, first[0].second);
  EXPECT_NE(second[0].second, dark_port);
  // Its answer makes path 0 active again on that port, with the window it had.
  const uint32_t window = Path(0).window;
  now_ = rescue + 3 * kRtt;
  Packet reply;
  reply.type = PacketType::kProbeReply;
  reply.dst_conn_id = eng_conn_;
  reply.path_id = 0;
  reply.probe = second[0].first.probe;
  Feed(reply);
  EXPECT_TRUE(Path(0).active);
  EXPECT_EQ(Path(0).src_port, second[0].second);
  EXPECT_EQ(Path(0).window, window);
  EXPECT_EQ(Path(0).srtt_ns, kRtt);
}

// A peer that falls silent for a while and then works through what queued
// meanwhile answers the paths one by one: a path it has not answered yet
// when another's later packet is acknowledged is not dark. Its verdict waits
// a probe's wait after the peer is heard again. Over kernel UDP on loopback
// a path was rerouted (a path failure) in one 64 KiB write_bw of three.
TEST_F(EngineUnitTest, APathIsNotJudgedDarkTheMomentASilentPeerIsHeardAgain) {
  for (const bool answered : {true, false}) {
    SCOPED_TRACE(answered ? "answered soon after" : "never answered");
    EngineConfig cfg = BaseConfig();
    cfg.num_paths = 2;
    ASSERT_NO_FATAL_FAILURE(Start(cfg));
    constexpr TimeNs kRtt = 10'000;
    FillSource(4 * kPayload);
    const TimeNs t0 = now_;
    ASSERT_NO_FATAL_FAILURE(OneChunkOnEachPath(1));
    now_ = t0 + kRtt;
    for (uint16_t path : {0, 1}) Feed(TimedAck(path, 1, t0, path == 1 ? 1 : -1));
    const TimeNs heard = now_;
    // Then the peer is silent. A packet goes at ts0 on one path and at ts1
    // on the other; both are probed (tail-loss) while the peer is away.
    const TimeNs ts0 = heard + 60'000, ts1 = ts0 + 5'000;
    // The peer is back 105 us after it was last heard, and answers the
    // other path first (its packet and the probe of it), though it left
    // after the late path's.
    const TimeNs back = heard + 105'000;
    TwoSends sent;
    ASSERT_NO_FATAL_FAILURE(SendTwoThenPeerBack(2, ts0, ts1, back, 3, 3, &sent));
    const uint16_t late = sent.first;
    // The late path's rescue deadline (its newest + 2 x (2 srtt + the ACK
    // hold)) comes 5 us later: no verdict yet.
    const TimeNs wait = 2 * kRtt + cfg.ack_delay_ns;
    Drain(ts0 + 2 * wait);
    EXPECT_EQ(eng_->stats().silent_path_timeouts, 0u);
    EXPECT_TRUE(Path(late).active);
    if (answered) {
      now_ = back + wait / 2;
      Feed(TimedAck(late, 3, ts0));
      Drain(back + 2 * wait);
      EXPECT_EQ(eng_->stats().silent_path_timeouts, 0u);
      EXPECT_TRUE(Path(late).active);
    } else {
      // Still silent a probe's wait after the peer came back: dark.
      Drain(back + wait - 1);
      EXPECT_EQ(eng_->stats().silent_path_timeouts, 0u);
      Drain(back + wait);
      EXPECT_EQ(eng_->stats().silent_path_timeouts, 1u);
      EXPECT_FALSE(Path(late).active);
    }
  }
}

// The same peer answering a moment and then falling silent again (a second
// stall) before the late path's ACK went out: at the verdict nothing at all
// has come for rto_min, so what the other path delivered says nothing about
// this one now. The newest chunk goes on another path (the rescue) and the
// path stays. Over kernel UDP: 2 path failures in 10 runs before.
TEST_F(EngineUnitTest, APathIsNotJudgedDarkWhileThePeerIsSilentAgain) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 2;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(6 * kPayload);
  // Two round trips on each path: 20 us, then one of 400 us (a software
  // peer's backlog): srtt 67.5 us, rttvar 102.5 us, so the probe's wait W
  // is 140 us and the RTO 477.5 us.
  const TimeNs t0 = now_;
  ASSERT_NO_FATAL_FAILURE(OneChunkOnEachPath(1));
  now_ = t0 + 20'000;
  for (uint16_t path : {0, 1}) Feed(TimedAck(path, 1, t0));
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 2 * kPayload));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 2u);
  now_ += 20'000;
  for (uint16_t path : {0, 1}) Feed(TimedAck(path, 2, now_ - 400'000));
  const TimeNs wait = 140'000;
  ASSERT_EQ(Path(0).srtt_ns, 67'500u);
  // A packet at ts0 on one path, at ts1 on the other; both probed.
  const TimeNs ts0 = now_ + 10'000, ts1 = ts0 + 10'000;
  // Back after 210 us of silence: the other path's packet and its probe
  // acknowledged, then silence again.
  const TimeNs back = ts0 + 200'000;
  TwoSends sent;
  ASSERT_NO_FATAL_FAILURE(SendTwoThenPeerBack(3, ts0, ts1, back, 4, -1, &sent));
  const uint16_t late = sent.first;
  // The late path's verdict, a probe's wait after the peer came back: the
  // peer has been silent for 140 us (above rto_min) by then.
  const TimeNs verdict = back + wait;
  Drain(verdict - 1);
  EXPECT_EQ(eng_->stats().tail_loss_rescues, 0u);
  Drain(verdict);
  EXPECT_EQ(eng_->stats().silent_path_timeouts, 0u);
  EXPECT_EQ(eng_->stats().tail_loss_rescues, 1u);
  EXPECT_TRUE(Path(late).active);
  // Its ACK comes when the peer wakes again, before the RTO.
  now_ = verdict + 50'000;
  Feed(TimedAck(late, 4, ts0));
  Drain(now_);
  EXPECT_EQ(eng_->stats().rto_timeouts, 0u);
  EXPECT_EQ(eng_->stats().path_failures, 0u);
  EXPECT_TRUE(Path(late).active);
}

// A route that dies under load still delivers what was sent before: the
// ACK of an older packet comes in as the path's newest packet leaves, and
// then nothing. That ACK is no proof the route still works.
class DyingRouteTest : public EngineUnitTest {
 protected:
  static constexpr TimeNs kRtt = 10'000;

  // Two paths of four packets' window and a round trip of kRtt; four
  // packets on each at t1. A round trip later path 0's first arrives, and
  // then nothing of it; path 1 delivers everything. Path 0's room for one
  // more takes one of six new chunks at once (its newest, at t1 + kRtt),
  // path 1's four, and the last goes on path 1 a round trip later, which
  // delivers it: a packet sent after path 0's newest. Returns t1 + kRtt.
  TimeNs Path0DiesAfterItsLastAck() {
    EngineConfig cfg = BaseConfig();
    cfg.num_paths = 2;
    cfg.path_window_pkts = 4;
    Start(cfg);
    FillSource(12 * kPayload);
    PostWrite(1, 2 * kPayload);
    EXPECT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 2u);
    const TimeNs t0 = now_;
    now_ += kRtt;
    for (uint16_t path : {0, 1}) Feed(TimedAck(path, 1, t0));
    const TimeNs t1 = ++now_;
    PostWrite(2, 8 * kPayload);
    EXPECT_EQ(OfType(Drain(t1), PacketType::kWrite).size(), 8u);
    now_ = t1 + kRtt;
    Feed(TimedAck(0, 2, t1));
    Feed(TimedAck(1, 5, t1));
    PostWrite(3, 6 * kPayload);
    const std::vector<Packet> second = OfType(Drain(now_), PacketType::kWrite);
    EXPECT_EQ(second.size(), 5u);
    EXPECT_EQ(
        std::count_if(second.begin(), second.end(), [](const Packet& p) { return p.path_id == 0; }),
        1);
    EXPECT_EQ(Path(0).inflight, 4u);
    now_ = t1 + 2 * kRtt;
    Feed(TimedAck(1, 9, t1 + kRtt));
    EXPECT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
    now_ = t1 + 3 * kRtt;
    Feed(TimedAck(1, 10, t1 + 2 * kRtt));
    return t1 + kRtt;
  }
};

TEST_F(DyingRouteTest, APathWhoseRouteDiedAfterItsLastAckIsReroutedAtItsRescue) {
  const TimeNs newest = Path0DiesAfterItsLastAck();
  ASSERT_FALSE(HasFatalFailure());
  // Path 0's tail-loss probe 2 srtt after its newest goes unanswered, and at
  // the rescue deadline (twice that) it is rerouted, all four packets at
  // once, not at its RTOs.
  const TimeNs rescue = newest + 4 * kRtt;
  Drain(rescue - 1);
  EXPECT_GE(eng_->stats().tail_loss_probes, 1u);
  EXPECT_EQ(eng_->stats().silent_path_timeouts, 0u);
  Drain(rescue);
  EXPECT_EQ(eng_->stats().silent_path_timeouts, 1u);
  EXPECT_EQ(eng_->stats().lost_detected_rto, 4u);
  EXPECT_FALSE(Path(0).active);
  EXPECT_TRUE(Path(1).active);
}

TEST_F(DyingRouteTest, APathStillDeliveringItsQueueIsNotReroutedAtItsRescue) {
  // The same, but path 0 settles one more of its older packets just before
  // its rescue deadline (a queue that drains slowly): its newest is late,
  // not lost.
  const TimeNs newest = Path0DiesAfterItsLastAck();
  ASSERT_FALSE(HasFatalFailure());
  const TimeNs rescue = newest + 4 * kRtt;
  Drain(rescue - 2'000);
  now_ = rescue - 1'000;
  Packet late = Ack(0, 3);
  late.ack.ack_delay_ns = wire::kAckNoEcho;  // no RTT sample: the deadlines stay where they are
  Feed(late);
  Drain(rescue);
  EXPECT_EQ(eng_->stats().silent_path_timeouts, 0u);
  EXPECT_TRUE(Path(0).active);
}

TEST_F(EngineUnitTest, LateProbeReplyRevivesThePathOnThatProbesPort) {
  // A loaded peer answers a probe after the next one went out on another
  // port: the answer still proves its port works, and probes back off.
  EngineConfig cfg = BaseConfig();
  cfg.path_fail_timeouts = 1;
  cfg.tail_loss_probe = false;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(3, kPayload));
  ASSERT_EQ(Drain(now_).size(), 1u);
  const TimeNs t1 = now_ + cfg.rto_initial_ns;
  EXPECT_TRUE(Drain(t1).empty());
  ASSERT_FALSE(Path(0).active);
  const TimeNs t2 = t1 + cfg.path_probe_interval_ns;
  std::vector<wire::FrameInfo> info;
  std::vector<Packet> first = Drain(t2, &info);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(first[0].type, PacketType::kProbe);
  const uint16_t first_port = info[0].src_port;
  // No answer: the next probe waits twice as long, on yet another port.
  EXPECT_EQ(eng_->NextDeadline(), t2 + 2 * cfg.path_probe_interval_ns);
  EXPECT_TRUE(Drain(t2 + 2 * cfg.path_probe_interval_ns - 1).empty());
  info.clear();
  std::vector<Packet> second = Drain(t2 + 2 * cfg.path_probe_interval_ns, &info);
  ASSERT_EQ(second.size(), 1u);
  ASSERT_EQ(second[0].type, PacketType::kProbe);
  EXPECT_NE(info[0].src_port, first_port);
  EXPECT_EQ(second[0].probe.probe_seq, first[0].probe.probe_seq + 1);
  // The answer to the first probe arrives now.
  now_ = t2 + 2 * cfg.path_probe_interval_ns + 1000;
  Packet reply;
  reply.type = PacketType::kProbeReply;
  reply.dst_conn_id = eng_conn_;
  reply.path_id = 0;
  reply.probe = first[0].probe;
  Feed(reply);
  EXPECT_TRUE(Path(0).active);
  EXPECT_EQ(Path(0).src_port, first_port);
  // A reply older than the ports kept is ignored once the path fails again.
  info.clear();
  std::vector<Packet> out = Drain(now_, &info);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(info[0].src_port, first_port);
}

// ---- 7. NAKs: responder ----

class EngineNakTest : public EngineUnitTest {
 protected:
  /** Feeds a WRITE of 16 bytes to @p va with @p rkey; expects a REMOTE_ACCESS NAK. */
  void ExpectWriteRefused(uint64_t va, uint32_t rkey, wire::NakDetail detail) {
    const std::vector<uint8_t> before = region_;
    Packet p = Data(PacketType::kWrite, 2, 0, 0, 0);
    const std::vector<uint8_t> payload = Pattern(0);
    p.payload = payload;
    p.data.msg_len = 16;
    p.data.va = va;
    p.data.rkey = rkey;
    Feed(p);
    std::vector<Packet> out = Drain(now_);
    const std::vector<Packet> naks = OfType(out, PacketType::kNak);
    ASSERT_EQ(naks.size(), 1u);
    EXPECT_EQ(naks[0].dst_conn_id, kPeerConnId);
    EXPECT_EQ(naks[0].path_id, 2u);
    EXPECT_EQ(naks[0].nak.stream_id, kPeerQpn);
    EXPECT_EQ(naks[0].nak.msn, 0u);
    EXPECT_EQ(naks[0].nak.psn, 0u);
    EXPECT_EQ(naks[0].nak.code, wire::NakCode::kRemoteAccess);
    EXPECT_EQ(naks[0].nak.detail, static_cast<uint8_t>(detail));
    EXPECT_EQ(naks[0].nak.rnr_delay_10us, 0u);
    // The packet arrived (path level) but the message was not accepted.
    const Packet ack = OnlyAck(out);
    EXPECT_EQ(ack.ack.cum_psn, 1u);
    EXPECT_NE(StreamAckOf(ack), 1);
    EXPECT_EQ(eng_->stats().tx_naks, 1u);
    EXPECT_TRUE(region_ == before) << "a refused WRITE changed memory";
    EXPECT_TRUE(guard_ == std::vector<uint8_t>(guard_.size(), 0xee)) << "wrote outside";
  }

  std::vector<uint8_t> guard_ = std::vector<uint8_t>(4096, 0xee);
};

TEST_F(EngineNakTest, WriteWithBadRkey) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  // Same region index, another tag: a key that is not this region's.
  ExpectWriteRefused(Addr(0), mr_.rkey ^ 0x00010000, wire::NakDetail::kBadRkey);
  ASSERT_FALSE(HasFailure());
  // As in verbs, the responder's QP is now in error: a later WRITE with a
  // good key is refused (stream in error) and not placed.
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
  FeedWrite(0, 1, 1, 1);
  const std::vector<Packet> later = OfType(Drain(now_), PacketType::kNak);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].nak.code, wire::NakCode::kInvalidRequest);
  EXPECT_EQ(later[0].nak.detail, static_cast<uint8_t>(wire::NakDetail::kStreamInError));
  EXPECT_FALSE(WritePlaced(1));
}

TEST_F(EngineNakTest, WriteWithKeyOfAnotherPd) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  // A key of a region in another PD is as bad as a wrong one.
  const uint32_t pd2 = *eng_->AllocPd();
  auto mr2 =
      eng_->RegMr(pd2, reinterpret_cast<uint64_t>(guard_.data()), guard_.size(), access::kAll);
  ASSERT_TRUE(mr2.ok());
  Packet p = SmallWrite(0, 0, 0, 1);
  p.data.va = reinterpret_cast<uint64_t>(guard_.data());
  p.data.rkey = mr2->rkey;
  Feed(p);
  const std::vector<Packet> naks = OfType(Drain(now_), PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.code, wire::NakCode::kRemoteAccess);
  EXPECT_EQ(naks[0].nak.detail, static_cast<uint8_t>(wire::NakDetail::kBadRkey));
  EXPECT_TRUE(guard_ == std::vector<uint8_t>(guard_.size(), 0xee));
}

TEST_F(EngineNakTest, WriteOutOfBounds) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  // A region in the middle of guard_: 8 of the 16 bytes would land past its end.
  auto mr = eng_->RegMr(pd_, reinterpret_cast<uint64_t>(guard_.data()) + 1024, 2048, access::kAll);
  ASSERT_TRUE(mr.ok());
  ExpectWriteRefused(reinterpret_cast<uint64_t>(guard_.data()) + 1024 + 2048 - 8, mr->rkey,
                     wire::NakDetail::kOutOfBounds);
}

TEST_F(EngineNakTest, WriteBeforeRegionStart) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  auto mr = eng_->RegMr(pd_, reinterpret_cast<uint64_t>(guard_.data()) + 1024, 2048, access::kAll);
  ASSERT_TRUE(mr.ok());
  ExpectWriteRefused(reinterpret_cast<uint64_t>(guard_.data()) + 1024 - 8, mr->rkey,
                     wire::NakDetail::kOutOfBounds);
}

TEST_F(EngineNakTest, WriteWithoutRemoteWritePermission) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  auto mr = eng_->RegMr(pd_, reinterpret_cast<uint64_t>(guard_.data()), guard_.size(),
                        access::kLocalWrite | access::kRemoteRead);
  ASSERT_TRUE(mr.ok());
  ExpectWriteRefused(reinterpret_cast<uint64_t>(guard_.data()) + 64, mr->rkey,
                     wire::NakDetail::kNoPermission);
}

TEST_F(EngineNakTest, SendWithoutReceiveGetsRnr) {
  QpAttr qa;
  qa.min_rnr_delay_ns = 125'000;
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig(), Open::kEngineInitiates, qa));
  Packet p = Data(PacketType::kSend, 0, 0, 0, 0);
  const std::vector<uint8_t> payload = Pattern(0, 32);
  p.payload = payload;
  p.data.msg_len = 32;
  p.data.recv_seq = 0;
  Feed(p);
  std::vector<Packet> out = Drain(now_);
  const std::vector<Packet> naks = OfType(out, PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.code, wire::NakCode::kReceiverNotReady);
  EXPECT_EQ(naks[0].nak.rnr_delay_10us, 13u);  // 125 us, rounded up to 10 us units
  EXPECT_EQ(naks[0].nak.stream_id, kPeerQpn);
  EXPECT_EQ(naks[0].nak.msn, 0u);
  EXPECT_NE(StreamAckOf(OnlyAck(out)), 1);
  EXPECT_TRUE(PollAll(rcq_).empty());
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);

  // A receive posted, the SEND again: accepted and delivered.
  RecvWr rw;
  rw.wr_id = 44;
  rw.sg.push_back({Addr(4096), 64, mr_.lkey});
  ASSERT_TRUE(eng_->PostRecv(qpn_, rw).ok());
  p.data.psn = 1;
  p.data.una_psn = 1;
  Feed(p);
  out = Drain(now_);
  EXPECT_TRUE(OfType(out, PacketType::kNak).empty());
  EXPECT_EQ(StreamAckOf(OnlyAck(out)), 1);
  std::vector<Completion> done = PollAll(rcq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 44u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(done[0].byte_len, 32u);
  EXPECT_EQ(std::memcmp(region_.data() + 4096, payload.data(), 32), 0);
}

TEST_F(EngineNakTest, SendLargerThanReceive) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  RecvWr rw;
  rw.wr_id = 77;
  rw.sg.push_back({Addr(4096), 64, mr_.lkey});
  ASSERT_TRUE(eng_->PostRecv(qpn_, rw).ok());
  const std::vector<uint8_t> before = region_;
  Packet p = Data(PacketType::kSend, 0, 0, 0, 0);
  const std::vector<uint8_t> payload = Pattern(0, 128);
  p.payload = payload;
  p.data.msg_len = 128;
  p.data.recv_seq = 0;
  Feed(p);
  std::vector<Packet> out = Drain(now_);
  const std::vector<Packet> naks = OfType(out, PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.code, wire::NakCode::kInvalidRequest);
  EXPECT_EQ(naks[0].nak.detail, static_cast<uint8_t>(wire::NakDetail::kReceiveTooSmall));
  EXPECT_EQ(naks[0].nak.msn, 0u);
  std::vector<Completion> done = PollAll(rcq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 77u);
  EXPECT_EQ(done[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(done[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(done[0].qp_num, qpn_);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
  EXPECT_TRUE(region_ == before) << "the too-long SEND was placed";
}

TEST_F(EngineNakTest, NakRepeatedWhenSenderAsksAgain) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  Packet p = SmallWrite(0, 0, 0, 0);
  p.data.rkey = mr_.rkey ^ 0x00010000;
  Feed(p);
  ASSERT_EQ(OfType(Drain(now_), PacketType::kNak).size(), 1u);
  // The requester never saw the NAK and re-sends the last packet with ACK_REQ
  // (a message probe): the refusal is repeated, the stream still not acked.
  p.data.psn = 1;
  p.data.una_psn = 1;
  p.flags = wire::flags::kAckReq | wire::flags::kRetransmit;
  Feed(p);
  std::vector<Packet> out = Drain(now_);
  const std::vector<Packet> naks = OfType(out, PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.code, wire::NakCode::kRemoteAccess);
  EXPECT_EQ(naks[0].nak.detail, static_cast<uint8_t>(wire::NakDetail::kBadRkey));
  EXPECT_EQ(naks[0].nak.psn, 1u);
  EXPECT_EQ(naks[0].nak.msn, 0u);
  const Packet ack = OnlyAck(out);
  EXPECT_EQ(ack.ack.cum_psn, 2u);
  EXPECT_EQ(StreamAckOf(ack), 0);
  EXPECT_FALSE(WritePlaced(0));
}

// ---- 7. NAKs: requester ----

TEST_F(EngineUnitTest, RemoteAccessNakFailsWrAndFlushesTheRest) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FillSource(2 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 100));
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 100));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data.msn, 0u);
  EXPECT_EQ(out[1].data.msn, 1u);
  Feed(Ack(0, 2));  // both arrived
  Feed(Nak(0, 0, 0, wire::NakCode::kRemoteAccess, static_cast<uint8_t>(wire::NakDetail::kBadRkey)));
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
  ASSERT_NO_FATAL_FAILURE(PostWrite(3, 100));
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].wr_id, 1u);
  EXPECT_EQ(done[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(done[0].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(done[1].wr_id, 2u);
  EXPECT_EQ(done[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(done[2].wr_id, 3u);
  EXPECT_EQ(done[2].status, WcStatus::kWrFlushErr);
  // Nothing more is sent for the failed QP, not even after timeouts.
  EXPECT_TRUE(Drain(now_).empty());
  EXPECT_TRUE(Drain(now_ + 50 * cfg_.rto_initial_ns).empty());
}

TEST_F(EngineUnitTest, InvalidRequestNakCompletesWithRemInvReq) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FillSource(kPayload);
  SendWr wr;
  wr.wr_id = 8;
  wr.opcode = Opcode::kSend;
  wr.sg.push_back({Addr(0), 200, mr_.lkey});
  ASSERT_TRUE(eng_->PostSend(now_, qpn_, wr).ok());
  ASSERT_EQ(Drain(now_).size(), 1u);
  Feed(Nak(0, 0, 0, wire::NakCode::kInvalidRequest,
           static_cast<uint8_t>(wire::NakDetail::kReceiveTooSmall)));
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kRemInvReqErr);
  EXPECT_EQ(done[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
}

TEST_F(EngineUnitTest, RnrNakResendsWholeMessageAfterDelay) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FillSource(3 * kPayload);
  SendWr wr;
  wr.wr_id = 21;
  wr.opcode = Opcode::kSend;
  wr.sg.push_back({Addr(0), 3 * kPayload, mr_.lkey});
  ASSERT_TRUE(eng_->PostSend(now_, qpn_, wr).ok());
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 3u);
  // All three arrived, but the responder had no receive: RNR, wait 50 us.
  Feed(Ack(0, 3));
  Feed(Nak(0, 0, 2, wire::NakCode::kReceiverNotReady, 0, 5));
  EXPECT_TRUE(Drain(now_).empty());
  EXPECT_EQ(eng_->NextDeadline(), now_ + 50'000);
  EXPECT_TRUE(Drain(now_ + 50'000 - 1).empty());
  EXPECT_TRUE(PollAll(scq_).empty());
  now_ += 50'000;
  out = Drain(now_);
  ASSERT_EQ(out.size(), 3u);
  for (uint32_t i = 0; i < 3; i++) {
    EXPECT_EQ(out[i].type, PacketType::kSend);
    EXPECT_EQ(out[i].data.msn, 0u);
    EXPECT_EQ(out[i].data.recv_seq, 0u);
    EXPECT_EQ(out[i].data.msg_offset, i * kPayload);
    EXPECT_EQ(out[i].data.psn, 3 + i);
    EXPECT_TRUE(PayloadMatchesSource(out[i]));
  }
  Feed(Ack(0, 6, {}, 1));
  EXPECT_TRUE(Drain(now_).empty());
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 21u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);
}

TEST_F(EngineUnitTest, RnrRetriesExhaustedCompleteWithRnrRetryExc) {
  QpAttr qa;
  qa.rnr_retry = 1;
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig(), Open::kEngineInitiates, qa));
  SendWr wr;
  wr.wr_id = 22;
  wr.opcode = Opcode::kSend;
  wr.sg.push_back({Addr(0), 100, mr_.lkey});
  ASSERT_TRUE(eng_->PostSend(now_, qpn_, wr).ok());
  ASSERT_EQ(Drain(now_).size(), 1u);
  Feed(Ack(0, 1));
  Feed(Nak(0, 0, 0, wire::NakCode::kReceiverNotReady, 0, 1));
  now_ += 10'000;
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 1u);  // the one retry
  Feed(Ack(0, 2));
  Feed(Nak(0, 0, 1, wire::NakCode::kReceiverNotReady, 0, 1));
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
}

// All chunks arrived but no stream ACK came: the last chunk goes again with ACK_REQ.
TEST_F(EngineUnitTest, MessageProbeResendsLastChunk) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FillSource(3 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(4, 3 * kPayload));
  ASSERT_EQ(Drain(now_).size(), 3u);
  Feed(Ack(0, 3));  // path level only: the stream ACK was lost
  const TimeNs at = eng_->NextDeadline();
  ASSERT_NE(at, kNever);
  EXPECT_GT(at, now_);
  EXPECT_TRUE(Drain(at - 1).empty());
  std::vector<Packet> out = Drain(at);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data.msg_offset, 2 * kPayload);
  EXPECT_EQ(out[0].data.psn, 3u);
  EXPECT_NE(out[0].flags & wire::flags::kAckReq, 0);
  EXPECT_TRUE(PayloadMatchesSource(out[0]));
  EXPECT_TRUE(PollAll(scq_).empty());
  now_ = at;
  Feed(Ack(0, 4, {}, 1));
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 4u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(Drain(now_ + 100 * cfg_.rto_max_ns).empty());
}

// ---- 8. Drops ----

TEST_F(EngineUnitTest, DropsUnknownConnId) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  Packet p = SmallWrite(0, 0, 0, 0);
  p.dst_conn_id = eng_conn_ + 1;
  Feed(p);
  Packet a = Ack(0, 0);
  a.dst_conn_id = eng_conn_ ^ 0x80000000u;
  Feed(a);
  EXPECT_EQ(eng_->stats().rx_unknown_conn, 2u);
  EXPECT_TRUE(Drain(now_).empty());
  EXPECT_TRUE(Drain(now_ + 10 * cfg_.ack_delay_ns).empty());
  EXPECT_FALSE(WritePlaced(0));
  // Nothing is due but the connection's keep-alive.
  EXPECT_GE(eng_->NextDeadline(), cfg_.keepalive_ns);
}

TEST_F(EngineUnitTest, DropsWrongSourceIp) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  Feed(SmallWrite(0, 0, 0, 0), wire::IpAddr::V4(10, 0, 0, 3));
  EXPECT_EQ(eng_->stats().rx_wrong_source, 1u);
  EXPECT_TRUE(Drain(now_).empty());
  EXPECT_TRUE(Drain(now_ + 10 * cfg_.ack_delay_ns).empty());
  EXPECT_FALSE(WritePlaced(0));
  // The same packet from the peer is accepted: the drop was about the source.
  Feed(SmallWrite(0, 0, 0, 0));
  EXPECT_EQ(OnlyAck(Drain(now_)).ack.cum_psn, 1u);
  EXPECT_TRUE(WritePlaced(0));
}

TEST_F(EngineUnitTest, DropsBadCrc) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  std::vector<uint8_t> f = Frame(SmallWrite(0, 0, 0, 0), PeerIp());
  f[f.size() - 10] ^= 0x40;  // a payload byte: only the CRC can tell
  eng_->OnFrame(now_, f);
  std::vector<uint8_t> g = Frame(Ack(0, 0), PeerIp());
  g.back() ^= 0x01;  // the CRC itself
  eng_->OnFrame(now_, g);
  EXPECT_EQ(eng_->stats().rx_parse_drops[static_cast<size_t>(wire::ParseError::kBadCrc)], 2u);
  EXPECT_EQ(eng_->stats().rx_unknown_conn, 0u);
  EXPECT_TRUE(Drain(now_).empty());
  EXPECT_TRUE(Drain(now_ + 10 * cfg_.ack_delay_ns).empty());
  EXPECT_FALSE(WritePlaced(0));
  EXPECT_TRUE(std::all_of(region_.begin(), region_.begin() + 16, [](uint8_t b) { return b == 0; }));
}

}  // namespace
}  // namespace metaroce::transport::unit
