/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Engine hardening, one engine driven by hand (the test plays the peer and,
// where it says so, an off-path host): no false success, no silent stall, no
// way in for a host that is not the peer. Each test names the failure it
// rules out (doc/transport.md, "Hardening").

#include <set>

#include "engine_unit_fixture.h"

namespace metaroce::transport::unit {
namespace {

/** A region this many bytes long at an address nothing reads (posting only). */
constexpr uint64_t kFarVa = 0x1000'0000'0000;

wire::IpAddr OffPathIp() { return wire::IpAddr::V4(10, 0, 0, 66); }

class HardeningTest : public EngineUnitTest {
 protected:
  /** Acknowledges PSNs [0, n) of path 0 at once, with a stream ACK if @p msn_next >= 0. */
  void AckAll(uint32_t n, int64_t msn_next = -1) { Feed(Ack(0, n, {}, msn_next)); }

  void PostRecvAt(uint64_t wr_id, size_t off, uint32_t len, uint32_t lkey = 0) {
    RecvWr r;
    r.wr_id = wr_id;
    r.sg.push_back({Addr(off), len, lkey != 0 ? lkey : mr_.lkey});
    ASSERT_TRUE(eng_->PostRecv(qpn_, r).ok());
  }

  SendWr Wr(Opcode op, uint64_t local_va, uint64_t len, uint32_t lkey) {
    SendWr wr;
    wr.wr_id = 1;
    wr.opcode = op;
    for (uint64_t done = 0; done < len;) {
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(len - done, 1ull << 31));
      wr.sg.push_back({local_va + done, n, lkey});
      done += n;
    }
    wr.remote_addr = kRemoteVa;
    wr.rkey = kRemoteRkey;
    return wr;
  }
};

// ---- 1. No false success ----

TEST_F(HardeningTest, WorkRequestsLongerThanMaxMsgSzAreRefusedWhenPosted) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  // A region of 8 GiB the engine never touches in this test (nothing is sent).
  auto far = eng_->RegMr(pd_, kFarVa, 8ull << 30, access::kAll);
  ASSERT_TRUE(far.ok()) << far.status();
  for (uint64_t len :
       {kMaxMessageBytes + 1, (uint64_t{1} << 32) - 1, (uint64_t{1} << 32) + kPayload}) {
    for (Opcode op : {Opcode::kWrite, Opcode::kSend, Opcode::kRead}) {
      const absl::Status st = eng_->PostSend(now_, qpn_, Wr(op, kFarVa, len, far->lkey));
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << len;
      EXPECT_NE(st.message().find("max_msg_sz"), std::string_view::npos) << st;
    }
  }
  EXPECT_TRUE(PollAll(scq_).empty());
  // Exactly max_msg_sz is fine, and is cut into every one of its chunks.
  ASSERT_TRUE(
      eng_->PostSend(now_, qpn_, Wr(Opcode::kWrite, kFarVa, kMaxMessageBytes, far->lkey)).ok());
  const Connection* c = EnginePeer::Conn(*eng_, eng_conn_);
  ASSERT_NE(c, nullptr);
  uint32_t chunks = 0;
  for (const TxMsg& m : c->msgs) {
    if (m.in_use && m.len == kMaxMessageBytes) chunks = m.num_chunks;
  }
  EXPECT_EQ(chunks, kMaxMessageBytes / kPayload);
}

TEST(EngineIdentity, EnginesWithIdenticalConfigurationsAreDistinctOnTheWire) {
  // Same address, same (fixed) seed: the incarnation still comes from the OS,
  // and keys every id the engine draws.
  std::vector<Packet> reqs;
  for (int i = 0; i < 2; i++) {
    ProcessMemory mem;
    EngineConfig cfg = BaseConfig();
    auto e = Engine::Create(cfg, &mem);
    ASSERT_TRUE(e.ok());
    Engine& eng = **e;
    const uint32_t pd = *eng.AllocPd();
    const uint32_t cq = *eng.CreateCq(16);
    const uint32_t qpn = *eng.CreateQp({.pd = pd, .send_cq = cq, .recv_cq = cq});
    ASSERT_TRUE(eng.ConnectQp(qpn, {PeerIp(), PeerMac(), wire::kDefaultUdpPort}, 7).ok());
    std::array<uint8_t, kSlotBytes> buf;
    TxSlot slot{buf.data(), kSlotBytes};
    ASSERT_EQ(eng.PollTx(0, {&slot, 1}), 1u);
    Packet p;
    wire::FrameInfo info;
    ASSERT_EQ(wire::ParseFrame({buf.data(), slot.len}, {}, &info, &p), wire::ParseError::kOk);
    reqs.push_back(p);
  }
  EXPECT_NE(reqs[0].conn.incarnation, reqs[1].conn.incarnation);
  EXPECT_NE(reqs[0].conn.src_conn_id, reqs[1].conn.src_conn_id);
  EXPECT_NE(reqs[0].conn.nonce, reqs[1].conn.nonce);
}

TEST_F(HardeningTest, ARestartedPeerFailsTheOldQpsAndGetsANewConnection) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig(), Open::kEngineAccepts));
  FillSource(kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(9, kPayload));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
  AckAll(1);  // the old peer got the packet (and dies before accepting the WRITE)
  // The same request again (its ACCEPT was lost) is answered again, nothing more.
  std::vector<Packet> again = OpenAsPeer(PeerReq(kPeerConnId, kPeerIncarnation));
  ASSERT_EQ(OfType(again, PacketType::kConnAccept).size(), 1u);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);
  // A new incarnation at the same address, even with the old connection id:
  // the peer restarted, so the WRITE it never acknowledged cannot succeed.
  std::vector<Packet> out = OpenAsPeer(PeerReq(kPeerConnId, kPeerIncarnation + 1));
  ASSERT_EQ(OfType(out, PacketType::kConnAccept).size(), 1u);
  EXPECT_NE(OfType(out, PacketType::kConnAccept)[0].conn.src_conn_id, eng_conn_);
  EXPECT_EQ(eng_->stats().conn_restarts, 1u);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 9u);
  EXPECT_EQ(done[0].status, WcStatus::kRetryExcErr);
  // Stale packets of the old incarnation reach nothing.
  const uint64_t unknown = eng_->stats().rx_unknown_conn;
  AckAll(1, 1);
  EXPECT_EQ(eng_->stats().rx_unknown_conn, unknown + 1);
  EXPECT_TRUE(PollAll(scq_).empty());
  EXPECT_EQ(eng_->stats().qps_moved, 0u);
}

