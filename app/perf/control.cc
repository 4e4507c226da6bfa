/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The control channel: a TCP connection between the two mr-perf processes
// that carries the test spec, the QP addresses and the results, like
// perftest's out-of-band exchange. No MetaRoCE traffic goes over it.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/numbers.h"
#include "perf.h"

namespace metaroce::perf {

Control::~Control() { close(fd_); }

std::unique_ptr<Control> Control::Listen(uint16_t port) {
  const int ls = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(port);
  if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(ls, 1) != 0) {
    std::fprintf(stderr, "mr-perf: cannot listen on TCP port %u: %s\n", port, strerror(errno));
    close(ls);
    return nullptr;
  }
  const int fd = accept(ls, nullptr, nullptr);
  close(ls);
  if (fd < 0) {
    std::fprintf(stderr, "mr-perf: accept: %s\n", strerror(errno));
    return nullptr;
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return std::unique_ptr<Control>(new Control(fd));
}

std::unique_ptr<Control> Control::Connect(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  uint32_t port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port) ||
      port == 0 || port > 65535) {
    std::fprintf(stderr, "mr-perf: --connect takes HOST:TCPPORT, not '%s'\n", host_port.c_str());
    return nullptr;
  }
  std::string host = host_port.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 ||
      res == nullptr) {
    std::fprintf(stderr, "mr-perf: cannot resolve '%s'\n", host.c_str());
    return nullptr;
  }
  int fd = -1;
  // The server may still be starting: retry for about 10 s.
  for (int tries = 0; tries < 200 && fd < 0; tries++) {
    fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
      usleep(50'000);
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    std::fprintf(stderr, "mr-perf: cannot connect to %s: %s\n", host_port.c_str(), strerror(errno));
    return nullptr;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return std::unique_ptr<Control>(new Control(fd));
}

bool Control::Send(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t k = send(fd_, b, n, MSG_NOSIGNAL);
    if (k <= 0) {
      if (k < 0 && errno == EINTR) continue;
      return false;
    }
    b += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool Control::Recv(void* p, size_t n) {
  return recv(fd_, p, n, MSG_WAITALL) == static_cast<ssize_t>(n);
}

bool Control::TryRecv(void* p, size_t n, bool* closed) {
  *closed = false;
  const ssize_t k = recv(fd_, p, n, MSG_PEEK | MSG_DONTWAIT);
  if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    *closed = true;
    return false;
  }
  if (k < static_cast<ssize_t>(n)) return false;
  return Recv(p, n);
}

}  // namespace metaroce::perf
