/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Two real engines over the udp driver on two ports of 127.0.0.1, driven by a poll loop:
// a 4 MiB WRITE and a SEND/RECV, byte for byte, with and without 1 % loss.

#include <chrono>
#include <numeric>
#include <set>

#include "gtest/gtest.h"
#include "mr_port_fault.h"
#include "mr_transport.h"
#include "udp_test_util.h"

namespace metaroce::testing {
namespace {

using namespace transport;

constexpr size_t kMemBytes = 5u << 20;
constexpr uint32_t kWriteBytes = 4u << 20;

TimeNs Now() {
  return static_cast<TimeNs>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
}

struct Host {
  std::unique_ptr<port::Port> port;
  ProcessMemory mem;
  std::unique_ptr<Engine> engine;
  uint32_t pd = 0, cq = 0, qpn = 0;
  std::vector<uint8_t> buf;
  MrInfo mr;
  std::vector<Completion> done;

  uint64_t Addr(size_t off) { return reinterpret_cast<uint64_t>(buf.data()) + off; }

  // One turn of the loop: receive a burst, send what the engine has, collect completions.
  void Poll() {
    const TimeNs now = Now();
    port::RxPacket rx[32];
    const uint16_t n = port->RxBurst(0, rx, 32);
    for (uint16_t i = 0; i < n; i++) engine->OnDatagram(now, rx[i].addr, rx[i].data);
    TxSlot slots[32];
    for (;;) {
      const uint16_t got = port->TxAlloc(0, slots, 32);
      if (got == 0) break;
      const size_t filled = engine->PollTx(now, {slots, got});
      port->TxBurst(0, slots, got);
      if (filled < got) break;
    }
    Completion c[16];
    size_t k;
    while ((k = engine->PollCq(cq, c)) > 0) done.insert(done.end(), c, c + k);
  }
};

/** A run: its name and the fault spec both hosts' ports get ("": none). */
struct Case {
  const char* name;
  const char* faults;
};

class UdpEngines : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; i++) {
      Host& h = hosts_[i];
      auto p = OpenLoopback("127.0.0.1", "source_ports=16,rcvbuf=4194304,sndbuf=1048576");
      ASSERT_TRUE(p.ok()) << p.status();
      h.port = std::move(*p);
      const std::string faults = GetParam().faults;
      if (!faults.empty()) {
        auto f = port::WithFaults(std::move(h.port), faults + ",seed=" + std::to_string(i + 7));
        ASSERT_TRUE(f.ok()) << f.status();
        h.port = std::move(*f);
      }
      EngineConfig cfg;
      cfg.local_ip = h.port->info().ip;
      cfg.udp_port = h.port->info().udp_port;
      cfg.framing = Framing::kUdp;
      cfg.source_ports = h.port->info().source_ports;
      cfg.seed = 100 + i;
      auto e = Engine::Create(cfg, &h.mem);
      ASSERT_TRUE(e.ok()) << e.status();
      h.engine = std::move(*e);
      h.pd = *h.engine->AllocPd();
      h.cq = *h.engine->CreateCq(4096);
      QpAttr qa;
      qa.pd = h.pd;
      qa.send_cq = qa.recv_cq = h.cq;
      h.qpn = *h.engine->CreateQp(qa);
      h.buf.resize(kMemBytes);
      auto mr = h.engine->RegMr(h.pd, h.Addr(0), h.buf.size(), access::kAll);
      ASSERT_TRUE(mr.ok()) << mr.status();
      h.mr = *mr;
    }
    for (int i = 0; i < 2; i++) {
      Host& peer = hosts_[1 - i];
      PeerAddr to{peer.port->info().ip, {}, peer.port->info().udp_port};
      ASSERT_TRUE(hosts_[i].engine->ConnectQp(hosts_[i].qpn, to, peer.qpn).ok());
    }
  }

  // Polls both hosts until @p h has @p want completions or 20 s passed.
  bool RunUntil(Host& h, size_t want) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (h.done.size() < want && std::chrono::steady_clock::now() < end) {
      hosts_[0].Poll();
      hosts_[1].Poll();
    }
    return h.done.size() >= want;
  }

  Host hosts_[2];
};

