/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Receive: recvmmsg() batches; ECN and DSCP from the IP_TOS / IPV6_TCLASS control message.

#include <errno.h>

#include <algorithm>
#include <cstring>

#include "udp_port_private.h"

namespace metaroce::udp {
namespace {

// The TOS / traffic class byte of a received datagram, or -1 if none came.
int ReadTos(const msghdr& h) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(const_cast<msghdr*>(&h), c)) {
    const bool tos = (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) ||
                     (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS);
    if (!tos) continue;
    const size_t len = c->cmsg_len - CMSG_LEN(0);
    if (len >= sizeof(int)) {  // IPV6_TCLASS: an int
      int v;
      std::memcpy(&v, CMSG_DATA(c), sizeof(v));
      return v & 0xff;
    }
    if (len >= 1) return *CMSG_DATA(c);  // IP_TOS: one byte
  }
  return -1;
}

}  // namespace

uint16_t UdpPort::RxBurst(uint16_t queue, port::RxPacket* pkts, uint16_t n) {
  if (queue != 0 || n == 0) return 0;
  const uint32_t want = std::min<uint32_t>(n, kMaxBatch);
  for (uint32_t i = 0; i < want; i++) {
    msghdr& h = rx_msgs_[i].msg_hdr;
    h.msg_namelen = sizeof(sockaddr_storage);
    h.msg_controllen = kCtrlBytes;
    h.msg_flags = 0;
  }
  int r;
  do {
    r = recvmmsg(rx_fd_.get(), rx_msgs_.data(), want, MSG_DONTWAIT, nullptr);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) {
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) rx_errors_.Add(1);
    return 0;
  }
  uint16_t out = 0;
  uint64_t bytes = 0;
  for (int i = 0; i < r; i++) {
    const msghdr& h = rx_msgs_[i].msg_hdr;
    port::RxPacket& p = pkts[out];
    p.addr = wire::FrameInfo{};
    if ((h.msg_flags & MSG_TRUNC) != 0 ||
        !FromSockaddr(rx_from_[i], &p.addr.src, &p.addr.src_port)) {
      rx_errors_.Add(1);  // larger than kMaxDatagramBytes, or a strange address
      continue;
    }
    const int tos = ReadTos(h);
    p.addr.ecn = static_cast<wire::Ecn>(tos < 0 ? 0 : tos & 3);
    p.addr.dscp = static_cast<uint8_t>(tos < 0 ? 0 : tos >> 2);
    p.addr.dst = info_.ip;
    p.addr.dst_port = info_.udp_port;
    p.data = {rx_mem_.data() + size_t{static_cast<uint32_t>(i)} * kMaxDatagramBytes,
              rx_msgs_[i].msg_len};
    bytes += rx_msgs_[i].msg_len;
    out++;
  }
  rx_packets_.Add(out);
  rx_bytes_.Add(bytes);
  return out;
}

}  // namespace metaroce::udp
