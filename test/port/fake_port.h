/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A Port that receives a numbered stream of valid MetaRoCE packets (PSN = its
// number) and records what it is asked to send: the inner port of the fault tests.

#ifndef METAROCE_TEST_PORT_FAKE_PORT_H
#define METAROCE_TEST_PORT_FAKE_PORT_H

#include <array>
#include <vector>

#include "mr_port.h"
#include "mr_wire.h"

namespace metaroce::testing {

/** How the fake port's packets look. */
struct FakeConfig {
  transport::Framing framing = transport::Framing::kUdp;
  bool v6 = false;
  uint32_t total = 10000;                                          ///< packets it receives in all
  std::vector<uint16_t> src_ports = {50000, 50001, 50002, 50003};  ///< by PSN, round robin
  bool odd_not_ect = false;  ///< odd PSNs are Not-ECT (even: ECT(0))
  int rx_event_fd = -1;      ///< what RxEventFd() returns
};

class FakePort final : public port::Port {
 public:
  explicit FakePort(const FakeConfig& cfg);

  const port::PortInfo& info() const override { return info_; }
  uint16_t RxBurst(uint16_t queue, port::RxPacket* pkts, uint16_t n) override;
  uint16_t TxAlloc(uint16_t queue, transport::TxSlot* slots, uint16_t n) override;
  uint16_t TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) override;
  port::PortStats stats() const override { return stats_; }
  int RxEventFd(uint16_t /*queue*/) override { return cfg_.rx_event_fd; }

  /** Packet @p psn as it would be received: bytes and addresses. */
  void Make(uint32_t psn, std::vector<uint8_t>* bytes, wire::FrameInfo* addr) const;
  /** Source ports of the packets TxBurst() really sent. */
  const std::vector<uint16_t>& sent_ports() const { return sent_ports_; }
  /** The encapsulation packet @p psn gets (before encoding). */
  wire::FrameInfo FrameFor(uint32_t psn) const;

 private:
  static constexpr size_t kBurst = 32;
  FakeConfig cfg_;
  port::PortInfo info_;
  port::PortStats stats_;
  uint32_t next_ = 0;
  std::array<std::vector<uint8_t>, kBurst> rx_bufs_;
  std::array<std::vector<uint8_t>, kBurst> tx_bufs_;
  std::vector<uint16_t> sent_ports_;
};

/** Parses what a fake port's packet became; false if it no longer parses. */
bool Decode(transport::Framing framing, std::span<const uint8_t> data, wire::Packet* p,
            wire::FrameInfo* info, wire::ParseError* why = nullptr);

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_PORT_FAKE_PORT_H
