/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A runtime on a fake multi-queue port, polled shard by shard from the test's one
// thread: the steering mode it picks, which shard's engine each frame reaches, hand-off
// with and without detaching (copies), descriptors running out and coming back, and
// the buffers a closed runtime gives back.

#include <time.h>

#include <array>
#include <cstring>

#include <chrono>
#include <thread>
#include "fake_mq_port.h"

#include "gtest/gtest.h"
#include "mr_port_tx.h"
#include "mr_runtime.h"
#include "mr_telemetry.h"
#include "mr_wire.h"
#include "mr_wire_sample.h"

namespace metaroce::testing {
namespace {

using runtime::Runtime;
using runtime::RuntimeConfig;

// A probe to an unknown connection sent to @p dst_port: the engine that gets it counts
// one rx packet and one rx_unknown_conn.
std::vector<uint8_t> Probe(uint16_t dst_port) {
  for (const wire::SamplePacket& s : wire::SampleConversation()) {
    if (s.name != "v4_probe") continue;
    wire::FrameInfo f = s.frame;
    f.dst_port = dst_port;
    std::vector<uint8_t> out(2048);
    absl::StatusOr<size_t> n = wire::EncodeFrame(f, s.Get(), out);
    EXPECT_TRUE(n.ok()) << n.status();
    out.resize(n.ok() ? *n : 0);
    return out;
  }
  return {};
}

class FakeRuntime : public ::testing::Test {
 protected:
  void SetUp() override { RegisterFakeMqDriver(); }

  std::unique_ptr<Runtime> Open(const std::string& args, uint16_t lcores = 2) {
    RuntimeConfig cfg;
    cfg.port = "rt_fake:" + args;
    cfg.lcores = lcores;
    auto rt = Runtime::Open(cfg);
    EXPECT_TRUE(rt.ok()) << rt.status();
    if (!rt.ok()) return nullptr;
    st_ = LastFakeMq();
    return std::move(*rt);
  }

  void Inject(uint16_t queue, uint16_t dst_port, int count = 1) {
    for (int i = 0; i < count; i++) st_->to_receive[queue].push_back(Probe(dst_port));
  }

  static uint64_t Rx(Runtime& rt, uint16_t shard) {
    return rt.shard(shard).engine().stats().rx_packets;
  }

  std::shared_ptr<FakeMqState> st_;
};

TEST_F(FakeRuntime, NoFlowRulesMeansSoftwareHandOff) {
  auto rt = Open("detach=1");
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->steering(), Runtime::Steering::kSoftware);
  EXPECT_STREQ(runtime::SteeringName(rt->steering()), "software");
  ASSERT_EQ(rt->num_shards(), 2);
  for (uint16_t i = 0; i < 2; i++) {
    EXPECT_EQ(rt->shard(i).index(), i);
    EXPECT_EQ(rt->shard(i).queue(), i);
    EXPECT_EQ(rt->shard(i).udp_port(), 5000 + i);
    EXPECT_EQ(rt->shard(i).address().udp_port, 5000 + i);
    EXPECT_EQ(rt->shard(i).address().ip, wire::IpAddr::V4(10, 0, 0, 1));
  }
  EXPECT_TRUE(st_->rules.empty());

  Inject(0, 5000);  // shard 0's, on its own queue
  Inject(0, 5001);  // shard 1's, on shard 0's queue
  Inject(0, 6000);  // nobody's: stays where it arrived
  Inject(1, 5001);
  Inject(1, 5000);
  rt->shard(0).Poll();
  EXPECT_EQ(rt->shard(0).stats().rx_packets.Get(), 3u);
  EXPECT_EQ(rt->shard(0).stats().handoffs_out.Get(), 1u);
  EXPECT_EQ(Rx(*rt, 0), 1u);  // 5000; 6000 does not parse for it
  EXPECT_EQ(rt->shard(0).engine().stats().rx_unknown_conn, 1u);
  EXPECT_EQ(st_->detached, 1u);
  EXPECT_EQ(st_->released, 0u);

