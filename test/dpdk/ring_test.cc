/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The dpdk driver over net_ring ethdevs in one process, EAL without hugepages:
// frames through a loopback port byte for byte, then two metaroce::Device on two
// ports cross-connected by two rte_rings (a 4 MiB WRITE and a SEND/RECV, with
// and without 1 % loss). An EAL that does not start fails every test with its message.

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#pragma GCC diagnostic pop

#include <chrono>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "device_endpoint.h"
#include "gtest/gtest.h"
#include "mr_device.h"
#include "mr_net_dpdk.h"
#include "ring_pair.h"

namespace metaroce::testing {
namespace {

using namespace transport;

// EAL as the tests run it: no hugepages, no PCI scan, no shared config files (--in-memory
// is refused with --no-huge; with --no-shconf processes sharing a prefix share nothing but
// an empty /var/run/dpdk/<prefix>), the main thread free to run on either vCPU, and one
// loopback ring port (net_ring0).
std::vector<std::string> EalArgs() {
  return {"--no-huge",
          "-m",
          "512",
          "--no-pci",
          "--no-shconf",
          "--file-prefix=mr_dpdk_test",
          "--no-telemetry",
          "--lcores=0@(0-1)",
          "--vdev=net_ring0"};
}

// The two cross-connected ports: A transmits into ring ab, which B receives from, and back.
// rte_eth_from_rings() names them net_ring_<name>.
constexpr const char* kPortA = "net_ring_mra";
constexpr const char* kPortB = "net_ring_mrb";

// EAL and the two ports, set up once; every test asserts it worked.
absl::Status EalAndRings() {
  static std::once_flag once;
  static absl::Status status;
  std::call_once(once, [] {
    status = dpdk::InitEal(EalArgs());
    if (!status.ok()) return;
    status = testing::MakeRingPair("mra", "mrb");
  });
  return status;
}

class DpdkLoopback : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status s = EalAndRings();
    ASSERT_TRUE(s.ok()) << s;
  }
};

TEST_F(DpdkLoopback, FramesComeBackByteForByte) {
  auto p = port::OpenPort("dpdk:port=net_ring0,ip=10.9.0.1,udp_port=4800");
  ASSERT_TRUE(p.ok()) << p.status();
  port::Port& port = **p;
  EXPECT_EQ(port.info().driver, "dpdk");
  EXPECT_EQ(port.info().framing, Framing::kEthernet);
  EXPECT_EQ(port.info().ip, wire::IpAddr::V4(10, 9, 0, 1));
  EXPECT_EQ(port.info().udp_port, 4800);
  EXPECT_EQ(port.info().num_queues, 1);
  EXPECT_EQ(port.info().max_frame_bytes, 1514u);
  EXPECT_TRUE(port.info().source_ports.empty());

  constexpr uint16_t kN = 40;
  TxSlot slots[kN];
  ASSERT_EQ(port.TxAlloc(0, slots, kN), kN);
  std::vector<std::vector<uint8_t>> sent;
  for (uint16_t i = 0; i < kN; i++) {
    ASSERT_NE(slots[i].cookie, nullptr);
    ASSERT_GE(slots[i].cap, 1514u);
    if (i == kN - 1) continue;  // returned unused
    const uint32_t len = 60 + i * 37;
    for (uint32_t j = 0; j < len; j++) slots[i].buf[j] = static_cast<uint8_t>(i * 7 + j);
    slots[i].len = len;
    sent.emplace_back(slots[i].buf, slots[i].buf + len);
  }
  EXPECT_EQ(port.TxBurst(0, slots, kN), kN - 1);

  std::vector<std::vector<uint8_t>> got;
  port::RxPacket rx[16];
  for (int round = 0; round < 100 && got.size() < sent.size(); round++) {
    const uint16_t n = port.RxBurst(0, rx, 16);
    EXPECT_LE(n, 16);
    for (uint16_t i = 0; i < n; i++) got.emplace_back(rx[i].data.begin(), rx[i].data.end());
  }
  EXPECT_EQ(got, sent);
  EXPECT_EQ(port.RxBurst(0, rx, 16), 0);

  uint64_t bytes = 0;
  for (const auto& f : sent) bytes += f.size();
  port::PortStats s = port.stats();
  EXPECT_EQ(s.tx_packets, kN - 1u);
  EXPECT_EQ(s.tx_bytes, bytes);
  EXPECT_EQ(s.rx_packets, kN - 1u);
  EXPECT_EQ(s.rx_bytes, bytes);
  EXPECT_EQ(s.tx_errors, 0u);
  EXPECT_EQ(s.rx_errors, 0u);
  EXPECT_EQ(s.tx_no_buffer, 0u);

  // Other queues have nothing and take nothing; slots given to one are freed and counted.
  EXPECT_EQ(port.RxBurst(1, rx, 16), 0);
  EXPECT_EQ(port.TxAlloc(1, slots, 1), 0);
  ASSERT_EQ(port.TxAlloc(0, slots, 2), 2);
  slots[0].len = 100;
  EXPECT_EQ(port.TxBurst(1, slots, 2), 0);
  EXPECT_EQ(port.stats().tx_errors, 1u);
}

