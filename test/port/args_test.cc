/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// PortArgs parsing, the udp driver's argument checks and fault spec parsing:
// every bad argument fails with a message naming it.

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mr_net_udp.h"
#include "mr_port.h"
#include "mr_port_fault.h"

namespace metaroce::testing {
namespace {

using ::testing::HasSubstr;

TEST(PortArgs, DriverAndPairs) {
  auto a = port::PortArgs::Parse("udp:ip=127.0.0.1,port=4792");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->driver, "udp");
  ASSERT_EQ(a->kv.size(), 2u);
  EXPECT_EQ(a->Get("ip"), "127.0.0.1");
  EXPECT_EQ(a->Get("port"), "4792");
  EXPECT_EQ(a->Get("queues", "1"), "1");
  EXPECT_TRUE(a->Has("port"));
  EXPECT_FALSE(a->Has("queues"));
}

TEST(PortArgs, Ipv6ValueKeepsItsColons) {
  auto a = port::PortArgs::Parse("udp:ip=::1,port=0");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->driver, "udp");
  EXPECT_EQ(a->Get("ip"), "::1");
}

TEST(PortArgs, DriverOnly) {
  for (const char* text : {"udp", "udp:"}) {
    auto a = port::PortArgs::Parse(text);
    ASSERT_TRUE(a.ok()) << text;
    EXPECT_EQ(a->driver, "udp");
    EXPECT_TRUE(a->kv.empty());
  }
}

TEST(PortArgs, BadText) {
  EXPECT_THAT(port::PortArgs::Parse("").status().message(), HasSubstr("driver name first"));
  EXPECT_THAT(port::PortArgs::Parse(":ip=1").status().message(), HasSubstr("driver name first"));
  EXPECT_THAT(port::PortArgs::Parse("udp:ip").status().message(),
              HasSubstr("'ip' is not key=value"));
  EXPECT_THAT(port::PortArgs::Parse("udp:=1").status().message(),
              HasSubstr("'=1' is not key=value"));
  EXPECT_THAT(port::PortArgs::Parse("udp:ip=1,,port=2").status().message(),
              HasSubstr("'' is not key=value"));
}

TEST(PortArgs, UnknownDriverListsTheKnownOnes) {
  auto p = port::OpenPort("nosuch:x=1");
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::IsNotFound(p.status()));
  EXPECT_THAT(p.status().message(), HasSubstr("no port driver 'nosuch'"));
  EXPECT_THAT(p.status().message(), HasSubstr("udp"));
}

absl::StatusOr<udp::UdpArgs> Udp(const std::string& text) {
  auto a = port::PortArgs::Parse(text);
  if (!a.ok()) return a.status();
  return udp::ParseUdpArgs(*a);
}

