/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "fake_port.h"

#include <cstdio>
#include <cstdlib>

#include "mr_wire_sample.h"

namespace metaroce::testing {
namespace {

// The sample conversation's first WRITE packet (4 KiB payload), IPv4 or IPv6.
const wire::SamplePacket& Sample(bool v6) {
  static const std::vector<wire::SamplePacket> all = wire::SampleConversation();
  const std::string name = v6 ? "v6_write_first" : "v4_write_first";
  for (const wire::SamplePacket& s : all) {
    if (s.name == name) return s;
  }
  std::fprintf(stderr, "no sample packet %s\n", name.c_str());
  std::abort();
}

}  // namespace

FakePort::FakePort(const FakeConfig& cfg) : cfg_(cfg) {
  info_.driver = "fake";
  info_.framing = cfg.framing;
  info_.ip = Sample(cfg.v6).frame.dst;
  info_.udp_port = wire::kDefaultUdpPort;
  info_.num_queues = 1;
  info_.max_frame_bytes = 9216;
  for (auto& b : rx_bufs_) b.resize(9216);
  for (auto& b : tx_bufs_) b.resize(9216);
}

wire::FrameInfo FakePort::FrameFor(uint32_t psn) const {
  wire::FrameInfo f = Sample(cfg_.v6).frame;
  f.src_port = cfg_.src_ports[psn % cfg_.src_ports.size()];
  f.ecn = cfg_.odd_not_ect && psn % 2 == 1 ? wire::Ecn::kNotEct : wire::Ecn::kEct0;
  return f;
}

void FakePort::Make(uint32_t psn, std::vector<uint8_t>* bytes, wire::FrameInfo* addr) const {
  const wire::SamplePacket& s = Sample(cfg_.v6);
  wire::Packet p = s.Get();
  p.data.psn = psn;
  p.data.una_psn = psn;
  *addr = FrameFor(psn);
  bytes->resize(9216);
  absl::StatusOr<size_t> n;
  if (cfg_.framing == transport::Framing::kUdp) {
    n = wire::EncodeDatagram(p, *bytes);
  } else {
    wire::EncodeOptions opt;
    opt.udp_checksum_ipv4 = true;  // so corruption tests cover the checksum fix-up on IPv4 too
    n = wire::EncodeFrame(*addr, p, *bytes, opt);
  }
  if (!n.ok()) {
    std::fprintf(stderr, "FakePort: %s\n", std::string(n.status().message()).c_str());
    std::abort();
  }
  bytes->resize(*n);
}

uint16_t FakePort::RxBurst(uint16_t queue, port::RxPacket* pkts, uint16_t n) {
  if (queue != 0) return 0;
  uint16_t out = 0;
  while (out < n && out < kBurst && next_ < cfg_.total) {
    Make(next_++, &rx_bufs_[out], &pkts[out].addr);
    pkts[out].data = rx_bufs_[out];
    stats_.rx_packets++;
    out++;
  }
  return out;
}

uint16_t FakePort::TxAlloc(uint16_t queue, transport::TxSlot* slots, uint16_t n) {
  uint16_t out = 0;
  for (; queue == 0 && out < n && out < kBurst; out++) {
    slots[out].buf = tx_bufs_[out].data();
    slots[out].cap = static_cast<uint32_t>(tx_bufs_[out].size());
    slots[out].len = 0;
  }
  return out;
}

uint16_t FakePort::TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) {
  uint16_t sent = 0;
  for (uint16_t i = 0; queue == 0 && i < n; i++) {
    if (slots[i].len == 0) continue;
    wire::Packet p;
    wire::FrameInfo f = slots[i].addr;
    if (!Decode(cfg_.framing, {slots[i].buf, slots[i].len}, &p, &f)) continue;
    sent_ports_.push_back(f.src_port);
    stats_.tx_packets++;
    sent++;
  }
  return sent;
}

bool Decode(transport::Framing framing, std::span<const uint8_t> data, wire::Packet* p,
            wire::FrameInfo* info, wire::ParseError* why) {
  wire::ParseOptions opt;
  const wire::ParseError e = framing == transport::Framing::kUdp
                                 ? wire::ParseDatagram(data, opt, p)
                                 : wire::ParseFrame(data, opt, info, p);
  if (why != nullptr) *why = e;
  return e == wire::ParseError::kOk;
}

}  // namespace metaroce::testing