TEST_F(DpdkLoopback, AFullTransmitRingHoldsFramesBackInsteadOfDroppingThem) {
  // A 64-slot ring nobody reads: frames beyond it wait in the port, in order,
  // TxAlloc() stops handing out buffers, and once the peer reads, all arrive.
  ASSERT_TRUE(testing::MakeRingPair("mrsa", "mrsb", 1, 64).ok());
  auto a = port::OpenPort("dpdk:port=net_ring_mrsa,ip=10.9.0.1");
  auto b = port::OpenPort("dpdk:port=net_ring_mrsb,ip=10.9.0.2");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  uint32_t next = 0;
  uint32_t accepted = 0;
  for (int burst = 0; burst < 20; burst++) {
    TxSlot slots[32];
    const uint16_t got = (*a)->TxAlloc(0, slots, 32);
    if (got == 0) break;  // paused: enough is waiting
    for (uint16_t i = 0; i < got; i++) {
      std::memset(slots[i].buf, 0, 64);
      std::memcpy(slots[i].buf, &next, sizeof(next));
      slots[i].len = 64;
      next++;
    }
    accepted += (*a)->TxBurst(0, slots, got);
  }
  EXPECT_EQ(accepted, next);
  EXPECT_GT(next, 63u + 128u);  // the ring's 63, then the backlog up to the pause
  EXPECT_LT(next, 63u + 128u + 64u);
  TxSlot one[1];
  EXPECT_EQ((*a)->TxAlloc(0, one, 1), 0);  // still paused
  EXPECT_EQ((*a)->stats().tx_errors, 0u);
  // The peer reads; each of A's polls (RxBurst) moves waiting frames on.
  std::vector<uint32_t> seen;
  port::RxPacket rx[32];
  for (int round = 0; round < 1000 && seen.size() < next; round++) {
    (*a)->RxBurst(0, rx, 32);
    const uint16_t n = (*b)->RxBurst(0, rx, 32);
    for (uint16_t i = 0; i < n; i++) {
      uint32_t v;
      std::memcpy(&v, rx[i].data.data(), sizeof(v));
      seen.push_back(v);
    }
  }
  ASSERT_EQ(seen.size(), next);
  for (uint32_t i = 0; i < next; i++) ASSERT_EQ(seen[i], i) << "frame order";
  EXPECT_EQ((*a)->stats().tx_packets, next);
  EXPECT_EQ((*a)->TxAlloc(0, one, 1), 1);  // buffers again
  one[0].len = 0;
  (*a)->TxBurst(0, one, 1);
}

