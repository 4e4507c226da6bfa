/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The runtime's threads over the udp driver on loopback (no EAL): two runtimes of two
// shards each, a QP between every pair of shards carrying verified WRITE and SEND
// traffic (clean, with 1 % loss, on IPv6); and how Run() starts, stops and pins.

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mr_runtime.h"
#include "traffic.h"

namespace metaroce::testing {
namespace {

using runtime::Runtime;
using runtime::RuntimeConfig;
using runtime::Shard;

// Four busy threads (two runtimes of two shards) share two vCPUs with other builds:
// give the CPU away when there is nothing to do.
constexpr uint32_t kYieldAfterIdlePolls = 64;

RuntimeConfig UdpConfig(const std::string& ip, uint64_t seed, const std::string& faults = "") {
  RuntimeConfig cfg;
  cfg.port = "udp:ip=" + ip + ",port=0,source_ports=8,rcvbuf=4194304,sndbuf=1048576";
  cfg.faults = faults;
  cfg.lcores = 2;
  cfg.engine = TestEngineConfig(seed);
  cfg.yield_after_idle_polls = kYieldAfterIdlePolls;
  return cfg;
}

struct Case {
  const char* name;
  const char* ip;
  const char* faults;
};

class UdpRuntimes : public ::testing::TestWithParam<Case> {};

TEST_P(UdpRuntimes, EveryQpBetweenEveryPairOfShardsCompletes) {
  const std::string faults = GetParam().faults;
  auto a = Runtime::Open(UdpConfig(GetParam().ip, 100, faults));
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Runtime::Open(UdpConfig(GetParam().ip, 200, faults));
  ASSERT_TRUE(b.ok()) << b.status();
  std::set<uint16_t> ports;
  for (Runtime* rt : {a->get(), b->get()}) {
    EXPECT_EQ(rt->steering(), Runtime::Steering::kPortPerShard);
    ASSERT_EQ(rt->num_shards(), 2);
    for (uint16_t i = 0; i < 2; i++) {
      const Shard& s = rt->shard(i);
      EXPECT_NE(s.udp_port(), 0);
      EXPECT_EQ(rt->port_of(i).info().udp_port, s.udp_port());
      EXPECT_EQ(s.queue(), 0);
      ports.insert(s.udp_port());
    }
  }
  EXPECT_EQ(ports.size(), 4u);  // a port of its own per shard

  Traffic::Options opt;
  auto t = Traffic::Setup(**a, **b, opt);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ((*t)->num_qps(), 4u);
  absl::Status s = (*t)->Run();
  EXPECT_TRUE(s.ok()) << s;
  const std::vector<std::string> problems = (*t)->Problems();
  for (const std::string& p : problems) ADD_FAILURE() << p;
  if (!problems.empty()) std::printf("%s", (*t)->Report().c_str());

  for (Runtime* rt : {a->get(), b->get()}) {
    for (uint16_t i = 0; i < 2; i++) {
      const runtime::ShardStats& st = rt->shard(i).stats();
      EXPECT_GT(st.rx_packets.Get(), 0u);
      EXPECT_GT(st.tx_packets.Get(), 0u);
      EXPECT_GT(st.iterations.Get(), 0u);
      EXPECT_EQ(st.handoffs_out.Get(), 0u);  // the kernel steered
      EXPECT_EQ(st.handoffs_in.Get(), 0u);
      EXPECT_GT(rt->shard(i).engine().stats().rx_packets, 0u);
    }
    EXPECT_EQ(rt->port_stats().tx_errors, 0u);
  }
  std::printf("%zu QPs, %.1f MB in %.1f ms\n", (*t)->num_qps(), (*t)->bytes() / 1e6,
              (*t)->seconds() * 1e3);
}

INSTANTIATE_TEST_SUITE_P(Loopback, UdpRuntimes,
                         ::testing::Values(Case{"Ipv4", "127.0.0.1", ""},
                                           Case{"Ipv4Drop1Percent", "127.0.0.1", "drop=0.01"},
                                           Case{"Ipv6", "::1", ""}),
                         [](const auto& info) { return std::string(info.param.name); });

// Two planes: each shard of each runtime has a udp port on 127.0.0.x (plane
// 0) and on 127.0.1.x (plane 1), the same port numbers on both. Every QP's
// traffic is spread over both planes.
TEST(UdpPlanes, EveryShardSpraysOverTwoPlanes) {
  std::unique_ptr<Runtime> rts[2];
  for (int attempt = 0; attempt < 20 && !rts[1]; attempt++) {
    const int base = 21000 + (getpid() * 31 + attempt * 211) % 20000;
    for (int r = 0; r < 2; r++) {
      auto spec = [&](int plane) {
        return absl::StrCat("udp:ip=127.0.", plane, ".", r + 1, ",port=", base,
                            ",first_source_port=", base + 100,
                            ",source_ports=8,rcvbuf=4194304,sndbuf=1048576");
      };
      RuntimeConfig cfg = UdpConfig("127.0.0.1", 300 + 100 * r);
      cfg.port = spec(0);
      cfg.planes = {{spec(1), ""}};
      auto rt = Runtime::Open(cfg);
      if (!rt.ok()) {
        ASSERT_EQ(rt.status().code(), absl::StatusCode::kUnavailable) << rt.status();
        rts[0].reset();
        break;  // a port of that range is taken: another one
      }
      rts[r] = std::move(*rt);
    }
  }
  ASSERT_TRUE(rts[1]) << "no free port range";
  // Data packets runtime A's shard i sent on plane k so far.
  auto sent = [&](uint16_t i, size_t k) {
    uint64_t n = 0;
    for (const transport::ConnInfo& c : rts[0]->shard(i).engine().GetConnections()) {
      if (c.planes.size() > k) n += c.planes[k].tx_pkts;
    }
    return n;
  };
  auto plane1_proven = [&] {
    for (int r = 0; r < 2; r++) {
      for (uint16_t i = 0; i < 2; i++) {
        const std::vector<transport::ConnInfo> conns = rts[r]->shard(i).engine().GetConnections();
        if (conns.size() != 2) return false;  // one to each shard of the other runtime
        for (const transport::ConnInfo& c : conns) {
          if (c.planes.size() != 2 || c.planes[1].active_paths != c.planes[1].paths) return false;
        }
      }
    }
    return true;
  };
  // Each run's QPs stay, and with them the connections (one without QPs is
  // closed), so that a later run goes over the paths the earlier ones proved.
  std::vector<std::unique_ptr<Traffic>> runs;
  auto run_traffic = [&] {
    auto t = Traffic::Setup(*rts[0], *rts[1], Traffic::Options{});
    ASSERT_TRUE(t.ok()) << t.status();
    absl::Status s = (*t)->Run();
    EXPECT_TRUE(s.ok()) << s;
    for (const std::string& p : (*t)->Problems()) ADD_FAILURE() << p;
    runs.push_back(std::move(*t));
  };
  // A path on plane 1 carries data only once its probe was answered
  // (planes.cc), and on a loaded machine that can take most of a first
  // megabyte. So traffic runs until every path is proven, then once more to
  // measure the spread.
  for (int warmup = 0; warmup < 20 && !plane1_proven() && !HasFailure(); warmup++) run_traffic();
  ASSERT_TRUE(plane1_proven()) << "a path of plane 1 never answered its probe";
  uint64_t before[2][2];
  for (uint16_t i = 0; i < 2; i++) {
    for (size_t k = 0; k < 2; k++) before[i][k] = sent(i, k);
  }
  run_traffic();
  for (uint16_t i = 0; i < 2; i++) {
    const uint64_t on0 = sent(i, 0) - before[i][0], on1 = sent(i, 1) - before[i][1];
    EXPECT_GE(4 * on1, on0 + on1) << "shard " << i << " sent " << on0
                                  << " data packets on plane 0 and " << on1 << " on plane 1";
  }
  for (int r = 0; r < 2; r++) {
    for (uint16_t i = 0; i < 2; i++) {
      const Shard& sh = rts[r]->shard(i);
      ASSERT_EQ(sh.num_planes(), 2u);
      EXPECT_EQ(sh.plane_port(1).info().ip.ToString(), absl::StrCat("127.0.1.", r + 1));
      EXPECT_EQ(sh.plane_port(1).info().udp_port, sh.udp_port());
      EXPECT_GT(sh.plane_port(1).stats().rx_packets, 0u);
    }
  }
}

std::unique_ptr<Runtime> OpenOne(uint16_t lcores = 2) {
  RuntimeConfig cfg = UdpConfig("127.0.0.1", 7);
  cfg.lcores = lcores;
  auto rt = Runtime::Open(cfg);
  EXPECT_TRUE(rt.ok()) << rt.status();
  return rt.ok() ? std::move(*rt) : nullptr;
}

TEST(RuntimeRun, StopEndsItFromAnotherThread) {
  auto rt = OpenOne();
  ASSERT_NE(rt, nullptr);
  std::atomic<uint64_t> calls[2] = {};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rt->Stop();
  });
  absl::Status s = rt->Run([&](Shard& sh) {
    calls[sh.index()]++;
    return true;
  });
  stopper.join();
  EXPECT_TRUE(s.ok()) << s;
  for (uint16_t i = 0; i < 2; i++) {
    EXPECT_GT(calls[i].load(), 0u);
    EXPECT_GE(rt->shard(i).stats().iterations.Get(), calls[i].load());
    EXPECT_GT(rt->shard(i).stats().idle_polls.Get(), 0u);
  }
  // Stop() before Run(): that Run() returns at once; the one after runs again.
  rt->Stop();
  EXPECT_TRUE(rt->Run([](Shard&) { return true; }).ok());
  std::atomic<int> once{0};
  EXPECT_TRUE(rt->Run([&](Shard&) {
                  once++;
                  return false;
                }).ok());
  EXPECT_EQ(once.load(), 2);
}

