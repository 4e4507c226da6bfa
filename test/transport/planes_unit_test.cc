/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Planes, driven by hand: what the handshake says, which paths may carry data
// before their plane is proven, what a peer may (not) make the engine send
// where, and configuration errors.

#include <cerrno>

#include "engine_unit_fixture.h"
#include "mr_ext.h"

extern "C" int mr_ext_c_planes_up(const struct mr_engine* engine, uint32_t conn_id);

namespace metaroce::transport::unit {
namespace {

wire::IpAddr LocalPlane1() { return wire::IpAddr::V4(10, 1, 0, 1); }
wire::IpAddr PeerPlane1() { return wire::IpAddr::V4(10, 1, 0, 2); }

class Planes : public EngineUnitTest {
 protected:
  /** An engine of two planes (two paths) connected to a peer that has @p peer_planes. */
  void Open(bool peer_has_planes) {
    EngineConfig cfg = BaseConfig();
    cfg.num_paths = 2;
    Open(peer_has_planes, cfg);
  }
  /** The same with @p cfg (its paths: path i on plane i mod 2, both ends). */
  void Open(bool peer_has_planes, EngineConfig cfg) {
    cfg.extra_planes = {PlaneAddr{LocalPlane1(), LocalMac()}};
    cfg_ = cfg;
    auto e = Engine::Create(cfg, &mem_);
    ASSERT_TRUE(e.ok()) << e.status();
    eng_ = std::move(*e);
    pd_ = *eng_->AllocPd();
    scq_ = rcq_ = *eng_->CreateCq(1024);
    QpAttr qa;
    qa.pd = pd_;
    qa.send_cq = qa.recv_cq = scq_;
    qpn_ = *eng_->CreateQp(qa);
    region_.assign(kMemBytes, 0);
    mr_ = *eng_->RegMr(pd_, Addr(0), kMemBytes, access::kAll);
    only_to_peer_ = false;
    ASSERT_TRUE(
        eng_->ConnectQp(qpn_, PeerAddr{PeerIp(), PeerMac(), wire::kDefaultUdpPort}, kPeerQpn).ok());
    std::vector<Packet> out = Drain(now_);
    ASSERT_EQ(out.size(), 1u);
    req_ = out[0];
    eng_conn_ = req_.conn.src_conn_id;
    Packet acc = PeerReq(kPeerConnId, kPeerIncarnation, wire::kDefaultUdpPort, req_.conn.nonce);
    acc.type = PacketType::kConnAccept;
    acc.dst_conn_id = eng_conn_;
    acc.conn.num_paths = cfg.num_paths;
    if (peer_has_planes) {
      acc.conn.capabilities = wire::caps::kPlanes;
      acc.conn.num_planes = 1;
      wire::SetConnPlane(&acc.conn, 0, PeerPlane1());
    }
    Feed(acc);
  }

  /** Posts a WRITE of @p chunks chunks and returns the data packets sent, with their frames. */
  std::vector<Packet> WriteChunks(uint32_t chunks, std::vector<wire::FrameInfo>* infos) {
    PostWrite(1, chunks * kPayload);
    std::vector<wire::FrameInfo> all;
    std::vector<Packet> out = Drain(now_, &all);
    std::vector<Packet> data;
    for (size_t i = 0; i < out.size(); i++) {
      if (wire::ClassOf(out[i].type) != wire::PacketClass::kData) continue;
      data.push_back(out[i]);
      infos->push_back(all[i]);
    }
    return data;
  }

  /** The peer's PROBE_REPLY to @p probe. */
  Packet ReplyTo(const Packet& probe) const {
    Packet reply;
    reply.type = PacketType::kProbeReply;
    reply.dst_conn_id = eng_conn_;
    reply.path_id = probe.path_id;
    reply.probe = probe.probe;
    return reply;
  }

