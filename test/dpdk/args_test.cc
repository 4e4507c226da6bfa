/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The dpdk driver's arguments: every bad key and value is refused with a message
// naming it, before EAL is touched.

#include <string>

#include "gtest/gtest.h"
#include "mr_net_dpdk.h"

namespace metaroce::testing {
namespace {

absl::StatusOr<dpdk::DpdkArgs> Parse(const std::string& spec) {
  auto a = port::PortArgs::Parse(spec);
  if (!a.ok()) return a.status();
  return dpdk::ParseDpdkArgs(*a);
}

TEST(DpdkArgs, DefaultsAndEveryKey) {
  auto a = Parse("dpdk:ip=192.0.2.1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->eal.empty());
  EXPECT_EQ(a->port, "0");
  EXPECT_EQ(a->ip, wire::IpAddr::V4(192, 0, 2, 1));
  EXPECT_TRUE(a->mac_auto);
  EXPECT_EQ(a->udp_port, wire::kDefaultUdpPort);
  EXPECT_EQ(a->queues, 1);
  EXPECT_EQ(a->mbufs, dpdk::kDefaultMbufs);
  EXPECT_EQ(a->mtu, dpdk::kDefaultMtu);
  EXPECT_TRUE(a->neigh.empty());

  a = Parse(
      "dpdk:eal=--no-huge -m;512  --vdev=net_memif0|role=server,port=net_memif0,ip=[2001:db8::1],"
      "mac=02:00:00:aa:bb:0C,udp_port=5000,queues=2,mbufs=16384,mtu=9000");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->eal,
            (std::vector<std::string>{"--no-huge", "-m", "512", "--vdev=net_memif0,role=server"}));
  EXPECT_EQ(a->port, "net_memif0");
  EXPECT_TRUE(a->ip.v6);
  EXPECT_FALSE(a->mac_auto);
  EXPECT_EQ(a->mac.bytes, (std::array<uint8_t, 6>{0x02, 0, 0, 0xaa, 0xbb, 0x0c}));
  EXPECT_EQ(a->udp_port, 5000);
  EXPECT_EQ(a->queues, 2);
  EXPECT_EQ(a->mbufs, 16384u);
  EXPECT_EQ(a->mtu, 9000u);

  a = Parse(
      "dpdk:ip=10.0.0.1,neigh=10.0.0.2@02:00:00:00:00:02;;[2001:db8::3]@02-00-00-00-00-0a;"
      "2001:db8::4@02:00:00:00:00:0B;");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->neigh.size(), 3u);
  EXPECT_EQ(a->neigh[0].ip, wire::IpAddr::V4(10, 0, 0, 2));
  EXPECT_EQ(a->neigh[0].mac.bytes, (std::array<uint8_t, 6>{2, 0, 0, 0, 0, 2}));
  EXPECT_EQ(a->neigh[1].ip.ToString(), "2001:db8::3");
  EXPECT_EQ(a->neigh[1].mac.bytes, (std::array<uint8_t, 6>{2, 0, 0, 0, 0, 0x0a}));
  EXPECT_EQ(a->neigh[2].ip.ToString(), "2001:db8::4");
  EXPECT_EQ(a->neigh[2].mac.bytes, (std::array<uint8_t, 6>{2, 0, 0, 0, 0, 0x0b}));

  a = Parse("dpdk:port=007,ip=10.0.0.1,mac=auto");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->port, "7");
  EXPECT_TRUE(a->csum_offload);  // auto by default

  a = Parse("dpdk:ip=10.0.0.1,csum=off");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->csum_offload);
}

struct BadCase {
  const char* spec;
  const char* message;  // a part of the error the user must see
};

class DpdkBadArgs : public ::testing::TestWithParam<BadCase> {};

