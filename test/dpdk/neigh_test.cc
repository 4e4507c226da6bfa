/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The dpdk driver's neighbour resolution without EAL: the ARP / NS / NA codec and the
// table's decisions (answer, learn, static entries first, rate-limited requests, ageing,
// malformed frames counted and dropped).

#include <array>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "neigh_private.h"

namespace metaroce::testing {
namespace {

using dpdk::NeighMsg;
using dpdk::NeighOp;
using dpdk::NeighParse;
using dpdk::NeighTable;
using wire::IpAddr;
using wire::MacAddr;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

const MacAddr kOurMac{{0x02, 0, 0, 0, 0, 0x01}};
const MacAddr kPeerMac{{0x02, 0, 0, 0, 0, 0x02}};
const MacAddr kOtherMac{{0x02, 0, 0, 0, 0, 0x03}};
const MacAddr kBroadcast{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
const IpAddr kOurIp = IpAddr::V4(10, 0, 0, 1);
const IpAddr kPeerIp = IpAddr::V4(10, 0, 0, 2);
const IpAddr kOtherIp = IpAddr::V4(10, 0, 0, 3);

IpAddr Ip6(uint8_t last) {
  return IpAddr::V6({0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34, last});
}

using Frame = std::vector<uint8_t>;

Frame ArpRequest(const MacAddr& mac, const IpAddr& ip, const IpAddr& target) {
  Frame f(dpdk::kNeighFrameBytes);
  f.resize(dpdk::BuildArpRequest(mac, ip, target, nullptr, f));
  return f;
}

Frame ArpReply(const MacAddr& mac, const IpAddr& ip, const MacAddr& to_mac, const IpAddr& to_ip) {
  Frame f(dpdk::kNeighFrameBytes);
  f.resize(dpdk::BuildArpReply(mac, ip, to_mac, to_ip, f));
  return f;
}

Frame Solicit(const MacAddr& mac, const IpAddr& ip, const IpAddr& target) {
  Frame f(dpdk::kNeighFrameBytes);
  f.resize(dpdk::BuildNeighSolicit(mac, ip, target, nullptr, f));
  return f;
}

Frame Advert(const MacAddr& mac, const IpAddr& ip, const MacAddr& to_mac, const IpAddr& to_ip) {
  Frame f(dpdk::kNeighFrameBytes);
  f.resize(dpdk::BuildNeighAdvert(mac, ip, to_mac, to_ip, true, f));
  return f;
}

MacAddr DstMac(const Frame& f) {
  MacAddr m;
  std::memcpy(m.bytes.data(), f.data(), 6);
  return m;
}

NeighMsg Parse(const Frame& f) {
  NeighMsg m;
  EXPECT_EQ(dpdk::ParseNeighFrame(f, &m), NeighParse::kOk);
  return m;
}

// ---- Codec ----

TEST(NeighFrame, ArpRequestAndReplyRoundTrip) {
  const Frame req = ArpRequest(kOurMac, kOurIp, kPeerIp);
  ASSERT_EQ(req.size(), dpdk::kMinEthFrameBytes);  // padded to the Ethernet minimum
  EXPECT_EQ(DstMac(req), kBroadcast);
  EXPECT_EQ(req[12], 0x08);
  EXPECT_EQ(req[13], 0x06);
  EXPECT_TRUE(dpdk::IsNeighFrame(req));
  NeighMsg m = Parse(req);
  EXPECT_EQ(m.op, NeighOp::kArpRequest);
  EXPECT_EQ(m.sender_ip, kOurIp);
  EXPECT_EQ(m.sender_mac, kOurMac);
  EXPECT_EQ(m.eth_src, kOurMac);
  EXPECT_EQ(m.target_ip, kPeerIp);

  Frame unicast(dpdk::kNeighFrameBytes);
  unicast.resize(dpdk::BuildArpRequest(kOurMac, kOurIp, kPeerIp, &kPeerMac, unicast));
  EXPECT_EQ(DstMac(unicast), kPeerMac);

  const Frame rep = ArpReply(kPeerMac, kPeerIp, kOurMac, kOurIp);
  EXPECT_EQ(DstMac(rep), kOurMac);
  m = Parse(rep);
  EXPECT_EQ(m.op, NeighOp::kArpReply);
  EXPECT_EQ(m.sender_ip, kPeerIp);
  EXPECT_EQ(m.sender_mac, kPeerMac);
  EXPECT_EQ(m.target_ip, kOurIp);

  // Wrong families and short buffers build nothing.
  std::array<uint8_t, 59> small;
  EXPECT_EQ(dpdk::BuildArpRequest(kOurMac, kOurIp, kPeerIp, nullptr, small), 0u);
  Frame f(dpdk::kNeighFrameBytes);
  EXPECT_EQ(dpdk::BuildArpRequest(kOurMac, kOurIp, Ip6(2), nullptr, f), 0u);
  EXPECT_EQ(dpdk::BuildNeighSolicit(kOurMac, kOurIp, kPeerIp, nullptr, f), 0u);
}

TEST(NeighFrame, SolicitGoesToTheSolicitedNodeGroup) {
  const Frame ns = Solicit(kOurMac, Ip6(1), Ip6(2));
  ASSERT_EQ(ns.size(), dpdk::kNeighFrameBytes);
  EXPECT_EQ(DstMac(ns), (MacAddr{{0x33, 0x33, 0xff, 0x12, 0x34, 0x02}}));
  const std::array<uint8_t, 16> group = {0xff, 0x02, 0, 0, 0,    0,    0,    0,
                                         0,    0,    0, 1, 0xff, 0x12, 0x34, 2};
  EXPECT_EQ(0, std::memcmp(&ns[38], group.data(), 16));  // IPv6 destination
  EXPECT_EQ(ns[21], 255);                                // hop limit
  EXPECT_TRUE(dpdk::IsNeighFrame(ns));
  NeighMsg m = Parse(ns);
  EXPECT_EQ(m.op, NeighOp::kSolicit);
  EXPECT_EQ(m.sender_ip, Ip6(1));
  EXPECT_EQ(m.sender_mac, kOurMac);
  EXPECT_EQ(m.target_ip, Ip6(2));
  EXPECT_FALSE(m.dad);

  const Frame na = Advert(kPeerMac, Ip6(2), kOurMac, Ip6(1));
  EXPECT_EQ(DstMac(na), kOurMac);
  EXPECT_EQ(na[58], 0x60);  // solicited, override
  m = Parse(na);
  EXPECT_EQ(m.op, NeighOp::kAdvert);
  EXPECT_EQ(m.sender_ip, Ip6(2));
  EXPECT_EQ(m.sender_mac, kPeerMac);
  EXPECT_EQ(m.target_ip, Ip6(2));
}

TEST(NeighFrame, BadFramesAreMalformedOthersAreNotNeighbour) {
  NeighMsg m;
  const Frame req = ArpRequest(kPeerMac, kPeerIp, kOurIp);
  Frame f = req;
  f.resize(41);  // one byte short of the ARP message
  EXPECT_EQ(dpdk::ParseNeighFrame(f, &m), NeighParse::kMalformed);
  f = req;
  f[18] = 8;  // hardware address length
  EXPECT_EQ(dpdk::ParseNeighFrame(f, &m), NeighParse::kMalformed);
  f = req;
  f[21] = 9;  // opcode
  EXPECT_EQ(dpdk::ParseNeighFrame(f, &m), NeighParse::kMalformed);
  f = req;
  f[22] = 0x01;  // multicast sender hardware address
  EXPECT_EQ(dpdk::ParseNeighFrame(f, &m), NeighParse::kMalformed);

  const Frame ns = Solicit(kPeerMac, Ip6(2), Ip6(1));
  f = ns;
  f[70] ^= 1;  // target changed, checksum not
  EXPECT_EQ(dpdk::ParseNeighFrame(f, &m), NeighParse::kMalformed);
  f = ns;
  f[21] = 64;  // hop limit: crossed a router
  EXPECT_EQ(dpdk::ParseNeighFrame(f, &m), NeighParse::kMalformed);
  f = ns;
  f.resize(70);  // shorter than its payload length
  EXPECT_EQ(dpdk::ParseNeighFrame(f, &m), NeighParse::kMalformed);
  f = ns;
  f[79] = 0;  // option of length 0 (and the checksum no longer matters)
  EXPECT_EQ(dpdk::ParseNeighFrame(f, &m), NeighParse::kMalformed);

  // IPv4, UDP over IPv6, other ICMPv6, runts: for the engine.
  Frame ip4(60, 0);
  ip4[12] = 0x08;
  EXPECT_FALSE(dpdk::IsNeighFrame(ip4));
  EXPECT_EQ(dpdk::ParseNeighFrame(ip4, &m), NeighParse::kNotNeigh);
  f = ns;
  f[20] = 17;
  EXPECT_FALSE(dpdk::IsNeighFrame(f));
  f = ns;
  f[54] = 128;  // echo request
  EXPECT_FALSE(dpdk::IsNeighFrame(f));
  EXPECT_FALSE(dpdk::IsNeighFrame(Frame(13, 0)));
  EXPECT_FALSE(dpdk::IsNeighFrame(Frame(ns.begin(), ns.begin() + 54)));
}

TEST(NeighFrame, DestinationOfIpFrames) {
  IpAddr dst;
  Frame f(60, 0);
  f[12] = 0x08;
  f[30] = 10, f[31] = 1, f[32] = 2, f[33] = 3;
  ASSERT_TRUE(dpdk::FrameDestination(f, &dst));
  EXPECT_EQ(dst, IpAddr::V4(10, 1, 2, 3));

  Frame tagged(64, 0);
  tagged[12] = 0x81;
  tagged[16] = 0x86, tagged[17] = 0xdd;
  for (int i = 0; i < 16; i++) tagged[18 + 24 + i] = static_cast<uint8_t>(i + 1);
  ASSERT_TRUE(dpdk::FrameDestination(tagged, &dst));
  EXPECT_TRUE(dst.v6);
  EXPECT_EQ(dst.bytes[0], 1);
  EXPECT_EQ(dst.bytes[15], 16);

  f[12] = 0x88;  // neither IPv4 nor IPv6
  EXPECT_FALSE(dpdk::FrameDestination(f, &dst));
  f[12] = 0x08;
  f.resize(33);
  EXPECT_FALSE(dpdk::FrameDestination(f, &dst));
}

// ---- Table ----

TEST(NeighTable, AnswersRequestsForItsAddressAndLearnsTheSender) {
  NeighTable t(kOurIp, kOurMac, {});
  Frame reply(dpdk::kNeighFrameBytes);
  const size_t n = t.OnFrame(ArpRequest(kPeerMac, kPeerIp, kOurIp), 0, reply);
  ASSERT_EQ(n, dpdk::kMinEthFrameBytes);
  reply.resize(n);
  EXPECT_EQ(DstMac(reply), kPeerMac);
  const NeighMsg m = Parse(reply);
  EXPECT_EQ(m.op, NeighOp::kArpReply);
  EXPECT_EQ(m.sender_ip, kOurIp);
  EXPECT_EQ(m.sender_mac, kOurMac);
  EXPECT_EQ(m.target_ip, kPeerIp);
  EXPECT_EQ(t.Lookup(kPeerIp), kPeerMac);

  // Requests for other addresses from unknown senders: no answer, nothing learnt.
  reply.assign(dpdk::kNeighFrameBytes, 0);
  EXPECT_EQ(t.OnFrame(ArpRequest(kOtherMac, kOtherIp, IpAddr::V4(10, 0, 0, 9)), 0, reply), 0u);
  EXPECT_FALSE(t.Lookup(kOtherIp).has_value());
  // Our own request coming back (a loopback port): ignored.
  EXPECT_EQ(t.OnFrame(ArpRequest(kOurMac, kOurIp, kPeerIp), 0, reply), 0u);

  const dpdk::NeighStats s = t.stats();
  EXPECT_EQ(s.requests_answered, 1u);
  EXPECT_EQ(s.requests_learnt, 1u);
  EXPECT_EQ(s.ignored, 2u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.malformed, 0u);
}

TEST(NeighTable, UnknownAddressIsAskedForAtMostEvery100Ms) {
  NeighTable t(kOurIp, kOurMac, {});
  Frame req(dpdk::kNeighFrameBytes);
  const int64_t t0 = 5 * kS;
  NeighTable::Resolution r = t.Resolve(kPeerIp, t0, req);
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.request_len, dpdk::kMinEthFrameBytes);
  const NeighMsg m = Parse(Frame(req.begin(), req.begin() + r.request_len));
  EXPECT_EQ(m.op, NeighOp::kArpRequest);
  EXPECT_EQ(m.target_ip, kPeerIp);
  EXPECT_EQ(DstMac(req), kBroadcast);

  r = t.Resolve(kPeerIp, t0 + dpdk::kNeighRequestIntervalNs - 1, req);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.request_len, 0u);  // rate limited
  // Another address has its own limit.
  EXPECT_NE(t.Resolve(kOtherIp, t0 + 1, req).request_len, 0u);
  r = t.Resolve(kPeerIp, t0 + dpdk::kNeighRequestIntervalNs, req);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.request_len, 0u);
  EXPECT_EQ(t.stats().requests_sent, 3u);
  EXPECT_EQ(t.stats().unresolved_drops, 4u);

