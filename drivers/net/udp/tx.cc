/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Transmit: a burst grouped by source port, one sendmmsg() per socket; each
// datagram carries its TOS / traffic class (DSCP and ECN) as a control message.

#include <errno.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "udp_port_private.h"

namespace metaroce::udp {

uint16_t UdpPort::TxBurst(uint16_t queue, transport::TxSlot* slots, uint16_t n) {
  uint16_t sent = 0;
  if (queue != 0) {  // nothing of another queue came from our pool
    tx_errors_.Add(n);
    return 0;
  }
  for (uint16_t base = 0; base < n; base += kMaxBatch) {
    const uint16_t count = static_cast<uint16_t>(std::min<uint32_t>(n - base, kMaxBatch));
    sent += SendChunk(slots + base, count);
  }
  return sent;
}

uint16_t UdpPort::SendChunk(transport::TxSlot* slots, uint16_t n) {
  // Valid packets, as (socket, slot index), stably ordered by socket.
  std::array<std::pair<uint32_t, uint16_t>, kMaxBatch> order;
  uint32_t k = 0;
  uint64_t bad = 0;
  for (uint16_t i = 0; i < n; i++) {
    const transport::TxSlot& s = slots[i];
    if (s.len == 0) continue;  // returned unused
    const uint16_t sock = sock_of_port_[s.addr.src_port];
    if (s.len > kMaxDatagramBytes || s.addr.dst.v6 != info_.ip.v6 || sock == kNoSocket ||
        s.addr.dst_port == 0) {
      bad++;  // never sent from a port other than the one asked for
      continue;
    }
    order[k++] = {sock, i};
  }
  // Insertion sort: stable, no allocation, and bursts are short.
  for (uint32_t j = 1; j < k; j++) {
    const auto item = order[j];
    uint32_t m = j;
    for (; m > 0 && order[m - 1].first > item.first; m--) order[m] = order[m - 1];
    order[m] = item;
  }
  for (uint32_t j = 0; j < k; j++) {
    const transport::TxSlot& s = slots[order[j].second];
    tx_iov_[j].iov_base = s.buf;
    tx_iov_[j].iov_len = s.len;
    msghdr& h = tx_msgs_[j].msg_hdr;
    h.msg_name = &tx_dst_[j];
    h.msg_namelen = ToSockaddr(s.addr.dst, s.addr.dst_port, &tx_dst_[j]);
    h.msg_iov = &tx_iov_[j];
    h.msg_iovlen = 1;
    // IP_TOS / IPV6_TCLASS per datagram: no setsockopt() when marks change.
    const int tos = ((s.addr.dscp & 0x3f) << 2) | (static_cast<int>(s.addr.ecn) & 3);
    cmsghdr* c = reinterpret_cast<cmsghdr*>(tx_ctrl_[j].data());
    c->cmsg_level = info_.ip.v6 ? IPPROTO_IPV6 : IPPROTO_IP;
    c->cmsg_type = info_.ip.v6 ? IPV6_TCLASS : IP_TOS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &tos, sizeof(tos));
    h.msg_control = c;
    h.msg_controllen = CMSG_SPACE(sizeof(int));
  }
  uint16_t sent = 0;
  for (uint32_t first = 0; first < k;) {
    uint32_t last = first + 1;
    while (last < k && order[last].first == order[first].first) last++;
    sent += SendRun(tx_socks_[order[first].first].get(), first, last - first);
    first = last;
  }
  for (uint16_t i = 0; i < n; i++) {
    if (!Release(slots[i])) bad++;
  }
  tx_errors_.Add(bad);
  return sent;
}

uint16_t UdpPort::SendRun(int fd, uint32_t first, uint32_t count) {
  uint32_t done = 0;
  uint64_t bytes = 0;
  uint32_t sent = 0;
  while (done < count) {
    const int r = sendmmsg(fd, tx_msgs_.data() + first + done, count - done, MSG_DONTWAIT);
    if (r > 0) {
      for (int j = 0; j < r; j++) bytes += tx_msgs_[first + done + j].msg_len;
      done += r;
      sent += r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
      tx_errors_.Add(count - done);  // full: drop the rest, the transport recovers them
      break;
    }
    tx_errors_.Add(1);  // the kernel refused this one datagram; try the ones after it
    done++;
  }
  tx_packets_.Add(sent);
  tx_bytes_.Add(bytes);
  return static_cast<uint16_t>(sent);
}

}  // namespace metaroce::udp