TEST_P(UdpEngines, WriteFourMebibytesAndSendRecv) {
  Host& a = hosts_[0];
  Host& b = hosts_[1];
  for (size_t i = 0; i < kWriteBytes; i++) a.buf[i] = static_cast<uint8_t>(i * 131 + (i >> 12));

  SendWr w;
  w.wr_id = 1;
  w.opcode = Opcode::kWrite;
  w.sg.push_back({a.Addr(0), kWriteBytes, a.mr.lkey});
  w.remote_addr = b.Addr(4096);
  w.rkey = b.mr.rkey;
  ASSERT_TRUE(a.engine->PostSend(Now(), a.qpn, w).ok());
  ASSERT_TRUE(RunUntil(a, 1)) << "WRITE did not complete";
  EXPECT_EQ(a.done[0].status, WcStatus::kSuccess) << WcStatusName(a.done[0].status);
  EXPECT_EQ(a.done[0].wr_id, 1u);
  EXPECT_TRUE(std::equal(a.buf.begin(), a.buf.begin() + kWriteBytes, b.buf.begin() + 4096));

  // SEND of 100 000 bytes from B into a receive A posted.
  const uint32_t kSendBytes = 100000;
  for (uint32_t i = 0; i < kSendBytes; i++) b.buf[i] = static_cast<uint8_t>(255 - i % 251);
  RecvWr r;
  r.wr_id = 2;
  r.sg.push_back({a.Addr(kWriteBytes), kSendBytes, a.mr.lkey});
  ASSERT_TRUE(a.engine->PostRecv(a.qpn, r).ok());
  SendWr s;
  s.wr_id = 3;
  s.opcode = Opcode::kSend;
  s.sg.push_back({b.Addr(0), kSendBytes, b.mr.lkey});
  ASSERT_TRUE(b.engine->PostSend(Now(), b.qpn, s).ok());
  ASSERT_TRUE(RunUntil(a, 2)) << "RECV did not complete";
  ASSERT_TRUE(RunUntil(b, 1)) << "SEND did not complete";
  EXPECT_EQ(a.done[1].wr_id, 2u);
  EXPECT_EQ(a.done[1].status, WcStatus::kSuccess) << WcStatusName(a.done[1].status);
  EXPECT_EQ(a.done[1].opcode, WcOpcode::kRecv);
  EXPECT_EQ(a.done[1].byte_len, kSendBytes);
  EXPECT_EQ(b.done[0].wr_id, 3u);
  EXPECT_EQ(b.done[0].status, WcStatus::kSuccess) << WcStatusName(b.done[0].status);
  EXPECT_TRUE(std::equal(b.buf.begin(), b.buf.begin() + kSendBytes, a.buf.begin() + kWriteBytes));

  // Paths used the driver's source ports, and only those.
  const std::vector<uint16_t>& pool = a.port->info().source_ports;
  const std::set<uint16_t> allowed(pool.begin(), pool.end());
  auto paths = a.engine->GetPaths(b.port->info().ip, b.port->info().udp_port);
  ASSERT_FALSE(paths.empty());
  for (const PathInfo& p : paths) EXPECT_EQ(allowed.count(p.src_port), 1u) << p.src_port;
  EXPECT_EQ(a.port->stats().tx_errors, 0u);
  EXPECT_EQ(b.port->stats().tx_errors, 0u);

  // With faults: losses were repaired, and every corrupted packet was caught
  // by the receiving engine (a parse drop, all by CRC or header checks).
  const EngineStats& es = a.engine->stats();
  for (Host* h : {&a, &b}) {
    auto f = port::FaultStatsOf(*h->port);
    if (!f.has_value()) continue;
    uint64_t parse_drops = 0;
    for (uint64_t d : h->engine->stats().rx_parse_drops) parse_drops += d;
    EXPECT_EQ(parse_drops, f->corrupted);
    if (h == &b) {
      EXPECT_GT(f->dropped, 0u);
      EXPECT_GT(es.tx_retransmits, 0u);
      std::printf(
          "faults at B: in %llu, dropped %llu, burst-dropped %llu, reordered %llu, duplicated "
          "%llu, CE %llu, corrupted %llu; A retransmitted %llu\n",
          static_cast<unsigned long long>(f->rx_in), static_cast<unsigned long long>(f->dropped),
          static_cast<unsigned long long>(f->burst_dropped),
          static_cast<unsigned long long>(f->reordered),
          static_cast<unsigned long long>(f->duplicated),
          static_cast<unsigned long long>(f->ecn_marked),
          static_cast<unsigned long long>(f->corrupted),
          static_cast<unsigned long long>(es.tx_retransmits));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Loopback, UdpEngines,
                         ::testing::Values(Case{"Clean", ""}, Case{"Drop1Percent", "drop=0.01"},
                                           Case{"EveryFault",
                                                "drop=0.02,burst=0.002:8,reorder=0.02:20,dup=0.01,"
                                                "ecn=0.05,corrupt=0.002"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace metaroce::testing