TEST_F(HardeningTest, AQpThatReconnectedBeforeTheRestartWasNoticedMovesToTheNewPeer) {
  // The application learned of the peer's restart out of band and connected
  // a new QP at once; the engine still had the old, silent connection, so
  // the new QP joined it. When the new incarnation's handshake comes, that
  // QP, which never heard from the old peer, goes over with its work.
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig(), Open::kEngineAccepts));
  AckAll(0);  // the old peer is heard from: qpn_ is its QP
  const uint32_t fresh = *eng_->CreateQp({.pd = pd_, .send_cq = scq_, .recv_cq = rcq_});
  ASSERT_TRUE(
      eng_->ConnectQp(fresh, {PeerIp(), PeerMac(), wire::kDefaultUdpPort}, kPeerQpn + 1).ok());
  FillSource(kPayload);
  SendWr wr;
  wr.wr_id = 21;
  wr.opcode = Opcode::kWrite;
  wr.sg.push_back({Addr(0), kPayload, mr_.lkey});
  wr.remote_addr = kRemoteVa;
  wr.rkey = kRemoteRkey;
  ASSERT_TRUE(eng_->PostSend(now_, fresh, wr).ok());
  ASSERT_EQ(Drain(now_)[0].dst_conn_id, kPeerConnId);  // lost with the old peer
  const std::vector<Packet> out = OpenAsPeer(PeerReq(kPeerConnId + 7, kPeerIncarnation + 1));
  const std::vector<Packet> acc = OfType(out, PacketType::kConnAccept);
  ASSERT_EQ(acc.size(), 1u);
  EXPECT_EQ(eng_->stats().qps_moved, 1u);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);  // it had the old peer
  EXPECT_EQ(eng_->GetQpState(fresh), QpState::kReady);
  // The WRITE starts over on the new connection and completes on its peer's stream ACK.
  const std::vector<Packet> writes = OfType(out, PacketType::kWrite);
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].dst_conn_id, kPeerConnId + 7);
  EXPECT_EQ(writes[0].data.msn, 0u);
  EXPECT_EQ(writes[0].data.src_stream, fresh);
  Packet ack = Ack(0, writes[0].data.psn + 1);
  ack.dst_conn_id = acc[0].conn.src_conn_id;
  ack.ack.num_stream_acks = 1;
  ack.ack.stream_acks[0] = {fresh, 1};
  Feed(ack);
  bool ok = false;
  for (const Completion& c : PollAll(scq_)) ok |= c.wr_id == 21 && c.status == WcStatus::kSuccess;
  EXPECT_TRUE(ok);
}

// ---- 5. Off-path hosts ----

TEST_F(HardeningTest, ASpoofedConnReqCannotTearDownALiveConnection) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  // An off-path host sends requests with the peer's source address, a new
  // connection id and incarnation, with no cookie and with guessed ones.
  Packet forged = PeerReq(0x0bad0001, 0x0bad'0000'0000'0001);
  Feed(forged);
  forged.conn.cookie = 0x1234'5678'9abc'de00;
  Feed(forged);
  forged.conn.cookie = 0x1234'5678'9abc'de01;
  Feed(forged);
  const std::vector<Packet> out = Drain(now_);
  EXPECT_EQ(OfType(out, PacketType::kConnRetry).size(), 3u);  // stateless answers only
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(eng_->stats().rx_bad_cookie, 2u);
  EXPECT_EQ(eng_->stats().conn_failures, 0u);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);
  ASSERT_EQ(eng_->GetConnections().size(), 1u);
  EXPECT_EQ(eng_->GetConnections()[0].state, ConnInfo::State::kUp);
  // The connection still carries work.
  FillSource(100);
  ASSERT_NO_FATAL_FAILURE(PostWrite(3, 100));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
  AckAll(1, 1);
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
}

