/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The fixture of the engine unit tests: one engine driven by hand, the test
// playing the remote peer. It builds every packet the peer sends with the
// wire codec and parses everything the engine answers.

#ifndef METAROCE_TEST_TRANSPORT_ENGINE_UNIT_FIXTURE_H
#define METAROCE_TEST_TRANSPORT_ENGINE_UNIT_FIXTURE_H

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "engine_peer.h"
#include "gtest/gtest.h"
#include "mr_transport.h"
#include "mr_wire.h"

namespace metaroce::transport::unit {

using wire::Packet;
using wire::PacketType;

constexpr uint32_t kPeerConnId = 0x5eed0001;
constexpr uint64_t kPeerIncarnation = 0x1ca7'0000'0000'0001;
constexpr uint32_t kPeerStreamWindow = 1024;
constexpr uint32_t kPeerQpn = 0x4242;
constexpr uint16_t kPeerPaths = 4;
constexpr uint16_t kPeerPort = 50123;
constexpr uint32_t kPayload = 1024;
constexpr uint64_t kRemoteVa = 0x7000'0000;
constexpr uint32_t kRemoteRkey = 0x00abcdef;
constexpr size_t kMemBytes = 256 * 1024;
constexpr size_t kSlotBytes = 10'000;

inline wire::IpAddr LocalIp() { return wire::IpAddr::V4(10, 0, 0, 1); }
inline wire::IpAddr PeerIp() { return wire::IpAddr::V4(10, 0, 0, 2); }
inline wire::MacAddr LocalMac() { return wire::MacAddr{{0x02, 0, 0, 0, 0, 0x01}}; }
inline wire::MacAddr PeerMac() { return wire::MacAddr{{0x02, 0, 0, 0, 0, 0x02}}; }

/**
 * Defaults of every test: one path, 1 KiB chunks. The seed is fixed, but the
 * engine's random draws (the pacer's phase after an idle spell, for one)
 * also depend on its OS-random incarnation unless a test sets
 * cfg.incarnation: a test that depends on them bounds them.
 */
inline EngineConfig BaseConfig() {
  EngineConfig cfg;
  cfg.local_ip = LocalIp();
  cfg.local_mac = LocalMac();
  cfg.framing = Framing::kEthernet;
  cfg.num_paths = 1;
  cfg.max_payload = static_cast<uint16_t>(kPayload);
  cfg.path_window_pkts = 64;
  cfg.conn_window_pkts = 512;
  cfg.rto_min_ns = 100'000;
  cfg.rto_initial_ns = 1'000'000;
  cfg.rto_max_ns = 20'000'000;
  cfg.ack_every_pkts = 4;
  cfg.ack_delay_ns = 5'000;
  cfg.path_fail_timeouts = 3;
  cfg.path_probe_interval_ns = 200'000;
  // A SACK gap is loss at once here; ReorderWithinTheWindowIsNotLoss tests the tolerance.
  cfg.reorder_window_ns = 0;
  cfg.seed = 7;
  return cfg;
}

inline std::array<uint64_t, wire::kSackWords> SackOf(std::initializer_list<uint32_t> bits) {
  std::array<uint64_t, wire::kSackWords> s{};
  for (uint32_t b : bits) s[b / 64] |= uint64_t{1} << (b % 64);
  return s;
}

inline std::vector<Packet> OfType(const std::vector<Packet>& v, PacketType t) {
  std::vector<Packet> out;
  for (const Packet& p : v) {
    if (p.type == t) out.push_back(p);
  }
  return out;
}

/** Payload byte @p i of the test message with sequence number @p msn. */
inline uint8_t PatternByte(uint32_t msn, size_t i) {
  return static_cast<uint8_t>(msn * 31 + i * 7 + 1);
}

/** Process memory that remembers every range the engine read. */
class RecordingMemory final : public MemoryAccess {
 public:
  struct Range {
    uint64_t va;
    size_t len;
  };
  bool Write(uint64_t owner, uint64_t va, const void* src, size_t len) override {
    owners.push_back(owner);
    return owner != unreachable_owner && mem_.Write(owner, va, src, len);
  }
  bool Read(uint64_t owner, uint64_t va, void* dst, size_t len) override {
    reads.push_back({va, len});
    owners.push_back(owner);
    return owner != unreachable_owner && mem_.Read(owner, va, dst, len);
  }
  bool FetchAdd(uint64_t owner, uint64_t va, uint64_t add, uint64_t* old) override {
    owners.push_back(owner);
    return owner != unreachable_owner && mem_.FetchAdd(owner, va, add, old);
  }
  bool CompareSwap(uint64_t owner, uint64_t va, uint64_t compare, uint64_t swap,
                   uint64_t* old) override {
    owners.push_back(owner);
    return owner != unreachable_owner && mem_.CompareSwap(owner, va, compare, swap, old);
  }
  /** True if any read since reads.clear() touched [va, va + len). */
  bool ReadAny(uint64_t va, size_t len) const {
    for (const Range& r : reads) {
      if (r.va < va + len && va < r.va + r.len) return true;
    }
    return false;
  }
  std::vector<Range> reads;
  std::vector<uint64_t> owners;  ///< the owner tag of every access
  /** Accesses with this owner fail, as for an application that is gone. */
  uint64_t unreachable_owner = UINT64_MAX;