TEST_P(DpdkBadArgs, RefusedNamingTheKey) {
  auto a = Parse(GetParam().spec);
  ASSERT_FALSE(a.ok()) << GetParam().spec;
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find(GetParam().message), std::string::npos)
      << a.status().message();
  // Through the registry the same message comes back, without EAL being started.
  auto p = port::OpenPort(GetParam().spec);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find(GetParam().message), std::string::npos)
      << p.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Every, DpdkBadArgs,
    ::testing::Values(
        BadCase{"dpdk:", "ip= is required"}, BadCase{"dpdk:port=1", "ip= is required"},
        BadCase{"dpdk:ip=10.0.0.1,speed=10", "unknown argument 'speed'; allowed: eal, port"},
        BadCase{"dpdk:ip=10.0.0.1,ip=10.0.0.2", "ip is given twice"},
        BadCase{"dpdk:ip=10.0.0.1,csum=on", "csum='on' is not allowed: auto or off"},
        BadCase{"dpdk:ip=10.0.0.300", "ip='10.0.0.300' is not allowed"},
        BadCase{"dpdk:ip=host", "ip='host' is not allowed: an IPv4 or IPv6 address"},
        BadCase{"dpdk:ip=0.0.0.0", "ip='0.0.0.0' is not allowed: a specific address"},
        BadCase{"dpdk:ip=::", "ip='::' is not allowed: a specific address"},
        BadCase{"dpdk:ip=10.0.0.1,eal=", "eal='' is not allowed: EAL arguments"},
        BadCase{"dpdk:ip=10.0.0.1,eal=; ;", "eal='; ;' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,port=", "port='' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,port=65536", "port='65536' is not allowed: an ethdev port id"},
        BadCase{"dpdk:ip=10.0.0.1,port=a;b", "port='a;b' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,mac=", "mac='' is not allowed: auto, or a unicast"},
        BadCase{"dpdk:ip=10.0.0.1,mac=02:00:00:00:00", "mac='02:00:00:00:00' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,mac=02:00:00:00:00:0g", "mac='02:00:00:00:00:0g'"},
        BadCase{"dpdk:ip=10.0.0.1,mac=01:00:5e:00:00:01", "mac='01:00:5e:00:00:01'"},
        BadCase{"dpdk:ip=10.0.0.1,mac=00:00:00:00:00:00", "mac='00:00:00:00:00:00'"},
        BadCase{"dpdk:ip=10.0.0.1,udp_port=0", "udp_port='0' is not allowed: a UDP port"},
        BadCase{"dpdk:ip=10.0.0.1,udp_port=70000", "udp_port='70000' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,udp_port=-1", "udp_port='-1' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,queues=0", "queues='0' is not allowed: a count 1..16"},
        BadCase{"dpdk:ip=10.0.0.1,queues=17", "queues='17' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,mbufs=100", "mbufs='100' is not allowed: a count 1024.."},
        BadCase{"dpdk:ip=10.0.0.1,mbufs=99999999999", "mbufs='99999999999' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,mbufs=4096,queues=2",
                "mbufs='4096' is not allowed: at least 5120 for queues=2"},
        BadCase{"dpdk:ip=10.0.0.1,mtu=100", "mtu='100' is not allowed: bytes 576..9600"},
        BadCase{"dpdk:ip=10.0.0.1,mtu=9601", "mtu='9601' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,mtu=1500x", "mtu='1500x' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,neigh=", "neigh='' is not allowed: IP@MAC entries separated by"},
        BadCase{"dpdk:ip=10.0.0.1,neigh=;", "neigh=';' is not allowed: IP@MAC entries"},
        BadCase{"dpdk:ip=10.0.0.1,neigh=10.0.0.2", "'10.0.0.2' is not IP@MAC"},
        BadCase{"dpdk:ip=10.0.0.1,neigh=10.0.0.2@", "neigh='10.0.0.2@' is not allowed"},
        BadCase{"dpdk:ip=10.0.0.1,neigh=host@02:00:00:00:00:02", "'host@02:00:00:00:00:02'"},
        BadCase{"dpdk:ip=10.0.0.1,neigh=0.0.0.0@02:00:00:00:00:02", "is not IP@MAC"},
        BadCase{"dpdk:ip=10.0.0.1,neigh=10.0.0.2@01:00:5e:00:00:01", "unicast non-zero MAC"},
        BadCase{"dpdk:ip=10.0.0.1,neigh=10.0.0.2@00:00:00:00:00:00", "is not IP@MAC"},
        BadCase{"dpdk:ip=10.0.0.1,neigh=10.0.0.2@02:00:00:00:00:02;10.0.0.2@02:00:00:00:00:03",
                "10.0.0.2 is given twice"}));

TEST(DpdkArgs, AtMostSoManyStaticNeighbours) {
  std::string spec = "dpdk:ip=10.0.0.1,neigh=";
  for (size_t i = 0; i <= dpdk::kMaxStaticNeigh; i++) {
    spec +=
        "10.1." + std::to_string(i / 256) + "." + std::to_string(i % 256) + "@02:00:00:00:00:01;";
  }
  auto a = Parse(spec);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("more than 256 entries"), std::string::npos) << a.status();
}

TEST(DpdkArgs, Registered) {
  bool found = false;
  for (const port::PortDriver* d : port::Drivers()) found |= std::string(d->name) == "dpdk";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace metaroce::testing