TEST_F(HardeningTest, CloseAndRejectNeedWhatOnlyThePeerKnows) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  Packet close;
  close.type = PacketType::kConnClose;
  close.dst_conn_id = eng_conn_;
  close.conn.src_conn_id = kPeerConnId;
  close.conn.reason = wire::ConnReason::kShutdown;
  close.conn.incarnation = kPeerIncarnation + 5;  // not the peer's
  close.conn.min_version = close.conn.max_version = wire::kVersion;
  Feed(close);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);
  close.conn.incarnation = kPeerIncarnation;
  Feed(close, OffPathIp());  // right fields, wrong source
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);
  Feed(close);  // the peer itself
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
}

TEST_F(HardeningTest, ConnReqsWithoutACookieCreateNoState) {
  EngineConfig cfg = BaseConfig();
  cfg.max_connections = 8;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  only_to_peer_ = false;
  // A flood from 2000 forged addresses and ports: each gets a cookie it never sees.
  for (uint32_t i = 0; i < 2000; i++) {
    const wire::IpAddr src =
        wire::IpAddr::V4(10, 1, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i));
    Feed(PeerReq(0x1000 + i, 0xf00d'0000 + i, static_cast<uint16_t>(1000 + i)), src);
    if (i % 100 == 99) Drain(now_);
  }
  Drain(now_);
  EXPECT_EQ(eng_->GetConnections().size(), 1u);
  EXPECT_EQ(eng_->stats().tx_conn_retries, 2000u);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);
}

TEST_F(HardeningTest, ConnectionLimitsNeverEvictAConnectionWithQps) {
  EngineConfig cfg = BaseConfig();
  cfg.max_connections = 3;
  cfg.max_connections_per_host = 2;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));  // connection 1: has the QP
  only_to_peer_ = false;
  const wire::IpAddr host_b = wire::IpAddr::V4(10, 0, 0, 20);
  const wire::IpAddr host_c = wire::IpAddr::V4(10, 0, 0, 30);
  // One more engine on the peer's host: fine; a third is over the per-host limit.
  EXPECT_EQ(OfType(OpenAsPeer(PeerReq(0x2001, 0x2001, 5001)), PacketType::kConnAccept).size(), 1u);
  std::vector<Packet> over = OpenAsPeer(PeerReq(0x2002, 0x2002, 5002));
  ASSERT_EQ(OfType(over, PacketType::kConnReject).size(), 1u);
  EXPECT_EQ(OfType(over, PacketType::kConnReject)[0].conn.reason, wire::ConnReason::kNoResources);
  // Another host fills the table (3). A fourth connection evicts the idle one
  // that waited longest, politely (CONN_CLOSE), never the one with the QP.
  now_ += 1000;
  EXPECT_EQ(OfType(OpenAsPeer(PeerReq(0x3001, 0x3001), host_b), PacketType::kConnAccept).size(),
            1u);
  now_ += 1000;
  std::vector<Packet> out = OpenAsPeer(PeerReq(0x4001, 0x4001), host_c);
  EXPECT_EQ(OfType(out, PacketType::kConnAccept).size(), 1u);
  const std::vector<Packet> closes = OfType(out, PacketType::kConnClose);
  ASSERT_EQ(closes.size(), 1u);
  EXPECT_EQ(closes[0].dst_conn_id, 0x2001u);
  EXPECT_EQ(eng_->stats().conn_evicted, 1u);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);
}

TEST_F(HardeningTest, AConnectionNoQpUsesIsClosedWhenIdle) {
  EngineConfig cfg = BaseConfig();
  cfg.conn_idle_ns = 50'000'000;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  only_to_peer_ = false;
  // A peer opens a second connection (another engine on its host) and never
  // uses it from here: no local QP refers to it.
  ASSERT_EQ(OfType(OpenAsPeer(PeerReq(0x2001, 0x2001, 5001)), PacketType::kConnAccept).size(), 1u);
  ASSERT_EQ(eng_->GetConnections().size(), 2u);
  now_ += cfg.conn_idle_ns / 2;
  EXPECT_TRUE(OfType(Drain(now_), PacketType::kConnClose).empty());
  now_ += cfg.conn_idle_ns;
  EXPECT_LE(eng_->NextDeadline(), now_);
  const std::vector<Packet> closes = OfType(Drain(now_), PacketType::kConnClose);
  ASSERT_EQ(closes.size(), 1u);
  EXPECT_EQ(closes[0].dst_conn_id, 0x2001u);
  EXPECT_EQ(closes[0].conn.reason, wire::ConnReason::kTimeout);
  EXPECT_NE(closes[0].conn.incarnation, 0u);
  EXPECT_EQ(eng_->stats().conn_idle_closed, 1u);
  EXPECT_EQ(eng_->stats().conn_failures, 0u);    // a close is no failure
  ASSERT_EQ(eng_->GetConnections().size(), 1u);  // the one with the QP stays (keep-alives)
  EXPECT_EQ(eng_->GetConnections()[0].conn_id, eng_conn_);
}

TEST_F(HardeningTest, PeerParametersAreClamped) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  only_to_peer_ = false;
  Packet req = PeerReq(0x2001, 0x2001, 5001);
  req.conn.num_paths = kMaxPaths + 1;  // ~7 MB of receive state if taken
  Feed(req);
  const std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(OfType(out, PacketType::kConnReject).size(), 1u);
  EXPECT_EQ(OfType(out, PacketType::kConnReject)[0].conn.reason, wire::ConnReason::kBadParameters);
  EXPECT_EQ(eng_->GetConnections().size(), 1u);
}