  // The reply resolves it; frames go out from then on.
  Frame reply(dpdk::kNeighFrameBytes);
  const uint64_t gen = t.generation();
  EXPECT_EQ(t.OnFrame(ArpReply(kPeerMac, kPeerIp, kOurMac, kOurIp), t0 + 10 * kMs, reply), 0u);
  EXPECT_NE(t.generation(), gen);
  r = t.Resolve(kPeerIp, t0 + 11 * kMs, req);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.mac, kPeerMac);
  EXPECT_EQ(r.request_len, 0u);
  EXPECT_EQ(r.valid_until_ns, t0 + 10 * kMs + dpdk::kNeighRefreshAfterNs);
  EXPECT_EQ(t.stats().replies_learnt, 1u);
  EXPECT_EQ(t.stats().unresolved_drops, 4u);

  // This port's own address needs no neighbour.
  r = t.Resolve(kOurIp, t0, req);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.mac, kOurMac);
}

TEST(NeighTable, StaticEntriesWinOverLearning) {
  NeighTable t(kOurIp, kOurMac, {{kPeerIp, kPeerMac}});
  Frame buf(dpdk::kNeighFrameBytes);
  NeighTable::Resolution r = t.Resolve(kPeerIp, 0, buf);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.mac, kPeerMac);
  // A reply, a request for us and a gratuitous ARP all claiming another MAC change nothing.
  t.OnFrame(ArpReply(kOtherMac, kPeerIp, kOurMac, kOurIp), 1, buf);
  EXPECT_NE(t.OnFrame(ArpRequest(kOtherMac, kPeerIp, kOurIp), 2, buf), 0u);  // still answered
  t.OnFrame(ArpRequest(kOtherMac, kPeerIp, kPeerIp), 3, buf);
  EXPECT_EQ(t.Lookup(kPeerIp), kPeerMac);
  // Never aged out, never asked for.
  r = t.Resolve(kPeerIp, 10 * dpdk::kNeighExpireAfterNs, buf);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.mac, kPeerMac);
  EXPECT_EQ(r.request_len, 0u);
  const dpdk::NeighStats s = t.stats();
  EXPECT_EQ(s.replies_learnt, 0u);
  EXPECT_EQ(s.requests_learnt, 0u);
  EXPECT_EQ(s.requests_sent, 0u);
  EXPECT_EQ(s.requests_answered, 1u);
  EXPECT_EQ(s.entries, 1u);
}

