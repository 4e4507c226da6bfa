/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Priority flow control in the simulated switches: an incast pauses its
// senders and loses nothing; the PAUSE takes the frame on the wire and the
// link delay to act, which the headroom absorbs; too little headroom drops
// (and says why); the thresholds are checked.

#include <vector>

#include "gtest/gtest.h"
#include "mr_sim.h"
#include "sim_test_util.h"

namespace metaroce::sim {
namespace {

using testing::MakeFrame;
using testing::Must;
using testing::RecordingEndpoint;
using testing::Star;

constexpr uint64_t k100G = Star::kFastBps;
constexpr SimTime kDelayPs = kPsPerUs;  // 1 us each way: 12.5 KB in flight per direction at 100G
constexpr uint32_t kFrames = 300;       // per sender
constexpr size_t kFrameBytes = 1000;

// A and C (100 Gbit/s) each send kFrames to B (10 Gbit/s) through S (the
// Star of sim_test_util.h): a 20:1 incast at B's port, whose 64 KB buffer
// overflows without PFC.
struct Incast : Star {
  explicit Incast(const PfcConfig& pfc) : Star(Switch(pfc), kDelayPs, 9) {}
  static SwitchConfig Switch(const PfcConfig& pfc) {
    SwitchConfig sc;
    sc.port_buffer_bytes = 64 * 1024;
    sc.pfc = pfc;
    return sc;
  }
  /** Runs the incast to the end; B's frames in order of arrival. */
  std::vector<RecordingEndpoint::Rx> Run() {
    RecordingEndpoint ra(a), rb(b), rc(c);
    for (uint32_t i = 0; i < kFrames; i++) {
      ra.backlog.push_back(MakeFrame({.src = a, .dst = b, .bytes = kFrameBytes, .seq = i}));
      rc.backlog.push_back(
          MakeFrame({.src = c, .dst = b, .bytes = kFrameBytes, .seq = kFrames + i}));
    }
    ra.Pump();
    rc.Pump();
    fabric.RunUntilIdle();
    EXPECT_TRUE(ra.backlog.empty());
    EXPECT_TRUE(rc.backlog.empty());
    return rb.rx;
  }
  uint64_t Drops(DropCause cause) const {
    uint64_t n = 0;
    for (PortId p : fabric.switch_ports(sw)) n += fabric.port_stats(p).dropped(cause);
    return n;
  }
};

PfcConfig On(uint64_t xoff = 16 * 1024, uint64_t xon = 8 * 1024, uint64_t headroom = 0) {
  PfcConfig p;
  p.enabled = true;
  p.xoff_bytes = xoff;
  p.xon_bytes = xon;
  p.headroom_bytes = headroom;
  return p;
}

TEST(Pfc, WithoutItTheIncastOverflowsTheBuffer) {
  Incast s{PfcConfig{}};
  const auto rx = s.Run();
  EXPECT_GT(s.Drops(DropCause::kQueueFull), 100u);
  EXPECT_EQ(rx.size() + s.Drops(DropCause::kQueueFull), 2 * kFrames);
  EXPECT_EQ(s.fabric.port_stats(s.a->port()).pfc_pauses_received, 0u);
}

TEST(Pfc, AnIncastPausesItsSendersAndLosesNothing) {
  const PfcConfig pfc = On();
  Incast s{pfc};
  const auto rx = s.Run();
  EXPECT_EQ(rx.size(), 2 * kFrames);
  for (size_t i = 0; i < static_cast<size_t>(DropCause::kCount); i++) {
    EXPECT_EQ(s.Drops(static_cast<DropCause>(i)), 0u) << DropCauseName(static_cast<DropCause>(i));
  }
  for (auto [host, ingress] : {std::pair{s.a, s.Port(0)}, std::pair{s.c, s.Port(2)}}) {
    const PortStats& in = s.fabric.port_stats(ingress);
    const PortStats& nic = s.fabric.port_stats(host->port());
    EXPECT_GE(in.pfc_pauses_sent, 5u);  // a pause per some 30 frames of a sender
    // Every pause was lifted, and took effect at the sender.
    EXPECT_EQ(in.pfc_resumes_sent, in.pfc_pauses_sent);
    EXPECT_EQ(nic.pfc_pauses_received, in.pfc_pauses_sent);
    // Each sender was paused most of the run: B's link drains at a tenth of
    // what either could send.
    const SimTime run = rx.back().time;
    EXPECT_GT(nic.pfc_paused_ps, run * 8 / 10);
    EXPECT_LT(nic.pfc_paused_ps, run);
    // An ingress held more than XOFF (the frames sent while the PAUSE travelled)
    // and never more than XOFF plus its headroom.
    EXPECT_GT(in.pfc_max_ingress_bytes, pfc.xoff_bytes);
    EXPECT_LE(in.pfc_max_ingress_bytes,
              pfc.xoff_bytes + PfcHeadroomBytes(LinkConfig{.rate_bps = k100G, .delay_ps = kDelayPs},
                                                kDelayPs, kDelayPs));
  }
  // B's link never idled once busy: the queue never drained below XON's worth.
  const SimTime wire = SerializationPs(kFrameBytes + kDefaultWireOverheadBytes, Star::kSlowBps);
  for (size_t i = 1; i < rx.size(); i++) EXPECT_EQ(rx[i].time - rx[i - 1].time, wire) << i;
}

// The pause acts a link round trip after XOFF (the PAUSE's way there and the
// frames already on their way back): the sender keeps sending that long, and
// the ingress holds what it sent on top of XOFF.
TEST(Pfc, APauseTakesTheLinkDelayToActAndTheHeadroomHoldsWhatCameMeanwhile) {
  Incast s{On()};
  s.Run();
  const uint64_t over = s.fabric.port_stats(s.Port(0)).pfc_max_ingress_bytes - 16 * 1024;
  std::printf("an ingress held at most %lu B over XOFF\n", over);
  // 2 us at 100 Gbit/s from A less what B's link drained meanwhile (a tenth),
  // frames of 1 KB: at least 18 KB over XOFF; an instant pause would be one frame.
  EXPECT_GE(over, 18'000u);
  EXPECT_LE(over, 26'000u);
}

TEST(Pfc, TooLittleHeadroomDropsAndSaysWhy) {
  Incast s{On(16 * 1024, 8 * 1024, 4 * 1024)};
  const auto rx = s.Run();
  EXPECT_GT(s.Drops(DropCause::kPfcHeadroom), 0u);
  EXPECT_EQ(s.Drops(DropCause::kQueueFull), 0u);
  EXPECT_EQ(rx.size() + s.Drops(DropCause::kPfcHeadroom), 2 * kFrames);
  EXPECT_STREQ(DropCauseName(DropCause::kPfcHeadroom), "pfc_headroom");
}

TEST(Pfc, HeadroomCoversTheRoundTripTwoFramesAndThePause) {
  LinkConfig l;
  l.rate_bps = k100G;
  l.overhead_bytes = 20;
  // 2 us at 12.5 GB/s, two 9216-byte frames and a PAUSE, each with its 20 bytes of overhead.
  EXPECT_EQ(PfcHeadroomBytes(l, kPsPerUs, kPsPerUs), 25'000u + 2 * (9216 + 20) + 64 + 20);
  // A 10 ms long-haul link at 400 Gbit/s: 1 GB, no overflow.
  l.rate_bps = 400 * kBpsPerGbps;
  EXPECT_EQ(PfcHeadroomBytes(l, 10 * kPsPerMs, 10 * kPsPerMs),
            1'000'000'000u + 2 * (9216 + 20) + 64 + 20);
}

TEST(Pfc, BadThresholdsAreRefusedWithWhatToFix) {
  SwitchConfig sc;
  sc.name = "leaf0";
  sc.pfc = On(16 * 1024, 16 * 1024);
  absl::Status st = Validate(sc);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("leaf0"), std::string::npos) << st;
  EXPECT_NE(st.message().find("xon_bytes"), std::string::npos) << st;
  sc.pfc = On(10, 0);
  EXPECT_NE(Validate(sc).message().find("xoff_bytes"), std::string::npos);
  sc.pfc = On(16 * 1024, 8 * 1024, 1);
  EXPECT_NE(Validate(sc).message().find("headroom_bytes"), std::string::npos);
  sc.pfc = On(16 * 1024, 16 * 1024);
  sc.pfc.enabled = false;  // thresholds of PFC that is off are not checked
  EXPECT_TRUE(Validate(sc).ok());
  Fabric f(1);
  sc.pfc = On(16 * 1024, 32 * 1024);
  EXPECT_EQ(f.AddSwitch(sc).status().code(), absl::StatusCode::kInvalidArgument);
  LeafSpineConfig ls;
  ls.pfc = On(16 * 1024, 32 * 1024);
  st = BuildLeafSpine(f, ls).status();
  EXPECT_NE(st.message().find("xon_bytes"), std::string::npos) << st;
}

}  // namespace
}  // namespace metaroce::sim
