/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The runtime's pure steering decisions: which shard a frame belongs to, the port
// spec each shard opens, each shard's engine settings, and the hand-off ring.

#include <vector>

#include "gtest/gtest.h"
#include "mr_wire.h"
#include "mr_wire_sample.h"
#include "runtime_private.h"

namespace metaroce::testing {
namespace {

using runtime::ShardOf;
using runtime::UdpDstPort;
using transport::Framing;

// A sample MetaRoCE frame (IPv4 or IPv6, optionally VLAN-tagged) sent to @p dst_port.
std::vector<uint8_t> Frame(bool v6, uint16_t dst_port, bool vlan = false) {
  for (const wire::SamplePacket& s : wire::SampleConversation()) {
    if (s.name != (v6 ? "v6_probe" : "v4_probe")) continue;
    wire::FrameInfo f = s.frame;
    f.dst_port = dst_port;
    f.has_vlan = vlan;
    f.vlan_tci = vlan ? 100 : 0;
    std::vector<uint8_t> out(2048);
    absl::StatusOr<size_t> n = wire::EncodeFrame(f, s.Get(), out);
    EXPECT_TRUE(n.ok()) << n.status();
    out.resize(n.ok() ? *n : 0);
    return out;
  }
  ADD_FAILURE() << "no sample probe";
  return {};
}

port::RxPacket Pkt(const std::vector<uint8_t>& bytes) {
  port::RxPacket p;
  p.data = bytes;
  return p;
}

TEST(UdpDstPort, ReadsIpv4Ipv6AndVlanFrames) {
  for (bool v6 : {false, true}) {
    for (bool vlan : {false, true}) {
      const std::vector<uint8_t> f = Frame(v6, 5001, vlan);
      uint16_t port = 0;
      EXPECT_TRUE(UdpDstPort(Framing::kEthernet, Pkt(f), &port)) << v6 << vlan;
      EXPECT_EQ(port, 5001) << v6 << vlan;
    }
  }
}

TEST(UdpDstPort, RefusesWhatIsNotUdpOverIp) {
  std::vector<uint8_t> f = Frame(false, 5001);
  uint16_t port = 0;
  for (size_t len : {0u, 13u, 14u, 33u, 41u}) {  // cut inside Ethernet, IPv4, UDP
    std::vector<uint8_t> cut(f.begin(), f.begin() + len);
    EXPECT_FALSE(UdpDstPort(Framing::kEthernet, Pkt(cut), &port)) << len;
  }
  std::vector<uint8_t> arp = f;
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_FALSE(UdpDstPort(Framing::kEthernet, Pkt(arp), &port));
  std::vector<uint8_t> tcp = f;
  tcp[14 + 9] = 6;
  EXPECT_FALSE(UdpDstPort(Framing::kEthernet, Pkt(tcp), &port));
  std::vector<uint8_t> bad_ihl = f;
  bad_ihl[14] = 0x44;  // 16-byte header
  EXPECT_FALSE(UdpDstPort(Framing::kEthernet, Pkt(bad_ihl), &port));
  std::vector<uint8_t> v6 = Frame(true, 5001);
  v6[14 + 6] = 0;  // hop-by-hop options: not UDP right away
  EXPECT_FALSE(UdpDstPort(Framing::kEthernet, Pkt(v6), &port));
}

TEST(UdpDstPort, DatagramsCarryTheirPort) {
  port::RxPacket p;
  p.addr.dst_port = 4321;
  uint16_t port = 0;
  EXPECT_TRUE(UdpDstPort(Framing::kUdp, p, &port));
  EXPECT_EQ(port, 4321);
}

TEST(ShardOf, DestinationPortMinusBase) {
  const std::vector<uint8_t> f4999 = Frame(false, 4999);
  const std::vector<uint8_t> f5000 = Frame(false, 5000);
  const std::vector<uint8_t> f5001 = Frame(true, 5001);
  const std::vector<uint8_t> f5002 = Frame(false, 5002);
  EXPECT_EQ(ShardOf(Framing::kEthernet, Pkt(f4999), 5000, 2), -1);
  EXPECT_EQ(ShardOf(Framing::kEthernet, Pkt(f5000), 5000, 2), 0);
  EXPECT_EQ(ShardOf(Framing::kEthernet, Pkt(f5001), 5000, 2), 1);
  EXPECT_EQ(ShardOf(Framing::kEthernet, Pkt(f5002), 5000, 2), -1);
  EXPECT_EQ(ShardOf(Framing::kEthernet, Pkt(f5002), 5000, 3), 2);
  std::vector<uint8_t> junk(10, 0xff);
  EXPECT_EQ(ShardOf(Framing::kEthernet, Pkt(junk), 5000, 2), -1);
  port::RxPacket d;
  d.addr.dst_port = 65535;
  EXPECT_EQ(ShardOf(Framing::kUdp, d, 65534, 2), 1);
}

port::PortArgs Args(const std::string& spec) {
  absl::StatusOr<port::PortArgs> a = port::PortArgs::Parse(spec);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : port::PortArgs{};
}

TEST(ShardPortSpec, ShiftsTheReceiveAndSourcePorts) {
  EXPECT_EQ(*runtime::ShardPortSpec(Args("udp:ip=127.0.0.1,port=5000"), 0),
            "udp:ip=127.0.0.1,port=5000");
  EXPECT_EQ(*runtime::ShardPortSpec(Args("udp:ip=127.0.0.1,port=5000"), 3),
            "udp:ip=127.0.0.1,port=5003");
  EXPECT_EQ(*runtime::ShardPortSpec(Args("udp:ip=127.0.0.1,port=0"), 1), "udp:ip=127.0.0.1,port=0");
  EXPECT_EQ(*runtime::ShardPortSpec(Args("udp:ip=127.0.0.1"), 1), "udp:ip=127.0.0.1,port=4793");
  EXPECT_EQ(
      *runtime::ShardPortSpec(Args("udp:ip=::1,port=0,first_source_port=40000,source_ports=16"), 2),
      "udp:ip=::1,port=0,first_source_port=40032,source_ports=16");
  EXPECT_EQ(*runtime::ShardPortSpec(Args("udp:ip=::1,port=0,first_source_port=40000"), 1),
            "udp:ip=::1,port=0,first_source_port=40064");
  // Values the driver will refuse pass through unchanged, for it to name.
  EXPECT_EQ(*runtime::ShardPortSpec(Args("udp:ip=::1,port=x"), 1), "udp:ip=::1,port=x");

  absl::StatusOr<std::string> over = runtime::ShardPortSpec(Args("udp:ip=::1,port=65535"), 1);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("port='65535'"), std::string::npos) << over.status();
  over =
      runtime::ShardPortSpec(Args("udp:ip=::1,port=0,first_source_port=65000,source_ports=300"), 1);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("first_source_port"), std::string::npos) << over.status();
}

