/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Checksum offload on a device that has it: net_tap advertises IPv4 and UDP
// transmit checksum offload. Frames the driver sends with the checksums left
// to the device must reach the kernel side of the tap with both right; with
// csum=off the software IPv4 checksum stays and the UDP one is 0 (allowed
// for IPv4). Runs inside a network namespace of its own
// (tap_csum_test.sh), so the tap interfaces exist nowhere else.

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "mr_net_dpdk.h"
#include "mr_port.h"
#include "mr_wire_codec.h"

namespace metaroce {
namespace {

using transport::TxSlot;

uint32_t Sum16(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if ((n & 1) != 0) sum += static_cast<uint32_t>(p[n - 1] << 8);
  return sum;
}

uint16_t Fold(uint32_t sum) {
  while ((sum >> 16) != 0) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

class TapChecksum : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    status_ = new absl::Status(
        dpdk::InitEal({"--no-huge", "-m", "256", "--no-pci", "--no-shconf",
                       "--file-prefix=mr_tap_test", "--no-telemetry", "--lcores=0@(0-1)",
                       "--vdev=net_tap0,iface=mrtap0", "--vdev=net_tap1,iface=mrtap1"}));
  }
  void SetUp() override { ASSERT_TRUE(status_->ok()) << *status_; }

  // Sends one MetaRoCE PROBE from @p port and returns the frame as the kernel side of @p iface saw
  // it.
  std::vector<uint8_t> SendAndCapture(port::Port& port, const char* iface, uint16_t dst_port) {
    const int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    EXPECT_GE(fd, 0);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = static_cast<int>(if_nametoindex(iface));
    EXPECT_NE(sll.sll_ifindex, 0) << iface;
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof(sll)), 0);

    wire::FrameInfo f;
    f.eth_src = port.info().mac;
    f.eth_dst.bytes = {0x02, 0, 0, 0, 0, 0x02};
    f.src = port.info().ip;
    f.dst = wire::IpAddr::V4(10, 253, 0, 2);
    f.src_port = 50000;
    f.dst_port = dst_port;
    wire::Packet p;
    p.type = wire::PacketType::kProbe;
    p.dst_conn_id = 7;
    p.probe = {1, 2};
    TxSlot slot;
    EXPECT_EQ(port.TxAlloc(0, &slot, 1), 1);
    auto n = wire::EncodeFrame(f, p, {slot.buf, slot.cap});
    EXPECT_TRUE(n.ok()) << n.status();
    slot.len = static_cast<uint32_t>(*n);
    EXPECT_EQ(port.TxBurst(0, &slot, 1), 1);

    std::vector<uint8_t> got;
    for (int tries = 0; tries < 50 && got.empty(); tries++) {
      pollfd pfd{fd, POLLIN, 0};
      if (poll(&pfd, 1, 100) <= 0) continue;
      uint8_t buf[2048];
      const ssize_t k = recv(fd, buf, sizeof(buf), 0);
      // Ours: IPv4, UDP, to dst_port (the kernel sends its own IPv6 chatter too).
      if (k >= 42 && buf[12] == 0x08 && buf[13] == 0x00 && buf[23] == IPPROTO_UDP &&
          (buf[36] << 8 | buf[37]) == dst_port) {
        got.assign(buf, buf + k);
      }
    }
    close(fd);
    return got;
  }

  static absl::Status* status_;
};
absl::Status* TapChecksum::status_ = nullptr;

TEST_F(TapChecksum, TheDeviceWritesBothChecksums) {
  auto p = port::OpenPort("dpdk:port=net_tap0,ip=10.253.0.1");
  ASSERT_TRUE(p.ok()) << p.status();
  auto off = dpdk::TxOffloadsOf(**p);
  ASSERT_TRUE(off.has_value());
  ASSERT_TRUE(off->ipv4_cksum) << "net_tap offers IPv4 checksum offload";
  ASSERT_TRUE(off->udp_cksum) << "net_tap offers UDP checksum offload";
  const std::vector<uint8_t> f = SendAndCapture(**p, "mrtap0", 4792);
  ASSERT_GE(f.size(), 42u) << "the frame never reached the tap's kernel side";
  EXPECT_EQ(Fold(Sum16(&f[14], 20)), 0xffff) << "IPv4 header checksum";
  const uint16_t udp_len = static_cast<uint16_t>(f[38] << 8 | f[39]);
  ASSERT_LE(34u + udp_len, f.size());
  EXPECT_NE(f[40] | f[41], 0) << "the UDP checksum was left 0";
  // Pseudo-header (addresses, protocol, length) plus the datagram sums to all ones.
  uint32_t sum = Sum16(&f[26], 8) + IPPROTO_UDP + udp_len;
  EXPECT_EQ(Fold(Sum16(&f[34], udp_len, sum)), 0xffff) << "UDP checksum";
}

TEST_F(TapChecksum, CsumOffLeavesTheSoftwareChecksums) {
  auto p = port::OpenPort("dpdk:port=net_tap1,ip=10.253.1.1,csum=off");
  ASSERT_TRUE(p.ok()) << p.status();
  auto off = dpdk::TxOffloadsOf(**p);
  ASSERT_TRUE(off.has_value());
  EXPECT_FALSE(off->ipv4_cksum);
  EXPECT_FALSE(off->udp_cksum);
  const std::vector<uint8_t> f = SendAndCapture(**p, "mrtap1", 4793);
  ASSERT_GE(f.size(), 42u);
  EXPECT_EQ(Fold(Sum16(&f[14], 20)), 0xffff) << "IPv4 header checksum (written by lib/wire)";
  EXPECT_EQ(f[40] | f[41], 0) << "IPv4 UDP checksum is left 0 without offload";
}

}  // namespace
}  // namespace metaroce
