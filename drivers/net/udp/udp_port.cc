/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Opening the udp port, its transmit buffer pool and its counters.

#include "udp_port_private.h"

#include <cstring>

namespace metaroce::udp {

absl::StatusOr<std::unique_ptr<UdpPort>> UdpPort::Open(const UdpArgs& args) {
  std::unique_ptr<UdpPort> p(new UdpPort());
  uint16_t bound = 0;
  absl::StatusOr<Fd> rx = OpenRxSocket(args, &bound);
  if (!rx.ok()) return rx.status();
  p->rx_fd_ = std::move(*rx);

  p->info_.driver = "udp";
  p->info_.framing = transport::Framing::kUdp;
  p->info_.ip = args.ip;
  p->info_.udp_port = bound;
  p->info_.num_queues = 1;
  p->info_.max_frame_bytes = kMaxDatagramBytes;
  p->sock_of_port_.assign(65536, kNoSocket);
  p->tx_socks_.reserve(args.source_ports);
  for (uint32_t i = 0; i < args.source_ports; i++) {
    const uint16_t want =
        args.first_source_port == 0 ? 0 : static_cast<uint16_t>(args.first_source_port + i);
    uint16_t got = 0;
    absl::StatusOr<Fd> fd = OpenTxSocket(args, want, &got);
    if (!fd.ok()) return fd.status();
    p->sock_of_port_[got] = static_cast<uint16_t>(p->tx_socks_.size());
    p->tx_socks_.push_back(std::move(*fd));
    p->info_.source_ports.push_back(got);
  }

  p->tx_mem_.resize(size_t{kTxPoolBuffers} * kMaxDatagramBytes);
  p->tx_lent_.assign(kTxPoolBuffers, 0);
  p->tx_free_.reserve(kTxPoolBuffers);
  for (uint32_t i = kTxPoolBuffers; i > 0; i--) p->tx_free_.push_back(i - 1);
  p->SetUpScratch();
  return p;
}

void UdpPort::SetUpScratch() {
  rx_mem_.resize(size_t{kMaxBatch} * kMaxDatagramBytes);
  std::memset(rx_msgs_.data(), 0, sizeof(rx_msgs_));
  for (uint32_t i = 0; i < kMaxBatch; i++) {
    rx_iov_[i].iov_base = rx_mem_.data() + size_t{i} * kMaxDatagramBytes;
    rx_iov_[i].iov_len = kMaxDatagramBytes;
    msghdr& h = rx_msgs_[i].msg_hdr;
    h.msg_name = &rx_from_[i];
    h.msg_iov = &rx_iov_[i];
    h.msg_iovlen = 1;
    h.msg_control = rx_ctrl_[i].data();
  }
  std::memset(tx_msgs_.data(), 0, sizeof(tx_msgs_));
}

uint16_t UdpPort::TxAlloc(uint16_t queue, transport::TxSlot* slots, uint16_t n) {
  uint16_t got = 0;
  if (queue == 0) {
    while (got < n && !tx_free_.empty()) {
      const uint32_t idx = tx_free_.back();
      tx_free_.pop_back();
      tx_lent_[idx] = 1;
      transport::TxSlot& s = slots[got++];
      s.buf = tx_mem_.data() + size_t{idx} * kMaxDatagramBytes;
      s.cap = kMaxDatagramBytes;
      s.len = 0;
      s.addr = wire::FrameInfo{};
      s.cookie = reinterpret_cast<void*>(uintptr_t{idx} + 1);
    }
  }
  if (got < n) tx_no_buffer_.Add(1);
  return got;
}

bool UdpPort::Release(const transport::TxSlot& s) {
  const uintptr_t c = reinterpret_cast<uintptr_t>(s.cookie);
  if (c == 0 || c > kTxPoolBuffers) return false;
  const uint32_t idx = static_cast<uint32_t>(c - 1);
  if (!tx_lent_[idx] || s.buf != tx_mem_.data() + size_t{idx} * kMaxDatagramBytes) return false;
  tx_lent_[idx] = 0;
  tx_free_.push_back(idx);
  return true;
}

port::PortStats UdpPort::stats() const {
  port::PortStats s;
  s.rx_packets = rx_packets_.Get();
  s.rx_bytes = rx_bytes_.Get();
  s.rx_errors = rx_errors_.Get();
  s.tx_packets = tx_packets_.Get();
  s.tx_bytes = tx_bytes_.Get();
  s.tx_errors = tx_errors_.Get();
  s.tx_no_buffer = tx_no_buffer_.Get();
  return s;
}

absl::StatusOr<std::unique_ptr<port::Port>> OpenUdpPort(const UdpArgs& args) {
  absl::StatusOr<std::unique_ptr<UdpPort>> p = UdpPort::Open(args);
  if (!p.ok()) return p.status();
  return std::unique_ptr<port::Port>(std::move(*p));
}

}  // namespace metaroce::udp