TEST(SharedPortSpec, OneQueuePerShard) {
  EXPECT_EQ(*runtime::SharedPortSpec(Args("dpdk:port=net_ring0,ip=10.0.0.1"), 2),
            "dpdk:port=net_ring0,ip=10.0.0.1,queues=2");
  EXPECT_EQ(*runtime::SharedPortSpec(Args("dpdk:port=net_ring0,ip=10.0.0.1,queues=2"), 2),
            "dpdk:port=net_ring0,ip=10.0.0.1,queues=2");
  EXPECT_EQ(*runtime::SharedPortSpec(Args("dpdk:ip=10.0.0.1"), 1), "dpdk:ip=10.0.0.1");
  absl::StatusOr<std::string> bad = runtime::SharedPortSpec(Args("dpdk:ip=1.2.3.4,queues=4"), 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("must equal lcores=2"), std::string::npos) << bad.status();
  EXPECT_FALSE(runtime::SharedPortSpec(Args("dpdk:ip=1.2.3.4,queues=2"), 1).ok());
}

TEST(PortPerShard, OnlyTheUdpDriver) {
  EXPECT_TRUE(runtime::PortPerShard("udp"));
  EXPECT_FALSE(runtime::PortPerShard("dpdk"));
  EXPECT_FALSE(runtime::PortPerShard("rt_fake"));
}