  rt->shard(1).Poll();
  EXPECT_EQ(rt->shard(1).stats().rx_packets.Get(), 2u);
  EXPECT_EQ(rt->shard(1).stats().handoffs_in.Get(), 1u);
  EXPECT_EQ(rt->shard(1).stats().handoffs_out.Get(), 1u);
  EXPECT_EQ(Rx(*rt, 1), 2u);  // its own and the one shard 0 passed on
  EXPECT_EQ(rt->shard(1).engine().stats().rx_unknown_conn, 2u);
  EXPECT_EQ(st_->released, 1u);

  rt->shard(0).Poll();
  EXPECT_EQ(rt->shard(0).stats().handoffs_in.Get(), 1u);
  EXPECT_EQ(Rx(*rt, 0), 2u);
  EXPECT_EQ(st_->released, 2u);
  for (uint16_t i = 0; i < 2; i++) {
    EXPECT_EQ(rt->shard(i).stats().handoff_copies.Get(), 0u);
    EXPECT_EQ(rt->shard(i).stats().handoff_drops.Get(), 0u);
    EXPECT_EQ(rt->shard(i).stats().iterations.Get(), i == 0 ? 2u : 1u);
  }
}

TEST_F(FakeRuntime, PortsThatCannotDetachAreCopied) {
  auto rt = Open("detach=0");
  ASSERT_NE(rt, nullptr);
  Inject(0, 5001, 5);
  rt->shard(0).Poll();
  st_->to_receive[0].clear();
  rt->shard(0).Poll();  // the port reuses its buffers: the copies must not change
  rt->shard(1).Poll();
  EXPECT_EQ(rt->shard(0).stats().handoff_copies.Get(), 5u);
  EXPECT_EQ(rt->shard(1).stats().handoffs_in.Get(), 5u);
  EXPECT_EQ(Rx(*rt, 1), 5u);
  EXPECT_EQ(rt->shard(1).engine().stats().rx_unknown_conn, 5u);
  uint64_t parse_drops = 0;
  for (uint64_t d : rt->shard(1).engine().stats().rx_parse_drops) parse_drops += d;
  EXPECT_EQ(parse_drops, 0u);
  EXPECT_EQ(st_->detached, 0u);
}

TEST_F(FakeRuntime, FlowRulesForEveryShardPort) {
  auto rt = Open("queues=3,udp_port=7000,flow=1", 3);
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->steering(), Runtime::Steering::kFlowRules);
  const std::vector<std::pair<uint16_t, uint16_t>> want = {{7000, 0}, {7001, 1}, {7002, 2}};
  EXPECT_EQ(st_->rules, want);
  // A frame that still arrives on the wrong queue reaches its shard.
  Inject(2, 7000);
  rt->shard(2).Poll();
  rt->shard(0).Poll();
  EXPECT_EQ(rt->shard(2).stats().handoffs_out.Get(), 1u);
  EXPECT_EQ(Rx(*rt, 0), 1u);
}

TEST_F(FakeRuntime, AFailedRuleFailsOpen) {
  RuntimeConfig cfg;
  cfg.port = "rt_fake:queues=2,flow=error";
  cfg.lcores = 2;
  auto rt = Runtime::Open(cfg);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("the rule failed"), std::string::npos) << rt.status();
}

// A shard may sleep on its queue's descriptor only when no other shard
// passes it packets: with one shard, not with hand-off (rules or not).
TEST_F(FakeRuntime, OnlyAShardNobodyHandsPacketsToHasADescriptorToSleepOn) {
  auto one = Open("", 1);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->shard(0).RxEventFd(), st_->rx_event_fd);
  auto soft = Open("detach=1");
  ASSERT_NE(soft, nullptr);
  ASSERT_EQ(soft->steering(), Runtime::Steering::kSoftware);
  auto rules = Open("queues=2,udp_port=7000,flow=1");
  ASSERT_NE(rules, nullptr);
  ASSERT_EQ(rules->steering(), Runtime::Steering::kFlowRules);
  for (uint16_t i = 0; i < 2; i++) {
    EXPECT_EQ(soft->shard(i).RxEventFd(), -1);
    EXPECT_EQ(rules->shard(i).RxEventFd(), -1);
  }
}