TEST_F(HardeningTest, AStreamOnlyTakesDataFromItsPeerStream) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  Packet p = SmallWrite(0, 0, 0, 0);
  p.data.src_stream = kPeerQpn + 1;  // another QP of the same peer
  Feed(p);
  EXPECT_FALSE(WritePlaced(0));
  EXPECT_EQ(eng_->stats().rx_wrong_stream, 1u);
  FeedWrite(0, 1, 1, 0);  // the right stream
  EXPECT_TRUE(WritePlaced(0));
}

TEST_F(HardeningTest, ChunkStateOfThePeersMessagesIsBounded) {
  EngineConfig cfg = BaseConfig();
  cfg.rx_msg_state_bytes = 16;  // room for one 128-chunk bitmap
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  PostRecvAt(1, 0, 128 * kPayload);
  PostRecvAt(2, 128 * kPayload, 128 * kPayload);
  // Two 128-chunk SENDs open at once: the second does not fit and is not tracked.
  Feed(SendChunk(0, 0, 128 * kPayload, 0, 0));
  Feed(SendChunk(1, 1, 128 * kPayload, 0, 1));
  EXPECT_EQ(eng_->stats().rx_state_exhausted, 1u);
  Drain(now_);
  // Its message probe learns that nothing of it was placed.
  Packet probe = SendChunk(2, 1, 128 * kPayload, 127, 1);
  probe.flags |= wire::flags::kMsgProbe;
  Feed(probe);
  const std::vector<Packet> naks = OfType(Drain(now_), PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.code, wire::NakCode::kResend);
  EXPECT_EQ(naks[0].nak.msn, 1u);
  EXPECT_EQ(naks[0].nak.first_chunk, 0u);
  EXPECT_EQ(naks[0].nak.num_chunks, 128u);
}

// ---- 2. Nothing the receiver dropped is lost for good ----

TEST_F(HardeningTest, AMessageProbeIsAnsweredWithTheChunksThatWereNotPlaced) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  // Chunk 0 of a 3-chunk SEND arrives before its receive is posted: NAK RNR,
  // dropped. The receive is posted, chunks 1 and 2 are placed.
  Feed(SendChunk(0, 0, 3 * kPayload, 0, 0));
  ASSERT_EQ(OfType(Drain(now_), PacketType::kNak).size(), 1u);
  PostRecvAt(7, 4096, 3 * kPayload);
  Feed(SendChunk(1, 0, 3 * kPayload, 1, 0));
  Feed(SendChunk(2, 0, 3 * kPayload, 2, 0));
  Drain(now_);
  // The requester (whose RNR NAK was lost) holds every chunk as arrived and probes.
  Packet probe = SendChunk(3, 0, 3 * kPayload, 2, 0);
  probe.flags |= wire::flags::kMsgProbe | wire::flags::kRetransmit;
  Feed(probe);
  const std::vector<Packet> naks = OfType(Drain(now_), PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.code, wire::NakCode::kResend);
  EXPECT_EQ(naks[0].nak.stream_id, kPeerQpn);
  EXPECT_EQ(naks[0].nak.first_chunk, 0u);
  EXPECT_EQ(naks[0].nak.num_chunks, 1u);
  EXPECT_TRUE(PollAll(rcq_).empty());
  Feed(SendChunk(4, 0, 3 * kPayload, 0, 0));
  std::vector<Completion> done = PollAll(rcq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  for (size_t i = 0; i < 3 * kPayload; i++) ASSERT_EQ(region_[4096 + i], PatternByte(0, i)) << i;
}

TEST_F(HardeningTest, AProbeForAStreamNotConnectedYetAsksForTheWholeMessage) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  Packet p = SmallWrite(0, 0, 0, 0);
  p.data.stream_id = qpn_ + 1000;  // no such QP (yet)
  p.data.msg_len = 3 * kPayload;
  p.data.msg_offset = 2 * kPayload;
  p.flags |= wire::flags::kMsgProbe;
  Feed(p);
  const std::vector<Packet> naks = OfType(Drain(now_), PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.code, wire::NakCode::kResend);
  EXPECT_EQ(naks[0].nak.stream_id, kPeerQpn);  // the sender's stream, from src_stream
  EXPECT_EQ(naks[0].nak.first_chunk, 0u);
  EXPECT_EQ(naks[0].nak.num_chunks, 3u);
}