 private:
  ProcessMemory mem_;
};

class EngineUnitTest : public ::testing::Test {
 protected:
  enum class Open { kEngineInitiates, kEngineAccepts };

  /** Creates the engine of @p cfg, a PD, two CQs, the SRQ if asked for (srq_max_wr_) and a QP. */
  void CreateEngine(const EngineConfig& cfg, const QpAttr& qa_in = QpAttr{}) {
    cfg_ = cfg;
    auto e = Engine::Create(cfg, &mem_);
    ASSERT_TRUE(e.ok()) << e.status();
    eng_ = std::move(*e);
    pd_ = *eng_->AllocPd();
    scq_ = *eng_->CreateCq(1024);
    rcq_ = *eng_->CreateCq(1024);
    QpAttr qa = qa_in;
    qa.pd = pd_;
    qa.send_cq = scq_;
    qa.recv_cq = rcq_;
    if (srq_max_wr_ != 0) {
      auto s = eng_->CreateSrq(pd_, srq_max_wr_, 4);
      ASSERT_TRUE(s.ok()) << s.status();
      srq_ = *s;
      qa.srq = srq_;
    }
    auto q = eng_->CreateQp(qa);
    ASSERT_TRUE(q.ok()) << q.status();
    qpn_ = *q;
  }

  /** Creates the engine, a QP with its region, and connects it to the hand-played peer. */
  void Start(const EngineConfig& cfg, Open open = Open::kEngineInitiates,
             const QpAttr& qa_in = QpAttr{}) {
    ASSERT_NO_FATAL_FAILURE(CreateEngine(cfg, qa_in));
    region_.assign(kMemBytes, 0);
    auto mr = eng_->RegMr(pd_, Addr(0), kMemBytes, access::kAll);
    ASSERT_TRUE(mr.ok()) << mr.status();
    mr_ = *mr;
    const PeerAddr peer{PeerIp(), PeerMac(), wire::kDefaultUdpPort};
    if (open == Open::kEngineInitiates) {
      ASSERT_TRUE(eng_->ConnectQp(qpn_, peer, kPeerQpn).ok());
      std::vector<Packet> out = Drain(now_);
      ASSERT_EQ(out.size(), 1u);
      ASSERT_EQ(out[0].type, PacketType::kConnReq);
      conn_req_ = out[0];
      eng_conn_ = out[0].conn.src_conn_id;
      // The ACCEPT says what the peer's request would, echoing the engine's nonce.
      Packet acc = PeerReq(kPeerConnId, kPeerIncarnation, wire::kDefaultUdpPort, out[0].conn.nonce);
      acc.type = PacketType::kConnAccept;
      acc.dst_conn_id = eng_conn_;
      acc.conn.stream_window = peer_stream_window_;
      if (peer_open_hint_mbps_ != 0) {
        acc.conn.capabilities |= wire::caps::kRateHint;
        acc.conn.rate_hint_mbps = peer_open_hint_mbps_;
      }
      acc.conn.capabilities |= peer_open_caps_;
      Feed(acc);
    } else {
      Packet req = PeerReq(kPeerConnId, kPeerIncarnation);
      req.conn.stream_window = peer_stream_window_;
      // The first request only earns a cookie; the engine keeps no state for it.
      Feed(req);
      std::vector<Packet> retry = Drain(now_);
      ASSERT_EQ(retry.size(), 1u);
      ASSERT_EQ(retry[0].type, PacketType::kConnRetry);
      ASSERT_EQ(retry[0].dst_conn_id, kPeerConnId);
      ASSERT_EQ(retry[0].conn.nonce, req.conn.nonce);
      ASSERT_NE(retry[0].conn.cookie, 0u);
      ASSERT_TRUE(eng_->GetConnections().empty());
      req.conn.cookie = retry[0].conn.cookie;
      conn_req_ = req;
      Feed(req);
      ASSERT_TRUE(eng_->ConnectQp(qpn_, peer, kPeerQpn).ok());
      std::vector<Packet> out = Drain(now_);
      ASSERT_EQ(out.size(), 1u);
      ASSERT_EQ(out[0].type, PacketType::kConnAccept);
      conn_accept_ = out[0];
      eng_conn_ = out[0].conn.src_conn_id;
    }
    ASSERT_NE(eng_conn_, 0u);
    ASSERT_TRUE(Drain(now_).empty());
  }