TEST_F(FakeRuntime, OneShardIsASinglePort) {
  auto rt = Open("", 1);
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->steering(), Runtime::Steering::kSinglePort);
  Inject(0, 5001);  // not its port: its engine drops it
  Inject(0, 5000);
  rt->shard(0).Poll();
  EXPECT_EQ(Rx(*rt, 0), 1u);
  EXPECT_EQ(rt->shard(0).stats().handoffs_out.Get(), 0u);
}

TEST_F(FakeRuntime, AnIterationThatComesBackLateReadsTheQueueBeforeTheTimers) {
  auto rt = Open("", 1);
  ASSERT_NE(rt, nullptr);
  constexpr uint64_t kBurst = runtime::kBurst;
  static_assert(port::kMaxRxBurstsWhenLate >= 4);
  Inject(0, 5000, static_cast<int>(4 * kBurst));
  rt->shard(0).Poll();  // on time (the first): one burst
  EXPECT_EQ(Rx(*rt, 0), kBurst);
  // Away for longer than kLatePollNs (descheduled, say): what queued is read
  // in one iteration, before its engine's timers run.
  const timespec away{0, static_cast<long>(2 * port::kLatePollNs)};
  nanosleep(&away, nullptr);
  rt->shard(0).Poll();
  EXPECT_EQ(Rx(*rt, 0), 4 * kBurst);
  EXPECT_TRUE(st_->to_receive[0].empty());
}

TEST_F(FakeRuntime, DescriptorsRunOutAndComeBack) {
  auto rt = Open("detach=1");
  ASSERT_NE(rt, nullptr);
  const int kMore = 100;
  Inject(0, 5001, static_cast<int>(runtime::kHandoffDescriptors) + kMore);
  while (!st_->to_receive[0].empty()) rt->shard(0).Poll();
  rt->shard(0).Poll();
  const runtime::ShardStats& s0 = rt->shard(0).stats();
  EXPECT_EQ(s0.handoffs_out.Get(), runtime::kHandoffDescriptors);
  EXPECT_EQ(s0.handoff_drops.Get(), static_cast<uint64_t>(kMore));
  EXPECT_EQ(st_->detached, runtime::kHandoffDescriptors);

  while (rt->shard(1).Poll() != 0) {
  }
  EXPECT_EQ(rt->shard(1).stats().handoffs_in.Get(), runtime::kHandoffDescriptors);
  EXPECT_EQ(st_->released, runtime::kHandoffDescriptors);
  // Every descriptor is back: the next packets pass again.
  Inject(0, 5001, 10);
  rt->shard(0).Poll();
  rt->shard(1).Poll();
  EXPECT_EQ(s0.handoffs_out.Get(), runtime::kHandoffDescriptors + 10);
  EXPECT_EQ(s0.handoff_drops.Get(), static_cast<uint64_t>(kMore));
  EXPECT_EQ(Rx(*rt, 1), runtime::kHandoffDescriptors + 10);
}

TEST_F(FakeRuntime, ClosingGivesBackWhatIsInTheRings) {
  auto rt = Open("detach=1");
  ASSERT_NE(rt, nullptr);
  Inject(0, 5001, 7);
  Inject(1, 5000, 3);
  rt->shard(0).Poll();
  rt->shard(1).Poll();  // takes shard 0's seven and passes three back
  Inject(0, 5001, 4);
  rt->shard(0).Poll();  // takes the three, passes four that nobody takes
  EXPECT_EQ(st_->detached, 14u);
  EXPECT_EQ(st_->released, 10u);
  std::shared_ptr<FakeMqState> st = st_;
  rt.reset();
  EXPECT_FALSE(st->open);
  EXPECT_EQ(st->released, 14u);
}