  Packet req_;
};

TEST_F(Planes, TheHandshakeNamesThePlanesAndPlaneOneIsProbedBeforeItCarriesData) {
  Open(true);
  EXPECT_EQ(req_.conn.capabilities & wire::caps::kPlanes, wire::caps::kPlanes);
  ASSERT_EQ(req_.conn.num_planes, 1u);
  EXPECT_EQ(wire::ConnPlane(req_.conn, 0), LocalPlane1());
  // Path 1 is on plane 1: probed from our plane-1 address to the peer's, with
  // an unguessable number.
  std::vector<wire::FrameInfo> infos;
  std::vector<Packet> out = Drain(now_, &infos);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].type, PacketType::kProbe);
  EXPECT_EQ(out[0].path_id, 1u);
  EXPECT_EQ(infos[0].src, LocalPlane1());
  EXPECT_EQ(infos[0].dst, PeerPlane1());
  const wire::ProbeBody probe = out[0].probe;
  EXPECT_GT(probe.probe_seq, 16u);
  const std::vector<ConnInfo> conns = eng_->GetConnections();
  ASSERT_EQ(conns.size(), 1u);
  ASSERT_EQ(conns[0].planes.size(), 2u);
  EXPECT_TRUE(conns[0].planes[0].up);
  EXPECT_FALSE(conns[0].planes[1].up);
  EXPECT_EQ(conns[0].planes[1].peer_ip, PeerPlane1());
  EXPECT_EQ(conns[0].paths[1].plane, 1u);

  // Unproven, plane 1 carries nothing: every chunk goes on path 0.
  infos.clear();
  std::vector<Packet> data = WriteChunks(4, &infos);
  ASSERT_EQ(data.size(), 4u);
  for (size_t i = 0; i < data.size(); i++) {
    EXPECT_EQ(data[i].path_id, 0u);
    EXPECT_EQ(infos[i].src, LocalIp());
    EXPECT_EQ(infos[i].dst, PeerIp());
  }

  // The reply from the peer's plane-1 address proves it: data is sprayed over both.
  Feed(ReplyTo(out[0]), PeerPlane1());
  EXPECT_TRUE(Path(1).active);
  Feed(Ack(0, 4));
  infos.clear();
  data = WriteChunks(4, &infos);
  ASSERT_EQ(data.size(), 4u);
  int on_plane1 = 0;
  for (size_t i = 0; i < data.size(); i++) {
    if (data[i].path_id != 1) continue;
    on_plane1++;
    EXPECT_EQ(infos[i].src, LocalPlane1());
    EXPECT_EQ(infos[i].dst, PeerPlane1());
  }
  EXPECT_EQ(on_plane1, 2);
}

// Across planes the spraying gives each plane its share; within a plane it
// follows the windows. Window weights across planes let the windows' history
// starve a plane for good: a cut path whose connection's window is the limit
// never fills its own window again, so it never grows back (mr-sim's planes
// kept 0.88 of 8 x one plane at 8 planes, 0.96 with this).
TEST_F(Planes, EachPlaneKeepsItsShareOfTheSprayingWhateverItsPathsWindows) {
  EngineConfig cfg = BaseConfig();
  cfg.num_paths = 4;
  Open(true, cfg);
  for (const Packet& p : Drain(now_)) {
    if (p.type == PacketType::kProbe) Feed(ReplyTo(p), PeerPlane1());
  }
  ASSERT_TRUE(Path(1).active);
  ASSERT_TRUE(Path(3).active);
  // Plane 0's paths (0 and 2) have windows of 64 and 32 KiB, plane 1's 16 and 16.
  constexpr uint32_t kWindow[4] = {64 * 1024, 16 * 1024, 32 * 1024, 16 * 1024};
  for (uint16_t i = 0; i < 4; i++) EnginePeer::Tx(*eng_, eng_conn_, i)->cc.cwnd = kWindow[i];
  std::vector<wire::FrameInfo> infos;
  const std::vector<Packet> data = WriteChunks(14, &infos);
  ASSERT_EQ(data.size(), 14u);
  uint32_t on[4] = {};
  for (const Packet& p : data) on[p.path_id]++;
  // Weights against each plane's widest: 1, 1, 1/2, 1.
  EXPECT_EQ(on[1] + on[3], 8u) << on[0] << " " << on[1] << " " << on[2] << " " << on[3];
  EXPECT_EQ(on[0] + on[2], 6u);
  EXPECT_EQ(on[0], 2 * on[2]);
}