TEST_F(HardeningTest, AMessageAcceptedBeforeItsQpWasDestroyedIsStillAcknowledged) {
  // ibv_rc_pingpong's last exchange: the responder accepts the last WRITE,
  // completes, and destroys its QP; the stream ACK is lost on the way. The
  // requester's probe must learn that the message was accepted, not fail it
  // with "retry exceeded" (the data is placed and its completion delivered).
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  Packet rd = Data(PacketType::kReadReq, 0, 0, 0, 0);
  rd.data.msg_len = 16;
  rd.data.va = Addr(0);
  rd.data.rkey = mr_.rkey;
  Feed(rd);
  FeedWrite(0, 1, 0, 1);
  std::vector<Packet> out = Drain(now_);  // the READ response and the ACK: both lost
  ASSERT_EQ(OfType(out, PacketType::kReadResp).size(), 1u);
  ASSERT_EQ(StreamAckOf(OnlyAck(out)), 2);
  ASSERT_TRUE(eng_->DestroyQp(qpn_).ok());
  Packet probe = SmallWrite(0, 2, 0, 1);
  probe.flags |= wire::flags::kMsgProbe | wire::flags::kRetransmit;
  Feed(probe);
  out = Drain(now_);
  EXPECT_TRUE(OfType(out, PacketType::kNak).empty());
  EXPECT_EQ(StreamAckOf(OnlyAck(out)), 2);
  // A message the QP never accepted is still asked for again (and so fails
  // at the requester when its retries run out), ...
  Packet later = SmallWrite(0, 3, 0, 2);
  later.flags |= wire::flags::kMsgProbe;
  Feed(later);
  out = Drain(now_);
  ASSERT_EQ(OfType(out, PacketType::kNak).size(), 1u);
  EXPECT_EQ(OfType(out, PacketType::kNak)[0].nak.code, wire::NakCode::kResend);
  // ... as is a READ, whose response will never come: a stream ACK would keep
  // its requester waiting for good (AReadTheResponderAcceptedIsNotProbedToDeath).
  rd.data.psn = 4;
  rd.flags |= wire::flags::kMsgProbe | wire::flags::kRetransmit;
  Feed(rd);
  out = Drain(now_);
  EXPECT_EQ(StreamAckOf(OnlyAck(out)), -1);
  EXPECT_EQ(OfType(out, PacketType::kNak).size(), 1u);
  // Another stream of the peer's learns nothing about this one.
  Packet other = SmallWrite(0, 5, 0, 0);
  other.data.src_stream = kPeerQpn + 1;
  other.flags |= wire::flags::kMsgProbe;
  Feed(other);
  for (const Packet& a : OfType(Drain(now_), PacketType::kAck)) {
    for (uint32_t i = 0; i < a.ack.num_stream_acks; i++) {
      EXPECT_NE(a.ack.stream_acks[i].stream_id, kPeerQpn + 1);
    }
  }
}

TEST_F(HardeningTest, NakResendMakesTheSenderSendExactlyThoseChunksAgain) {
  EngineConfig cfg = BaseConfig();
  cfg.msg_probe_min_ns = 1'000'000;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(4 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(5, 4 * kPayload));
  ASSERT_EQ(Drain(now_).size(), 4u);
  AckAll(4);  // every packet arrived, no stream ACK: the receiver dropped some
  EXPECT_TRUE(Drain(now_).empty());
  now_ += cfg.msg_probe_min_ns;
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data.msg_offset, 3 * kPayload);
  EXPECT_NE(out[0].flags & wire::flags::kMsgProbe, 0);
  EXPECT_NE(out[0].flags & wire::flags::kAckReq, 0);
  Packet resend = Nak(0, 0, out[0].data.psn, wire::NakCode::kResend,
                      static_cast<uint8_t>(wire::NakDetail::kNotPlaced));
  resend.nak.first_chunk = 1;
  resend.nak.num_chunks = 2;
  Feed(resend);
  out = Drain(now_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data.msg_offset, 1 * kPayload);
  EXPECT_EQ(out[1].data.msg_offset, 2 * kPayload);
  EXPECT_TRUE(PayloadMatchesSource(out[0]));
  EXPECT_EQ(out[0].flags & wire::flags::kMsgProbe, 0);
  EXPECT_EQ(eng_->stats().resend_requests, 1u);
  // They arrive and the receiver accepts the message.
  Feed(Ack(0, out[1].data.psn + 1, {}, 1));
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
}

TEST_F(HardeningTest, TheStreamWindowIsThePeersFromTheHandshake) {
  peer_stream_window_ = 4;
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FillSource(16 * 10);
  for (uint64_t i = 0; i < 10; i++) ASSERT_NO_FATAL_FAILURE(PostWrite(i, 16, 16 * i));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 4u);  // never more than the receiver tracks
  EXPECT_EQ(out.back().data.msn, 3u);
  Feed(Ack(0, 4, {}, 2));
  out = Drain(now_);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data.msn, 4u);
  EXPECT_EQ(out[1].data.msn, 5u);
}

// ---- 3. Verbs semantics ----

TEST_F(HardeningTest, AReadTheResponderAcceptedIsNotProbedToDeath) {
  EngineConfig cfg = BaseConfig();
  cfg.msg_probe_min_ns = cfg.msg_probe_max_ns = 200'000;
  QpAttr qa;
  qa.retry_cnt = 1;
  ASSERT_NO_FATAL_FAILURE(Start(cfg, Open::kEngineInitiates, qa));
  SendWr wr;
  wr.wr_id = 4;
  wr.opcode = Opcode::kRead;
  wr.sg.push_back({Addr(0), 8 * kPayload, mr_.lkey});
  wr.remote_addr = kRemoteVa;
  wr.rkey = kRemoteRkey;
  ASSERT_TRUE(eng_->PostSend(now_, qpn_, wr).ok());
  ASSERT_EQ(Drain(now_).size(), 1u);
  AckAll(1, 1);  // the responder accepted it; its response is queued behind others
  // Far longer than the probe budget: the responder answers every probe (its
  // stream ACK still covers the READ), so the READ waits.
  uint32_t probes = 0;
  for (int i = 0; i < 20; i++) {
    now_ += cfg.msg_probe_max_ns;
    for (const Packet& p : Drain(now_)) {
      if (p.type != PacketType::kReadReq) continue;
      EXPECT_NE(p.flags & wire::flags::kMsgProbe, 0);
      probes++;
      Feed(Ack(0, p.data.psn + 1, {}, 1));
    }
  }
  EXPECT_GE(probes, 10u);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);
  EXPECT_TRUE(PollAll(scq_).empty());
  for (uint32_t k = 0; k < 8; k++) {
    Packet r = Data(PacketType::kReadResp, 0, k, k, 0);
    r.data.stream_id = qpn_;
    r.data.msg_len = 8 * kPayload;
    r.data.msg_offset = k * kPayload;
    payloads_.push_back(std::vector<uint8_t>(kPayload, static_cast<uint8_t>(k + 1)));
    r.payload = payloads_.back();
    Feed(r);
  }
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(region_[7 * kPayload], 8);
}