  uint64_t Addr(size_t off) { return reinterpret_cast<uint64_t>(region_.data()) + off; }

  /** The frame the peer would send for @p p. */
  std::vector<uint8_t> Frame(const Packet& p, const wire::IpAddr& src) {
    wire::FrameInfo f;
    f.eth_src = feed_mac_;
    f.eth_dst = LocalMac();
    f.src = src;
    f.dst = LocalIp();
    f.src_port = kPeerPort;
    f.dst_port = wire::kDefaultUdpPort;
    f.ecn = feed_ecn_;
    std::vector<uint8_t> buf(wire::EncapBytes(f) + wire::EncodedBytes(p));
    auto n = wire::EncodeFrame(f, p, buf);
    EXPECT_TRUE(n.ok()) << n.status();
    buf.resize(n.ok() ? *n : 0);
    return buf;
  }

  /** The ECN field of the frames Feed() builds (kCe: marked on the way). */
  wire::Ecn feed_ecn_ = wire::Ecn::kEct0;
  /** Their source MAC: the peer's next hop towards us. */
  wire::MacAddr feed_mac_ = PeerMac();

  void Feed(const Packet& p, const wire::IpAddr& src = PeerIp()) {
    eng_->OnFrame(now_, Frame(p, src));
  }

  /** Everything the engine sends at @p now, parsed; frame addresses go to @p infos. */
  std::vector<Packet> Drain(TimeNs now, std::vector<wire::FrameInfo>* infos = nullptr) {
    std::vector<Packet> out;
    for (int round = 0; round < 64; round++) {
      std::array<TxSlot, 16> slots;
      std::vector<std::vector<uint8_t>> bufs(slots.size(), std::vector<uint8_t>(kSlotBytes));
      for (size_t i = 0; i < slots.size(); i++) {
        slots[i].buf = bufs[i].data();
        slots[i].cap = kSlotBytes;
      }
      const size_t n = eng_->PollTx(now, slots);
      for (size_t i = 0; i < n; i++) {
        frames_.emplace_back(bufs[i].begin(), bufs[i].begin() + slots[i].len);
        wire::FrameInfo info;
        Packet p;
        wire::ParseOptions opt;
        if (!only_to_peer_) {
          // Replies to other engines go to their own UDP port (IPv4, untagged).
          const size_t at = wire::kEthHeaderBytes + wire::kIpv4HeaderBytes + 2;
          opt.udp_port = static_cast<uint16_t>(frames_.back()[at] << 8 | frames_.back()[at + 1]);
        }
        const wire::ParseError e = wire::ParseFrame(frames_.back(), opt, &info, &p);
        EXPECT_EQ(e, wire::ParseError::kOk) << wire::ParseErrorName(e);
        if (e != wire::ParseError::kOk) continue;
        EXPECT_TRUE(info.src == LocalIp() ||
                    std::any_of(cfg_.extra_planes.begin(), cfg_.extra_planes.end(),
                                [&](const PlaneAddr& a) { return a.ip == info.src; }))
            << info.src.ToString();
        if (only_to_peer_) {
          EXPECT_EQ(info.dst, PeerIp());
        }
        out.push_back(p);
        if (infos != nullptr) infos->push_back(info);
      }
      if (n == 0) break;
    }
    return out;
  }

