/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Socket plumbing of the udp driver: addresses, opening and configuring sockets.

#ifndef METAROCE_NET_UDP_SOCK_PRIVATE_H
#define METAROCE_NET_UDP_SOCK_PRIVATE_H

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "mr_net_udp.h"

namespace metaroce::udp {

/** An owned file descriptor, closed on destruction. */
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

/** Writes @p ip:@p port as a sockaddr_in or sockaddr_in6; returns its length. */
socklen_t ToSockaddr(const wire::IpAddr& ip, uint16_t port, sockaddr_storage* out);
/** Reads an AF_INET / AF_INET6 address; false for other families. */
bool FromSockaddr(const sockaddr_storage& ss, wire::IpAddr* ip, uint16_t* port);

/**
 * The receive socket: bound to args.ip:args.port (never shared: no
 * SO_REUSEADDR), non-blocking, IP_RECVTOS / IPV6_RECVTCLASS on, SO_RCVBUF and SO_BUSY_POLL as
 * asked. @p bound_port gets the port really bound (args.port 0: the kernel's).
 */
absl::StatusOr<Fd> OpenRxSocket(const UdpArgs& args, uint16_t* bound_port);

/**
 * One transmit socket bound to args.ip:@p port (0: an ephemeral port),
 * non-blocking, SO_SNDBUF as asked, a filter that drops everything it would
 * receive. @p bound_port gets the port really bound.
 */
absl::StatusOr<Fd> OpenTxSocket(const UdpArgs& args, uint16_t port, uint16_t* bound_port);

}  // namespace metaroce::udp

#endif  // METAROCE_NET_UDP_SOCK_PRIVATE_H
