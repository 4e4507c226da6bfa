/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Telemetry without a socket: the engine's connection view after real traffic
// over the simulated fabric (ECN marks included), snapshot publication, the
// replies of every /metaroce/ command and their size bound, the handler DPDK
// calls (on an rte_tel_data of our own), change events, and MR_LOG.

#include <errno.h>
#include <rte_log.h>
#include <rte_telemetry.h>
#include <stdio.h>
#include <stdlib.h>

#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "format_private.h"
#include "gtest/gtest.h"
#include "mr_log.h"
#include "mr_sim_engine_node.h"
#include "mr_telemetry.h"

namespace metaroce::telemetry {

// Test-only access to a publisher's snapshot lock (doc/observability.md: readers hold it).
class PublisherPeer {
 public:
  static std::mutex& Lock(Publisher& p) { return p.slot_->mu; }
};

namespace {

using transport::ConnInfo;
using transport::PathInfo;
using transport::TimeNs;

constexpr size_t kWriteBytes = 1 << 20;
constexpr uint16_t kPaths = 8;

// Two engines on a leaf-spine fabric whose uplinks are slower than the host links and mark
// CE early, so a 1 MiB WRITE from a to b gets CE marks, retransmission-free.
class SimPair : public ::testing::Test {
 protected:
  void SetUp() override {
    sim::LeafSpineConfig ls;
    ls.leaves = 2;
    ls.spines = 2;
    ls.hosts_per_leaf = 1;
    ls.host_link.rate_bps = 100'000'000'000;
    ls.fabric_link.rate_bps = 10'000'000'000;
    ls.ecn_threshold_bytes_per_100g = 2'000;
    auto t = sim::BuildLeafSpine(fabric_, ls);
    ASSERT_TRUE(t.ok()) << t.status();
    topo_ = *t;
    transport::EngineConfig cfg;
    cfg.num_paths = kPaths;
    for (int i = 0; i < 2; i++) {
      cfg.seed = 100 + i;
      node_[i] = std::make_unique<sim::EngineNode>(topo_.host(i, 0), cfg);
      transport::Engine& e = node_[i]->engine();
      pd_[i] = *e.AllocPd();
      cq_[i] = *e.CreateCq(1024);
      transport::QpAttr qa;
      qa.pd = pd_[i];
      qa.send_cq = qa.recv_cq = cq_[i];
      qpn_[i] = *e.CreateQp(qa);
      mem_[i].assign(kWriteBytes, static_cast<uint8_t>(i + 1));
      auto mr = e.RegMr(pd_[i], reinterpret_cast<uint64_t>(mem_[i].data()), kWriteBytes,
                        transport::access::kAll);
      ASSERT_TRUE(mr.ok()) << mr.status();
      mr_[i] = *mr;
    }
    for (int i = 0; i < 2; i++) {
      ASSERT_TRUE(node_[i]->engine().ConnectQp(qpn_[i], node_[1 - i]->Addr(), qpn_[1 - i]).ok());
    }
  }

  // A's WRITE of kWriteBytes to b, run until its completion.
  void Write() {
    transport::SendWr wr;
    wr.wr_id = 1;
    wr.opcode = transport::Opcode::kWrite;
    wr.sg.push_back({reinterpret_cast<uint64_t>(mem_[0].data()), kWriteBytes, mr_[0].lkey});
    wr.remote_addr = reinterpret_cast<uint64_t>(mem_[1].data());
    wr.rkey = mr_[1].rkey;
    ASSERT_TRUE(node_[0]->engine().PostSend(node_[0]->NowNs(), qpn_[0], wr).ok());
    node_[0]->Kick();
    transport::Completion c[4];
    size_t got = 0;
    const sim::SimTime end = fabric_.Now() + 100 * sim::kPsPerMs;
    while (got == 0 && fabric_.Now() < end) {
      fabric_.RunUntil(fabric_.Now() + 10 * sim::kPsPerUs);
      got = node_[0]->engine().PollCq(cq_[0], c);
    }
    ASSERT_EQ(got, 1u);
    ASSERT_EQ(c[0].status, transport::WcStatus::kSuccess);
    // Let the last ACKs arrive.
    fabric_.RunUntil(fabric_.Now() + 1 * sim::kPsPerMs);
  }

