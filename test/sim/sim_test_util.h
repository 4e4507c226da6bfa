/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Helpers for the simulated fabric tests: real MetaRoCE frames of an exact
// size between two hosts, and an endpoint that records what it sees and sends
// a backlog as fast as the NIC takes it.

#ifndef METAROCE_TEST_SIM_TEST_UTIL_H
#define METAROCE_TEST_SIM_TEST_UTIL_H

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "gtest/gtest.h"
#include "mr_sim.h"
#include "mr_wire.h"

namespace metaroce::sim::testing {

/** What MakeFrame builds: a WRITE from src to dst with a sequence number in its PSN. */
struct FrameSpec {
  const Host* src = nullptr;
  const Host* dst = nullptr;
  uint16_t src_port = 49152;
  size_t bytes = 1000;  ///< total frame length (>= 94 for IPv4, >= 114 for IPv6)
  wire::Ecn ecn = wire::Ecn::kEct0;
  uint8_t dscp = 0;
  bool v6 = false;
  uint32_t seq = 0;  ///< carried in the PSN
};

/** Fixed bytes of a WRITE frame without payload: Ethernet + IP + UDP + MetaRoCE. */
inline size_t WriteFrameOverhead(bool v6) {
  return wire::kEthHeaderBytes + (v6 ? wire::kIpv6HeaderBytes : wire::kIpv4HeaderBytes) +
         wire::kUdpHeaderBytes + wire::kCommonHeaderBytes +
         wire::TypeHeaderBytes(wire::PacketType::kWrite) + wire::kCrcBytes;
}

inline std::vector<uint8_t> MakeFrame(const FrameSpec& s) {
  wire::FrameInfo fi;
  fi.eth_src = s.src->mac();
  fi.eth_dst = s.dst->mac();
  fi.src = s.v6 ? s.src->ipv6() : s.src->ipv4();
  fi.dst = s.v6 ? s.dst->ipv6() : s.dst->ipv4();
  fi.ecn = s.ecn;
  fi.dscp = s.dscp;
  fi.src_port = s.src_port;
  const size_t fixed = WriteFrameOverhead(s.v6);
  EXPECT_GE(s.bytes, fixed) << "frame too small for a WRITE";
  const size_t payload_len = s.bytes > fixed ? s.bytes - fixed : 0;
  std::vector<uint8_t> payload(payload_len);
  for (size_t i = 0; i < payload_len; i++) payload[i] = static_cast<uint8_t>(i * 7 + s.seq);
  wire::Packet p;
  p.type = wire::PacketType::kWrite;
  p.dst_conn_id = 7;
  p.path_id = 1;
  p.data.psn = s.seq;
  p.data.stream_id = 3;
  p.data.src_stream = 4;
  p.data.msg_len = static_cast<uint32_t>(payload_len);
  p.data.rkey = 0x1234;
  p.data.va = 0x10000;
  p.payload = payload;
  std::vector<uint8_t> out(s.bytes + 64);
  auto n = wire::EncodeFrame(fi, p, out);
  EXPECT_TRUE(n.ok()) << n.status();
  out.resize(n.ok() ? *n : 0);
  EXPECT_EQ(out.size(), s.bytes);
  return out;
}

/** Parses a frame as the engine would; kOk means every checksum and the CRC hold. */
inline wire::ParseError ParseSimFrame(std::span<const uint8_t> frame, wire::FrameInfo* info,
                                      wire::Packet* pkt) {
  return wire::ParseFrame(frame, wire::ParseOptions{}, info, pkt);
}

/** The PSN (sequence number) of a frame that parses, or UINT32_MAX. */
inline uint32_t FrameSeq(std::span<const uint8_t> frame) {
  wire::FrameInfo fi;
  wire::Packet p;
  return ParseSimFrame(frame, &fi, &p) == wire::ParseError::kOk ? p.data.psn : UINT32_MAX;
}

/** Records everything; sends `backlog` whenever the NIC has room. */
class RecordingEndpoint : public Endpoint {
 public:
  struct Rx {
    SimTime time;
    std::vector<uint8_t> bytes;
  };

  explicit RecordingEndpoint(Host* host) : host_(host) { host->Attach(this); }
  ~RecordingEndpoint() override { host_->Attach(nullptr); }

  void OnFrame(SimTime now, std::span<const uint8_t> frame) override {
    rx.push_back({now, std::vector<uint8_t>(frame.begin(), frame.end())});
    if (on_frame) on_frame(now, frame);
  }
  void OnTimer(SimTime now) override {
    timer_fires.push_back(now);
    if (on_timer) on_timer(now);
  }
  void OnTxReady(SimTime now) override {
    tx_ready.push_back(now);
    Pump();
  }
  /** Sends from the backlog while Send() succeeds. */
  void Pump() {
    while (!backlog.empty() && host_->Send(backlog.front())) backlog.pop_front();
  }

  Host* host() const { return host_; }

  std::vector<Rx> rx;
  std::vector<SimTime> timer_fires;
  std::vector<SimTime> tx_ready;
  std::deque<std::vector<uint8_t>> backlog;
  std::function<void(SimTime)> on_timer;
  std::function<void(SimTime, std::span<const uint8_t>)> on_frame;

 private:
  Host* host_;
};

/** Unwraps a StatusOr in a test. */
template <typename T>
T Must(absl::StatusOr<T> v) {
  EXPECT_TRUE(v.ok()) << v.status();
  return *std::move(v);
}

/**
 * A (100 Gbit/s) and C (100 Gbit/s) feed B (10 Gbit/s) through one switch S,
 * links of @p delay_ps each way: B's port at S is where queues build.
 */
struct Star {
  static constexpr uint64_t kFastBps = 100 * kBpsPerGbps;
  static constexpr uint64_t kSlowBps = 10 * kBpsPerGbps;

  Fabric fabric;
  SwitchId sw = 0;
  Host* a = nullptr;
  Host* b = nullptr;
  Host* c = nullptr;
  PortId to_b = 0;  ///< S's port toward B

  explicit Star(const SwitchConfig& sc, SimTime delay_ps = 0, uint64_t seed = 5) : fabric(seed) {
    sw = Must(fabric.AddSwitch(sc));
    a = AddHost(1, kFastBps, delay_ps);
    b = AddHost(2, kSlowBps, delay_ps);
    c = AddHost(3, kFastBps, delay_ps);
    to_b = Port(1);
  }
  /** S's port toward host @p i in order of connection (A 0, B 1, C 2): the ingress of its frames.
   */
  PortId Port(size_t i) const { return fabric.switch_ports(sw)[i]; }

 private:
  Host* AddHost(uint8_t last, uint64_t rate, SimTime delay_ps) {
    HostConfig hc;
    hc.ipv4 = wire::IpAddr::V4(10, 0, 0, last);
    hc.ipv6 = wire::IpAddr::V6({0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last});
    hc.mac.bytes = {2, 0, 0, 0, 0, last};
    Host* h = Must(fabric.AddHost(hc));
    LinkConfig lc;
    lc.rate_bps = rate;
    lc.delay_ps = delay_ps;
    Must(fabric.Connect(NodeRef::OfHost(h->id()), NodeRef::OfSwitch(sw), lc));
    return h;
  }
};

}  // namespace metaroce::sim::testing

#endif  // METAROCE_TEST_SIM_TEST_UTIL_H
