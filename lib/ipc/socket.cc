/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mr_ipc_socket.h"

namespace metaroce::ipc {

int SendCtl(int sock, CtlHeader h, const void* body, size_t body_len, const int* fds, int nfds) {
  if (nfds < 0 || nfds > kMaxCtlFds || sizeof(h) + body_len > kMaxCtlBytes) return EINVAL;
  h.body_len = static_cast<uint32_t>(body_len);
  iovec iov[2] = {{&h, sizeof(h)}, {const_cast<void*>(body), body_len}};
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = body_len != 0 ? 2 : 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * kMaxCtlFds)] = {};
  if (nfds > 0) {
    m.msg_control = ctl;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  for (;;) {
    const ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL);
    if (n >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

void CloseFds(int* fds, int n) {
  for (int i = 0; i < n; i++) {
    if (fds[i] >= 0) close(fds[i]);
    fds[i] = -1;
  }
}

ssize_t RecvCtl(int sock, void* buf, size_t cap, int* fds, int* nfds) {
  *nfds = 0;
  iovec iov{buf, cap};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * (kMaxCtlFds + 8))];
  m.msg_control = ctl;
  m.msg_controllen = sizeof(ctl);
  ssize_t n;
  do {
    n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const int k = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < k; i++) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (*nfds < kMaxCtlFds) {
        fds[(*nfds)++] = fd;
      } else {
        close(fd);
      }
    }
  }
  if (n == 0) return 0;
  if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    CloseFds(fds, *nfds);
    *nfds = 0;
    return -EMSGSIZE;
  }
  CtlHeader h;
  if (static_cast<size_t>(n) < sizeof(h)) {
    CloseFds(fds, *nfds);
    *nfds = 0;
    return -EPROTO;
  }
  std::memcpy(&h, buf, sizeof(h));
  if (h.body_len != static_cast<size_t>(n) - sizeof(h)) {
    CloseFds(fds, *nfds);
    *nfds = 0;
    return -EPROTO;
  }
  return n;
}

}  // namespace metaroce::ipc