  /** A data packet from the peer to the engine's QP. */
  Packet Data(PacketType t, uint16_t path, uint32_t psn, uint32_t una, uint32_t msn) {
    Packet p;
    p.type = t;
    p.flags = wire::flags::kAckReq;
    p.dst_conn_id = eng_conn_;
    p.path_id = path;
    p.data.psn = psn;
    p.data.una_psn = una;
    p.data.tx_ts_ns = static_cast<uint32_t>(now_);
    p.data.stream_id = qpn_;
    p.data.src_stream = kPeerQpn;
    p.data.msn = msn;
    return p;
  }

  /** A data packet of the peer's SEND @p msn: chunk @p chunk of a @p len-byte message. */
  Packet SendChunk(uint32_t psn, uint32_t msn, uint32_t len, uint32_t chunk, uint32_t recv_seq) {
    Packet p = Data(PacketType::kSend, 0, psn, psn, msn);
    p.data.msg_len = len;
    p.data.msg_offset = chunk * kPayload;
    p.data.recv_seq = recv_seq;
    const size_t n = std::min<size_t>(kPayload, len - chunk * kPayload);
    payloads_.push_back(std::vector<uint8_t>(n));
    for (size_t i = 0; i < n; i++) payloads_.back()[i] = PatternByte(msn, chunk * kPayload + i);
    p.payload = payloads_.back();
    if ((chunk + 1) * kPayload < len) p.flags = 0;  // ACK_REQ only on the last chunk
    return p;
  }

  /** Payload of the 16-byte test WRITE with sequence number @p msn. */
  static std::vector<uint8_t> Pattern(uint32_t msn, size_t len = 16) {
    std::vector<uint8_t> v(len);
    for (size_t i = 0; i < len; i++) v[i] = PatternByte(msn, i);
    return v;
  }

  /**
   * A one-packet WRITE of 16 bytes to offset 16 * msn of the region. The
   * payload must outlive the packet: it is kept in payloads_.
   */
  Packet SmallWrite(uint16_t path, uint32_t psn, uint32_t una, uint32_t msn) {
    Packet p = Data(PacketType::kWrite, path, psn, una, msn);
    payloads_.push_back(Pattern(msn));
    p.payload = payloads_.back();
    p.data.msg_len = 16;
    p.data.va = Addr(16 * size_t{msn});
    p.data.rkey = mr_.rkey;
    return p;
  }

  void FeedWrite(uint16_t path, uint32_t psn, uint32_t una, uint32_t msn) {
    Feed(SmallWrite(path, psn, una, msn));
  }

  bool WritePlaced(uint32_t msn) {
    return std::memcmp(region_.data() + 16 * size_t{msn}, Pattern(msn).data(), 16) == 0;
  }

  /** The single ACK in @p out (fails the test if there is not exactly one). */
  static Packet OnlyAck(const std::vector<Packet>& out) {
    const std::vector<Packet> acks = OfType(out, PacketType::kAck);
    EXPECT_EQ(acks.size(), 1u);
    return acks.empty() ? Packet{} : acks[0];
  }

  /** msn_next the engine reports for the peer's stream, or -1 if absent. */
  static int64_t StreamAckOf(const Packet& ack) {
    for (uint32_t i = 0; i < ack.ack.num_stream_acks; i++) {
      if (ack.ack.stream_acks[i].stream_id == kPeerQpn) return ack.ack.stream_acks[i].msn_next;
    }
    return -1;
  }

  /** An ACK from the peer for the engine's path @p path. */
  Packet Ack(uint16_t path, uint32_t cum, const std::array<uint64_t, wire::kSackWords>& sack = {},
             int64_t msn_next = -1) {
    Packet p;
    p.type = PacketType::kAck;
    p.dst_conn_id = eng_conn_;
    p.path_id = path;
    p.ack.cum_psn = cum;
    p.ack.echo_ts_ns = static_cast<uint32_t>(now_);
    p.ack.has_sack = (sack[0] | sack[1] | sack[2] | sack[3]) != 0;
    p.ack.sack = sack;
    if (msn_next >= 0) {
      p.ack.num_stream_acks = 1;
      p.ack.stream_acks[0] = {qpn_, static_cast<uint32_t>(msn_next)};
    }
    return p;
  }