// A plane's frames go to the MAC the peer's frames last came from on that
// plane (its next hop there), even after frames were sent with an older one.
TEST_F(Planes, FramesOnAPlaneFollowTheMacItsFramesComeFrom) {
  Open(true);
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 1u);
  Feed(ReplyTo(out[0]), PeerPlane1());
  ASSERT_TRUE(Path(1).active);
  auto macs_by_path = [&](uint32_t chunks) {
    std::vector<wire::FrameInfo> infos;
    std::vector<Packet> data = WriteChunks(chunks, &infos);
    std::array<std::vector<wire::MacAddr>, 2> macs;
    for (size_t i = 0; i < data.size(); i++) macs[data[i].path_id].push_back(infos[i].eth_dst);
    return macs;
  };
  auto first = macs_by_path(4);
  ASSERT_EQ(first[0].size(), 2u);
  ASSERT_EQ(first[1].size(), 2u);
  for (const auto& m : first[0]) EXPECT_EQ(m, PeerMac());
  for (const auto& m : first[1]) EXPECT_EQ(m, PeerMac());  // learnt from the handshake

  // Plane 1's next hop changes: the peer's next frame there says so.
  const wire::MacAddr router{{0x02, 0, 0, 0, 0x01, 0x07}};
  feed_mac_ = router;
  Feed(Ack(1, 2), PeerPlane1());
  feed_mac_ = PeerMac();
  Feed(Ack(0, 2));
  auto second = macs_by_path(4);
  ASSERT_EQ(second[0].size(), 2u);
  ASSERT_EQ(second[1].size(), 2u);
  for (const auto& m : second[0]) EXPECT_EQ(m, PeerMac());
  for (const auto& m : second[1]) EXPECT_EQ(m, router);
}

TEST_F(Planes, APeerCannotProveAPlaneAddressItDoesNotReceiveAt) {
  Open(true);
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 1u);
  Packet reply = ReplyTo(out[0]);
  // The right number from the peer's plane-0 address: not where the probe went.
  const uint64_t wrong_source = eng_->stats().rx_wrong_source;
  Feed(reply, PeerIp());
  EXPECT_EQ(eng_->stats().rx_wrong_source, wrong_source + 1);
  EXPECT_FALSE(Path(1).active);
  // Guessed numbers from the named address (a peer that aims us at a host
  // that never saw the probe): the small sequential ones a plain counter
  // would use, and the probe's neighbours in time.
  for (uint32_t seq : {0u, 1u, 2u, 3u, out[0].probe.probe_seq + 1}) {
    reply.probe.probe_seq = seq;
    Feed(reply, PeerPlane1());
  }
  EXPECT_FALSE(Path(1).active);
  // Nothing but probes ever goes to that address.
  std::vector<wire::FrameInfo> infos;
  PostWrite(1, 8 * kPayload);
  std::vector<Packet> sent = Drain(now_ + 10'000'000, &infos);
  ASSERT_FALSE(sent.empty());
  for (size_t i = 0; i < sent.size(); i++) {
    if (infos[i].dst == PeerPlane1()) {
      EXPECT_EQ(sent[i].type, PacketType::kProbe);
    }
  }
}

