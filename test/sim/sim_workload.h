/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A synthetic workload for determinism tests and the benchmark: every host
// sends MetaRoCE frames to peers at random (drawn from its own Host::rng()),
// spraying over source ports, and answers a share of what it receives, the
// way an engine answers data with ACKs. Frames are built once per size and
// patched in place, so the workload itself does not allocate per frame.

#ifndef METAROCE_TEST_SIM_WORKLOAD_H
#define METAROCE_TEST_SIM_WORKLOAD_H

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "mr_sim.h"
#include "mr_wire.h"

namespace metaroce::sim::testing {

struct WorkloadConfig {
  uint32_t frame_bytes_min = 256;  ///< sizes: kSizeClasses steps from min to max
  uint32_t frame_bytes_max = 4096;
  uint32_t sports = 64;                  ///< source ports each host sprays over
  SimTime mean_gap_ps = 200 * kPsPerNs;  ///< between a host's sends (uniform 0..2x)
  double reply_probability = 0.25;       ///< answer a received frame with a 128-byte frame
  bool fill_nic = false;                 ///< also send whenever the NIC has room (saturate)
  bool digest = true;                    ///< hash every received frame into `digest`
  SimTime stop_at_ps = kSimTimeNever;
};

/** Per-host traffic source and sink. */
class WorkloadEndpoint : public Endpoint {
 public:
  static constexpr uint32_t kSizeClasses = 8;

  WorkloadEndpoint(Host* host, std::vector<Host*> peers, const WorkloadConfig& c)
      : host_(host), peers_(std::move(peers)), c_(c) {
    host->Attach(this);
    host->SetTimer(0);
    // Build every frame up front so that sending never allocates.
    for (Host* peer : peers_) {
      if (templates_.size() < peer->id() + 1) templates_.resize(peer->id() + 1);
      for (uint32_t cls = 0; cls < kSizeClasses; cls++) Template(peer, cls);
    }
  }
  ~WorkloadEndpoint() override { host_->Attach(nullptr); }

  void OnFrame(SimTime now, std::span<const uint8_t> frame) override {
    rx_frames++;
    rx_bytes += frame.size();
    // Order-sensitive digest of everything received.
    if (c_.digest) digest = Mix64(digest ^ HashBytes(frame) ^ static_cast<uint64_t>(now));
    if (now < c_.stop_at_ps && host_->rng().Bernoulli(c_.reply_probability)) SendOne(kReply);
  }
  void OnTimer(SimTime now) override {
    if (now >= c_.stop_at_ps) return;
    SendOne(static_cast<uint32_t>(host_->rng().Below(kSizeClasses - 1)));
    host_->SetTimer(now + host_->rng().Range(1, 2 * c_.mean_gap_ps));
  }
  void OnTxReady(SimTime now) override {
    if (!c_.fill_nic || now >= c_.stop_at_ps) return;
    while (host_->TxQueueFree() > 0) SendOne(kSizeClasses - 2);  // the largest
  }

  uint64_t rx_frames = 0;
  uint64_t rx_bytes = 0;
  uint64_t tx_frames = 0;
  uint64_t tx_full = 0;
  uint64_t digest = 0;

 private:
  // Size class kReply is a 128-byte frame; the others step from min to max.
  static constexpr uint32_t kReply = kSizeClasses - 1;
  uint32_t ClassBytes(uint32_t cls) const {
    if (cls == kReply) return 128;
    return c_.frame_bytes_min +
           (c_.frame_bytes_max - c_.frame_bytes_min) * cls / (kSizeClasses - 2);
  }

  // A template frame per (peer, size class), built on first use.
  std::vector<uint8_t>& Template(Host* peer, uint32_t cls) {
    auto& t = templates_[peer->id()][cls];
    if (t.empty()) {
      const uint32_t bytes = ClassBytes(cls);
      wire::FrameInfo fi;
      fi.eth_src = host_->mac();
      fi.eth_dst = peer->mac();
      fi.src = host_->ipv4();
      fi.dst = peer->ipv4();
      const size_t fixed = wire::kEthHeaderBytes + wire::kIpv4HeaderBytes + wire::kUdpHeaderBytes +
                           wire::kCommonHeaderBytes +
                           wire::TypeHeaderBytes(wire::PacketType::kWrite) + wire::kCrcBytes;
      std::vector<uint8_t> payload(bytes > fixed ? bytes - fixed : 0, 0x5a);
      wire::Packet p;
      p.type = wire::PacketType::kWrite;
      p.dst_conn_id = 1;
      p.data.stream_id = 1;
      p.data.src_stream = 1;
      p.data.msg_len = static_cast<uint32_t>(payload.size());
      p.payload = payload;
      t.resize(bytes + 64);
      auto n = wire::EncodeFrame(fi, p, t);
      t.resize(n.ok() ? *n : 0);
    }
    return t;
  }

  void SendOne(uint32_t cls) {
    Host* peer = peers_[host_->rng().Below(peers_.size())];
    if (templates_.size() < peer->id() + 1) templates_.resize(peer->id() + 1);
    std::vector<uint8_t>& f = Template(peer, cls);
    const auto sport = static_cast<uint16_t>(49152 + host_->rng().Below(c_.sports));
    const size_t udp = wire::kEthHeaderBytes + wire::kIpv4HeaderBytes;
    f[udp] = static_cast<uint8_t>(sport >> 8);
    f[udp + 1] = static_cast<uint8_t>(sport);
    if (host_->Send(f)) {
      tx_frames++;
    } else {
      tx_full++;
    }
  }

  Host* host_;
  std::vector<Host*> peers_;
  WorkloadConfig c_;
  std::vector<std::array<std::vector<uint8_t>, kSizeClasses>> templates_;  // [peer id][class]
};

/** One WorkloadEndpoint per host, each sending to every other host. */
inline std::vector<std::unique_ptr<WorkloadEndpoint>> StartWorkload(const std::vector<Host*>& hosts,
                                                                    const WorkloadConfig& c) {
  std::vector<std::unique_ptr<WorkloadEndpoint>> eps;
  for (Host* h : hosts) {
    std::vector<Host*> peers;
    for (Host* p : hosts) {
      if (p != h) peers.push_back(p);
    }
    eps.push_back(std::make_unique<WorkloadEndpoint>(h, peers, c));
  }
  return eps;
}

}  // namespace metaroce::sim::testing

#endif  // METAROCE_TEST_SIM_WORKLOAD_H