  /** Ack() of one packet sent at @p sent_at: an RTT sample, counted as received. */
  Packet TimedAck(uint16_t path, uint32_t cum, TimeNs sent_at, int64_t msn_next = -1) {
    Packet p = Ack(path, cum, {}, msn_next);
    p.ack.echo_ts_ns = static_cast<uint32_t>(sent_at);
    p.ack.rx_pkts = 1;
    return p;
  }

  Packet Nak(uint16_t path, uint32_t msn, uint32_t psn, wire::NakCode code, uint8_t detail,
             uint16_t rnr_delay = 0) {
    Packet p;
    p.type = PacketType::kNak;
    p.dst_conn_id = eng_conn_;
    p.path_id = path;
    p.nak.stream_id = qpn_;
    p.nak.msn = msn;
    p.nak.psn = psn;
    p.nak.code = code;
    p.nak.detail = detail;
    p.nak.rnr_delay_10us = rnr_delay;
    return p;
  }

  /** Posts a signaled WRITE of @p len bytes from region offset @p off. */
  /**
   * @p n one-packet WRITEs on path 0, each acknowledged @p rtt after it left
   * (with its stream ACK): steady round trips for the RTT estimate. *psn and
   * *wr_id count on.
   */
  void SteadyRoundTrips(uint32_t n, TimeNs rtt, uint32_t* psn, uint64_t* wr_id) {
    for (uint32_t i = 0; i < n; i++) {
      PostWrite(*wr_id, kPayload);
      if (HasFatalFailure()) return;
      ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 1u);
      now_ += rtt;
      Packet a = Ack(0, ++*psn, {}, static_cast<int64_t>(++*wr_id));
      a.ack.echo_ts_ns = static_cast<uint32_t>(now_ - rtt);
      Feed(a);
    }
  }

  void PostWrite(uint64_t wr_id, uint32_t len, size_t off = 0, Opcode op = Opcode::kWrite) {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.flags = send_flags::kSignaled;
    wr.sg.push_back({Addr(off), len, mr_.lkey});
    wr.remote_addr = kRemoteVa;
    wr.rkey = kRemoteRkey;
    ASSERT_TRUE(eng_->PostSend(now_, qpn_, wr).ok());
  }

  /** Fills region bytes [0, len) with a position-dependent pattern. */
  void FillSource(size_t len) {
    for (size_t i = 0; i < len; i++) region_[i] = static_cast<uint8_t>(i * 13 + (i >> 10) + 5);
  }

  /** True if @p p carries exactly source bytes [off, off + p.payload.size()). */
  bool PayloadMatchesSource(const Packet& p) {
    return p.payload.size() != 0 &&
           std::memcmp(p.payload.data(), region_.data() + p.data.msg_offset, p.payload.size()) == 0;
  }

  std::vector<Completion> PollAll(uint32_t cq) {
    std::vector<Completion> v;
    Completion c[16];
    size_t n;
    while ((n = eng_->PollCq(cq, c)) > 0) v.insert(v.end(), c, c + n);
    return v;
  }

  PathInfo Path(uint16_t id) {
    std::vector<PathInfo> v = eng_->GetPaths(PeerIp());
    EXPECT_LT(id, v.size());
    return id < v.size() ? v[id] : PathInfo{};
  }

  /** WRITE @p msg of two chunks, sent at now_: one on each of the two paths. */
  void OneChunkOnEachPath(uint64_t msg) {
    ASSERT_NO_FATAL_FAILURE(PostWrite(msg, 2 * kPayload));
    ASSERT_EQ(OfType(Drain(now_), PacketType::kWrite).size(), 2u);
  }

