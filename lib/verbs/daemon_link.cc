/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The control channel to metaroced: one SOCK_SEQPACKET session per context,
// request/reply datagrams with descriptors (lib/ipc), daemon-death detection.

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mr_ipc_socket.h"
#include "verbs_private.h"

namespace metaroce::verbs {

void LogUnsupported(const char* fn, const char* why) {
  fprintf(stderr, "metaroce: %s is not supported (%s)\n", fn, why);
}

bool DebugEnabled() {
  static const bool on = getenv("METAROCE_DEBUG") != nullptr;
  return on;
}

void Debug(const char* fmt, ...) {
  if (!DebugEnabled()) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  fprintf(stderr, "metaroce: %s\n", line);
}

const char* SocketPath() {
  const char* p = getenv(ipc::kSocketEnv);
  return p != nullptr && p[0] != '\0' ? p : ipc::kDefaultSocketPath;
}

namespace {

// Sends one request and waits for its reply on @p sock (the caller
// serialises). Returns the reply length, 0 at EOF, or a negative errno.
ssize_t Exchange(int sock, uint32_t seq, ipc::Op op, const void* req, size_t req_len,
                 const int* fds_in, int nfds_in, void* buf, size_t cap, int* fds, int* nfds) {
  ipc::CtlHeader h;
  h.op = static_cast<uint16_t>(op);
  h.seq = seq;
  const int err = ipc::SendCtl(sock, h, req, req_len, fds_in, nfds_in);
  if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) return 0;
  if (err != 0) return -err;
  for (;;) {
    const ssize_t n = ipc::RecvCtl(sock, buf, cap, fds, nfds);
    if (n <= 0) return n == -ECONNRESET ? 0 : n;
    ipc::CtlHeader rh;
    memcpy(&rh, buf, sizeof(rh));
    if (rh.op == h.op && rh.seq == seq) return n;
    // A stale reply (a request that was interrupted earlier): drop it.
    ipc::CloseFds(fds, *nfds);
    *nfds = 0;
  }
}

}  // namespace

int OpenSession(int* sock_out, ipc::HelloRep* rep, int* fds, int* nfds) {
  *nfds = 0;
  const char* path = SocketPath();
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof(sa.sun_path)) return ENAMETOOLONG;
  strcpy(sa.sun_path, path);
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  int r;
  do {
    r = connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    const int e = errno;
    close(s);
    return e;
  }
  ipc::HelloReq req;
  alignas(8) char buf[ipc::kMaxCtlBytes];
  const ssize_t n =
      Exchange(s, 1, ipc::Op::kHello, &req, sizeof(req), nullptr, 0, buf, sizeof(buf), fds, nfds);
  int err = 0;
  ipc::CtlHeader h;
  if (n <= 0) {
    err = n == 0 ? ECONNRESET : static_cast<int>(-n);
  } else {
    memcpy(&h, buf, sizeof(h));
    if (h.status != 0) {
      err = h.status;
    } else if (h.body_len < sizeof(*rep)) {
      err = EPROTO;
    } else {
      memcpy(rep, buf + sizeof(h), sizeof(*rep));
      if (rep->abi_version != ipc::kAbiVersion) err = EPROTONOSUPPORT;
    }
  }
  if (err != 0) {
    ipc::CloseFds(fds, *nfds);
    *nfds = 0;
    close(s);
    return err;
  }
  rep->device_name[ipc::kDeviceNameBytes - 1] = '\0';
  *sock_out = s;
  return 0;
}

int Request(Context* c, ipc::Op op, const void* req, size_t req_len, void* rep, size_t rep_len,
            const int* fds_in, int nfds_in, int* fds_out, int want_fds) {
  alignas(8) char buf[ipc::kMaxCtlBytes];
  int fds[ipc::kMaxCtlFds];
  std::fill(std::begin(fds), std::end(fds), -1);
  int nfds = 0;
  ssize_t n;
  {
    std::lock_guard<std::mutex> lock(c->ctl_mu);
    if (c->gone.load(std::memory_order_acquire)) return EIO;
    n = Exchange(c->sock, ++c->seq, op, req, req_len, fds_in, nfds_in, buf, sizeof(buf), fds,
                 &nfds);
  }
  if (n == 0) {
    MarkGone(c);
    return EIO;
  }
  if (n < 0) return static_cast<int>(-n);
  ipc::CtlHeader h;
  memcpy(&h, buf, sizeof(h));
  int err = 0;
  if (h.status != 0) {
    err = h.status > 0 ? h.status : EPROTO;
  } else if (h.body_len < rep_len || nfds < want_fds) {
    err = EPROTO;
  }
  if (err != 0) {
    ipc::CloseFds(fds, nfds);
    return err;
  }
  if (rep_len != 0) memcpy(rep, buf + sizeof(h), rep_len);
  for (int i = 0; i < nfds; i++) {
    if (i < want_fds) {
      fds_out[i] = fds[i];
    } else {
      close(fds[i]);
    }
  }
  return 0;
}

int RequestHandle(Context* c, ipc::Op op, uint32_t handle) {
  ipc::HandleMsg m;
  m.handle = handle;
  return Request(c, op, &m, sizeof(m), nullptr, 0);
}

void MarkGone(Context* c) {
  if (c->gone.exchange(true, std::memory_order_acq_rel)) return;
  fprintf(stderr, "metaroce: the daemon at %s is gone: device %s is in fatal error\n", SocketPath(),
          c->dev->dev.name);
  // Wake ibv_get_async_event; comp channel waiters also poll the socket.
  const uint64_t one = 1;
  if (write(c->vctx.context.async_fd, &one, sizeof(one)) < 0) {
    // A full eventfd counter is already readable: nothing more to do.
  }
}

bool CheckDaemon(Context* c) {
  if (c->gone.load(std::memory_order_acquire)) return true;
  bool gone = c->app != nullptr && c->app->daemon_gone.v.load(std::memory_order_acquire) == 1;
  if (!gone) {
    char b;
    const ssize_t n = recv(c->sock, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  if (gone) MarkGone(c);
  return gone;
}

void* MapSegment(int fd, size_t bytes) {
  struct stat st;
  void* p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) >= bytes && bytes != 0) {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (p == MAP_FAILED) {
    errno = EPROTO;
    return nullptr;
  }
  return p;
}

}  // namespace metaroce::verbs
