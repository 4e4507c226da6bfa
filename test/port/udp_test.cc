/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The udp driver on 127.0.0.1 and ::1: datagrams both ways from pool source
// ports, ECN and DSCP, bursts, refused source ports, the buffer pool.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "gtest/gtest.h"
#include "mr_net_udp.h"
#include "udp_test_util.h"

namespace metaroce::testing {
namespace {

using transport::TxSlot;

class Udp : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    auto a = OpenLoopback(GetParam(), "source_ports=8");
    ASSERT_TRUE(a.ok()) << a.status();
    auto b = OpenLoopback(GetParam(), "source_ports=8");
    ASSERT_TRUE(b.ok()) << b.status();
    a_ = std::move(*a);
    b_ = std::move(*b);
  }

  // Sends @p n datagrams from @p from to @p to: payload i is 64 bytes of value
  // i + @p tag, source port from_pool[i % size]; returns what TxBurst returned.
  uint16_t Send(port::Port& from, port::Port& to, uint16_t n, uint8_t tag, wire::Ecn ecn,
                uint8_t dscp) {
    std::vector<TxSlot> slots(n);
    EXPECT_EQ(from.TxAlloc(0, slots.data(), n), n);
    const auto& pool = from.info().source_ports;
    for (uint16_t i = 0; i < n; i++) {
      TxSlot& s = slots[i];
      EXPECT_EQ(s.cap, udp::kMaxDatagramBytes);
      std::fill(s.buf, s.buf + 64, static_cast<uint8_t>(i + tag));
      s.len = 64;
      s.addr.src = from.info().ip;
      s.addr.dst = to.info().ip;
      s.addr.src_port = pool[i % pool.size()];
      s.addr.dst_port = to.info().udp_port;
      s.addr.ecn = ecn;
      s.addr.dscp = dscp;
    }
    return from.TxBurst(0, slots.data(), n);
  }

  std::unique_ptr<port::Port> a_, b_;
};

TEST_P(Udp, InfoListsTheBoundPorts) {
  const port::PortInfo& i = a_->info();
  EXPECT_EQ(i.driver, "udp");
  EXPECT_EQ(i.framing, transport::Framing::kUdp);
  EXPECT_EQ(i.ip.v6, std::string(GetParam()) == "::1");
  EXPECT_NE(i.udp_port, 0);
  EXPECT_EQ(i.num_queues, 1);
  EXPECT_EQ(i.max_frame_bytes, udp::kMaxDatagramBytes);
  ASSERT_EQ(i.source_ports.size(), 8u);
  const std::set<uint16_t> distinct(i.source_ports.begin(), i.source_ports.end());
  EXPECT_EQ(distinct.size(), 8u);
  EXPECT_EQ(distinct.count(0), 0u);
  EXPECT_EQ(distinct.count(i.udp_port), 0u);
}

TEST_P(Udp, BurstsOf32BothWaysFromPoolSourcePorts) {
  for (int round = 0; round < 2; round++) {
    port::Port& from = round == 0 ? *a_ : *b_;
    port::Port& to = round == 0 ? *b_ : *a_;
    ASSERT_EQ(Send(from, to, 32, 10, wire::Ecn::kEct0, 26), 32);
    auto got = Receive(to, 32);
    ASSERT_EQ(got.size(), 32u);
    const auto& pool = from.info().source_ports;
    std::multiset<uint16_t> ports;
    std::set<uint8_t> values;
    for (const Received& r : got) {
      ASSERT_EQ(r.data.size(), 64u);
      EXPECT_TRUE(
          std::all_of(r.data.begin(), r.data.end(), [&](uint8_t v) { return v == r.data[0]; }));
      values.insert(r.data[0]);
      EXPECT_EQ(r.addr.src, from.info().ip);
      EXPECT_EQ(r.addr.dst, to.info().ip);
      EXPECT_EQ(r.addr.dst_port, to.info().udp_port);
      // The datagram really left from the port the slot named.
      EXPECT_EQ(r.addr.src_port, pool[(r.data[0] - 10) % pool.size()]);
      ports.insert(r.addr.src_port);
    }
    EXPECT_EQ(values.size(), 32u);
    for (uint16_t p : pool) EXPECT_EQ(ports.count(p), 4u) << p;
    EXPECT_EQ(from.stats().tx_packets, 32u);
    EXPECT_EQ(from.stats().tx_bytes, 32u * 64);
    EXPECT_EQ(to.stats().rx_packets, 32u);
    EXPECT_EQ(to.stats().rx_bytes, 32u * 64);
  }
}

// What an idle poller sleeps on: readable exactly while datagrams wait.
TEST_P(Udp, RxEventFdIsReadableWhileDatagramsWait) {
  const int fd = b_->RxEventFd(0);
  ASSERT_GE(fd, 0);
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);
  ASSERT_EQ(Send(*a_, *b_, 3, 1, wire::Ecn::kNotEct, 0), 3);
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  EXPECT_NE(p.revents & POLLIN, 0);
  EXPECT_EQ(Receive(*b_, 3).size(), 3u);
  p.revents = 0;
  EXPECT_EQ(poll(&p, 1, 0), 0);
}