TEST(UdpArgs, Defaults) {
  auto a = Udp("udp:ip=127.0.0.1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->ip, wire::IpAddr::V4(127, 0, 0, 1));
  EXPECT_EQ(a->port, 4792);
  EXPECT_EQ(a->source_ports, 64u);
  EXPECT_EQ(a->first_source_port, 0);
  EXPECT_EQ(a->busy_poll_us, 0u);
  EXPECT_EQ(a->rcvbuf_bytes, 4u << 20);
  EXPECT_EQ(a->sndbuf_bytes, 0u);
  EXPECT_EQ(a->queues, 1);
}

TEST(UdpArgs, EveryKey) {
  auto a =
      Udp("udp:ip=::1,port=5000,source_ports=16,first_source_port=50000,busy_poll=50,"
          "rcvbuf=4194304,sndbuf=1048576,queues=1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->ip.v6);
  EXPECT_EQ(a->ip.bytes[15], 1);
  EXPECT_EQ(a->port, 5000);
  EXPECT_EQ(a->source_ports, 16u);
  EXPECT_EQ(a->first_source_port, 50000);
  EXPECT_EQ(a->busy_poll_us, 50u);
  EXPECT_EQ(a->rcvbuf_bytes, 4194304u);
  EXPECT_EQ(a->sndbuf_bytes, 1048576u);
  auto b = Udp("udp:ip=[::1]");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->ip.v6);
}

struct BadCase {
  const char* text;
  const char* message;  // a part of the error
};

TEST(UdpArgs, EveryBadArgumentIsNamed) {
  const BadCase cases[] = {
      {"udp", "ip= is required"},
      {"udp:port=1", "ip= is required"},
      {"udp:ip=localhost", "ip='localhost' is not allowed: an IPv4 or IPv6 address"},
      {"udp:ip=127.0.0.256", "ip='127.0.0.256' is not allowed"},
      {"udp:ip=", "ip='' is not allowed"},
      {"udp:ip=0.0.0.0", "not the wildcard"},
      {"udp:ip=::", "not the wildcard"},
      {"udp:ip=127.0.0.1,port=65536", "port='65536' is not allowed: a UDP port 1..65535"},
      {"udp:ip=127.0.0.1,port=-1", "port='-1' is not allowed"},
      {"udp:ip=127.0.0.1,port=12ab", "port='12ab' is not allowed"},
      {"udp:ip=127.0.0.1,source_ports=0", "source_ports='0' is not allowed: a count 1..1024"},
      {"udp:ip=127.0.0.1,source_ports=1025", "source_ports='1025' is not allowed"},
      {"udp:ip=127.0.0.1,first_source_port=0", "first_source_port='0' is not allowed"},
      {"udp:ip=127.0.0.1,first_source_port=70000", "first_source_port='70000' is not allowed"},
      {"udp:ip=127.0.0.1,first_source_port=65500", "first_source_port + source_ports - 1 <= 65535"},
      {"udp:ip=127.0.0.1,port=50010,first_source_port=50000",
       "50000..50063 that does not contain port=50010"},
      {"udp:ip=127.0.0.1,busy_poll=x", "busy_poll='x' is not allowed: microseconds"},
      {"udp:ip=127.0.0.1,busy_poll=1000001", "busy_poll='1000001' is not allowed"},
      {"udp:ip=127.0.0.1,rcvbuf=100", "rcvbuf='100' is not allowed: bytes 4096..1073741824"},
      {"udp:ip=127.0.0.1,sndbuf=2147483648", "sndbuf='2147483648' is not allowed"},
      {"udp:ip=127.0.0.1,queues=2", "queues='2' is not allowed: 1"},
      {"udp:ip=127.0.0.1,queues=0", "queues='0' is not allowed"},
      {"udp:ip=127.0.0.1,mtu=9000", "unknown argument 'mtu'; allowed: ip, port, source_ports"},
      {"udp:ip=127.0.0.1,port=1,port=2", "port is given twice"},
  };
  for (const BadCase& c : cases) {
    auto a = Udp(c.text);
    ASSERT_FALSE(a.ok()) << c.text;
    EXPECT_TRUE(absl::IsInvalidArgument(a.status())) << c.text;
    EXPECT_THAT(a.status().message(), HasSubstr(c.message)) << c.text;
    // The registry gives the same answer.
    auto p = port::OpenPort(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_THAT(p.status().message(), HasSubstr(c.message)) << c.text;
  }
}

TEST(FaultSpec, EveryKey) {
  auto f = port::ParseFaultSpec(
      "drop=0.01,burst=0.001:8,reorder=0.01:20,dup=0.02,ecn=0.05,corrupt=0.001,"
      "blackhole_port=50001,seed=99");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_DOUBLE_EQ(f->drop, 0.01);
  EXPECT_DOUBLE_EQ(f->burst, 0.001);
  EXPECT_EQ(f->burst_len, 8u);
  EXPECT_DOUBLE_EQ(f->reorder, 0.01);
  EXPECT_EQ(f->reorder_depth, 20u);
  EXPECT_DOUBLE_EQ(f->dup, 0.02);
  EXPECT_DOUBLE_EQ(f->ecn, 0.05);
  EXPECT_DOUBLE_EQ(f->corrupt, 0.001);
  EXPECT_EQ(f->blackhole_port, 50001);
  EXPECT_EQ(f->seed, 99u);
  auto empty = port::ParseFaultSpec("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->drop, 0);
  EXPECT_EQ(empty->blackhole_port, 0);
}

TEST(FaultSpec, EveryBadValueIsNamed) {
  const BadCase cases[] = {
      {"drop=1.5", "drop='1.5' is not allowed: a probability 0..1"},
      {"drop=-0.1", "drop='-0.1' is not allowed"},
      {"drop=nan", "drop='nan' is not allowed"},
      {"dup=x", "dup='x' is not allowed: a probability"},
      {"ecn=", "ecn='' is not allowed"},
      {"corrupt=2", "corrupt='2' is not allowed"},
      {"burst=0.1", "burst='0.1' is not allowed: p:n"},
      {"burst=0.1:0", "burst='0.1:0' is not allowed"},
      {"burst=2:4", "burst='2:4' is not allowed"},
      {"reorder=0.1:0", "reorder='0.1:0' is not allowed: p:k"},
      {"reorder=0.1:5000", "reorder='0.1:5000' is not allowed"},
      {"blackhole_port=0", "blackhole_port='0' is not allowed: a UDP port 1..65535"},
      {"blackhole_port=65536", "blackhole_port='65536' is not allowed"},
      {"seed=-1", "seed='-1' is not allowed: an unsigned 64-bit integer"},
      {"loss=0.1", "unknown key 'loss'; keys: drop, burst"},
      {"drop", "'drop' is not key=value"},
      {"drop=0.1,drop=0.2", "drop is given twice"},
  };
  for (const BadCase& c : cases) {
    auto f = port::ParseFaultSpec(c.text);
    ASSERT_FALSE(f.ok()) << c.text;
    EXPECT_TRUE(absl::IsInvalidArgument(f.status())) << c.text;
    EXPECT_THAT(f.status().message(), HasSubstr(c.message)) << c.text;
  }
}

}  // namespace
}  // namespace metaroce::testing