TEST(NeighTable, LearntEntriesAreRefreshedThenExpire) {
  NeighTable t(kOurIp, kOurMac, {});
  Frame buf(dpdk::kNeighFrameBytes);
  t.OnFrame(ArpRequest(kPeerMac, kPeerIp, kOurIp), 0, buf);  // learnt at 0

  // Past the refresh age: still used, and asked for directly, at most once a second.
  NeighTable::Resolution r = t.Resolve(kPeerIp, dpdk::kNeighRefreshAfterNs, buf);
  EXPECT_TRUE(r.ok);
  ASSERT_NE(r.request_len, 0u);
  EXPECT_EQ(DstMac(buf), kPeerMac);  // unicast
  EXPECT_EQ(r.valid_until_ns, dpdk::kNeighRefreshAfterNs + dpdk::kNeighRefreshIntervalNs);
  r = t.Resolve(kPeerIp, dpdk::kNeighRefreshAfterNs + dpdk::kNeighRefreshIntervalNs - 1, buf);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.request_len, 0u);
  r = t.Resolve(kPeerIp, dpdk::kNeighRefreshAfterNs + dpdk::kNeighRefreshIntervalNs, buf);
  EXPECT_NE(r.request_len, 0u);

  // Unanswered until the expiry age: unresolved, asked for by broadcast.
  const uint64_t gen = t.generation();
  r = t.Resolve(kPeerIp, dpdk::kNeighExpireAfterNs, buf);
  EXPECT_FALSE(r.ok);
  ASSERT_NE(r.request_len, 0u);
  EXPECT_EQ(DstMac(buf), kBroadcast);
  EXPECT_NE(t.generation(), gen);
  EXPECT_FALSE(t.Lookup(kPeerIp).has_value());

  // An answer makes it fresh again.
  t.OnFrame(ArpReply(kPeerMac, kPeerIp, kOurMac, kOurIp), dpdk::kNeighExpireAfterNs + 1, buf);
  r = t.Resolve(kPeerIp, dpdk::kNeighExpireAfterNs + 2, buf);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.request_len, 0u);
  EXPECT_EQ(t.stats().requests_sent, 3u);
}

