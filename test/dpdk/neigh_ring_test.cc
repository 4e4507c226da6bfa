/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Neighbour resolution of the dpdk driver between two metaroce::Device on two net_ring
// ethdevs cross-connected by two rte_rings, in one process under EAL without hugepages.
// The devices are connected with a zero MAC in PeerAddr, so the driver must find it: by
// ARP (IPv4), by NS/NA (IPv6), or from neigh= static entries alone.

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_ethdev.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <chrono>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mr_device.h"
#include "mr_net_dpdk.h"
#include "ring_pair.h"

namespace metaroce::testing {
namespace {

using namespace transport;

// EAL as in ring_test.cc, with a prefix of its own.
std::vector<std::string> EalArgs() {
  return {"--no-huge",
          "-m",
          "256",
          "--no-pci",
          "--no-shconf",
          "--file-prefix=mr_dpdk_neigh",
          "--no-telemetry",
          "--lcores=0@(0-1)"};
}

// rte_eth_from_rings() names them net_ring_<name>: A transmits into ring ab, B receives it.
constexpr const char* kPortA = "net_ring_mna";
constexpr const char* kPortB = "net_ring_mnb";

absl::Status EalAndRings() {
  static std::once_flag once;
  static absl::Status status;
  std::call_once(once, [] {
    status = dpdk::InitEal(EalArgs());
    if (!status.ok()) return;
    status = testing::MakeRingPair("mna", "mnb");
  });
  return status;
}

/** A run: its name, the two addresses, and extra driver arguments of each port. */
struct Case {
  const char* name;
  const char* ip[2];
  const char* extra[2];
  const char* faults_b;
};

constexpr const char* kMac[2] = {"02:00:00:00:0a:01", "02:00:00:00:0a:02"};
constexpr size_t kMemBytes = 2u << 20;
constexpr uint32_t kWriteBytes = 1u << 20;

struct Host {
  std::unique_ptr<Device> dev;
  uint32_t pd = 0, cq = 0, qpn = 0;
  std::vector<uint8_t> buf;
  MrInfo mr;
  std::vector<Completion> done;

  uint64_t Addr(size_t off) { return reinterpret_cast<uint64_t>(buf.data()) + off; }
  void Poll() {
    dev->Poll();
    Completion c[16];
    size_t k;
    while ((k = dev->engine().PollCq(cq, c)) > 0) done.insert(done.end(), c, c + k);
  }
  dpdk::NeighStats Neigh() const { return dpdk::NeighStatsOf(dev->port()).value(); }
};

class DpdkNeigh : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    absl::Status s = EalAndRings();
    ASSERT_TRUE(s.ok()) << s;
    const char* names[2] = {kPortA, kPortB};
    for (int i = 0; i < 2; i++) {
      Host& h = hosts_[i];
      DeviceConfig cfg;
      cfg.port = absl::StrCat("dpdk:port=", names[i], ",ip=", GetParam().ip[i], ",mac=", kMac[i],
                              GetParam().extra[i]);
      if (i == 1 && GetParam().faults_b[0] != '\0') {
        cfg.faults = absl::StrCat(GetParam().faults_b, ",seed=7");
      }
      cfg.engine.seed = 200 + i;
      cfg.engine.max_payload = 1024;
      cfg.engine.conn_fail_after_ns = 10'000'000'000;  // a loaded machine may stall us
      auto d = Device::Open(cfg);
      ASSERT_TRUE(d.ok()) << d.status();
      h.dev = std::move(*d);
      Engine& e = h.dev->engine();
      h.pd = *e.AllocPd();
      h.cq = *e.CreateCq(1024);
      QpAttr qa;
      qa.pd = h.pd;
      qa.send_cq = qa.recv_cq = h.cq;
      h.qpn = *e.CreateQp(qa);
      h.buf.resize(kMemBytes);
      auto mr = e.RegMr(h.pd, h.Addr(0), h.buf.size(), access::kAll);
      ASSERT_TRUE(mr.ok()) << mr.status();
      h.mr = *mr;
    }
    for (int i = 0; i < 2; i++) {
      Host& peer = hosts_[1 - i];
      PeerAddr to = peer.dev->address();
      to.mac = wire::MacAddr{};  // the driver has to find it
      ASSERT_TRUE(hosts_[i].dev->engine().ConnectQp(hosts_[i].qpn, to, peer.qpn).ok());
    }
  }

  bool RunUntil(Host& h, size_t want) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (h.done.size() < want && std::chrono::steady_clock::now() < end) {
      hosts_[0].Poll();
      hosts_[1].Poll();
    }
    return h.done.size() >= want;
  }

  Host hosts_[2];
};

