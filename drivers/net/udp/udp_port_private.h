/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The udp driver's Port: one receive socket, one transmit socket per source port.

#ifndef METAROCE_NET_UDP_UDP_PORT_PRIVATE_H
#define METAROCE_NET_UDP_UDP_PORT_PRIVATE_H

#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include "mr_net_udp.h"
#include "mr_port_driver.h"
#include "sock_private.h"

namespace metaroce::udp {

using Counter = port::StatCounter;

/**
 * A udp port: one non-blocking receive socket on ip:port, one non-blocking
 * transmit socket per source port, a pool of kTxPoolBuffers transmit buffers.
 * Single queue; burst calls come from one thread, stats() from any.
 */
class UdpPort final : public port::Port {
 public:
  static absl::StatusOr<std::unique_ptr<UdpPort>> Open(const UdpArgs& args);

  const port::PortInfo& info() const override { return info_; }
  uint16_t RxBurst(uint16_t queue, port::RxPacket* pkts, uint16_t n) override;
  uint16_t TxAlloc(uint16_t queue, transport::TxSlot* slots, uint16_t n) override;
  uint16_t TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) override;
  port::PortStats stats() const override;
  int RxEventFd(uint16_t /*queue*/) override { return rx_fd_.get(); }

 private:
  static constexpr uint16_t kNoSocket = 0xffff;
  static constexpr size_t kCtrlBytes = 64;

  UdpPort() = default;
  // Points the recvmmsg()/sendmmsg() headers at their buffers.
  void SetUpScratch();
  // Takes a TxAlloc() buffer back; false if @p s does not hold one of ours.
  bool Release(const transport::TxSlot& s);
  // Sends up to kMaxBatch slots starting at @p slots; returns how many went out.
  uint16_t SendChunk(transport::TxSlot* slots, uint16_t n);
  // sendmmsg() of tx_msgs_[first, first+count) on socket @p fd.
  uint16_t SendRun(int fd, uint32_t first, uint32_t count);

  port::PortInfo info_;
  Fd rx_fd_;
  std::vector<Fd> tx_socks_;            ///< one per source port
  std::vector<uint16_t> sock_of_port_;  ///< source port -> tx_socks_ index, or kNoSocket

  // Receive scratch: one buffer, address and control block per batch entry.
  std::vector<uint8_t> rx_mem_;
  std::array<mmsghdr, kMaxBatch> rx_msgs_;
  std::array<iovec, kMaxBatch> rx_iov_;
  std::array<sockaddr_storage, kMaxBatch> rx_from_;
  alignas(cmsghdr) std::array<std::array<uint8_t, kCtrlBytes>, kMaxBatch> rx_ctrl_;

  // Transmit pool and scratch.
  std::vector<uint8_t> tx_mem_;
  std::vector<uint32_t> tx_free_;  ///< indices of free buffers (a stack)
  std::vector<uint8_t> tx_lent_;   ///< 1 while a buffer is out with the caller
  std::array<mmsghdr, kMaxBatch> tx_msgs_;
  std::array<iovec, kMaxBatch> tx_iov_;
  std::array<sockaddr_storage, kMaxBatch> tx_dst_;
  alignas(cmsghdr) std::array<std::array<uint8_t, kCtrlBytes>, kMaxBatch> tx_ctrl_;

  Counter rx_packets_, rx_bytes_, rx_errors_;
  Counter tx_packets_, tx_bytes_, tx_errors_, tx_no_buffer_;
};

}  // namespace metaroce::udp

#endif  // METAROCE_NET_UDP_UDP_PORT_PRIVATE_H