TEST(RuntimeRun, AShardWhoseAppIsDoneKeepsPollingUntilAllAre) {
  auto rt = OpenOne();
  ASSERT_NE(rt, nullptr);
  std::atomic<int> calls0{0};
  std::atomic<uint64_t> iterations0_when_1_done{0};
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  absl::Status s = rt->Run([&](Shard& sh) {
    if (sh.index() == 0) {
      calls0++;
      return false;
    }
    if (std::chrono::steady_clock::now() < until) return true;
    iterations0_when_1_done = rt->shard(0).stats().iterations.Get();
    return false;
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(calls0.load(), 1);  // once false, never called again
  EXPECT_GT(iterations0_when_1_done.load(), 1u);
}

TEST(RuntimeRun, RunWhileRunningIsRefused) {
  auto rt = OpenOne(1);
  ASSERT_NE(rt, nullptr);
  absl::Status inner;
  absl::Status s = rt->Run([&](Shard&) {
    inner = rt->Run(nullptr);
    return false;
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(inner.code(), absl::StatusCode::kFailedPrecondition) << inner;
  EXPECT_EQ(rt->steering(), Runtime::Steering::kSinglePort);
}

TEST(RuntimeRun, PinsEachShardToItsCpu) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::vector<int> cpus;
  for (int c = CPU_SETSIZE - 1; c >= 0 && cpus.size() < 2; c--) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);  // highest first: not the default order
  }
  if (cpus.size() < 2) cpus.push_back(cpus[0]);  // one CPU: both shards on it
  RuntimeConfig cfg = UdpConfig("127.0.0.1", 9);
  cfg.cpus = cpus;
  auto rt = Runtime::Open(cfg);
  ASSERT_TRUE(rt.ok()) << rt.status();
  std::vector<int> got(2, -1);
  std::vector<int> count(2, 0);
  absl::Status s = (*rt)->Run([&](Shard& sh) {
    cpu_set_t set;
    pthread_getaffinity_np(pthread_self(), sizeof(set), &set);
    count[sh.index()] = CPU_COUNT(&set);
    for (int c = 0; c < CPU_SETSIZE; c++) {
      if (CPU_ISSET(c, &set)) got[sh.index()] = c;
    }
    return false;
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(got, cpus);
  EXPECT_EQ(count, std::vector<int>({1, 1}));

  // A CPU this process may not use: Run() says so and starts nothing.
  int outside = -1;
  for (int c = CPU_SETSIZE - 1; c >= 0 && outside < 0; c--) {
    if (!CPU_ISSET(c, &allowed)) outside = c;
  }
  ASSERT_GE(outside, 0);
  cfg.cpus = {cpus[0], outside};
  rt = Runtime::Open(cfg);
  ASSERT_TRUE(rt.ok()) << rt.status();
  s = (*rt)->Run([](Shard&) { return true; });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("on CPU " + std::to_string(outside)), std::string::npos) << s;
}

// Two QPs of one shard connected to each other (two applications of one
// metaroced), over one registered buffer.
class RuntimeLoopback : public ::testing::Test {
 protected:
  void Open(uint64_t seed, size_t buf_bytes) {
    runtime::RuntimeConfig cfg = UdpConfig("127.0.0.1", seed);
    cfg.lcores = 1;
    auto rt = runtime::Runtime::Open(cfg);
    ASSERT_TRUE(rt.ok()) << rt.status();
    rt_ = *std::move(rt);
    buf_.assign(buf_bytes, 0);
    transport::Engine& e = engine();
    const uint32_t pd = *e.AllocPd();
    cq_ = *e.CreateCq(64);
    mr_ = *e.RegMr(pd, Addr(0), buf_.size(), transport::access::kAll);
    transport::QpAttr qa;
    qa.pd = pd;
    qa.send_cq = qa.recv_cq = cq_;
    a_ = *e.CreateQp(qa);
    const uint32_t b = *e.CreateQp(qa);
    ASSERT_TRUE(e.ConnectQp(a_, shard().address(), b).ok());
    ASSERT_TRUE(e.ConnectQp(b, shard().address(), a_).ok());
  }
  runtime::Shard& shard() { return rt_->shard(0); }
  transport::Engine& engine() { return shard().engine(); }
  uint64_t Addr(size_t off) const { return reinterpret_cast<uint64_t>(buf_.data()) + off; }
  // A signaled WRITE of @p len bytes from buf_[0] to buf_[to] on QP a.
  void Write(uint32_t len, size_t to) {
    transport::SendWr w;
    w.opcode = transport::Opcode::kWrite;
    w.sg.push_back({Addr(0), len, mr_.lkey});
    w.remote_addr = Addr(to);
    w.rkey = mr_.rkey;
    ASSERT_TRUE(engine().PostSend(shard().Now(), a_, w).ok());
  }

  std::unique_ptr<runtime::Runtime> rt_;
  std::vector<uint8_t> buf_;
  uint32_t cq_ = 0, a_ = 0;
  transport::MrInfo mr_;
};

// Their packets go straight back into the engine, never through the kernel
// (whose loopback runs in a deferred softirq, milliseconds late on a busy
// host).
TEST_F(RuntimeLoopback, PacketsToTheShardItselfNeverLeaveIt) {
  ASSERT_NO_FATAL_FAILURE(Open(11, 1 << 20));
  for (size_t i = 0; i < buf_.size() / 2; i++) buf_[i] = static_cast<uint8_t>(i * 13);
  const uint64_t tx_before = rt_->port_stats().tx_packets;
  ASSERT_NO_FATAL_FAILURE(Write(static_cast<uint32_t>(buf_.size() / 2), buf_.size() / 2));
  std::array<transport::Completion, 4> c;
  size_t n = 0;
  for (int i = 0; i < 1'000'000 && n == 0; i++) {
    shard().Poll();
    n = engine().PollCq(cq_, c);
  }
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(c[0].status, transport::WcStatus::kSuccess) << transport::WcStatusName(c[0].status);
  EXPECT_EQ(0, std::memcmp(buf_.data(), buf_.data() + buf_.size() / 2, buf_.size() / 2));
  // At least the data packets (payloads of at most 9000 bytes), all given back unsent.
  EXPECT_GT(shard().stats().looped_back.Get(), buf_.size() / 2 / 9000);
  EXPECT_EQ(rt_->port_stats().tx_packets, tx_before);
}

// The ACK of a packet given back to the shard leaves and comes back in the
// same poll: left for the next, it waited while the engine's timers ran
// first and took it for lost (one metaroced, two perftest programs: 9 % of
// the data sent again).
TEST_F(RuntimeLoopback, APacketGivenBackIsAcknowledgedInTheSamePoll) {
  ASSERT_NO_FATAL_FAILURE(Open(12, 8192));
  // The connection to itself first: its handshake, and whatever else it says.
  for (int i = 0; i < 100; i++) shard().Poll();
  std::array<transport::Completion, 4> c;
  ASSERT_EQ(engine().PollCq(cq_, c), 0u);
  ASSERT_NO_FATAL_FAILURE(Write(64, 4096));
  const uint64_t looped = shard().stats().looped_back.Get();
  shard().Poll();
  EXPECT_GE(shard().stats().looped_back.Get(), looped + 2);  // the WRITE and its ACK
  ASSERT_EQ(engine().PollCq(cq_, c), 1u);
  EXPECT_EQ(c[0].status, transport::WcStatus::kSuccess) << transport::WcStatusName(c[0].status);
  EXPECT_FALSE(engine().HasPendingTx());
}

}  // namespace
}  // namespace metaroce::testing