TEST_P(Udp, EcnAndDscpReadBack) {
  struct Mark {
    wire::Ecn ecn;
    uint8_t dscp;
  };
  const Mark marks[] = {{wire::Ecn::kCe, 26},    {wire::Ecn::kEct0, 26}, {wire::Ecn::kEct1, 46},
                        {wire::Ecn::kNotEct, 0}, {wire::Ecn::kCe, 0},    {wire::Ecn::kEct0, 63}};
  uint8_t tag = 0;
  for (const Mark& m : marks) {
    ASSERT_EQ(Send(*a_, *b_, 4, tag, m.ecn, m.dscp), 4);
    auto got = Receive(*b_, 4);
    ASSERT_EQ(got.size(), 4u);
    for (const Received& r : got) {
      EXPECT_EQ(r.addr.ecn, m.ecn) << int(m.ecn);
      EXPECT_EQ(r.addr.dscp, m.dscp);
    }
    tag += 4;
  }
}

TEST_P(Udp, MixedMarksOnOneSourcePortInOneBurst) {
  std::vector<TxSlot> slots(8);
  ASSERT_EQ(a_->TxAlloc(0, slots.data(), 8), 8);
  for (uint16_t i = 0; i < 8; i++) {
    TxSlot& s = slots[i];
    s.buf[0] = static_cast<uint8_t>(i);
    s.len = 1;
    s.addr.dst = b_->info().ip;
    s.addr.dst_port = b_->info().udp_port;
    s.addr.src_port = a_->info().source_ports[0];
    s.addr.ecn = i % 2 == 0 ? wire::Ecn::kCe : wire::Ecn::kEct0;
    s.addr.dscp = static_cast<uint8_t>(i);
  }
  ASSERT_EQ(a_->TxBurst(0, slots.data(), 8), 8);
  auto got = Receive(*b_, 8);
  ASSERT_EQ(got.size(), 8u);
  for (const Received& r : got) {
    const uint8_t i = r.data[0];
    EXPECT_EQ(r.addr.ecn, i % 2 == 0 ? wire::Ecn::kCe : wire::Ecn::kEct0);
    EXPECT_EQ(r.addr.dscp, i);
  }
}

TEST_P(Udp, WrongSourcePortIsRefused) {
  std::vector<TxSlot> slots(3);
  ASSERT_EQ(a_->TxAlloc(0, slots.data(), 3), 3);
  const auto& pool = a_->info().source_ports;
  uint16_t foreign = 20000;
  while (std::find(pool.begin(), pool.end(), foreign) != pool.end()) foreign++;
  for (TxSlot& s : slots) {
    s.len = 16;
    s.addr.dst = b_->info().ip;
    s.addr.dst_port = b_->info().udp_port;
    s.addr.src_port = foreign;
  }
  slots[1].addr.src_port = a_->info().udp_port;  // the receive port is not a source port either
  slots[2].addr.dst =
      GetParam() == std::string("::1") ? wire::IpAddr::V4(127, 0, 0, 1) : wire::IpAddr::V6({});
  slots[2].addr.src_port = pool[0];  // the wrong address family
  EXPECT_EQ(a_->TxBurst(0, slots.data(), 3), 0);
  EXPECT_EQ(a_->stats().tx_errors, 3u);
  EXPECT_EQ(a_->stats().tx_packets, 0u);
  EXPECT_TRUE(Receive(*b_, 1, std::chrono::milliseconds(200)).empty());
  // The buffers came back: a good packet still goes.
  ASSERT_EQ(Send(*a_, *b_, 1, 0, wire::Ecn::kEct0, 0), 1);
  EXPECT_EQ(Receive(*b_, 1).size(), 1u);
}

TEST_P(Udp, PoolRunsDryAndRefills) {
  std::vector<TxSlot> slots(udp::kTxPoolBuffers + 1);
  EXPECT_EQ(a_->TxAlloc(0, slots.data(), udp::kTxPoolBuffers + 1), udp::kTxPoolBuffers);
  EXPECT_EQ(a_->stats().tx_no_buffer, 1u);
  std::set<uint8_t*> bufs;
  for (uint32_t i = 0; i < udp::kTxPoolBuffers; i++) bufs.insert(slots[i].buf);
  EXPECT_EQ(bufs.size(), udp::kTxPoolBuffers);
  EXPECT_EQ(a_->TxAlloc(0, slots.data() + udp::kTxPoolBuffers, 1), 0);
  // All returned unused (len 0): nothing sent, nothing counted as an error.
  for (uint32_t base = 0; base < udp::kTxPoolBuffers; base += 128) {
    EXPECT_EQ(a_->TxBurst(0, slots.data() + base, 128), 0);
  }
  EXPECT_EQ(a_->stats().tx_errors, 0u);
  EXPECT_EQ(a_->TxAlloc(0, slots.data(), 64), 64);
  EXPECT_EQ(a_->TxBurst(0, slots.data(), 64), 0);
  // A buffer that is not the pool's is refused and counted.
  TxSlot foreign;
  uint8_t mem[16];
  foreign.buf = mem;
  foreign.cap = 16;
  EXPECT_EQ(a_->TxBurst(0, &foreign, 1), 0);
  EXPECT_EQ(a_->stats().tx_errors, 1u);
}