TEST(ShardCapacityMbps, EverySenderOfTheHostGetsAnEqualPart) {
  using D = runtime::ShardDemand;
  // 100 Gbit/s over 4 shards: equal parts before any sender.
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, D{}, D{}, 4), 25'000u);
  // 3 senders on this shard, 1 on another: 3/4 of the link here.
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, D{3, 0, 0}, D{4, 0, 0}, 2), 75'000u);
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, D{1, 0, 0}, D{4, 0, 0}, 2), 25'000u);
  // A shard without senders keeps room for one that may come.
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, D{}, D{4, 0, 0}, 2), 20'000u);
  // Never 0, never overflowing, never above the host's.
  EXPECT_EQ(runtime::ShardCapacityMbps(1, D{1, 0, 0}, D{4096, 0, 0}, 16), 1u);
  EXPECT_EQ(runtime::ShardCapacityMbps(UINT32_MAX, D{UINT32_MAX, 0, 0}, D{UINT32_MAX, 0, 0}, 16),
            UINT32_MAX);
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, D{0, 1, UINT64_MAX}, D{0, 1, UINT64_MAX}, 2),
            100'000u);
}

TEST(ShardCapacityMbps, CapacityOneShardsSendersLeaveUnusedGoesToTheOthers) {
  using D = runtime::ShardDemand;
  // Shard 0: two senders limited elsewhere at 5 Gbit/s each; shard 1: two
  // that want more. Max-min over the host: shard 1's take the other 90.
  const D s0{0, 2, 10'000}, s1{2, 0, 0}, all{2, 2, 10'000};
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, s0, all, 2), 10'000u);
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, s1, all, 2), 90'000u);
  // A shard with both: its limited senders' use plus its wanting ones' part.
  const D m0{1, 1, 4'000}, m1{2, 0, 0}, mall{3, 1, 4'000};
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, m0, mall, 2), 4'000u + 32'000u);
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, m1, mall, 2), 64'000u);
  // Every sender limited: the spare goes by senders, so that each may grow.
  const D l0{0, 1, 10'000}, l1{0, 3, 30'000}, lall{0, 4, 40'000};
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, l0, lall, 2), 10'000u + 15'000u);
  EXPECT_EQ(runtime::ShardCapacityMbps(100'000, l1, lall, 2), 30'000u + 45'000u);
}

TEST(ShardEngineConfig, AddressesPortSeedAndPayload) {
  port::PortInfo info;
  info.framing = Framing::kEthernet;
  info.ip = wire::IpAddr::V4(10, 1, 2, 3);
  info.mac.bytes = {2, 0, 0, 0, 0, 9};
  info.udp_port = 5000;
  info.max_frame_bytes = 1514;
  transport::EngineConfig base;
  base.seed = 40;
  absl::StatusOr<transport::EngineConfig> ec = runtime::ShardEngineConfig(base, info, 5003, 3);
  ASSERT_TRUE(ec.ok()) << ec.status();
  EXPECT_EQ(ec->local_ip, info.ip);
  EXPECT_EQ(ec->local_mac, info.mac);
  EXPECT_EQ(ec->udp_port, 5003);
  EXPECT_EQ(ec->seed, 43u);
  EXPECT_LT(ec->max_payload, 1514 - 42);
  EXPECT_GT(ec->max_payload, 1024);
  info.max_frame_bytes = 100;
  EXPECT_FALSE(runtime::ShardEngineConfig(base, info, 5000, 0).ok());
}

TEST(HandoffRing, HoldsExactlyItsSlotsInOrder) {
  absl::StatusOr<std::unique_ptr<runtime::HandoffRing>> r = runtime::HandoffRing::Create("t", 4);
  ASSERT_TRUE(r.ok()) << r.status();
  int v[6] = {};
  void* in[6];
  for (int i = 0; i < 6; i++) in[i] = &v[i];
  EXPECT_EQ((*r)->Enqueue(in, 6), 4u);
  EXPECT_EQ((*r)->Count(), 4u);
  void* out[6] = {};
  EXPECT_EQ((*r)->Dequeue(out, 3), 3u);
  EXPECT_EQ(out[0], &v[0]);
  EXPECT_EQ(out[2], &v[2]);
  EXPECT_EQ((*r)->Enqueue(in + 4, 2), 2u);
  EXPECT_EQ((*r)->Dequeue(out, 6), 3u);
  EXPECT_EQ(out[0], &v[3]);
  EXPECT_EQ(out[2], &v[5]);
  EXPECT_FALSE(runtime::HandoffRing::Create("t", 0).ok());
}

}  // namespace
}  // namespace metaroce::testing