TEST_F(HardeningTest, ACqThatOverflowsIsInErrorAndItsQpsAreFatal) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  const uint32_t small = *eng_->CreateCq(2);
  const uint32_t qp2 = *eng_->CreateQp({.pd = pd_, .send_cq = small, .recv_cq = small});
  ASSERT_TRUE(
      eng_->ConnectQp(qp2, {PeerIp(), PeerMac(), wire::kDefaultUdpPort}, kPeerQpn + 1).ok());
  FillSource(64);
  for (uint64_t i = 0; i < 3; i++) {
    SendWr wr;
    wr.wr_id = 100 + i;
    wr.opcode = Opcode::kWrite;
    wr.sg.push_back({Addr(16 * i), 16, mr_.lkey});
    wr.remote_addr = kRemoteVa;
    wr.rkey = kRemoteRkey;
    ASSERT_TRUE(eng_->PostSend(now_, qp2, wr).ok());
  }
  ASSERT_EQ(Drain(now_).size(), 3u);
  Packet ack = Ack(0, 3);
  ack.ack.num_stream_acks = 1;
  ack.ack.stream_acks[0] = {qp2, 3};
  Feed(ack);
  EXPECT_TRUE(eng_->CqInError(small));
  EXPECT_FALSE(eng_->CqInError(scq_));
  Drain(now_);
  std::array<AsyncEvent, 4> ev;
  ASSERT_EQ(eng_->PollAsyncEvents(ev), 2u);
  EXPECT_EQ(ev[0].type, AsyncEvent::Type::kCqError);
  EXPECT_EQ(ev[0].id, small);
  EXPECT_EQ(ev[1].type, AsyncEvent::Type::kQpFatal);
  EXPECT_EQ(ev[1].id, qp2);
  EXPECT_EQ(eng_->GetQpState(qp2), QpState::kError);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kReady);  // other CQs are not involved
  EXPECT_EQ(eng_->stats().cq_overflows, 1u);
}

TEST_F(HardeningTest, RnrDelayIsHonouredWhileTheMessageIsStillQueued) {
  EngineConfig cfg = BaseConfig();
  cfg.path_window_pkts = 2;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(6 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 6 * kPayload, 0, Opcode::kSend));
  ASSERT_EQ(Drain(now_).size(), 2u);
  Feed(Nak(0, 0, 0, wire::NakCode::kReceiverNotReady, 0, 10));  // wait 100 us
  AckAll(2);  // the window opens; the SEND must still wait
  EXPECT_TRUE(OfType(Drain(now_), PacketType::kSend).empty());
  now_ += 99'000;
  EXPECT_TRUE(OfType(Drain(now_), PacketType::kSend).empty());
  now_ += 1'000;
  std::vector<Packet> out = OfType(Drain(now_), PacketType::kSend);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data.msg_offset, 0u);  // the whole message again, from its start
}

TEST_F(HardeningTest, StaleRnrNaksDoNotCountAgainstRnrRetry) {
  QpAttr qa;
  qa.rnr_retry = 1;
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig(), Open::kEngineInitiates, qa));
  FillSource(3 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 3 * kPayload, 0, Opcode::kSend));
  ASSERT_EQ(Drain(now_).size(), 3u);
  // Every chunk was refused; the NAKs for chunks 1 and 2 come late.
  Feed(Nak(0, 0, 0, wire::NakCode::kReceiverNotReady, 0, 1));
  Feed(Nak(0, 0, 1, wire::NakCode::kReceiverNotReady, 0, 1));
  Feed(Nak(0, 0, 2, wire::NakCode::kReceiverNotReady, 0, 1));
  AckAll(3);
  now_ += 10'000;
  std::vector<Packet> out = OfType(Drain(now_), PacketType::kSend);
  ASSERT_EQ(out.size(), 3u);                   // resent: the stale NAKs used no retry
  EXPECT_EQ(eng_->stats().rx_stale_naks, 0u);  // they came while it waited
  Feed(Nak(0, 0, 1, wire::NakCode::kReceiverNotReady, 0, 1));  // first attempt's: stale
  EXPECT_EQ(eng_->stats().rx_stale_naks, 1u);
  EXPECT_TRUE(PollAll(scq_).empty());
  Feed(Nak(0, 0, out[0].data.psn, wire::NakCode::kReceiverNotReady, 0, 1));  // this attempt's
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kRnrRetryExcErr);
}