  transport::Engine& engine(int i) { return node_[i]->engine(); }

  sim::Fabric fabric_{7};
  sim::Topology topo_;
  std::unique_ptr<sim::EngineNode> node_[2];
  uint32_t pd_[2] = {}, cq_[2] = {}, qpn_[2] = {};
  std::vector<uint8_t> mem_[2];
  transport::MrInfo mr_[2];
};

TEST_F(SimPair, GetConnectionsAfterAWrite) {
  Write();
  const std::vector<ConnInfo> a = engine(0).GetConnections();
  const std::vector<ConnInfo> b = engine(1).GetConnections();
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  const ConnInfo& ca = a[0];
  const ConnInfo& cb = b[0];
  EXPECT_EQ(ca.state, ConnInfo::State::kUp);
  EXPECT_STREQ(transport::ConnStateName(ca.state), "up");
  EXPECT_EQ(ca.remote_conn_id, cb.conn_id);
  EXPECT_EQ(cb.remote_conn_id, ca.conn_id);
  EXPECT_EQ(ca.peer.ip, node_[1]->Addr().ip);
  EXPECT_EQ(ca.peer.udp_port, wire::kDefaultUdpPort);
  EXPECT_EQ(ca.num_qps, 1u);
  EXPECT_EQ(ca.peer_paths, kPaths);
  EXPECT_EQ(ca.chunk_bytes, 4096u);
  EXPECT_EQ(ca.window, transport::EngineConfig{}.conn_window_pkts);
  EXPECT_EQ(ca.inflight, 0u);
  EXPECT_EQ(ca.rate_hint_mbps, 0u);
  // Everything the engines sent went on their one connection, but for the
  // handshake cookies (CONN_RETRY), which answer a request before any
  // connection exists; CONN_* packets are not counted on the receiving side.
  const uint64_t retries = engine(0).stats().tx_conn_retries;
  const uint64_t retry_bytes = wire::EncapBytes(wire::FrameInfo{.src = node_[0]->Addr().ip}) +
                               wire::kCommonHeaderBytes + wire::kConnBytes + wire::kCrcBytes;
  EXPECT_EQ(ca.tx_bytes + retries * retry_bytes, engine(0).stats().tx_bytes);
  EXPECT_EQ(ca.tx_pkts + retries, engine(0).stats().tx_packets);
  EXPECT_GT(ca.tx_bytes, kWriteBytes);
  EXPECT_GE(ca.tx_pkts, kWriteBytes / 4096);
  EXPECT_GT(ca.rx_pkts, 0u);  // ACKs
  EXPECT_LE(cb.rx_pkts, engine(1).stats().rx_packets);
  EXPECT_GT(cb.rx_bytes, kWriteBytes);
  EXPECT_LE(cb.rx_bytes, engine(1).stats().rx_bytes);
  // ECN: b saw marks on a's data, a heard of them in b's ACKs.
  EXPECT_GT(cb.ce_rx_pkts, 0u);
  EXPECT_EQ(cb.ce_rx_pkts, engine(1).stats().rx_ce_pkts);
  EXPECT_GT(ca.ce_echoed_pkts, 0u);
  EXPECT_LE(ca.ce_echoed_pkts, cb.ce_rx_pkts);
  // Paths: the same as GetPaths(), every one used, with an RTT.
  const std::vector<PathInfo> paths = engine(0).GetPaths(ca.peer.ip, ca.peer.udp_port);
  ASSERT_EQ(ca.paths.size(), kPaths);
  ASSERT_EQ(paths.size(), kPaths);
  uint64_t data = 0, retx = 0, ce = 0;
  for (size_t i = 0; i < kPaths; i++) {
    const PathInfo& p = ca.paths[i];
    EXPECT_EQ(p.path_id, i);
    EXPECT_EQ(p.src_port, paths[i].src_port);
    EXPECT_EQ(p.tx_pkts, paths[i].tx_pkts);
    EXPECT_TRUE(p.active);
    EXPECT_GT(p.tx_pkts, 0u) << "path " << i;
    EXPECT_GT(p.srtt_ns, 0u) << "path " << i;
    EXPECT_GE(p.rto_ns, transport::EngineConfig{}.rto_min_ns);
    data += p.tx_pkts;
    retx += p.retx_pkts;
    ce += p.ce_pkts;
  }
  EXPECT_EQ(data, engine(0).stats().tx_data_pkts);
  EXPECT_EQ(retx, ca.retx_pkts);
  EXPECT_EQ(ce, ca.ce_echoed_pkts);
}

TEST_F(SimPair, PublishThenEveryCommand) {
  auto pub = Publisher::Create("sim a");
  ASSERT_NE(pub, nullptr);
  EXPECT_EQ(pub->name(), "sim a");
  EXPECT_EQ(pub->Latest().seq, 0u);
  Write();
  // One malformed frame, to be counted as a drop by reason.
  const uint8_t runt[10] = {};
  engine(0).OnFrame(node_[0]->NowNs(), runt);

  const TimeNs now = 5'000'000'000;
  EXPECT_TRUE(pub->Due(now));
  port::PortStats ps;
  ps.tx_errors = 3;
  std::vector<Event> events;
  ASSERT_TRUE(pub->Publish(now, engine(0), &ps, &events));
  EXPECT_FALSE(pub->Due(now));
  EXPECT_FALSE(pub->Due(now + kTelemetryPublishNs - 1));
  EXPECT_TRUE(pub->Due(now + kTelemetryPublishNs));
  ASSERT_EQ(events.size(), 1u);  // the connection came up since the (empty) first snapshot
  EXPECT_EQ(events[0].level, log::Level::kInfo);
  EXPECT_NE(events[0].text.find("sim a: connection "), std::string::npos) << events[0].text;
  EXPECT_NE(events[0].text.find(" up: 8 paths, 4096-byte chunks"), std::string::npos)
      << events[0].text;

  const Snapshot s = pub->Latest();
  EXPECT_EQ(s.seq, 1u);
  EXPECT_EQ(s.engine, pub->index());
  EXPECT_EQ(s.taken_at_ns, now);
  ASSERT_EQ(s.conns.size(), 1u);
  const ConnInfo& c = s.conns[0];

  // /metaroce/engines lists it by index.
  const std::string engines = Query(kCmdEngines);
  EXPECT_NE(engines.find(absl::StrCat("\"", pub->index(), "\":\"sim a\"")), std::string::npos)
      << engines;

  // /metaroce/stats
  absl::StatusOr<Dict> st = Answer(kCmdStats, absl::StrCat(pub->index()), now + 1000);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(*st->U64("engine"), pub->index());
  EXPECT_EQ(*st->String("name"), "sim a");
  EXPECT_EQ(*st->U64("snapshot_seq"), 1u);
  EXPECT_EQ(*st->U64("snapshot_age_ns"), 1000u);
  EXPECT_EQ(*st->U64("connections"), 1u);
  EXPECT_EQ(*st->U64("connections_up"), 1u);
  EXPECT_EQ(*st->U64("tx_bytes"), engine(0).stats().tx_bytes);
  EXPECT_EQ(*st->U64("rx_packets"), engine(0).stats().rx_packets);
  EXPECT_EQ(*st->U64("tx_retransmits"), engine(0).stats().tx_retransmits);
  const Dict* drops = st->Sub("rx_drops");
  ASSERT_NE(drops, nullptr);
  // Every parse reason but kOk, and the engine's six.
  EXPECT_EQ(drops->size(), static_cast<size_t>(wire::ParseError::kCount) - 1 + 6);
  EXPECT_EQ(*drops->U64("eth_truncated"), 1u);
  EXPECT_EQ(*drops->U64("bad_crc"), 0u);
  EXPECT_EQ(*drops->U64("unknown_conn"), engine(0).stats().rx_unknown_conn);
  ASSERT_NE(drops->U64("bad_chunk"), nullptr);
  uint64_t sum = 0;
  for (const Dict::Entry& e : drops->entries()) sum += e.u64;
  EXPECT_EQ(*st->U64("rx_drops_total"), sum);
  EXPECT_GE(sum, 1u);
  ASSERT_NE(st->Sub("port"), nullptr);
  EXPECT_EQ(*st->Sub("port")->U64("tx_errors"), 3u);

  // /metaroce/conns
  absl::StatusOr<Dict> cs = Answer(kCmdConns, absl::StrCat(pub->index()), now);
  ASSERT_TRUE(cs.ok()) << cs.status();
  EXPECT_EQ(*cs->U64("total"), 1u);
  EXPECT_EQ(*cs->U64("first"), 0u);
  EXPECT_EQ(*cs->U64("next"), 1u);
  const Dict* conn = cs->Sub("conns") ? cs->Sub("conns")->Sub(absl::StrCat(c.conn_id)) : nullptr;
  ASSERT_NE(conn, nullptr) << cs->ToJson();
  EXPECT_EQ(*conn->String("state"), "up");
  EXPECT_EQ(*conn->String("peer_ip"), node_[1]->Addr().ip.ToString());
  EXPECT_EQ(*conn->U64("peer_udp_port"), wire::kDefaultUdpPort);
  EXPECT_EQ(*conn->U64("qps"), 1u);
  EXPECT_EQ(*conn->U64("paths"), kPaths);
  EXPECT_EQ(*conn->U64("paths_active"), kPaths);
  EXPECT_EQ(*conn->U64("tx_bytes"), c.tx_bytes);
  EXPECT_EQ(*conn->U64("rx_pkts"), c.rx_pkts);
  EXPECT_EQ(*conn->U64("ce_echoed_pkts"), c.ce_echoed_pkts);
  EXPECT_GT(*conn->U64("ce_echoed_pkts"), 0u);
  EXPECT_GT(*conn->U64("srtt_ns"), 0u);
  EXPECT_LE(*conn->U64("srtt_min_ns"), *conn->U64("srtt_ns"));
  EXPECT_GE(*conn->U64("srtt_max_ns"), *conn->U64("srtt_ns"));
  EXPECT_EQ(*conn->U64("window_pkts"), c.window);
  EXPECT_EQ(*conn->U64("cwnd_bytes"), c.cwnd_bytes);
  EXPECT_EQ(*conn->U64("inflight_bytes"), 0u);
  EXPECT_EQ(*conn->U64("cc_cuts"), c.cc_cuts);
  EXPECT_GT(*conn->U64("cc_cuts"), 0u);         // the marks above cut the connection's window
  EXPECT_EQ(*conn->U64("rate_hint_mbps"), 0u);  // no rx_capacity_mbps: no hints
  EXPECT_EQ(*conn->U64("peer_hint_mbps"), 0u);
  EXPECT_EQ(*conn->U64("pace_mbps"), 0u);  // no hint, no window pacing: not paced
  EXPECT_EQ(*conn->U64("path_failures"), 0u);

  // /metaroce/paths
  absl::StatusOr<Dict> ps_reply =
      Answer(kCmdPaths, absl::StrCat(pub->index(), ",", c.conn_id), now);
  ASSERT_TRUE(ps_reply.ok()) << ps_reply.status();
  EXPECT_EQ(*ps_reply->U64("conn"), c.conn_id);
  EXPECT_EQ(*ps_reply->U64("total"), kPaths);
  EXPECT_EQ(*ps_reply->U64("next"), kPaths);
  const Dict* paths = ps_reply->Sub("paths");
  ASSERT_NE(paths, nullptr);
  ASSERT_EQ(paths->size(), kPaths);
  for (const PathInfo& p : c.paths) {
    const Dict* e = paths->Sub(absl::StrCat(p.path_id));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(*e->U64("src_port"), p.src_port);
    EXPECT_EQ(*e->U64("active"), 1u);
    EXPECT_EQ(*e->U64("srtt_ns"), p.srtt_ns);
    EXPECT_GT(*e->U64("srtt_ns"), 0u);
    EXPECT_EQ(*e->U64("rto_ns"), p.rto_ns);
    EXPECT_EQ(*e->U64("window_pkts"), p.window);
    EXPECT_EQ(*e->U64("inflight_pkts"), 0u);
    EXPECT_EQ(*e->U64("cwnd_bytes"), p.cwnd_bytes);
    EXPECT_GT(*e->U64("cwnd_bytes"), 0u);
    EXPECT_EQ(*e->U64("inflight_bytes"), 0u);
    EXPECT_EQ(*e->U64("cc_cuts"), p.cc_cuts);
    EXPECT_EQ(*e->U64("repaths"), p.repaths);
    EXPECT_EQ(*e->U64("tx_pkts"), p.tx_pkts);
    EXPECT_GT(*e->U64("tx_pkts"), 0u);
    EXPECT_EQ(*e->U64("retx_pkts"), p.retx_pkts);
    EXPECT_EQ(*e->U64("lost_pkts"), p.lost_pkts);
    EXPECT_EQ(*e->U64("ce_pkts"), p.ce_pkts);
    EXPECT_EQ(*e->U64("failures"), 0u);
  }
  // The JSON DPDK would send for it.
  const std::string json = Query(absl::StrCat(kCmdPaths, ",", pub->index(), ",", c.conn_id));
  EXPECT_EQ(json.rfind("{\"/metaroce/paths\":{\"engine\":", 0), 0u) << json;
  EXPECT_NE(json.find("\"paths\":{\"0\":{\"src_port\":"), std::string::npos) << json;

  // A second snapshot with nothing new: no events.
  ASSERT_TRUE(pub->Publish(now + kTelemetryPublishNs, engine(0), &ps, &events));
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(pub->Latest().seq, 2u);
}

TEST_F(SimPair, HandlerFillsAnRteTelData) {
  auto pub = Publisher::Create("handler");
  Write();
  ASSERT_TRUE(pub->Publish(1, engine(0)));
  const uint32_t conn = pub->Latest().conns.at(0).conn_id;
  const std::string idx = absl::StrCat(pub->index());
  struct Case {
    const char* cmd;
    std::string params;
    bool ok;
  } cases[] = {
      {kCmdEngines, "", true},
      {kCmdStats, idx, true},
      {kCmdConns, idx, true},
      {kCmdConns, idx + ",0", true},
      {kCmdConns, idx + ", 5", true},  // past the end: an empty page
      {kCmdPaths, absl::StrCat(idx, ",", conn), true},
      {kCmdPaths, absl::StrCat(idx, ",", conn, ",4"), true},
      {kCmdStats, "", false},
      {kCmdStats, "x", false},
      {kCmdStats, "-1", false},
      {kCmdStats, idx + ",1", false},
      {kCmdStats, "4000000000", false},  // no such engine
      {kCmdConns, idx + ",abc", false},
      {kCmdPaths, idx, false},
      {kCmdPaths, idx + ",1", false},  // no such connection (ids are random, never 1 here)
      {kCmdPaths, absl::StrCat(idx, ",", conn, ",1,2"), false},
      {"/metaroce/nothing", "", false},
  };
  for (const Case& c : cases) {
    rte_tel_data* d = rte_tel_data_alloc();
    ASSERT_NE(d, nullptr);
    const char* params = c.params.empty() ? nullptr : c.params.c_str();
    std::vector<rte_tel_data*> containers;
    const int rc = HandleCommandFor(c.cmd, params, d, &containers);
    EXPECT_EQ(HandleCommand(c.cmd, params, nullptr), -EINVAL);
    if (c.ok) {
      EXPECT_EQ(rc, 0) << c.cmd << "," << c.params;
    } else {
      EXPECT_LT(rc, 0) << c.cmd << "," << c.params;
      EXPECT_TRUE(containers.empty());
    }
    // What DPDK frees once it has written the reply.
    for (rte_tel_data* t : containers) rte_tel_data_free(t);
    rte_tel_data_free(d);
  }
  EXPECT_EQ(Query(absl::StrCat(kCmdStats, ",x")), "{\"/metaroce/stats\":null}");
  EXPECT_EQ(Query("/metaroce/nothing"), "{\"/metaroce/nothing\":null}");
}

// A snapshot whose every figure has the most digits it can have.
Snapshot Widest(size_t conns, size_t paths) {
  Snapshot s;
  s.engine = UINT32_MAX;
  s.name = std::string(127, 'n');
  s.seq = UINT64_MAX;
  // Every counter of both structs is a uint64_t.
  static_assert(sizeof(s.stats) % sizeof(uint64_t) == 0 && sizeof(s.port) % sizeof(uint64_t) == 0);
  std::memset(static_cast<void*>(&s.stats), 0xff, sizeof(s.stats));
  s.has_port = true;
  std::memset(static_cast<void*>(&s.port), 0xff, sizeof(s.port));
  for (size_t i = 0; i < conns; i++) {
    ConnInfo c;
    c.conn_id = UINT32_MAX - static_cast<uint32_t>(i);
    c.remote_conn_id = UINT32_MAX;
    wire::IpAddr::Parse("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", &c.peer.ip);
    c.peer.udp_port = UINT16_MAX;
    c.state = ConnInfo::State::kConnecting;
    c.num_qps = c.window = c.inflight = c.chunk_bytes = c.rate_hint_mbps = UINT32_MAX;
    c.peer_paths = UINT16_MAX;
    c.tx_pkts = c.tx_bytes = c.rx_pkts = c.rx_bytes = c.retx_pkts = c.lost_pkts = UINT64_MAX;
    c.ce_rx_pkts = c.ce_echoed_pkts = c.cc_cuts = UINT64_MAX;
    c.cwnd_bytes = c.inflight_bytes = c.peer_hint_mbps = c.pace_mbps = UINT32_MAX;
    for (size_t p = 0; p < paths; p++) {
      PathInfo pi{static_cast<uint16_t>(UINT16_MAX - p),
                  UINT16_MAX,
                  UINT8_MAX,
                  true,
                  UINT32_MAX,
                  UINT32_MAX,
                  UINT64_MAX,
                  UINT64_MAX,
                  UINT64_MAX,
                  UINT64_MAX,
                  UINT64_MAX,
                  UINT64_MAX,
                  UINT64_MAX,
                  UINT32_MAX,
                  UINT32_MAX,
                  UINT64_MAX,
                  UINT64_MAX};
      pi.srtt_ns = UINT64_MAX / paths;  // the mean must not overflow
      c.paths.push_back(pi);
    }
    s.conns.push_back(c);
  }
  s.share.capacity_mbps = UINT64_MAX;
  s.share.interval_ns = UINT64_MAX;
  s.share.level_mbps = s.share.measured = s.share.listed = UINT32_MAX;
  for (size_t i = 0; i < conns; i++) {
    transport::ShareInfo::Sender x;
    x.conn_id = UINT32_MAX - static_cast<uint32_t>(i);
    wire::IpAddr::Parse("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", &x.peer.ip);
    x.peer.udp_port = UINT16_MAX;
    x.measured_mbps = x.hint_mbps = UINT32_MAX;
    s.share.senders.push_back(x);
  }
  return s;
}

size_t ReplyBytes(const char* cmd, const Dict& d) {
  return absl::StrCat("{\"", cmd, "\":", d.ToJson(), "}").size();
}

TEST(Format, EveryReplyFitsDpdksOutputBuffer) {
  const Snapshot s = Widest(kConnsPerReply + 3, kPathsPerReply + 5);
  EXPECT_LT(ReplyBytes(kCmdStats, FormatStats(s, 0)), kMaxReplyBytes);
  const Dict conns = FormatConns(s, 0);
  EXPECT_EQ(conns.Sub("conns")->size(), kConnsPerReply);
  EXPECT_LT(ReplyBytes(kCmdConns, conns), kMaxReplyBytes);
  absl::StatusOr<Dict> paths = FormatPaths(s, s.conns[0].conn_id, 0);
  ASSERT_TRUE(paths.ok());
  EXPECT_EQ(paths->Sub("paths")->size(), kPathsPerReply);
  EXPECT_LT(ReplyBytes(kCmdPaths, *paths), kMaxReplyBytes);
  const Snapshot many = Widest(kSharesPerReply + 7, 0);
  const Dict alloc = FormatAllocator(many, 0);
  EXPECT_EQ(alloc.Sub("senders")->size(), kSharesPerReply);
  EXPECT_EQ(*alloc.U64("total"), kSharesPerReply + 7);
  EXPECT_EQ(*alloc.U64("next"), kSharesPerReply);
  EXPECT_LT(ReplyBytes(kCmdAllocator, alloc), kMaxReplyBytes);
  EXPECT_EQ(FormatAllocator(many, kSharesPerReply).Sub("senders")->size(), 7u);
  // Many engines with the longest names: as many as fit, then a count of the rest.
  std::vector<std::pair<uint32_t, std::string>> engines;
  for (uint32_t i = 0; i < 300; i++) engines.emplace_back(UINT32_MAX - i, std::string(127, 'e'));
  const Dict e = FormatEngines(engines);
  EXPECT_LT(ReplyBytes(kCmdEngines, e), kMaxReplyBytes);
  ASSERT_NE(e.U64("more"), nullptr);
  EXPECT_EQ(e.size() - 1 + *e.U64("more"), engines.size());
  // And every one of them goes into an rte_tel_data (keys valid, within DPDK's limits).
  for (const Dict* d : std::vector<const Dict*>{&conns, &*paths, &e, &alloc}) {
    rte_tel_data* t = rte_tel_data_alloc();
    std::vector<rte_tel_data*> containers;
    EXPECT_EQ(d->Fill(t, &containers), 0);
    for (rte_tel_data* c : containers) rte_tel_data_free(c);
    rte_tel_data_free(t);
  }
  // A key rte_tel_data refuses: an error, and the containers added before it are freed.
  Dict bad;
  bad.AddDict("fine").AddU64("x", 1);
  bad.AddU64("not-fine", 2);
  rte_tel_data* t = rte_tel_data_alloc();
  std::vector<rte_tel_data*> containers;
  EXPECT_EQ(bad.Fill(t, &containers), -EINVAL);
  EXPECT_TRUE(containers.empty());
  rte_tel_data_free(t);
}

TEST(Format, Pages) {
  const Snapshot s = Widest(40, 100);
  Dict d = FormatConns(s, 0);
  EXPECT_EQ(*d.U64("total"), 40u);
  EXPECT_EQ(*d.U64("next"), kConnsPerReply);
  d = FormatConns(s, 32);
  EXPECT_EQ(*d.U64("first"), 32u);
  EXPECT_EQ(*d.U64("next"), 40u);
  EXPECT_EQ(d.Sub("conns")->size(), 8u);
  d = FormatConns(s, 1000);
  EXPECT_EQ(*d.U64("first"), 40u);
  EXPECT_EQ(*d.U64("next"), 40u);
  EXPECT_EQ(d.Sub("conns")->size(), 0u);
  absl::StatusOr<Dict> p = FormatPaths(s, s.conns[3].conn_id, 96);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p->U64("total"), 100u);
  EXPECT_EQ(*p->U64("next"), 100u);
  EXPECT_EQ(p->Sub("paths")->size(), 4u);
  EXPECT_FALSE(FormatPaths(s, 12345, 0).ok());
  EXPECT_EQ(*FormatEngines({{3, "x"}}).String("3"), "x");
  EXPECT_EQ(FormatEngines({{3, "x"}}).U64("more"), nullptr);
}

TEST(Format, JsonEscapesNames) {
  Dict d;
  d.AddString("name", "a\"b\\c\nd");
  EXPECT_EQ(d.ToJson(), "{\"name\":\"a\\\"b\\\\c\\nd\"}");
}

TEST(Publish, NeverWaitsForAReader) {
  auto pub = Publisher::Create("locked");
  transport::ProcessMemory mem;
  transport::EngineConfig cfg;
  auto e = transport::Engine::Create(cfg, &mem);
  ASSERT_TRUE(e.ok());
  {
    std::lock_guard<std::mutex> reader(PublisherPeer::Lock(*pub));
    EXPECT_FALSE(pub->Publish(100, **e));
    EXPECT_TRUE(pub->Due(100));  // the next poll tries again
  }
  EXPECT_TRUE(pub->Publish(101, **e));
  EXPECT_FALSE(pub->Due(101));
  EXPECT_EQ(pub->Latest().seq, 1u);
  EXPECT_EQ(pub->Latest().taken_at_ns, 101u);
}

TEST(Publish, UnregisteredOnDestruction) {
  auto a = Publisher::Create("first");
  auto b = Publisher::Create("second");
  EXPECT_GT(b->index(), a->index());
  const uint32_t ia = a->index();
  ASSERT_TRUE(LatestOf(ia).has_value());
  a.reset();
  EXPECT_FALSE(LatestOf(ia).has_value());
  EXPECT_EQ(Query(absl::StrCat(kCmdStats, ",", ia)), "{\"/metaroce/stats\":null}");
  const std::string engines = Query(kCmdEngines);
  EXPECT_EQ(engines.find("\"first\""), std::string::npos) << engines;
  EXPECT_NE(engines.find("\"second\""), std::string::npos) << engines;
  auto c = Publisher::Create("third");
  EXPECT_GT(c->index(), b->index());  // indices are never reused
}

ConnInfo Conn(uint32_t id, ConnInfo::State state, size_t paths) {
  ConnInfo c;
  c.conn_id = id;
  c.state = state;
  c.peer.ip = wire::IpAddr::V4(192, 0, 2, 7);
  c.peer.udp_port = 4792;
  c.chunk_bytes = 1024;
  for (size_t i = 0; i < paths; i++) {
    PathInfo p;
    p.path_id = static_cast<uint16_t>(i);
    p.src_port = static_cast<uint16_t>(50000 + i);
    p.active = true;
    c.paths.push_back(p);
  }
  return c;
}

TEST(Diff, ConnectionAndPathChanges) {
  Snapshot before, after;
  before.name = after.name = "dev";
  before.conns = {Conn(1, ConnInfo::State::kConnecting, 2), Conn(2, ConnInfo::State::kUp, 4)};
  after = before;
  EXPECT_TRUE(Diff(before, after).empty());

  after.conns[0].state = ConnInfo::State::kUp;  // came up
  after.conns[1].paths[1].failures = 1;         // failed and re-probing
  after.conns[1].paths[1].active = false;
  after.conns[1].paths[2].failures = 2;  // failed and already back on a fresh port
  after.conns[1].paths[2].src_port = 61000;
  std::vector<Event> ev = Diff(before, after);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].level, log::Level::kInfo);
  EXPECT_EQ(ev[0].text, "dev: connection 1 to 192.0.2.7:4792 up: 2 paths, 1024-byte chunks");
  EXPECT_EQ(ev[1].level, log::Level::kDebug);
  EXPECT_EQ(ev[1].text,
            "dev: connection 2 to 192.0.2.7:4792: path 1 failed (source port 50001; 1 failures "
            "so far)");
  EXPECT_EQ(ev[2].text,
            "dev: connection 2 to 192.0.2.7:4792: path 2 failed (source port 50002; 2 failures "
            "so far)");
  EXPECT_EQ(ev[3].level, log::Level::kDebug);
  EXPECT_EQ(ev[3].text,
            "dev: connection 2 to 192.0.2.7:4792: path 2 active again on source port 61000");

  before = after;
  after.conns[1].paths[1].active = true;  // the re-probe was answered
  after.conns[1].paths[1].src_port = 62000;
  after.conns[0].state = ConnInfo::State::kFailed;
  after.conns.push_back(Conn(3, ConnInfo::State::kFailed, 1));  // new, and already failed
  ev = Diff(before, after);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].level, log::Level::kWarning);
  EXPECT_EQ(ev[0].text, "dev: connection 1 to 192.0.2.7:4792 failed");
  EXPECT_EQ(ev[1].text,
            "dev: connection 2 to 192.0.2.7:4792: path 1 active again on source port 62000");
  EXPECT_EQ(ev[2].text, "dev: connection 3 to 192.0.2.7:4792 failed");
}

TEST(Log, WritesThroughRteLogWithoutEal) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(rte_openlog_stream(f), 0);
  MR_LOG(NOTICE, "hello %d from %s", 5, "telemetry_test");
  MR_LOG(DEBUG, "not shown at the default level");
  rte_openlog_stream(nullptr);
  fclose(f);
  const std::string out(buf, len);
  free(buf);
  EXPECT_EQ(out, "METAROCE: hello 5 from telemetry_test\n");
  EXPECT_TRUE(log::Enabled(log::Level::kInfo));
  EXPECT_FALSE(log::Enabled(log::Level::kDebug));
  EXPECT_GE(rte_log_get_level(static_cast<uint32_t>(log::LogType())), RTE_LOG_INFO);
  EXPECT_EQ(rte_log_register("metaroce"), log::LogType());  // registered under that name
}

}  // namespace
}  // namespace metaroce::telemetry