// Two applications of one daemon on different shards of one port: their
// packets go from shard to shard through the hand-off rings; a port never
// returns packets to its own address (a NIC, af_packet).
TEST_F(FakeRuntime, ShardsOfOnePortReachEachOtherWithoutThePort) {
  auto rt = Open("detach=1");
  ASSERT_NE(rt, nullptr);
  ASSERT_EQ(rt->steering(), Runtime::Steering::kSoftware);
  std::vector<uint8_t> buf(64 * 1024);
  for (size_t i = 0; i < buf.size() / 2; i++) buf[i] = static_cast<uint8_t>(i * 7 + 1);
  struct End {
    uint32_t cq = 0, qpn = 0;
    transport::MrInfo mr;
  } end[2];
  for (uint16_t i = 0; i < 2; i++) {
    transport::Engine& e = rt->shard(i).engine();
    const uint32_t pd = *e.AllocPd();
    end[i].cq = *e.CreateCq(16);
    end[i].mr =
        *e.RegMr(pd, reinterpret_cast<uint64_t>(buf.data()), buf.size(), transport::access::kAll);
    transport::QpAttr qa;
    qa.pd = pd;
    qa.send_cq = qa.recv_cq = end[i].cq;
    end[i].qpn = *e.CreateQp(qa);
  }
  for (uint16_t i = 0; i < 2; i++) {
    ASSERT_TRUE(rt->shard(i)
                    .engine()
                    .ConnectQp(end[i].qpn, rt->shard(1 - i).address(), end[1 - i].qpn)
                    .ok());
  }
  transport::SendWr w;
  w.opcode = transport::Opcode::kWrite;
  w.sg.push_back({reinterpret_cast<uint64_t>(buf.data()), 20'000, end[0].mr.lkey});
  w.remote_addr = reinterpret_cast<uint64_t>(buf.data()) + buf.size() / 2;
  w.rkey = end[1].mr.rkey;
  ASSERT_TRUE(rt->shard(0).engine().PostSend(rt->shard(0).Now(), end[0].qpn, w).ok());
  std::array<transport::Completion, 4> c;
  size_t n = 0;
  for (int i = 0; i < 100'000 && n == 0; i++) {
    rt->shard(0).Poll();
    rt->shard(1).Poll();
    n = rt->shard(0).engine().PollCq(end[0].cq, c);
  }
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(c[0].status, transport::WcStatus::kSuccess) << transport::WcStatusName(c[0].status);
  EXPECT_EQ(0, std::memcmp(buf.data(), buf.data() + buf.size() / 2, 20'000));
  EXPECT_TRUE(st_->sent[0].empty());
  EXPECT_TRUE(st_->sent[1].empty());
  EXPECT_GT(rt->shard(0).stats().handoffs_out.Get(), 0u);
  EXPECT_GT(rt->shard(1).stats().handoffs_out.Get(), 0u);
}

TEST_F(FakeRuntime, EachShardSendsOnItsOwnQueue) {
  auto rt = Open("queues=2");
  ASSERT_NE(rt, nullptr);
  transport::Engine& e = rt->shard(1).engine();
  const uint32_t pd = *e.AllocPd();
  const uint32_t cq = *e.CreateCq(16);
  transport::QpAttr qa;
  qa.pd = pd;
  qa.send_cq = qa.recv_cq = cq;
  const uint32_t qpn = *e.CreateQp(qa);
  transport::PeerAddr peer{wire::IpAddr::V4(10, 0, 0, 2), {}, 6000};
  ASSERT_TRUE(e.ConnectQp(qpn, peer, 1).ok());
  rt->shard(0).Poll();
  rt->shard(1).Poll();
  EXPECT_TRUE(st_->sent[0].empty());
  ASSERT_FALSE(st_->sent[1].empty());  // the CONN_REQ
  wire::FrameInfo f;
  wire::Packet p;
  wire::ParseOptions opt;
  opt.udp_port = 6000;
  ASSERT_EQ(wire::ParseFrame(st_->sent[1][0], opt, &f, &p), wire::ParseError::kOk);
  EXPECT_EQ(p.type, wire::PacketType::kConnReq);
  EXPECT_EQ(p.conn.udp_port, 5001);  // peers answer shard 1's port
  EXPECT_EQ(rt->shard(1).stats().tx_packets.Get(), st_->sent[1].size());
}

TEST_F(FakeRuntime, OpenNamesWhatIsWrong) {
  auto fails = [](RuntimeConfig cfg, const std::string& what) {
    auto rt = Runtime::Open(cfg);
    ASSERT_FALSE(rt.ok()) << what;
    EXPECT_NE(rt.status().message().find(what), std::string::npos) << rt.status();
  };
  RuntimeConfig cfg;
  cfg.port = "rt_fake:queues=2";
  cfg.lcores = 0;
  fails(cfg, "lcores='0'");
  cfg.lcores = 17;
  fails(cfg, "lcores='17'");
  cfg.lcores = 2;
  cfg.cpus = {0};
  fails(cfg, "cpus lists 1 CPUs for lcores=2");
  cfg.cpus = {0, -1};
  fails(cfg, "cpu -1");
  cfg.cpus = {};
  cfg.port = "rt_fake:queues=3";
  fails(cfg, "queues='3'");
  cfg.port = "rt_fake:udp_port=65535";
  fails(cfg, "pass 65535");
  cfg.port = "rt_fake:queues=2";
  cfg.faults = "drop=2";
  fails(cfg, "drop");
  cfg.faults = "";
  cfg.port = "no_such_driver:x=1";
  fails(cfg, "no port driver 'no_such_driver'");
}

TEST_F(FakeRuntime, WithoutEalTheClockIsClockMonotonic) {
  auto rt = Open("");
  ASSERT_NE(rt, nullptr);
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const transport::TimeNs before = static_cast<transport::TimeNs>(ts.tv_sec) * 1'000'000'000 +
                                   static_cast<transport::TimeNs>(ts.tv_nsec);
  const transport::TimeNs t1 = rt->shard(0).Now();
  const transport::TimeNs t2 = rt->shard(1).Now();
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const transport::TimeNs after = static_cast<transport::TimeNs>(ts.tv_sec) * 1'000'000'000 +
                                  static_cast<transport::TimeNs>(ts.tv_nsec);
  EXPECT_LE(before, t1);
  EXPECT_LE(t1, t2);
  EXPECT_LE(t2, after);
}

TEST_F(FakeRuntime, EveryShardPublishesItsEngineToTelemetry) {
  auto rt = Open("", 2);
  ASSERT_NE(rt, nullptr);
  rt->shard(0).Poll();
  rt->shard(1).Poll();
  const std::string engines = telemetry::Query("/metaroce/engines");
  EXPECT_NE(engines.find("/shard0"), std::string::npos) << engines;
  EXPECT_NE(engines.find("/shard1"), std::string::npos) << engines;
  rt.reset();
  const std::string after = telemetry::Query("/metaroce/engines");
  EXPECT_EQ(after.find("/shard0"), std::string::npos) << after;
}

// Run()'s threads publish too, not only Poll(): what metaroced's shards do.
TEST_F(FakeRuntime, RunningShardsPublishSnapshots) {
  RuntimeConfig cfg;
  cfg.port = "rt_fake:";
  cfg.lcores = 1;
  cfg.name = "published-by-run";
  auto rt = Runtime::Open(cfg);
  ASSERT_TRUE(rt.ok()) << rt.status();
  int turns = 0;
  ASSERT_TRUE((*rt)
                  ->Run([&](runtime::Shard&) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    return ++turns < 30;  // past the 10 ms between snapshots
                  })
                  .ok());
  const std::string engines = telemetry::Query("/metaroce/engines");
  const size_t at = engines.find("published-by-run/shard0");
  ASSERT_NE(at, std::string::npos) << engines;
  // {"/metaroce/engines": {..., "N": "published-by-run/shard0"}}: N is the index.
  const size_t open = engines.rfind('"', engines.rfind(':', at) - 2);
  const std::string index = engines.substr(open + 1, engines.rfind(':', at) - 2 - open);
  const std::string stats = telemetry::Query("/metaroce/stats," + index);
  EXPECT_NE(stats.find("\"snapshot_seq\":"), std::string::npos) << stats;
  EXPECT_EQ(stats.find("\"snapshot_seq\":0,"), std::string::npos) << stats;  // none published
}

}  // namespace
}  // namespace metaroce::testing
