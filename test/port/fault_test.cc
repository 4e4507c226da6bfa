/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The fault stage over a fake inner port: what each fault does, how often,
// and that the engine catches corruption by its CRC.

#include <cmath>
#include <map>

#include "fake_port.h"
#include "gtest/gtest.h"
#include "mr_port_fault.h"
#include "mr_transport.h"

namespace metaroce::testing {
namespace {

using transport::Framing;

struct Out {
  std::vector<std::vector<uint8_t>> data;
  std::vector<wire::FrameInfo> addr;
};

// Polls @p p until its inner port ran dry and the stage let everything go.
Out Drain(port::Port& p) {
  Out out;
  port::RxPacket pkts[32];
  for (uint32_t idle = 0; idle < 2 * port::kReorderIdlePolls;) {
    const uint16_t n = p.RxBurst(0, pkts, 32);
    idle = n == 0 ? idle + 1 : 0;
    for (uint16_t i = 0; i < n; i++) {
      out.data.emplace_back(pkts[i].data.begin(), pkts[i].data.end());
      out.addr.push_back(pkts[i].addr);
    }
  }
  return out;
}

std::unique_ptr<port::Port> Faulty(const FakeConfig& cfg, const std::string& spec) {
  auto p = port::WithFaults(std::make_unique<FakePort>(cfg), spec);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

// PSNs of what came out (all must still parse).
std::vector<uint32_t> Psns(Framing framing, const Out& o) {
  std::vector<uint32_t> psns;
  for (const auto& d : o.data) {
    wire::Packet p;
    wire::FrameInfo f;
    wire::ParseError why;
    EXPECT_TRUE(Decode(framing, d, &p, &f, &why)) << wire::ParseErrorName(why);
    psns.push_back(p.data.psn);
  }
  return psns;
}

// |x - n p| within 6 standard deviations of a binomial(n, p).
void ExpectBinomial(uint64_t x, uint64_t n, double p, const char* what) {
  const double mean = n * p;
  const double sd = std::sqrt(n * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(x), mean, 6 * sd + 1) << what;
}

TEST(Faults, NoneIsTransparent) {
  FakeConfig cfg;
  auto p = Faulty(cfg, "");
  FakePort ref(cfg);
  Out o = Drain(*p);
  ASSERT_EQ(o.data.size(), cfg.total);
  std::vector<uint8_t> want;
  wire::FrameInfo addr;
  for (uint32_t i = 0; i < cfg.total; i++) {
    ref.Make(i, &want, &addr);
    ASSERT_EQ(o.data[i], want) << i;
    EXPECT_EQ(o.addr[i].src_port, addr.src_port);
  }
  auto st = port::FaultStatsOf(*p);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->rx_in, cfg.total);
  EXPECT_EQ(st->rx_out, cfg.total);
  EXPECT_EQ(p->info().driver, "fake");
  EXPECT_EQ(p->stats().rx_packets, cfg.total);
}

TEST(Faults, StatsOfAnotherPortIsEmpty) {
  FakePort plain(FakeConfig{});
  EXPECT_FALSE(port::FaultStatsOf(plain).has_value());
}

TEST(Faults, DropRateWithinBounds) {
  FakeConfig cfg;
  cfg.total = 20000;
  auto p = Faulty(cfg, "drop=0.05,seed=3");
  const std::vector<uint32_t> psns = Psns(cfg.framing, Drain(*p));
  const auto st = *port::FaultStatsOf(*p);
  ExpectBinomial(st.dropped, cfg.total, 0.05, "drops");
  EXPECT_EQ(psns.size(), cfg.total - st.dropped);
  EXPECT_TRUE(std::is_sorted(psns.begin(), psns.end()));
  EXPECT_EQ(st.rx_out, psns.size());
}

TEST(Faults, BurstsAreRunsOfTheirLength) {
  FakeConfig cfg;
  cfg.total = 20000;
  auto p = Faulty(cfg, "burst=0.01:8,seed=4");
  const std::vector<uint32_t> psns = Psns(cfg.framing, Drain(*p));
  const auto st = *port::FaultStatsOf(*p);
  EXPECT_GT(st.bursts, 100u);
  EXPECT_LT(st.bursts, 300u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_EQ(st.burst_dropped, cfg.total - psns.size());
  // Every gap is a whole number of bursts (back-to-back bursts merge); only
  // the last burst may be cut short by the end of the stream.
  uint32_t expect = 0;
  uint64_t gaps = 0;
  for (uint32_t psn : psns) {
    if (psn != expect) {
      EXPECT_EQ((psn - expect) % 8, 0u) << "gap before " << psn;
      gaps += (psn - expect) / 8;
    }
    expect = psn + 1;
  }
  const uint64_t tail = cfg.total - expect;
  EXPECT_LT(tail, 8u * 4);
  EXPECT_EQ(gaps + (tail + 7) / 8, st.bursts);
}

// Count of elements before each position that are larger (a Fenwick tree).
std::vector<uint32_t> Overtakers(const std::vector<uint32_t>& psns, uint32_t total) {
  std::vector<uint32_t> tree(total + 1, 0), out;
  for (size_t i = 0; i < psns.size(); i++) {
    uint32_t le = 0;
    for (uint32_t k = psns[i] + 1; k > 0; k -= k & -k) le += tree[k];
    out.push_back(static_cast<uint32_t>(i) - le);
    for (uint32_t k = psns[i] + 1; k <= total; k += k & -k) tree[k]++;
  }
  return out;
}

TEST(Faults, ReorderHoldsBehindKLaterPackets) {
  FakeConfig cfg;
  cfg.total = 20000;
  auto p = Faulty(cfg, "reorder=0.05:20,seed=5");
  std::vector<uint32_t> psns = Psns(cfg.framing, Drain(*p));
  const auto st = *port::FaultStatsOf(*p);
  ExpectBinomial(st.reordered, cfg.total, 0.05, "reordered");
  ASSERT_EQ(psns.size(), cfg.total);  // nothing lost, even the ones held at the end
  const std::vector<uint32_t> over = Overtakers(psns, cfg.total);
  uint64_t late = 0, short_late = 0;
  for (uint32_t o : over) {
    if (o >= 20) late++;
    if (o > 0 && o < 20) short_late++;
  }
  // Each held packet is overtaken by exactly 20; only the ones still held when
  // the stream ended (let go by the idle flush) by fewer.
  EXPECT_EQ(late, st.reordered - st.reorder_idle_flushes);
  EXPECT_LE(short_late, st.reorder_idle_flushes);
  std::sort(psns.begin(), psns.end());
  for (uint32_t i = 0; i < cfg.total; i++) ASSERT_EQ(psns[i], i);
}

// A caller may sleep on the inner port's descriptor only while the stage
// holds nothing back: held packets are let go by later polls, not by traffic.
TEST(Faults, RxEventFdOnlyWhileNothingIsHeld) {
  FakeConfig cfg;
  cfg.total = 200;
  cfg.rx_event_fd = 42;
  EXPECT_EQ(Faulty(cfg, "drop=0.5,seed=1")->RxEventFd(0), 42);
  auto p = Faulty(cfg, "reorder=1:500,seed=2");  // every packet is held behind later ones
  EXPECT_EQ(p->RxEventFd(0), 42);
  port::RxPacket pkts[32];
  EXPECT_EQ(p->RxBurst(0, pkts, 32), 0);
  EXPECT_EQ(p->RxEventFd(0), -1);
  EXPECT_EQ(Drain(*p).data.size(), cfg.total);
  EXPECT_EQ(p->RxEventFd(0), 42);
}

TEST(Faults, DuplicatesFollowTheirOriginal) {
  FakeConfig cfg;
  cfg.total = 20000;
  auto p = Faulty(cfg, "dup=0.05,seed=6");
  const std::vector<uint32_t> psns = Psns(cfg.framing, Drain(*p));
  const auto st = *port::FaultStatsOf(*p);
  ExpectBinomial(st.duplicated, cfg.total, 0.05, "duplicated");
  EXPECT_EQ(psns.size(), cfg.total + st.duplicated);
  uint64_t adjacent = 0;
  for (size_t i = 1; i < psns.size(); i++) adjacent += psns[i] == psns[i - 1];
  EXPECT_EQ(adjacent, st.duplicated);
}

class FaultsByFraming : public ::testing::TestWithParam<std::pair<Framing, bool>> {
 protected:
  FakeConfig Config() const {
    FakeConfig cfg;
    cfg.framing = GetParam().first;
    cfg.v6 = GetParam().second;
    return cfg;
  }
};

TEST_P(FaultsByFraming, EcnMarksOnlyEctPackets) {
  FakeConfig cfg = Config();
  cfg.odd_not_ect = true;
  auto p = Faulty(cfg, "ecn=0.2,seed=7");
  const Out o = Drain(*p);
  ASSERT_EQ(o.data.size(), cfg.total);
  const auto st = *port::FaultStatsOf(*p);
  ExpectBinomial(st.ecn_marked, cfg.total / 2, 0.2, "marked");
  uint64_t ce = 0;
  for (size_t i = 0; i < o.data.size(); i++) {
    wire::Packet pkt;
    wire::FrameInfo f = o.addr[i];
    wire::ParseError why;
    // Frames still parse: the IPv4 header checksum was fixed up.
    ASSERT_TRUE(Decode(cfg.framing, o.data[i], &pkt, &f, &why)) << wire::ParseErrorName(why);
    if (f.ecn == wire::Ecn::kCe) {
      ce++;
      EXPECT_EQ(pkt.data.psn % 2, 0u) << "a Not-ECT packet was marked";
    } else {
      EXPECT_EQ(f.ecn, pkt.data.psn % 2 ? wire::Ecn::kNotEct : wire::Ecn::kEct0);
    }
    EXPECT_EQ(f.dscp, config::kDscp);
  }
  EXPECT_EQ(ce, st.ecn_marked);
}

TEST_P(FaultsByFraming, EngineCatchesCorruptionByCrc) {
  FakeConfig cfg = Config();
  auto p = Faulty(cfg, "corrupt=0.05,seed=8");
  const Out o = Drain(*p);
  ASSERT_EQ(o.data.size(), cfg.total);
  const auto st = *port::FaultStatsOf(*p);
  ExpectBinomial(st.corrupted, cfg.total, 0.05, "corrupted");

  transport::ProcessMemory mem;
  transport::EngineConfig ecfg;
  ecfg.framing = cfg.framing;
  ecfg.local_ip = p->info().ip;
  auto e = transport::Engine::Create(ecfg, &mem);
  ASSERT_TRUE(e.ok()) << e.status();
  for (size_t i = 0; i < o.data.size(); i++) {
    if (cfg.framing == Framing::kUdp) {
      (*e)->OnDatagram(1, o.addr[i], o.data[i]);
    } else {
      (*e)->OnFrame(1, o.data[i]);
    }
  }
  const transport::EngineStats& es = (*e)->stats();
  uint64_t parse_drops = 0;
  for (uint64_t d : es.rx_parse_drops) parse_drops += d;
  const uint64_t bad_crc = es.rx_parse_drops[static_cast<size_t>(wire::ParseError::kBadCrc)];
  // Every flipped bit is caught; almost all by the CRC (the rest by a header
  // check that comes first: version, type, flags, length).
  EXPECT_EQ(parse_drops, st.corrupted);
  EXPECT_GE(bad_crc * 100, st.corrupted * 97);
  EXPECT_EQ(es.rx_parse_drops[static_cast<size_t>(wire::ParseError::kUdpBadChecksum)], 0u);
  // The rest reached the engine (and found no connection).
  EXPECT_EQ(es.rx_packets, cfg.total - st.corrupted);
}

TEST_P(FaultsByFraming, BlackholeDropsOneSourcePortBothWays) {
  FakeConfig cfg = Config();
  auto inner = std::make_unique<FakePort>(cfg);
  FakePort* fake = inner.get();
  auto made = port::WithFaults(std::move(inner), "blackhole_port=50002");
  ASSERT_TRUE(made.ok()) << made.status();
  port::Port& p = **made;
  const Out o = Drain(p);
  const auto st = *port::FaultStatsOf(p);
  EXPECT_EQ(st.blackholed_rx, cfg.total / 4);
  ASSERT_EQ(o.data.size(), cfg.total - cfg.total / 4);
  for (const std::vector<uint8_t>& d : o.data) {
    wire::Packet pkt;
    wire::FrameInfo f;
    ASSERT_TRUE(Decode(cfg.framing, d, &pkt, &f));
    EXPECT_NE(pkt.data.psn % 4, 2u);
  }
  // Transmit 8 packets, 2 of them from the blackholed port.
  transport::TxSlot slots[8];
  ASSERT_EQ(p.TxAlloc(0, slots, 8), 8);
  for (uint32_t i = 0; i < 8; i++) {
    std::vector<uint8_t> bytes;
    fake->Make(i, &bytes, &slots[i].addr);
    std::copy(bytes.begin(), bytes.end(), slots[i].buf);
    slots[i].len = static_cast<uint32_t>(bytes.size());
  }
  EXPECT_EQ(p.TxBurst(0, slots, 8), 8);  // the wire took them all, and lost two
  EXPECT_EQ(port::FaultStatsOf(p)->blackholed_tx, 2u);
  EXPECT_EQ(fake->sent_ports(), (std::vector<uint16_t>{50000, 50001, 50003, 50000, 50001, 50003}));
}

INSTANTIATE_TEST_SUITE_P(All, FaultsByFraming,
                         ::testing::Values(std::make_pair(Framing::kUdp, false),
                                           std::make_pair(Framing::kEthernet, false),
                                           std::make_pair(Framing::kEthernet, true)),
                         [](const auto& info) {
                           if (info.param.first == Framing::kUdp) return std::string("Udp");
                           return std::string(info.param.second ? "FrameIpv6" : "FrameIpv4");
                         });

TEST(Faults, DeterministicForASeed) {
  FakeConfig cfg;
  cfg.total = 5000;
  const std::string spec = "drop=0.02,burst=0.005:4,reorder=0.02:10,dup=0.02,ecn=0.1,corrupt=0.01";
  auto run = [&](uint64_t seed) {
    auto p = Faulty(cfg, spec + ",seed=" + std::to_string(seed));
    return Drain(*p).data;
  };
  const auto a = run(11);
  EXPECT_EQ(a, run(11));
  EXPECT_NE(a, run(12));
}

}  // namespace
}  // namespace metaroce::testing