TEST(NeighTable, MalformedFramesAreCountedAndNotAnswered) {
  NeighTable t(kOurIp, kOurMac, {});
  Frame buf(dpdk::kNeighFrameBytes);
  Frame f = ArpRequest(kPeerMac, kPeerIp, kOurIp);
  f.resize(30);
  EXPECT_EQ(t.OnFrame(f, 0, buf), 0u);
  f = ArpRequest(kPeerMac, kPeerIp, kOurIp);
  f[22] = 0xff;  // multicast sender MAC
  EXPECT_EQ(t.OnFrame(f, 0, buf), 0u);
  f = Solicit(kPeerMac, Ip6(2), Ip6(1));
  f[60] ^= 0x40;
  EXPECT_EQ(t.OnFrame(f, 0, buf), 0u);
  const dpdk::NeighStats s = t.stats();
  EXPECT_EQ(s.malformed, 3u);
  EXPECT_EQ(s.requests_answered, 0u);
  EXPECT_EQ(s.entries, 0u);
}

TEST(NeighTable, Ipv6SolicitsAndAdverts) {
  NeighTable t(Ip6(1), kOurMac, {});
  Frame buf(dpdk::kNeighFrameBytes);
  // A solicitation for us: answered with a solicited NA to the sender, sender learnt.
  size_t n = t.OnFrame(Solicit(kPeerMac, Ip6(2), Ip6(1)), 0, buf);
  ASSERT_EQ(n, dpdk::kNeighFrameBytes);
  EXPECT_EQ(DstMac(buf), kPeerMac);
  NeighMsg m = Parse(buf);
  EXPECT_EQ(m.op, NeighOp::kAdvert);
  EXPECT_EQ(m.target_ip, Ip6(1));
  EXPECT_EQ(m.sender_mac, kOurMac);
  EXPECT_EQ(buf[58], 0x60);
  EXPECT_EQ(t.Lookup(Ip6(2)), kPeerMac);

  // Resolving another address sends an NS; its NA resolves it.
  NeighTable::Resolution r = t.Resolve(Ip6(3), 0, buf);
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.request_len, dpdk::kNeighFrameBytes);
  m = Parse(buf);
  EXPECT_EQ(m.op, NeighOp::kSolicit);
  EXPECT_EQ(m.target_ip, Ip6(3));
  EXPECT_EQ(t.OnFrame(Advert(kOtherMac, Ip6(3), kOurMac, Ip6(1)), 1, buf), 0u);
  EXPECT_EQ(t.Lookup(Ip6(3)), kOtherMac);
  // An NA nobody asked for is not learnt; an NS for someone else is not answered.
  t.OnFrame(Advert(kOtherMac, Ip6(4), kOurMac, Ip6(1)), 2, buf);
  EXPECT_FALSE(t.Lookup(Ip6(4)).has_value());
  EXPECT_EQ(t.OnFrame(Solicit(kPeerMac, Ip6(2), Ip6(9)), 3, buf), 0u);
  // An IPv4 address cannot be asked for from an IPv6 port.
  r = t.Resolve(kPeerIp, 4, buf);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.request_len, 0u);

  const dpdk::NeighStats s = t.stats();
  EXPECT_EQ(s.requests_answered, 1u);
  EXPECT_EQ(s.requests_learnt, 1u);
  EXPECT_EQ(s.requests_sent, 1u);
  EXPECT_EQ(s.replies_learnt, 1u);
  EXPECT_EQ(s.ignored, 2u);
  EXPECT_EQ(s.unresolved_drops, 2u);
}