  /** The paths of two one-chunk messages sent at different times. */
  struct TwoSends {
    uint16_t first = 0;   ///< the path of the one sent first
    uint16_t second = 0;  ///< of the other
  };
  /**
   * Messages @p msg (at @p t_first) and @p msg + 1 (at @p t_second), one
   * chunk each, each going out alone, on two different paths (the engine's
   * choice): a packet that leaves before another on another path.
   */
  void SendOnTwoPaths(uint64_t msg, TimeNs t_first, TimeNs t_second, TwoSends* out) {
    now_ = t_first;
    ASSERT_NO_FATAL_FAILURE(PostWrite(msg, kPayload));
    const std::vector<Packet> first = OfType(Drain(t_first), PacketType::kWrite);
    ASSERT_EQ(first.size(), 1u);
    now_ = t_second;
    ASSERT_NO_FATAL_FAILURE(PostWrite(msg + 1, kPayload));
    const std::vector<Packet> second = OfType(Drain(t_second), PacketType::kWrite);
    ASSERT_EQ(second.size(), 1u);
    out->first = first[0].path_id;
    out->second = second[0].path_id;
    ASSERT_NE(out->first, out->second);
  }
  /**
   * SendOnTwoPaths(), then the peer silent (each path's tail-loss probe goes
   * out) until @p back, when it acknowledges the second path up to @p cum
   * (and the stream up to @p msn_next, -1: no stream ACK) and not the first.
   */
  void SendTwoThenPeerBack(uint64_t msg, TimeNs t_first, TimeNs t_second, TimeNs back, uint32_t cum,
                           int64_t msn_next, TwoSends* out) {
    ASSERT_NO_FATAL_FAILURE(SendOnTwoPaths(msg, t_first, t_second, out));
    Drain(back - 1);
    EXPECT_EQ(eng_->stats().tail_loss_probes, 2u);
    now_ = back;
    Feed(TimedAck(out->second, cum, t_second, msn_next));
  }

  /** A CONN_REQ as a peer at @p ip / @p port would send it (no cookie yet). */
  static Packet PeerReq(uint32_t src_conn_id, uint64_t incarnation,
                        uint16_t port = wire::kDefaultUdpPort, uint32_t nonce = 0x1234abcd) {
    Packet req;
    req.type = PacketType::kConnReq;
    req.conn.src_conn_id = src_conn_id;
    req.conn.nonce = nonce;
    req.conn.num_paths = kPeerPaths;
    req.conn.max_payload = static_cast<uint16_t>(kPayload);
    req.conn.udp_port = port;
    req.conn.incarnation = incarnation;
    req.conn.stream_window = kPeerStreamWindow;
    req.conn.min_version = req.conn.max_version = wire::kVersion;
    return req;
  }

  /**
   * Sends @p req from @p src, answers the CONN_RETRY with its cookie and
   * returns what the engine sent then (its CONN_ACCEPT or CONN_REJECT).
   */
  std::vector<Packet> OpenAsPeer(Packet req, const wire::IpAddr& src = PeerIp()) {
    Feed(req, src);
    std::vector<Packet> retry = OfType(Drain(now_), PacketType::kConnRetry);
    EXPECT_EQ(retry.size(), 1u);
    if (retry.empty()) return {};
    req.conn.cookie = retry[0].conn.cookie;
    Feed(req, src);
    return Drain(now_);
  }

  EngineConfig cfg_;
  RecordingMemory mem_;
  uint32_t peer_stream_window_ = kPeerStreamWindow;  ///< what the peer announces
  bool only_to_peer_ = true;                         ///< Drain: everything goes to the peer
  uint32_t srq_max_wr_ = 0;  ///< Start: non-zero puts the QP on an SRQ (srq_) this deep
  uint32_t srq_ = 0;
  /** Start, kEngineInitiates: non-zero, the peer's ACCEPT reads and carries this rate hint. */
  uint32_t peer_open_hint_mbps_ = 0;
  /** Start, kEngineInitiates: capability bits the peer's ACCEPT announces besides those. */
  uint32_t peer_open_caps_ = 0;
  std::vector<uint8_t> region_;  // the registered region (mr_)
  std::unique_ptr<Engine> eng_;
  uint32_t pd_ = 0, scq_ = 0, rcq_ = 0, qpn_ = 0;
  MrInfo mr_;
  uint32_t eng_conn_ = 0;
  Packet conn_req_, conn_accept_;
  TimeNs now_ = 1'000'000;
  std::deque<std::vector<uint8_t>> frames_;    // keeps parsed payload spans valid
  std::deque<std::vector<uint8_t>> payloads_;  // keeps payloads of built packets valid
};

// ---- Connection set-up ----

}  // namespace metaroce::transport::unit

#endif  // METAROCE_TEST_TRANSPORT_ENGINE_UNIT_FIXTURE_H
