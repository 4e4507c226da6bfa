/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Software hand-off with the shards' real threads but no DPDK (so ThreadSanitizer sees
// every access): a fake two-queue port whose queues each receive frames for both
// shards; each shard's app runs until its engine has seen every frame sent to its port
// that was not dropped. The fake's queues are never empty, so a shard running while the
// other is not (a loaded host) uses up its descriptors within one time slice: drops are
// expected and counted, never lost track of.

#include <atomic>
#include <chrono>
#include <cstdio>

#include "fake_mq_port.h"
#include "gtest/gtest.h"
#include "mr_runtime.h"
#include "mr_wire.h"
#include "mr_wire_sample.h"

namespace metaroce::testing {
namespace {

using runtime::Runtime;
using runtime::RuntimeConfig;
using runtime::Shard;

// Frames per queue; half of them belong to the other shard.
constexpr int kFramesPerQueue = 3000;

std::vector<uint8_t> Probe(uint16_t dst_port, uint32_t seq) {
  for (const wire::SamplePacket& s : wire::SampleConversation()) {
    if (s.name != "v4_probe") continue;
    wire::FrameInfo f = s.frame;
    f.dst_port = dst_port;
    f.src_port = static_cast<uint16_t>(50000 + seq % 64);
    std::vector<uint8_t> out(2048);
    absl::StatusOr<size_t> n = wire::EncodeFrame(f, s.Get(), out);
    out.resize(n.ok() ? *n : 0);
    return out;
  }
  return {};
}

class ThreadedHandOff : public ::testing::TestWithParam<bool> {};

TEST_P(ThreadedHandOff, EveryFrameReachesItsShardOrIsCounted) {
  RegisterFakeMqDriver();
  RuntimeConfig cfg;
  cfg.port = std::string("rt_fake:detach=") + (GetParam() ? "1" : "0");
  cfg.lcores = 2;
  cfg.yield_after_idle_polls = 64;
  auto rt = Runtime::Open(cfg);
  ASSERT_TRUE(rt.ok()) << rt.status();
  ASSERT_EQ((*rt)->steering(), Runtime::Steering::kSoftware);
  std::shared_ptr<FakeMqState> st = LastFakeMq();
  for (uint16_t q = 0; q < 2; q++) {
    for (int i = 0; i < kFramesPerQueue; i++) {
      st->to_receive[q].push_back(Probe(static_cast<uint16_t>(5000 + i % 2), i));
    }
  }
  // Shard i is done when its engine has every frame sent to its port, but those the
  // other shard dropped for want of a descriptor (it ran through its queue while this
  // shard was not running); once the other has received its whole queue, its drops are final.
  std::atomic<int> timed_out{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  absl::Status s = (*rt)->Run([&](Shard& sh) {
    const runtime::ShardStats& other = (*rt)->shard(1 - sh.index()).stats();
    if (other.rx_packets.Get() == static_cast<uint64_t>(kFramesPerQueue) &&
        sh.engine().stats().rx_packets + other.handoff_drops.Get() ==
            static_cast<uint64_t>(kFramesPerQueue)) {
      return false;
    }
    if (std::chrono::steady_clock::now() < deadline) return true;
    timed_out++;
    return false;
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(timed_out.load(), 0);
  uint64_t out = 0;
  for (uint16_t i = 0; i < 2; i++) {
    const runtime::ShardStats& ss = (*rt)->shard(i).stats();
    const runtime::ShardStats& other = (*rt)->shard(1 - i).stats();
    const transport::EngineStats& es = (*rt)->shard(i).engine().stats();
    out += ss.handoffs_out.Get();
    EXPECT_EQ(ss.rx_packets.Get(), static_cast<uint64_t>(kFramesPerQueue));
    EXPECT_EQ(ss.handoffs_out.Get() + ss.handoff_drops.Get(),
              static_cast<uint64_t>(kFramesPerQueue / 2));
    EXPECT_EQ(ss.handoffs_in.Get(), other.handoffs_out.Get());
    EXPECT_EQ(ss.handoff_copies.Get(), GetParam() ? 0u : ss.handoffs_out.Get());
    EXPECT_EQ(es.rx_packets, kFramesPerQueue / 2 + other.handoffs_out.Get());
    EXPECT_EQ(es.rx_unknown_conn, es.rx_packets);  // every one parsed
    std::printf("shard %u: handed out %llu, dropped %llu\n", i,
                static_cast<unsigned long long>(ss.handoffs_out.Get()),
                static_cast<unsigned long long>(ss.handoff_drops.Get()));
  }
  EXPECT_EQ(st->detached.load(), GetParam() ? out : 0u);
  rt->reset();
  EXPECT_EQ(st->released.load(), st->detached.load());
}

INSTANTIATE_TEST_SUITE_P(FakePort, ThreadedHandOff, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Detached" : "Copied"; });

}  // namespace
}  // namespace metaroce::testing