TEST_F(Planes, TheCExtensionApiShowsPlanesAndPaths) {
  Open(true);
  const mr_engine* e = mr_ext_engine(*eng_);
  mr_ext_conn conns[2];
  ASSERT_EQ(mr_ext_query_conns(e, conns, 2, sizeof(conns[0])), 1u);
  EXPECT_EQ(conns[0].conn_id, eng_conn_);
  EXPECT_EQ(conns[0].state, MR_EXT_CONN_UP);
  EXPECT_EQ(conns[0].planes, 2u);
  EXPECT_EQ(conns[0].planes_up, 1u);
  EXPECT_EQ(conns[0].paths, 2u);
  EXPECT_EQ(conns[0].paths_active, 1u);
  EXPECT_EQ(conns[0].peer.family, 4u);
  EXPECT_EQ(conns[0].peer.bytes[3], PeerIp().bytes[3]);
  EXPECT_EQ(mr_ext_c_planes_up(e, eng_conn_), 1);  // from C
  // Plane 1 proven: both up.
  std::vector<Packet> out = Drain(now_);
  ASSERT_EQ(out.size(), 1u);
  Feed(ReplyTo(out[0]), PeerPlane1());
  EXPECT_EQ(mr_ext_c_planes_up(e, eng_conn_), 2);
  mr_ext_plane planes[MR_EXT_MAX_PLANES];
  size_t total = 0;
  ASSERT_EQ(mr_ext_query_planes(e, eng_conn_, planes, MR_EXT_MAX_PLANES, sizeof(planes[0]), &total),
            0);
  ASSERT_EQ(total, 2u);
  EXPECT_EQ(planes[1].plane, 1u);
  EXPECT_EQ(planes[1].peer.bytes[1], PeerPlane1().bytes[1]);
  EXPECT_EQ(planes[1].local.bytes[1], LocalPlane1().bytes[1]);
  EXPECT_EQ(planes[1].paths_active, 1u);
  // Paths, and an older caller's smaller struct: only its prefix is written.
  mr_ext_path paths[2];
  std::memset(paths, 0xee, sizeof(paths));
  const size_t old_size = offsetof(mr_ext_path, srtt_ns);
  ASSERT_EQ(mr_ext_query_paths(e, eng_conn_, paths, 1, old_size, &total), 0);
  EXPECT_EQ(total, 2u);
  EXPECT_EQ(paths[0].path_id, 0u);
  EXPECT_EQ(paths[0].plane, 0u);
  EXPECT_EQ(paths[0].active, 1u);
  const uint8_t* raw = reinterpret_cast<const uint8_t*>(paths);
  EXPECT_EQ(raw[old_size], 0xee);
  ASSERT_EQ(mr_ext_query_paths(e, eng_conn_, paths, 2, sizeof(paths[0]), &total), 0);
  EXPECT_EQ(paths[1].plane, 1u);
  EXPECT_EQ(paths[1].active, 1u);
  // Errors.
  EXPECT_EQ(mr_ext_c_planes_up(e, eng_conn_ + 1), -ENOENT);
  EXPECT_EQ(mr_ext_query_paths(e, eng_conn_, nullptr, 1, sizeof(paths[0]), &total), -EINVAL);
  EXPECT_EQ(mr_ext_query_paths(nullptr, eng_conn_, paths, 1, sizeof(paths[0]), &total), -EINVAL);
  EXPECT_EQ(mr_ext_query_paths(e, eng_conn_, paths, 1, sizeof(paths[0]), nullptr), -EINVAL);
}

// A packet whose peer answered after it left, then fell silent, is probed at
// its RTO instead of timing out (a stalled peer, RtoDeadline) only while a
// path of another plane waits too. When only one plane's paths wait and the
// peer answers on the other, that plane is dark and the RTO fires as it is.
TEST_F(Planes, OnlyOnePlaneWaitingIsADarkPlaneNotAStalledPeer) {
  for (const bool other_plane_waits : {false, true}) {
    SCOPED_TRACE(other_plane_waits);
    EngineConfig cfg = BaseConfig();
    cfg.num_paths = 4;  // 0 and 2 on plane 0, 1 and 3 on plane 1
    cfg.tail_loss_probe = false;
    cfg.rto_silent_ns = 2'000'000;  // before the keep-alive probe
    ASSERT_NO_FATAL_FAILURE(Open(true, cfg));
    const std::vector<Packet> probes = Drain(now_);
    ASSERT_EQ(probes.size(), 2u);
    for (const Packet& probe : probes) Feed(ReplyTo(probe), PeerPlane1());
    auto ack = [&](uint16_t path, uint32_t cum, TimeNs echo, int64_t msn_next) {
      Feed(TimedAck(path, cum, echo, msn_next), path % 2 == 0 ? PeerIp() : PeerPlane1());
    };
    // A packet on each path, and another 5 us later; the first are answered
    // 10 us after they left (RTO = 10 us + rto_min), every path answered
    // after its second packet left.
    std::vector<wire::FrameInfo> infos;
    const TimeNs t0 = now_;
    ASSERT_EQ(WriteChunks(4, &infos).size(), 4u);
    now_ = t0 + 5'000;
    const TimeNs sent = now_;
    ASSERT_EQ(WriteChunks(4, &infos).size(), 4u);
    now_ = t0 + 10'000;
    for (uint16_t path = 0; path < 4; path++) ack(path, 1, t0, path == 3 ? 1 : -1);
    // 5 us later the peer answers the second on plane 1 (or on path 3 alone,
    // path 1 waiting with plane 0's), then nothing comes.
    now_ = sent + 10'000;
    ack(3, 2, sent, -1);
    if (!other_plane_waits) ack(1, 2, sent, -1);
    const TimeNs rto_at = sent + 10'000 + cfg.rto_min_ns;
    EXPECT_EQ(eng_->NextDeadline(), rto_at);
    EXPECT_TRUE(OfType(Drain(rto_at - 1), PacketType::kWrite).empty());
    EXPECT_FALSE(OfType(Drain(rto_at), PacketType::kWrite).empty());
    if (other_plane_waits) {  // a stalled peer: probed, nothing declared lost
      EXPECT_GT(eng_->stats().stall_probes, 0u);
      EXPECT_EQ(eng_->stats().lost_detected_rto, 0u);
    } else {  // a dark plane: its paths time out
      EXPECT_EQ(eng_->stats().stall_probes, 0u);
      EXPECT_GT(eng_->stats().lost_detected_rto, 0u);
    }
  }
}