TEST_F(DpdkLoopback, LaterEalArgumentsAreIgnored) {
  EXPECT_TRUE(dpdk::InitEal({"--no-such-eal-option"}).ok());
  auto p = port::OpenPort("dpdk:eal=--no-such-eal-option,port=net_ring0,ip=10.9.0.1");
  EXPECT_TRUE(p.ok()) << p.status();
}

TEST_F(DpdkLoopback, SegmentedFramesAreDroppedAndCounted) {
  auto p = port::OpenPort("dpdk:port=net_ring0,ip=10.9.0.1");
  ASSERT_TRUE(p.ok()) << p.status();
  TxSlot slots[3];
  ASSERT_EQ((*p)->TxAlloc(0, slots, 3), 3);
  auto* head = static_cast<rte_mbuf*>(slots[0].cookie);
  auto* tail = static_cast<rte_mbuf*>(slots[1].cookie);
  auto* whole = static_cast<rte_mbuf*>(slots[2].cookie);
  for (rte_mbuf* m : {head, tail, whole}) {
    ASSERT_NE(rte_pktmbuf_append(m, 100), nullptr);
    std::memset(rte_pktmbuf_mtod(m, uint8_t*), 0xab, 100);
  }
  ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
  uint16_t id = 0;
  ASSERT_EQ(rte_eth_dev_get_port_by_name("net_ring0", &id), 0);
  rte_mbuf* out[2] = {head, whole};
  ASSERT_EQ(rte_eth_tx_burst(id, 0, out, 2), 2);  // past the driver, as a PMD could deliver it

  port::RxPacket rx[8];
  const uint16_t n = (*p)->RxBurst(0, rx, 8);
  ASSERT_EQ(n, 1);
  EXPECT_EQ(rx[0].data.size(), 100u);
  EXPECT_EQ((*p)->stats().rx_errors, 1u);
  EXPECT_EQ((*p)->stats().rx_packets, 1u);
}

TEST_F(DpdkLoopback, OpenErrorsNameTheProblem) {
  auto p = port::OpenPort("dpdk:port=net_ring0,ip=10.9.0.1");
  ASSERT_TRUE(p.ok()) << p.status();
  auto again = port::OpenPort("dpdk:port=net_ring0,ip=10.9.0.2");
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("is already open"), std::string::npos) << again.status();

  auto missing = port::OpenPort("dpdk:port=net_nothing9,ip=10.9.0.1");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("net_ring0"), std::string::npos) << missing.status();

  auto queues = port::OpenPort("dpdk:port=" + std::string(kPortA) + ",ip=10.9.0.1,queues=2");
  ASSERT_FALSE(queues.ok());
  EXPECT_NE(queues.status().message().find("queues='2' is not allowed"), std::string::npos)
      << queues.status();
}

TEST_F(DpdkLoopback, TxAllocStopsWhenThePoolRunsDry) {
  auto p = port::OpenPort("dpdk:port=net_ring0,ip=10.9.0.1,mbufs=3072");
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<TxSlot> slots(4096);
  const uint16_t got = (*p)->TxAlloc(0, slots.data(), 4096);
  EXPECT_GT(got, 1000);
  EXPECT_LE(got, 3072);  // net_ring keeps no mbufs on its receive queue
  EXPECT_EQ((*p)->stats().tx_no_buffer, 1u);
  EXPECT_EQ((*p)->TxBurst(0, slots.data(), got), 0);  // every one returned unused
  EXPECT_EQ((*p)->TxAlloc(0, slots.data(), got), got);
  EXPECT_EQ((*p)->TxBurst(0, slots.data(), got), 0);
  EXPECT_EQ((*p)->stats().tx_errors, 0u);
}

/** A run: its name, the fault spec of B's port, MTU and the engine's payload size. */
struct Case {
  const char* name;
  const char* faults_b;
  uint32_t mtu;
  uint16_t max_payload;
};

constexpr size_t kMemBytes = 5u << 20;
constexpr uint32_t kWriteBytes = 4u << 20;

using Host = DeviceEndpoint;