TEST(NeighTable, DuplicateAddressDetectionIsAnsweredToAllNodes) {
  NeighTable t(Ip6(1), kOurMac, {});
  Frame ns = Solicit(kPeerMac, Ip6(2), Ip6(1));
  // Make it a DAD probe: source ::, no source link-layer option, checksum redone by a rebuild.
  Frame dad(ns.begin(), ns.begin() + 78);
  std::fill(dad.begin() + 22, dad.begin() + 38, 0);
  dad[18] = 0, dad[19] = 24;  // payload length without the option
  dad[56] = dad[57] = 0;
  uint32_t sum = 24 + 58;
  for (size_t i = 22; i < 54; i += 2) sum += static_cast<uint32_t>(dad[i] << 8 | dad[i + 1]);
  for (size_t i = 54; i < 78; i += 2) sum += static_cast<uint32_t>(dad[i] << 8 | dad[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  dad[56] = static_cast<uint8_t>(~sum >> 8);
  dad[57] = static_cast<uint8_t>(~sum);
  NeighMsg m = Parse(dad);
  EXPECT_TRUE(m.dad);

  Frame buf(dpdk::kNeighFrameBytes);
  ASSERT_EQ(t.OnFrame(dad, 0, buf), dpdk::kNeighFrameBytes);
  EXPECT_EQ(DstMac(buf), (MacAddr{{0x33, 0x33, 0, 0, 0, 1}}));
  EXPECT_EQ(buf[58], 0x20);  // override only: not solicited
  EXPECT_EQ(t.stats().entries, 0u);
}

TEST(NeighTable, AFullTableMakesRoomButKeepsStaticEntries) {
  NeighTable t(kOurIp, kOurMac, {{kPeerIp, kPeerMac}});
  Frame buf(dpdk::kNeighFrameBytes);
  for (size_t i = 0; i < dpdk::kMaxNeighEntries + 10; i++) {
    const IpAddr ip = IpAddr::V4(10, 1, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i));
    const MacAddr mac{{0x02, 1, 0, 0, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)}};
    t.OnFrame(ArpRequest(mac, ip, kOurIp), static_cast<int64_t>(i), buf);
  }
  EXPECT_EQ(t.size(), dpdk::kMaxNeighEntries);
  EXPECT_EQ(t.Lookup(kPeerIp), kPeerMac);
  EXPECT_FALSE(t.Lookup(IpAddr::V4(10, 1, 0, 0)).has_value());  // the oldest went first
  EXPECT_TRUE(t.Lookup(IpAddr::V4(10, 1, 4, 9)).has_value());   // the newest stayed
}

}  // namespace
}  // namespace metaroce::testing