TEST_F(Planes, APeerWithOnePlaneGetsEveryPathOnPlaneZero) {
  Open(false);
  std::vector<wire::FrameInfo> infos;
  EXPECT_TRUE(Drain(now_, &infos).empty());  // nothing to prove
  const std::vector<ConnInfo> conns = eng_->GetConnections();
  ASSERT_EQ(conns[0].planes.size(), 1u);
  for (const PathInfo& p : conns[0].paths) {
    EXPECT_TRUE(p.active);
    EXPECT_EQ(p.plane, 0u);
  }
  std::vector<Packet> data = WriteChunks(4, &infos);
  ASSERT_EQ(data.size(), 4u);
  for (const wire::FrameInfo& f : infos) {
    EXPECT_EQ(f.src, LocalIp());
    EXPECT_EQ(f.dst, PeerIp());
  }
}

TEST_F(EngineUnitTest, AConnReqWithAnUnusablePlaneListIsRejected) {
  Start(BaseConfig(), Open::kEngineInitiates);
  only_to_peer_ = false;
  const wire::IpAddr other = wire::IpAddr::V4(10, 0, 0, 9);
  wire::IpAddr v6;
  wire::IpAddr::Parse("fd00::9", &v6);
  for (const wire::IpAddr& bad : {v6, other}) {
    Packet req = PeerReq(0x77, 0x99);
    req.conn.capabilities = wire::caps::kPlanes;
    req.conn.num_planes = 2;
    wire::SetConnPlane(&req.conn, 0, bad);
    wire::SetConnPlane(&req.conn, 1, bad == other ? other : wire::IpAddr::V4(10, 0, 0, 3));
    const uint64_t refused = eng_->stats().rx_conn_refused;
    Feed(req, wire::IpAddr::V4(10, 0, 0, 3));
    std::vector<Packet> out = Drain(now_);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].type, PacketType::kConnReject);
    EXPECT_EQ(out[0].conn.reason, wire::ConnReason::kBadParameters);
    EXPECT_EQ(eng_->stats().rx_conn_refused, refused + 1);
  }
  EXPECT_EQ(eng_->GetConnections().size(), 1u);  // nothing held for them
}

TEST(PlanesConfig, BadPlanesAreRefusedNamingTheField) {
  ProcessMemory mem;
  auto fails = [&](const EngineConfig& c, const char* what) {
    auto e = Engine::Create(c, &mem);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find(what), std::string::npos) << e.status();
  };
  EngineConfig c = BaseConfig();
  c.num_paths = 8;
  wire::IpAddr v6;
  wire::IpAddr::Parse("fd00::1", &v6);
  c.extra_planes = {{v6, LocalMac()}};
  fails(c, "extra_planes[0] (fd00::1) must be an IPv4 address");
  c.extra_planes = {{LocalIp(), LocalMac()}};
  fails(c, "repeats local_ip");
  c.extra_planes = {{LocalPlane1(), LocalMac()}, {LocalPlane1(), LocalMac()}};
  fails(c, "extra_planes[1] repeats extra_planes[0]");
  c.extra_planes.assign(wire::kMaxPlanes, {LocalPlane1(), LocalMac()});
  fails(c, "at most 7 planes");
  c.extra_planes = {{LocalPlane1(), LocalMac()}};
  c.num_paths = 1;
  fails(c, "num_paths (1) must be at least the number of planes (2)");
  c.num_paths = 2;
  EXPECT_TRUE(Engine::Create(c, &mem).ok());
}

}  // namespace
}  // namespace metaroce::transport::unit