class DpdkDevices : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    absl::Status s = EalAndRings();
    ASSERT_TRUE(s.ok()) << s;
    const char* names[2] = {kPortA, kPortB};
    for (int i = 0; i < 2; i++) {
      Host& h = hosts_[i];
      DeviceConfig cfg;
      cfg.port = absl::StrCat("dpdk:port=", names[i], ",ip=10.8.0.", i + 1, ",mac=02:00:00:00:00:0",
                              i + 1, ",mtu=", GetParam().mtu);
      if (i == 1 && GetParam().faults_b[0] != '\0') {
        cfg.faults = absl::StrCat(GetParam().faults_b, ",seed=9");
      }
      cfg.engine.seed = 100 + i;
      cfg.engine.max_payload = GetParam().max_payload;
      // On a loaded machine this process may sleep longer than the default 20 ms after
      // which a silent connection is declared dead.
      cfg.engine.conn_fail_after_ns = 10'000'000'000;
      auto d = Device::Open(cfg);
      ASSERT_TRUE(d.ok()) << d.status();
      ASSERT_TRUE(h.Init(std::move(*d), kMemBytes).ok());
    }
    for (int i = 0; i < 2; i++) ASSERT_TRUE(hosts_[i].Connect(hosts_[1 - i]).ok());
  }

  // Polls both hosts until @p h has @p want completions or 30 s passed.
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

TEST_P(DpdkDevices, WriteFourMebibytesAndSendRecv) {
  Host& a = hosts_[0];
  Host& b = hosts_[1];
  EXPECT_EQ(a.dev->port_info().mac.bytes, (std::array<uint8_t, 6>{2, 0, 0, 0, 0, 1}));
  for (size_t i = 0; i < kWriteBytes; i++) a.buf[i] = static_cast<uint8_t>(i * 131 + (i >> 12));

  ASSERT_TRUE(a.PostWrite(1, 0, kWriteBytes, b, 4096).ok());
  ASSERT_TRUE(RunUntil(a, 1)) << "WRITE did not complete";
  EXPECT_EQ(a.done[0].status, WcStatus::kSuccess) << WcStatusName(a.done[0].status);
  EXPECT_EQ(a.done[0].wr_id, 1u);
  EXPECT_TRUE(std::equal(a.buf.begin(), a.buf.begin() + kWriteBytes, b.buf.begin() + 4096));

  const uint32_t kSendBytes = 100000;
  for (uint32_t i = 0; i < kSendBytes; i++) b.buf[i] = static_cast<uint8_t>(255 - i % 251);
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
  EXPECT_EQ(a.done[1].wr_id, 2u);
  EXPECT_EQ(a.done[1].status, WcStatus::kSuccess) << WcStatusName(a.done[1].status);
  EXPECT_EQ(a.done[1].opcode, WcOpcode::kRecv);
  EXPECT_EQ(a.done[1].byte_len, kSendBytes);
  EXPECT_EQ(b.done[0].wr_id, 3u);
  EXPECT_EQ(b.done[0].status, WcStatus::kSuccess) << WcStatusName(b.done[0].status);
  EXPECT_TRUE(std::equal(b.buf.begin(), b.buf.begin() + kSendBytes, a.buf.begin() + kWriteBytes));

  const port::PortStats sa = a.dev->port_stats();
  const port::PortStats sb = b.dev->port_stats();
  EXPECT_EQ(sa.tx_errors, 0u);
  EXPECT_EQ(sb.tx_errors, 0u);
  EXPECT_EQ(sa.rx_errors, 0u);
  EXPECT_GT(sa.tx_packets, kWriteBytes / GetParam().max_payload);
  EXPECT_GT(sb.rx_packets, 0u);
  uint64_t parse_drops = 0;
  for (uint64_t d : b.dev->engine().stats().rx_parse_drops) parse_drops += d;
  EXPECT_EQ(parse_drops, 0u);  // every frame the driver handed over parsed
  if (GetParam().faults_b[0] != '\0') {
    EXPECT_GT(a.dev->engine().stats().tx_retransmits, 0u);
  }
  std::printf("A: tx %llu rx %llu; B: tx %llu rx %llu; A retransmitted %llu\n",
              static_cast<unsigned long long>(sa.tx_packets),
              static_cast<unsigned long long>(sa.rx_packets),
              static_cast<unsigned long long>(sb.tx_packets),
              static_cast<unsigned long long>(sb.rx_packets),
              static_cast<unsigned long long>(a.dev->engine().stats().tx_retransmits));
}