TEST_P(DpdkNeigh, WriteAndSendWithoutKnowingThePeersMac) {
  Host& a = hosts_[0];
  Host& b = hosts_[1];
  for (size_t i = 0; i < kWriteBytes; i++) a.buf[i] = static_cast<uint8_t>(i * 13 + (i >> 10));
  SendWr w;
  w.wr_id = 1;
  w.opcode = Opcode::kWrite;
  w.sg.push_back({a.Addr(0), kWriteBytes, a.mr.lkey});
  w.remote_addr = b.Addr(4096);
  w.rkey = b.mr.rkey;
  ASSERT_TRUE(a.dev->engine().PostSend(a.dev->Now(), a.qpn, w).ok());
  ASSERT_TRUE(RunUntil(a, 1)) << "WRITE did not complete";
  EXPECT_EQ(a.done[0].status, WcStatus::kSuccess) << WcStatusName(a.done[0].status);
  EXPECT_TRUE(std::equal(a.buf.begin(), a.buf.begin() + kWriteBytes, b.buf.begin() + 4096));

  const uint32_t kSendBytes = 50000;
  for (uint32_t i = 0; i < kSendBytes; i++) b.buf[i] = static_cast<uint8_t>(i % 253);
  RecvWr r;
  r.wr_id = 2;
  r.sg.push_back({a.Addr(kWriteBytes), kSendBytes, a.mr.lkey});
  ASSERT_TRUE(a.dev->engine().PostRecv(a.qpn, r).ok());
  SendWr s;
  s.wr_id = 3;
  s.opcode = Opcode::kSend;
  s.sg.push_back({b.Addr(0), kSendBytes, b.mr.lkey});
  ASSERT_TRUE(b.dev->engine().PostSend(b.dev->Now(), b.qpn, s).ok());
  ASSERT_TRUE(RunUntil(a, 2)) << "RECV did not complete";
  ASSERT_TRUE(RunUntil(b, 1)) << "SEND did not complete";
  EXPECT_EQ(a.done[1].status, WcStatus::kSuccess) << WcStatusName(a.done[1].status);
  EXPECT_EQ(b.done[0].status, WcStatus::kSuccess) << WcStatusName(b.done[0].status);
  EXPECT_TRUE(std::equal(b.buf.begin(), b.buf.begin() + kSendBytes, a.buf.begin() + kWriteBytes));

  const dpdk::NeighStats na = a.Neigh();
  const dpdk::NeighStats nb = b.Neigh();
  for (const dpdk::NeighStats& n : {na, nb}) {
    EXPECT_EQ(n.malformed, 0u);
    EXPECT_EQ(n.send_failures, 0u);
    EXPECT_EQ(n.entries, 1u);  // the peer, learnt or static
  }
  const bool resolves = std::string(GetParam().extra[0]).find("neigh=") == std::string::npos;
  if (resolves) {
    // Both ConnectQp() before either polls: A's first frame finds no MAC, A asks, B answers
    // and learns A from the request (or both ask, when B's frame went first).
    EXPECT_GE(na.requests_sent + nb.requests_sent, 1u);
    EXPECT_GE(na.unresolved_drops + nb.unresolved_drops, 1u);
    EXPECT_GE(na.requests_answered + nb.requests_answered, 1u);
    EXPECT_GE(na.replies_learnt + nb.replies_learnt, 1u);
    EXPECT_EQ(na.requests_sent, nb.requests_answered);
    EXPECT_EQ(nb.requests_sent, na.requests_answered);
    EXPECT_GE(na.replies_learnt + na.requests_learnt, 1u);  // each side learnt the other
    EXPECT_GE(nb.replies_learnt + nb.requests_learnt, 1u);
  } else {
    for (const dpdk::NeighStats& n : {na, nb}) {
      EXPECT_EQ(n.requests_sent, 0u);
      EXPECT_EQ(n.requests_answered, 0u);
      EXPECT_EQ(n.unresolved_drops, 0u);
      EXPECT_EQ(n.replies_learnt + n.requests_learnt, 0u);
    }
  }
  // Nothing but MetaRoCE reached the engines, and every frame the driver sent had a MAC.
  for (Host* h : {&a, &b}) {
    uint64_t parse_drops = 0;
    for (uint64_t d : h->dev->engine().stats().rx_parse_drops) parse_drops += d;
    EXPECT_EQ(parse_drops, 0u);
    EXPECT_EQ(h->dev->port_stats().tx_errors, 0u);
  }
  std::printf("A: sent %llu requests, answered %llu, dropped %llu; B: sent %llu, answered %llu\n",
              static_cast<unsigned long long>(na.requests_sent),
              static_cast<unsigned long long>(na.requests_answered),
              static_cast<unsigned long long>(na.unresolved_drops),
              static_cast<unsigned long long>(nb.requests_sent),
              static_cast<unsigned long long>(nb.requests_answered));
}

INSTANTIATE_TEST_SUITE_P(
    NetRing, DpdkNeigh,
    ::testing::Values(
        Case{"Arp", {"10.7.0.1", "10.7.0.2"}, {"", ""}, ""},
        Case{"ArpDrop1Percent", {"10.7.0.1", "10.7.0.2"}, {"", ""}, "drop=0.01"},
        Case{"Nd", {"[fd00:7::1]", "[fd00:7::2]"}, {"", ""}, ""},
        Case{"NdDrop1Percent", {"[fd00:7::1]", "[fd00:7::2]"}, {"", ""}, "drop=0.01"},
        Case{"StaticOnly",
             {"10.7.0.1", "10.7.0.2"},
             {",neigh=10.7.0.2@02:00:00:00:0a:02", ",neigh=10.7.0.1@02:00:00:00:0a:01"},
             ""},
        Case{"StaticOnlyIpv6",
             {"[fd00:7::1]", "[fd00:7::2]"},
             {",neigh=[fd00:7::2]@02:00:00:00:0a:02", ",neigh=[fd00:7::1]@02:00:00:00:0a:01"},
             ""}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(DpdkNeighStats, OnlyForDpdkPorts) {
  class Other final : public port::Port {
   public:
    const port::PortInfo& info() const override { return info_; }
    uint16_t RxBurst(uint16_t, port::RxPacket*, uint16_t) override { return 0; }
    uint16_t TxAlloc(uint16_t, TxSlot*, uint16_t) override { return 0; }
    uint16_t TxBurst(uint16_t, TxSlot*, uint16_t) override { return 0; }
    port::PortStats stats() const override { return {}; }

   private:
    port::PortInfo info_;
  };
  Other other;
  EXPECT_FALSE(dpdk::NeighStatsOf(other).has_value());
}

}  // namespace
}  // namespace metaroce::testing
