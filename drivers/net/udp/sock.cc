/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "sock_private.h"

namespace metaroce::udp {
namespace {

absl::Status SockError(const char* call, const UdpArgs& args, uint16_t port, int err) {
  const std::string what =
      absl::StrCat("udp: ", call, " on ", args.ip.ToString(), " port ", port, " failed");
  // A taken port: Unavailable (try another), where absl would say FailedPrecondition.
  if (err == EADDRINUSE) return absl::UnavailableError(absl::StrCat(what, ": ", strerror(err)));
  return absl::ErrnoToStatus(err, what);
}

absl::Status SetInt(int fd, int level, int opt, int value, const char* what, const UdpArgs& args,
                    uint16_t port) {
  if (setsockopt(fd, level, opt, &value, sizeof(value)) != 0) {
    return SockError(what, args, port, errno);
  }
  return absl::OkStatus();
}

// A socket buffer size: the *FORCE option first (root / CAP_NET_ADMIN may go
// beyond net.core.rmem_max / wmem_max), else the plain one, capped by the kernel.
absl::Status SetBuffer(int fd, int force_opt, int opt, uint32_t bytes, const char* what,
                       const UdpArgs& args, uint16_t port) {
  const int v = static_cast<int>(bytes);
  if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) == 0) return absl::OkStatus();
  return SetInt(fd, SOL_SOCKET, opt, v, what, args, port);
}

// A socket of the family of args.ip, bound to args.ip:port.
// Never SO_REUSEADDR: on Linux two UDP sockets that both set it may share a
// port, even one the kernel picks for port 0, and then each gets part of the
// other's datagrams (two mr-perf processes on port 0 were given the same
// port). A port in use is an error the caller can act on.
absl::StatusOr<Fd> OpenBound(const UdpArgs& args, uint16_t port, uint16_t* bound_port) {
  const int family = args.ip.v6 ? AF_INET6 : AF_INET;
  Fd fd(socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP));
  if (fd.get() < 0) return SockError("socket()", args, port, errno);
  if (args.ip.v6) {
    absl::Status s = SetInt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, 1, "IPV6_V6ONLY", args, port);
    if (!s.ok()) return s;
  }
  sockaddr_storage ss;
  const socklen_t len = ToSockaddr(args.ip, port, &ss);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    return SockError("bind()", args, port, errno);
  }
  socklen_t got = sizeof(ss);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &got) != 0) {
    return SockError("getsockname()", args, port, errno);
  }
  wire::IpAddr ip;
  if (!FromSockaddr(ss, &ip, bound_port))
    return SockError("getsockname()", args, port, EAFNOSUPPORT);
  return fd;
}

}  // namespace

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

socklen_t ToSockaddr(const wire::IpAddr& ip, uint16_t port, sockaddr_storage* out) {
  std::memset(out, 0, sizeof(*out));
  if (ip.v6) {
    auto* s = reinterpret_cast<sockaddr_in6*>(out);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    std::memcpy(s->sin6_addr.s6_addr, ip.bytes.data(), 16);
    return sizeof(sockaddr_in6);
  }
  auto* s = reinterpret_cast<sockaddr_in*>(out);
  s->sin_family = AF_INET;
  s->sin_port = htons(port);
  std::memcpy(&s->sin_addr.s_addr, ip.bytes.data(), 4);
  return sizeof(sockaddr_in);
}

bool FromSockaddr(const sockaddr_storage& ss, wire::IpAddr* ip, uint16_t* port) {
  if (ss.ss_family == AF_INET6) {
    const auto* s = reinterpret_cast<const sockaddr_in6*>(&ss);
    std::array<uint8_t, 16> b;
    std::memcpy(b.data(), s->sin6_addr.s6_addr, 16);
    *ip = wire::IpAddr::V6(b);
    *port = ntohs(s->sin6_port);
    return true;
  }
  if (ss.ss_family == AF_INET) {
    const auto* s = reinterpret_cast<const sockaddr_in*>(&ss);
    const auto* b = reinterpret_cast<const uint8_t*>(&s->sin_addr.s_addr);
    *ip = wire::IpAddr::V4(b[0], b[1], b[2], b[3]);
    *port = ntohs(s->sin_port);
    return true;
  }
  return false;
}

absl::StatusOr<Fd> OpenRxSocket(const UdpArgs& args, uint16_t* bound_port) {
  absl::StatusOr<Fd> fd = OpenBound(args, args.port, bound_port);
  if (!fd.ok()) return fd;
  const int f = fd->get();
  absl::Status s =
      args.ip.v6 ? SetInt(f, IPPROTO_IPV6, IPV6_RECVTCLASS, 1, "IPV6_RECVTCLASS", args, *bound_port)
                 : SetInt(f, IPPROTO_IP, IP_RECVTOS, 1, "IP_RECVTOS", args, *bound_port);
  if (s.ok() && args.rcvbuf_bytes != 0) {
    s = SetBuffer(f, SO_RCVBUFFORCE, SO_RCVBUF, args.rcvbuf_bytes, "SO_RCVBUF", args, *bound_port);
  }
  if (s.ok() && args.busy_poll_us != 0) {
    s = SetInt(f, SOL_SOCKET, SO_BUSY_POLL, static_cast<int>(args.busy_poll_us), "SO_BUSY_POLL",
               args, *bound_port);
  }
  if (!s.ok()) return s;
  return fd;
}

absl::StatusOr<Fd> OpenTxSocket(const UdpArgs& args, uint16_t port, uint16_t* bound_port) {
  absl::StatusOr<Fd> fd = OpenBound(args, port, bound_port);
  if (!fd.ok()) return fd;
  const int f = fd->get();
  // Nobody sends to a source port; whatever arrives is dropped before it queues.
  sock_filter drop_all[] = {{BPF_RET | BPF_K, 0, 0, 0}};
  sock_fprog prog = {1, drop_all};
  if (setsockopt(f, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) != 0) {
    return SockError("SO_ATTACH_FILTER", args, *bound_port, errno);
  }
  if (args.sndbuf_bytes != 0) {
    absl::Status s =
        SetBuffer(f, SO_SNDBUFFORCE, SO_SNDBUF, args.sndbuf_bytes, "SO_SNDBUF", args, *bound_port);
    if (!s.ok()) return s;
  }
  return fd;
}

}  // namespace metaroce::udp