INSTANTIATE_TEST_SUITE_P(NetRing, DpdkDevices,
                         ::testing::Values(Case{"Clean", "", 9000, 4096},
                                           Case{"Drop1Percent", "drop=0.01", 9000, 4096},
                                           Case{"Mtu1500", "", 1500, 1024},
                                           Case{"Mtu1500Drop1Percent", "drop=0.01", 1500, 1024}),
                         [](const auto& info) { return std::string(info.param.name); });

// Two planes: each host has a second ethdev on a second ring pair, its own
// address on it. A WRITE is sprayed over both; plane 1's packets leave from
// plane 1's port (copied into its mbufs).
TEST(DpdkPlanes, AWriteIsSprayedOverTwoEthdevsPerHost) {
  absl::Status s = EalAndRings();
  ASSERT_TRUE(s.ok()) << s;
  static const absl::Status second = MakeRingPair("mrc", "mrd");
  ASSERT_TRUE(second.ok()) << second;
  const char* plane0[2] = {kPortA, kPortB};
  const char* plane1[2] = {"net_ring_mrc", "net_ring_mrd"};
  Host hosts[2];
  for (int i = 0; i < 2; i++) {
    DeviceConfig cfg;
    cfg.port =
        absl::StrCat("dpdk:port=", plane0[i], ",ip=10.8.0.", i + 1, ",mac=02:00:00:00:00:0", i + 1);
    cfg.planes.push_back({absl::StrCat("dpdk:port=", plane1[i], ",ip=10.8.1.", i + 1,
                                       ",mac=02:00:00:00:01:0", i + 1),
                          ""});
    cfg.engine.seed = 200 + i;
    cfg.engine.conn_fail_after_ns = 10'000'000'000;
    cfg.telemetry = false;
    auto d = Device::Open(cfg);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE(hosts[i].Init(std::move(*d), kMemBytes).ok());
  }
  for (int i = 0; i < 2; i++) ASSERT_TRUE(hosts[i].Connect(hosts[1 - i]).ok());
  Host& a = hosts[0];
  Host& b = hosts[1];
  for (size_t i = 0; i < kWriteBytes; i++) a.buf[i] = static_cast<uint8_t>(i * 7 + (i >> 10));
  ASSERT_TRUE(a.PostWrite(1, 0, kWriteBytes, b, 0).ok());
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (a.done.empty() && std::chrono::steady_clock::now() < end) {
    a.Poll();
    b.Poll();
  }
  ASSERT_EQ(a.done.size(), 1u) << "WRITE did not complete";
  EXPECT_EQ(a.done[0].status, WcStatus::kSuccess) << WcStatusName(a.done[0].status);
  EXPECT_TRUE(std::equal(a.buf.begin(), a.buf.begin() + kWriteBytes, b.buf.begin()));
  const ConnInfo c = a.dev->engine().GetConnections().at(0);
  ASSERT_EQ(c.planes.size(), 2u);
  EXPECT_TRUE(c.planes[1].up);
  EXPECT_GT(c.planes[0].tx_pkts, 200u);
  EXPECT_GT(c.planes[1].tx_pkts, 200u);
  EXPECT_GE(a.dev->plane_port(1).stats().tx_packets, c.planes[1].tx_pkts);
  EXPECT_GE(b.dev->plane_port(1).stats().rx_packets, c.planes[1].tx_pkts);
}

}  // namespace
}  // namespace metaroce::testing