TEST_F(HardeningTest, ARefusedMessageMovesTheResponderQpToErrorAndFlushesReceives) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  PostRecvAt(1, 0, 64);
  PostRecvAt(2, 64, 64);
  Packet p = SmallWrite(0, 0, 0, 0);
  p.data.rkey ^= 0x00010000;
  Feed(p);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
  std::vector<Completion> done = PollAll(rcq_);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].wr_id, 1u);
  EXPECT_EQ(done[0].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(done[1].status, WcStatus::kWrFlushErr);
}

TEST_F(HardeningTest, ASendIntoADeregisteredReceiveBufferIsAnAccessError) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  std::vector<uint8_t> buf(kPayload, 0x5a);
  const MrInfo mr2 =
      *eng_->RegMr(pd_, reinterpret_cast<uint64_t>(buf.data()), buf.size(), access::kAll);
  RecvWr r;
  r.wr_id = 11;
  r.sg.push_back({reinterpret_cast<uint64_t>(buf.data()), kPayload, mr2.lkey});
  ASSERT_TRUE(eng_->PostRecv(qpn_, r).ok());
  ASSERT_TRUE(eng_->DeregMr(mr2.lkey).ok());
  Feed(SendChunk(0, 0, 100, 0, 0));
  const std::vector<Packet> naks = OfType(Drain(now_), PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.code, wire::NakCode::kRemoteAccess);
  std::vector<Completion> done = PollAll(rcq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 11u);
  EXPECT_EQ(done[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(buf, std::vector<uint8_t>(kPayload, 0x5a));
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
}

TEST_F(HardeningTest, AReadResponseStopsReadingARegionDeregisteredUnderIt) {
  EngineConfig cfg = BaseConfig();
  cfg.path_window_pkts = 4;
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  Packet req = Data(PacketType::kReadReq, 0, 0, 0, 0);
  req.data.msg_len = 16 * kPayload;
  req.data.va = Addr(0);
  req.data.rkey = mr_.rkey;
  Feed(req);
  ASSERT_EQ(OfType(Drain(now_), PacketType::kReadResp).size(), 4u);
  ASSERT_TRUE(eng_->DeregMr(mr_.lkey).ok());
  mem_.reads.clear();
  AckAll(4);  // room for more of the response
  const std::vector<Packet> out = Drain(now_);
  EXPECT_TRUE(OfType(out, PacketType::kReadResp).empty());
  EXPECT_FALSE(mem_.ReadAny(Addr(0), kMemBytes)) << "read memory that is no longer registered";
  const std::vector<Packet> naks = OfType(out, PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.code, wire::NakCode::kRemoteAccess);
  EXPECT_EQ(naks[0].nak.detail, static_cast<uint8_t>(wire::NakDetail::kRegionInvalidated));
  EXPECT_EQ(naks[0].nak.msn, 0u);
}

TEST_F(HardeningTest, AGatherListWhoseRegionWentAwayIsALocalProtectionError) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  std::vector<uint8_t> buf(kPayload, 0x11);
  const MrInfo mr2 =
      *eng_->RegMr(pd_, reinterpret_cast<uint64_t>(buf.data()), buf.size(), access::kAll);
  SendWr wr;
  wr.wr_id = 31;
  wr.opcode = Opcode::kWrite;
  wr.sg.push_back({reinterpret_cast<uint64_t>(buf.data()), kPayload, mr2.lkey});
  wr.remote_addr = kRemoteVa;
  wr.rkey = kRemoteRkey;
  ASSERT_TRUE(eng_->PostSend(now_, qpn_, wr).ok());  // checked when posted...
  ASSERT_TRUE(eng_->DeregMr(mr2.lkey).ok());         // ...gone before it is sent
  mem_.reads.clear();
  EXPECT_TRUE(OfType(Drain(now_), PacketType::kWrite).empty());
  EXPECT_FALSE(mem_.ReadAny(reinterpret_cast<uint64_t>(buf.data()), buf.size()));
  std::vector<Completion> done = PollAll(scq_);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
}

TEST_F(HardeningTest, AWriteReachingPastItsRegionPlacesNothing) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  // Two chunks at the region's last kPayload bytes: the second would fall outside.
  Packet p = Data(PacketType::kWrite, 0, 0, 0, 0);
  p.data.msg_len = 2 * kPayload;
  p.data.va = Addr(kMemBytes - kPayload);
  p.data.rkey = mr_.rkey;
  payloads_.push_back(std::vector<uint8_t>(kPayload, 0x77));
  p.payload = payloads_.back();
  p.flags = 0;
  Feed(p);  // chunk 0 lies inside the region, but its message does not
  const std::vector<Packet> naks = OfType(Drain(now_), PacketType::kNak);
  ASSERT_EQ(naks.size(), 1u);
  EXPECT_EQ(naks[0].nak.detail, static_cast<uint8_t>(wire::NakDetail::kOutOfBounds));
  EXPECT_EQ(region_[kMemBytes - kPayload], 0);
}