TEST_P(Udp, LargestDatagram) {
  TxSlot s;
  ASSERT_EQ(a_->TxAlloc(0, &s, 1), 1);
  for (uint32_t i = 0; i < udp::kMaxDatagramBytes; i++) s.buf[i] = static_cast<uint8_t>(i * 7);
  s.len = udp::kMaxDatagramBytes;
  s.addr.dst = b_->info().ip;
  s.addr.dst_port = b_->info().udp_port;
  s.addr.src_port = a_->info().source_ports[3];
  ASSERT_EQ(a_->TxBurst(0, &s, 1), 1);
  auto got = Receive(*b_, 1);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].data.size(), udp::kMaxDatagramBytes);
  for (uint32_t i = 0; i < udp::kMaxDatagramBytes; i++) {
    ASSERT_EQ(got[0].data[i], static_cast<uint8_t>(i * 7)) << i;
  }
}

TEST_P(Udp, OversizedDatagramIsCountedAndSkipped) {
  // A plain socket sends B one datagram too large for the driver, then a small one.
  const bool v6 = b_->info().ip.v6;
  const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_storage to;
  std::memset(&to, 0, sizeof(to));
  socklen_t len;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&to);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    a->sin6_port = htons(b_->info().udp_port);
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&to);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a->sin_port = htons(b_->info().udp_port);
    len = sizeof(*a);
  }
  std::vector<uint8_t> big(udp::kMaxDatagramBytes + 1, 1);
  ASSERT_EQ(sendto(fd, big.data(), big.size(), 0, reinterpret_cast<sockaddr*>(&to), len),
            static_cast<ssize_t>(big.size()));
  ASSERT_EQ(sendto(fd, big.data(), 10, 0, reinterpret_cast<sockaddr*>(&to), len), 10);
  close(fd);
  auto got = Receive(*b_, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data.size(), 10u);
  EXPECT_EQ(got[0].addr.ecn, wire::Ecn::kNotEct);  // a plain socket sends TOS 0
  EXPECT_EQ(b_->stats().rx_errors, 1u);
  EXPECT_EQ(b_->stats().rx_packets, 1u);
}

TEST_P(Udp, ConsecutiveSourcePorts) {
  auto p = OpenWithFixedSourcePorts(GetParam(), 16);
  ASSERT_TRUE(p.ok()) << p.status();
  const auto& pool = (*p)->info().source_ports;
  ASSERT_EQ(pool.size(), 16u);
  for (size_t i = 1; i < pool.size(); i++) EXPECT_EQ(pool[i], pool[0] + i);
  ASSERT_EQ(Send(**p, *b_, 32, 0, wire::Ecn::kEct0, 26), 32);
  auto got = Receive(*b_, 32);
  ASSERT_EQ(got.size(), 32u);
  for (const Received& r : got) {
    EXPECT_GE(r.addr.src_port, pool.front());
    EXPECT_LE(r.addr.src_port, pool.back());
  }
}

TEST_P(Udp, TakenPortsFailWithUnavailable) {
  // a_'s source ports are bound without SO_REUSEADDR: binding one again fails.
  const uint16_t taken = a_->info().source_ports[0];
  auto p = OpenLoopback(GetParam(), "source_ports=1,first_source_port=" + std::to_string(taken));
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::IsUnavailable(p.status())) << p.status();
  EXPECT_NE(p.status().message().find("bind()"), std::string::npos) << p.status();
}

TEST_P(Udp, ATakenReceivePortFailsWithUnavailable) {
  // With SO_REUSEADDR a second socket could share it, even one the kernel
  // picked for port 0, and each would get part of the other's datagrams.
  const std::string spec =
      absl::StrCat("udp:ip=", GetParam(), ",port=", a_->info().udp_port, ",source_ports=1");
  auto p = port::OpenPort(spec);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(absl::IsUnavailable(p.status())) << p.status();
  EXPECT_NE(p.status().message().find("bind()"), std::string::npos) << p.status();
}

TEST_P(Udp, SocketOptions) {
  auto p = OpenLoopback(GetParam(), "busy_poll=50,rcvbuf=1048576,sndbuf=262144,source_ports=2");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(Send(**p, *b_, 2, 0, wire::Ecn::kEct0, 0), 2);
  EXPECT_EQ(Receive(*b_, 2).size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Loopback, Udp, ::testing::Values("127.0.0.1", "::1"),
                         [](const auto& info) {
                           return std::string(info.param) == "::1" ? "Ipv6" : "Ipv4";
                         });

}  // namespace
}  // namespace metaroce::testing
