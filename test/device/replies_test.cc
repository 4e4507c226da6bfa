/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Device::Poll's Replies over the udp driver on 127.0.0.1: the ACK a received
// WRITE calls for leaves before that poll returns (kNow), or with the next
// poll's first transmit step (kNextPoll), never later.

#include <array>
#include <chrono>

#include "device_endpoint.h"
#include "gtest/gtest.h"
#include "mr_device.h"

namespace metaroce {
namespace {

using namespace transport;
using Host = testing::DeviceEndpoint;
using Replies = Device::Replies;

constexpr auto kWait = std::chrono::seconds(10);

class DeviceReplies : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; i++) {
      DeviceConfig c;
      c.port = "udp:ip=127.0.0.1,port=0";
      c.engine.num_paths = 1;  // one path: one ACK per WRITE
      c.engine.seed = 70 + i;
      c.telemetry = false;
      auto d = Device::Open(c);
      ASSERT_TRUE(d.ok()) << d.status();
      ASSERT_TRUE(hosts_[i].Init(std::move(*d), 4096).ok());
    }
    for (int i = 0; i < 2; i++) ASSERT_TRUE(hosts_[i].Connect(hosts_[1 - i]).ok());
    // The handshake and a first WRITE, so that what follows is one data
    // packet and its ACK.
    ASSERT_TRUE(WriteAndComplete(Replies::kNow, nullptr));
  }

  const EngineStats& Stats(int i) { return hosts_[i].dev->engine().stats(); }

  /**
   * Host 0 WRITEs 64 B to host 1, which polls with @p replies until the
   * packet is in. @p acks_by, if set, gets the ACKs host 1 had sent by the end
   * of the poll that received the packet [0] and of the poll after it [1],
   * counted from before the WRITE. True when host 0 saw its completion.
   */
  bool WriteAndComplete(Replies replies, std::array<uint64_t, 2>* acks_by) {
    Host& a = hosts_[0];
    Host& b = hosts_[1];
    const size_t done = a.done.size();
    const uint64_t rx = Stats(1).rx_packets;
    const uint64_t acks = Stats(1).tx_acks;
    if (!a.PostWrite(1, 0, 64, b, 0).ok()) return false;
    const auto end = std::chrono::steady_clock::now() + kWait;
    while (Stats(1).rx_packets == rx && std::chrono::steady_clock::now() < end) {
      a.Poll();
      b.dev->Poll(replies);
    }
    if (acks_by != nullptr) (*acks_by)[0] = Stats(1).tx_acks - acks;
    b.dev->Poll(replies);
    if (acks_by != nullptr) (*acks_by)[1] = Stats(1).tx_acks - acks;
    while (a.done.size() == done && std::chrono::steady_clock::now() < end) {
      a.Poll();
      b.dev->Poll(replies);
    }
    return a.done.size() == done + 1 && a.done.back().status == WcStatus::kSuccess;
  }

  Host hosts_[2];
};

TEST_F(DeviceReplies, NowSendsTheAckBeforeThePollThatReceivedReturns) {
  for (int trial = 0; trial < 5; trial++) {
    std::array<uint64_t, 2> acks{};
    ASSERT_TRUE(WriteAndComplete(Replies::kNow, &acks)) << "trial " << trial;
    EXPECT_GE(acks[0], 1u) << "trial " << trial;
  }
}

TEST_F(DeviceReplies, NextPollSendsTheAckWithTheNextPoll) {
  // A poll more than port::kLatePollNs after the one before receives first
  // and transmits after, whatever was asked: a trial the scheduler delayed
  // there sends its ACK at once. Every trial sends it by the next poll. (A
  // sender the scheduler stalled may also probe, and the probe be ACKed.)
  int deferred = 0;
  for (int trial = 0; trial < 5; trial++) {
    std::array<uint64_t, 2> acks{};
    ASSERT_TRUE(WriteAndComplete(Replies::kNextPoll, &acks)) << "trial " << trial;
    EXPECT_GE(acks[1], 1u) << "trial " << trial;
    deferred += acks[0] == 0 ? 1 : 0;
  }
  EXPECT_GE(deferred, 1) << "every ACK left in the poll that received its packet";
}

}  // namespace
}  // namespace metaroce