TEST_F(HardeningTest, AStreamAckPastEveryPostedMessageIsIgnored) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  FillSource(64);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 16));
  ASSERT_EQ(Drain(now_).size(), 1u);
  Feed(Ack(0, 1, {}, 5));  // only MSN 0 was ever posted
  EXPECT_TRUE(PollAll(scq_).empty());
  EXPECT_EQ(eng_->stats().rx_bad_stream_acks, 1u);
  Feed(Ack(0, 1, {}, 1));
  EXPECT_EQ(PollAll(scq_).size(), 1u);
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 16, 16));  // and the stream goes on
  EXPECT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
}

TEST_F(HardeningTest, AReadResponseAdvancesTheStreamWhenItsStreamAckIsLost) {
  peer_stream_window_ = 1;
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  SendWr rd;
  rd.wr_id = 1;
  rd.opcode = Opcode::kRead;
  rd.sg.push_back({Addr(0), 16, mr_.lkey});
  rd.remote_addr = kRemoteVa;
  rd.rkey = kRemoteRkey;
  ASSERT_TRUE(eng_->PostSend(now_, qpn_, rd).ok());
  FillSource(64);
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 16, 32));
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 1u);  // the window holds the WRITE back
  Feed(Ack(0, 1));            // the READ arrived; the stream ACK that accepted it is lost
  Packet r = Data(PacketType::kReadResp, 0, 0, 0, 0);
  r.data.stream_id = qpn_;
  r.data.msg_len = 16;
  payloads_.push_back(std::vector<uint8_t>(16, 9));
  r.payload = payloads_.back();
  Feed(r);
  out = OfType(Drain(now_), PacketType::kWrite);
  ASSERT_EQ(out.size(), 1u);  // the response proved MSN 0 accepted
  EXPECT_EQ(out[0].data.msn, 1u);
}

TEST_F(HardeningTest, TwoMessagesNumberedToOneReceiveAreRefused) {
  ASSERT_NO_FATAL_FAILURE(Start(BaseConfig()));
  PostRecvAt(1, 0, kPayload);
  Feed(SendChunk(0, 1, 100, 0, 0));  // MSN 1 claims receive 0 ...
  Feed(SendChunk(1, 0, 100, 0, 0));  // ... and so does MSN 0, which takes it
  std::vector<Completion> done = PollAll(rcq_);
  ASSERT_GE(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(eng_->GetQpState(qpn_), QpState::kError);
  bool refused = false;
  for (const Packet& n : OfType(Drain(now_), PacketType::kNak)) {
    refused |= n.nak.msn == 1 && n.nak.code == wire::NakCode::kInvalidRequest;
  }
  EXPECT_TRUE(refused);
}

// ---- 4. Paths ----

TEST_F(HardeningTest, EveryPathOfAConnectionHasItsOwnSourcePort) {
  for (bool listed : {false, true}) {
    EngineConfig cfg = BaseConfig();
    cfg.num_paths = listed ? 64 : kMaxPaths;
    if (listed) {
      for (uint16_t p = 0; p < 64; p++)
        cfg.source_ports.push_back(static_cast<uint16_t>(40000 + p));
    }
    ASSERT_NO_FATAL_FAILURE(Start(cfg));
    std::set<uint16_t> ports;
    for (const PathInfo& p : eng_->GetPaths(PeerIp())) ports.insert(p.src_port);
    EXPECT_EQ(ports.size(), cfg.num_paths) << (listed ? "listed ports" : "dynamic range");
  }
}

TEST_F(HardeningTest, ReorderWithinTheWindowIsNotLoss) {
  EngineConfig cfg = BaseConfig();
  cfg.reorder_window_ns = 20'000;
  cfg.tail_loss_probe = false;  // here only the reorder window may find the loss
  ASSERT_NO_FATAL_FAILURE(Start(cfg));
  FillSource(8 * kPayload);
  ASSERT_NO_FATAL_FAILURE(PostWrite(1, 4 * kPayload));
  ASSERT_EQ(Drain(now_).size(), 4u);
  // PSN 0 overtaken by 1..3 on its own path, and it arrives 5 us later.
  now_ += 1'000;
  Feed(Ack(0, 0, SackOf({0, 1, 2})));
  EXPECT_TRUE(Drain(now_).empty());
  now_ += 5'000;
  Feed(Ack(0, 4, {}, 1));
  EXPECT_TRUE(Drain(now_).empty());
  EXPECT_EQ(eng_->stats().lost_detected_sack, 0u);
  EXPECT_EQ(eng_->stats().tx_retransmits, 0u);
  // A hole that stays is lost once the window passed, not before, and the
  // engine asks to be called then.
  ASSERT_NO_FATAL_FAILURE(PostWrite(2, 4 * kPayload, 4 * kPayload));
  const TimeNs sent = now_;
  ASSERT_EQ(Drain(now_).size(), 4u);
  now_ += 1'000;
  Feed(Ack(0, 4, SackOf({0, 1, 2})));  // PSN 4 missing
  EXPECT_TRUE(Drain(now_).empty());
  const TimeNs due = eng_->NextDeadline();
  EXPECT_GT(due, now_);
  EXPECT_LE(due, sent + cfg.reorder_window_ns + 10'000);
  now_ = due;
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data.msg_offset, 0u);
  EXPECT_NE(out[0].flags & wire::flags::kRetransmit, 0);
  EXPECT_EQ(eng_->stats().lost_detected_sack, 1u);
}

}  // namespace
}  // namespace metaroce::transport::unit
