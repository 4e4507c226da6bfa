/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Building blocks: time, random streams, hashing, the event heap, the frame
// pool, queue histograms, and the header access switches use (5-tuple, ECN).

#include <algorithm>
#include <set>
#include <vector>

#include "event_queue_private.h"
#include "fifo_private.h"
#include "flow_private.h"
#include "frame_pool_private.h"
#include "gtest/gtest.h"
#include "mr_sim.h"
#include "mr_wire.h"
#include "mr_wire_sample.h"

namespace metaroce::sim {
namespace {

TEST(SimTime, SerializationIsExactForCommonRates) {
  EXPECT_EQ(SerializationPs(1020, 100 * kBpsPerGbps), 81'600);
  EXPECT_EQ(SerializationPs(4096 + 20, 400 * kBpsPerGbps), (4096 + 20) * 20);
  EXPECT_EQ(SerializationPs(84, 10 * kBpsPerGbps), 67'200);
  EXPECT_EQ(SerializationPs(1, 1 * kBpsPerGbps), 8 * kPsPerNs);
  // 3 Gbit/s does not divide 8e12: one byte is 2666.67 ps, rounded up.
  EXPECT_EQ(SerializationPs(1, 3 * kBpsPerGbps), 2667);
  EXPECT_EQ(SerializationPs(3, 3 * kBpsPerGbps), 8000);
}

TEST(Rng, SameSeedSameStream) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 1000; i++) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(Rng, KnownFirstOutputs) {
  // Pin the generator: a change here changes every simulation result.
  Rng r(0);
  const uint64_t first = r.Next();
  Rng again(0);
  EXPECT_EQ(first, again.Next());
  uint64_t st = 0;
  EXPECT_EQ(SplitMix64(&st), 0xe220a8397b1dcdafULL);  // published splitmix64(0) value
}

TEST(Rng, DerivedSeedsAreDistinct) {
  std::set<uint64_t> seen;
  for (uint64_t sim_seed : {0ULL, 1ULL, 2ULL, 0xffffffffffffffffULL}) {
    for (uint32_t i = 0; i < 64; i++) {
      for (ComponentKind k :
           {ComponentKind::kHost, ComponentKind::kSwitch, ComponentKind::kChannel}) {
        EXPECT_TRUE(seen.insert(DeriveSeed(sim_seed, ComponentId(k, i))).second);
      }
    }
  }
}

TEST(Rng, BelowAndRangeStayInBoundsAndCoverThem) {
  Rng r(7);
  std::vector<int> hits(10);
  for (int i = 0; i < 100'000; i++) {
    const uint64_t v = r.Below(10);
    ASSERT_LT(v, 10u);
    hits[v]++;
  }
  for (int h : hits) EXPECT_NEAR(h, 10'000, 500);  // > 5 sigma
  for (int i = 0; i < 1000; i++) {
    const int64_t v = r.Range(-3, 3);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
  }
  EXPECT_EQ(r.Range(5, 5), 5);
}

TEST(Rng, BernoulliMatchesProbability) {
  Rng r(9);
  int n = 0;
  for (int i = 0; i < 200'000; i++) n += r.Bernoulli(0.25);
  EXPECT_NEAR(n / 200'000.0, 0.25, 0.005);
  EXPECT_FALSE(r.Bernoulli(0));
  EXPECT_TRUE(r.Bernoulli(1));
}

TEST(HashBytes, DeterministicAndSensitive) {
  std::vector<uint8_t> a(1500);
  for (size_t i = 0; i < a.size(); i++) a[i] = static_cast<uint8_t>(i);
  const uint64_t h = HashBytes(a);
  EXPECT_EQ(h, HashBytes(a));
  for (size_t bit : {0u, 7u, 8u * 700 + 3, 8u * 1499 + 7}) {
    auto b = a;
    b[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(HashBytes(b), h) << bit;
  }
  EXPECT_NE(HashBytes(std::span(a).first(1499)), h);
  const std::vector<uint8_t> zeros1(1), zeros2(2);
  EXPECT_NE(HashBytes(zeros1), HashBytes(zeros2));
}

TEST(TraceHash, OrderAndContentMatter) {
  TraceRecord r1{10, TraceKind::kSend, 1, 1, 99, 0};
  TraceRecord r2{10, TraceKind::kDeliver, 2, 1, 99, 0};
  TraceHash a, b, c;
  a.Add(r1);
  a.Add(r2);
  b.Add(r2);
  b.Add(r1);
  c.Add(r1);
  c.Add(r2);
  EXPECT_NE(a.value(), b.value());
  EXPECT_EQ(a.value(), c.value());
  EXPECT_EQ(a.records(), 2u);
}

TEST(EventQueue, OrdersByTimeThenInsertion) {
  EventQueue q;
  Rng r(1);
  std::vector<std::pair<SimTime, uint32_t>> want;
  for (uint32_t i = 0; i < 5000; i++) {
    const SimTime t = static_cast<SimTime>(r.Below(100));  // many ties
    q.Push(t, EventKind::kTxDone, i, 0);
    want.emplace_back(t, i);
  }
  std::stable_sort(want.begin(), want.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [t, i] : want) {
    ASSERT_FALSE(q.empty());
    const Event e = q.Pop();
    EXPECT_EQ(e.time, t);
    EXPECT_EQ(e.target, i);
  }
  EXPECT_TRUE(q.empty());
}

TEST(Fifo, GrowsAndKeepsOrder) {
  Fifo<uint32_t> f;
  uint32_t next_in = 0, next_out = 0;
  for (int round = 0; round < 50; round++) {
    for (int i = 0; i < round * 3; i++) f.push_back(next_in++);
    for (int i = 0; i < round * 2 && !f.empty(); i++) {
      EXPECT_EQ(f.front(), next_out++);
      f.pop_front();
    }
  }
  EXPECT_EQ(f.size(), next_in - next_out);
  while (!f.empty()) {
    EXPECT_EQ(f.front(), next_out++);
    f.pop_front();
  }
}

TEST(FramePool, ReusesSlotsAndBuffers) {
  FramePool pool;
  const FrameHandle a = pool.Alloc();
  pool[a].bytes.assign(4000, 1);
  const uint8_t* data = pool[a].bytes.data();
  pool.Free(a);
  const FrameHandle b = pool.Alloc();
  EXPECT_EQ(a, b);
  pool[b].bytes.assign(1000, 2);  // fits the old capacity: same buffer
  EXPECT_EQ(pool[b].bytes.data(), data);
  std::vector<FrameHandle> many;
  for (int i = 0; i < 3000; i++) many.push_back(pool.Alloc());
  EXPECT_EQ(pool.live(), 3001u);
  std::set<FrameHandle> unique(many.begin(), many.end());
  EXPECT_EQ(unique.size(), many.size());
  EXPECT_EQ(pool[b].bytes.data(), data);  // stable while the pool grows
  for (FrameHandle h : many) pool.Free(h);
  pool.Free(b);
  EXPECT_EQ(pool.live(), 0u);
}

TEST(JainIndex, OneWhenEqualOneOverNWhenOneHasAllZeroWhenEmpty) {
  const std::vector<double> equal = {3, 3, 3, 3}, one = {0, 0, 8, 0}, half = {1, 0};
  EXPECT_DOUBLE_EQ(JainIndex(equal), 1.0);
  EXPECT_DOUBLE_EQ(JainIndex(one), 0.25);
  EXPECT_DOUBLE_EQ(JainIndex(half), 0.5);
  EXPECT_DOUBLE_EQ(JainIndex(std::vector<double>{1, 2, 3}), 36.0 / 42);
  EXPECT_EQ(JainIndex(std::vector<double>{0, 0}), 0.0);
  EXPECT_EQ(JainIndex({}), 0.0);
}

TEST(QueueHistogram, BucketsBoundValues) {
  for (uint64_t v :
       {0ULL, 1ULL, 15ULL, 16ULL, 17ULL, 31ULL, 32ULL, 1000ULL, 65535ULL, 1ULL << 40, ~0ULL}) {
    const int i = QueueHistogram::Index(v);
    ASSERT_GE(i, 0);
    ASSERT_LT(i, QueueHistogram::kBuckets);
    EXPECT_GE(QueueHistogram::UpperBound(i), v);
    if (i > 0) {
      EXPECT_LT(QueueHistogram::UpperBound(i - 1), v);
    }
    // Relative error of the bound below 1/16.
    EXPECT_LE(QueueHistogram::UpperBound(i) - v, v / 16 + 1);
  }
}

TEST(QueueHistogram, Percentiles) {
  QueueHistogram h;
  EXPECT_EQ(h.Percentile(0.5), 0u);
  for (uint64_t v = 0; v < 10; v++) h.Add(v);  // exact range
  EXPECT_EQ(h.Percentile(0.5), 4u);
  EXPECT_EQ(h.Percentile(0.9), 8u);
  EXPECT_EQ(h.Percentile(1.0), 9u);
  EXPECT_EQ(h.Percentile(0.0), 0u);
  QueueHistogram big;
  for (int i = 0; i < 99; i++) big.Add(1000);
  big.Add(100'000);
  EXPECT_GE(big.Percentile(0.99), 1000u);
  EXPECT_LT(big.Percentile(0.99), 1064u);
  EXPECT_GE(big.Percentile(1.0), 100'000u);
}

// ---- Header access --------------------------------------------------------------

wire::SamplePacket FindSample(bool v6, bool vlan) {
  for (auto& s : wire::SampleConversation()) {
    if (s.frame.src.v6 == v6 && s.frame.has_vlan == vlan) return s;
  }
  ADD_FAILURE() << "no sample with v6=" << v6 << " vlan=" << vlan;
  return {};
}

std::vector<uint8_t> EncodeSample(const wire::SamplePacket& s, wire::FrameInfo fi) {
  std::vector<uint8_t> out(wire::EncapBytes(fi) + wire::EncodedBytes(s.Get()));
  auto n = wire::EncodeFrame(fi, s.Get(), out);
  EXPECT_TRUE(n.ok()) << n.status();
  out.resize(n.ok() ? *n : 0);
  return out;
}

TEST(Flow, ParsesFiveTupleOfSampleFrames) {
  for (auto [v6, vlan] : {std::pair{false, false}, std::pair{true, false}, std::pair{true, true}}) {
    const wire::SamplePacket s = FindSample(v6, vlan);
    const auto bytes = EncodeSample(s, s.frame);
    const FlowKey k = ParseFlowKey(bytes);
    EXPECT_EQ(k.l3, v6 ? L3Kind::kIpv6 : L3Kind::kIpv4);
    EXPECT_EQ(k.l3_offset, wire::kEthHeaderBytes + (vlan ? wire::kVlanTagBytes : 0));
    EXPECT_EQ(k.protocol, wire::kIpProtoUdp);
    EXPECT_EQ(k.src, s.frame.src);
    EXPECT_EQ(k.dst, s.frame.dst);
    EXPECT_EQ(k.src_port, s.frame.src_port);
    EXPECT_EQ(k.dst_port, s.frame.dst_port);
    // The source port alone changes the hash.
    wire::FrameInfo other = s.frame;
    other.src_port ^= 1;
    EXPECT_NE(FlowHash(ParseFlowKey(EncodeSample(s, other))), FlowHash(k));
  }
}

TEST(Flow, RejectsNonIpAndTruncated) {
  std::vector<uint8_t> junk(64, 0);
  EXPECT_EQ(ParseFlowKey(junk).l3, L3Kind::kNone);
  const wire::SamplePacket s = FindSample(false, false);
  auto bytes = EncodeSample(s, s.frame);
  bytes.resize(wire::kEthHeaderBytes + 10);
  EXPECT_EQ(ParseFlowKey(bytes).l3, L3Kind::kNone);
}

TEST(Flow, MarkCeKeepsIpv4ChecksumValid) {
  const wire::SamplePacket s = FindSample(false, false);
  for (wire::Ecn ecn : {wire::Ecn::kEct0, wire::Ecn::kEct1}) {
    for (uint8_t dscp : {0, 26, 63}) {
      wire::FrameInfo fi = s.frame;
      fi.ecn = ecn;
      fi.dscp = dscp;
      for (uint16_t id : {0, 1, 0xfffe, 0xffff}) {
        fi.ip_id = id;
        auto bytes = EncodeSample(s, fi);
        const FlowKey k = ParseFlowKey(bytes);
        ASSERT_EQ(MarkCe(bytes, k.l3, k.l3_offset), EcnResult::kMarked);
        wire::FrameInfo got;
        wire::Packet p;
        ASSERT_EQ(wire::ParseFrame(bytes, {}, &got, &p), wire::ParseError::kOk);
        EXPECT_EQ(got.ecn, wire::Ecn::kCe);
        EXPECT_EQ(got.dscp, dscp);
        EXPECT_EQ(MarkCe(bytes, k.l3, k.l3_offset), EcnResult::kAlreadyCe);
      }
    }
  }
}

TEST(Flow, MarkCeLeavesNotEctAlone) {
  for (bool v6 : {false, true}) {
    const wire::SamplePacket s = FindSample(v6, false);
    wire::FrameInfo fi = s.frame;
    fi.ecn = wire::Ecn::kNotEct;
    auto bytes = EncodeSample(s, fi);
    const auto before = bytes;
    const FlowKey k = ParseFlowKey(bytes);
    EXPECT_EQ(MarkCe(bytes, k.l3, k.l3_offset), EcnResult::kNotEct);
    EXPECT_EQ(bytes, before);
  }
}

TEST(Flow, MarkCeSetsIpv6TrafficClassOnly) {
  for (bool vlan : {false, true}) {
    const wire::SamplePacket s = FindSample(true, vlan);
    wire::FrameInfo fi = s.frame;
    fi.ecn = wire::Ecn::kEct1;
    fi.dscp = 46;
    fi.flow_label = 0xabcde;
    auto bytes = EncodeSample(s, fi);
    const FlowKey k = ParseFlowKey(bytes);
    ASSERT_EQ(MarkCe(bytes, k.l3, k.l3_offset), EcnResult::kMarked);
    wire::FrameInfo got;
    wire::Packet p;
    ASSERT_EQ(wire::ParseFrame(bytes, {}, &got, &p), wire::ParseError::kOk);  // UDP checksum
    EXPECT_EQ(got.ecn, wire::Ecn::kCe);
    EXPECT_EQ(got.dscp, 46);
    EXPECT_EQ(got.flow_label, 0xabcdeu);
  }
}

}  // namespace
}  // namespace metaroce::sim
