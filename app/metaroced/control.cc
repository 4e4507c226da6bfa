/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The control thread: the Unix socket applications attach to (its file mode
// decides who may), one session per attached context, requests turned into
// work on the owning shard, end of session (socket closed, or the process
// gone: its pidfd) reclaiming everything. Signals end Serve().

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "daemon.h"
#include "mr_ipc_futex.h"
#include "mr_ipc_socket.h"
#include "mr_log.h"

namespace metaroce::daemon {
namespace {

// epoll data: the descriptor, with this bit for an application's pidfd.
constexpr uint64_t kPidfdTag = uint64_t{1} << 40;

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

absl::Status MakeParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return absl::OkStatus();
  const std::string dir = path.substr(0, slash);
  std::string at;
  for (size_t i = 1; i <= dir.size(); i++) {
    if (i == dir.size() || dir[i] == '/') {
      at = dir.substr(0, i);
      if (mkdir(at.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::PermissionDeniedError(
            absl::StrCat("metaroced: cannot create ", at, " for the socket: ", strerror(errno)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

Server::Server(const DaemonConfig& cfg, runtime::Runtime* rt, std::vector<ShardService*> shards)
    : cfg_(cfg), rt_(rt), shards_(std::move(shards)) {
  // QP numbers start anywhere, as an engine's do: a stale peer's packets
  // rarely name a QP of this daemon's next run.
  std::random_device rd;
  next_qpn_ = rd();
}

Server::~Server() {
  CloseAll();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(cfg_.socket_path.c_str());
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (signal_fd_ >= 0) close(signal_fd_);
}

absl::Status Server::Listen() {
  const std::string& path = cfg_.socket_path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Bound as PATH.new and renamed once it listens: a client that sees the
  // path can connect at once (bind creates the file before listen).
  const std::string tmp = path + ".new";
  if (path.empty() || tmp.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metaroced: daemon.socket '", path, "' must be 1..", sizeof(addr.sun_path) - 5, " bytes"));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (absl::Status s = MakeParentDir(path); !s.ok()) return s;
  // A socket file left by a daemon that died is replaced; a live one is not.
  const int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (probe >= 0) {
    const bool live = connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(probe);
    if (live) {
      return absl::AlreadyExistsError(
          absl::StrCat("metaroced: another daemon serves ", path,
                       " (stop it, or give this one another daemon.socket / --socket)"));
    }
  }
  unlink(path.c_str());
  unlink(tmp.c_str());
  std::memcpy(addr.sun_path, tmp.c_str(), tmp.size() + 1);
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      chmod(tmp.c_str(), cfg_.socket_mode) != 0 || listen(listen_fd_, 64) != 0 ||
      rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return absl::PermissionDeniedError(
        absl::StrCat("metaroced: cannot listen on ", path, ": ", strerror(errno)));
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (epoll_fd_ < 0 || signal_fd_ < 0) {
    return absl::InternalError(absl::StrCat("metaroced: epoll/signalfd: ", strerror(errno)));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = static_cast<uint64_t>(listen_fd_);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = static_cast<uint64_t>(signal_fd_);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, signal_fd_, &ev);
  MR_LOG(INFO, "metaroced: listening on %s (mode %04o)", path.c_str(), cfg_.socket_mode);
  return absl::OkStatus();
}

void Server::Serve() {
  std::array<epoll_event, 32> evs;
  for (;;) {
    const int n = epoll_wait(epoll_fd_, evs.data(), static_cast<int>(evs.size()), -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      MR_LOG(ERR, "metaroced: epoll_wait: %s", strerror(errno));
      return;
    }
    for (int i = 0; i < n; i++) {
      const uint64_t d = evs[i].data.u64;
      if (d == static_cast<uint64_t>(signal_fd_)) {
        signalfd_siginfo si;
        if (read(signal_fd_, &si, sizeof(si)) != sizeof(si)) continue;
        if (si.ssi_signo == SIGUSR1) {
          for (ShardService* sh : shards_) sh->RunOnShard([sh] { sh->LogState(); });
          continue;
        }
        MR_LOG(NOTICE, "metaroced: signal %u: shutting down", si.ssi_signo);
        return;
      }
      if (d == static_cast<uint64_t>(listen_fd_)) {
        Accept();
        continue;
      }
      const int fd = static_cast<int>(d & ~kPidfdTag);
      App* app = nullptr;
      for (auto& [sock, a] : apps_) {
        if ((d & kPidfdTag) == 0 ? sock == fd : a->pidfd == fd) app = a.get();
      }
      if (app == nullptr) continue;
      if ((d & kPidfdTag) != 0 || (evs[i].events & (EPOLLHUP | EPOLLERR)) != 0) {
        Drop(app);
      } else {
        Handle(app);
      }
    }
  }
}

void Server::Accept() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        apps_.size() >= cfg_.max_apps) {
      MR_LOG(WARNING, "metaroced: refusing an application (pid %d): %s", cred.pid,
             apps_.size() >= cfg_.max_apps ? "daemon.max_apps reached" : "no credentials");
      close(fd);
      continue;
    }
    auto app = std::make_unique<App>();
    app->id = next_app_id_++;
    app->pid = cred.pid;
    app->uid = cred.uid;
    app->sock = fd;
    app->pidfd = PidfdOpen(cred.pid);
    app->home = next_shard_;
    next_shard_ = static_cast<uint16_t>((next_shard_ + 1) % shards_.size());
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = static_cast<uint64_t>(fd);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    if (app->pidfd >= 0) {
      ev.events = EPOLLIN;
      ev.data.u64 = static_cast<uint64_t>(app->pidfd) | kPidfdTag;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, app->pidfd, &ev);
    }
    MR_LOG(INFO, "metaroced: app %llu attached (pid %d, uid %u, shard %u)",
           static_cast<unsigned long long>(app->id), app->pid, app->uid, app->home);
    apps_[fd] = std::move(app);
  }
}

void Server::Handle(App* app) {
  alignas(8) uint8_t buf[ipc::kMaxCtlBytes];
  int fds[ipc::kMaxCtlFds];
  int nfds = 0;
  const ssize_t n = ipc::RecvCtl(app->sock, buf, sizeof(buf), fds, &nfds);
  if (n <= 0) {
    if (n < 0 && n != -EMSGSIZE && n != -EPROTO) return;  // EAGAIN and friends
    Drop(app);
    return;
  }
  ipc::CtlHeader h;
  std::memcpy(&h, buf, sizeof(h));
  const uint8_t* body = buf + sizeof(h);
  const auto op = static_cast<ipc::Op>(h.op);
  std::vector<uint8_t> reply;
  std::vector<int> reply_fds;
  int status = 0;
  if (op == ipc::Op::kHello) {
    ipc::HelloReq req;
    if (app->seg != nullptr || h.body_len != sizeof(req)) {
      status = EPROTO;
    } else {
      std::memcpy(&req, body, sizeof(req));
      if (req.abi_version != ipc::kAbiVersion) {
        MR_LOG(WARNING, "metaroced: app %llu speaks ABI %u, this daemon %u: refused",
               static_cast<unsigned long long>(app->id), req.abi_version, ipc::kAbiVersion);
        status = EPROTONOSUPPORT;
      } else {
        const auto lanes = static_cast<uint32_t>(shards_.size());
        auto seg = Segment::Create("metaroce-app", ipc::AppSegmentBytes(lanes));
        const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        std::vector<int> kicks;
        for (uint32_t l = 0; l < lanes; l++)
          kicks.push_back(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        const bool kicks_ok = std::ranges::none_of(kicks, [](int fd) { return fd < 0; });
        if (!seg.ok() || efd < 0 || !kicks_ok) {
          if (efd >= 0) close(efd);
          for (const int fd : kicks) {
            if (fd >= 0) close(fd);
          }
          status = ENOMEM;
        } else {
          app->seg = std::move(*seg);
          app->lanes = lanes;
          app->async_efd = efd;
          app->kick_efds = std::move(kicks);
          for (uint16_t i = 0; i < shards_.size(); i++) {
            auto part = std::make_unique<AppPart>();
            part->app = app;
            part->shard = i;
            part->mem = std::make_unique<AppMemory>(app->pid);
            app->parts.push_back(std::move(part));
          }
          OnEveryShard(app, [](ShardService* sh, AppPart* part) { sh->AttachPart(part); });
          const runtime::Shard& s = rt_->shard(0);
          const transport::PeerAddr me = s.address();
          ipc::HelloRep rep;
          rep.app_id = static_cast<uint32_t>(app->id);
          std::snprintf(rep.device_name, sizeof(rep.device_name), "metaroce0");
          if (me.ip.v6) {
            std::memcpy(rep.gid, me.ip.bytes.data(), 16);
          } else {
            rep.gid[10] = rep.gid[11] = 0xff;
            std::memcpy(rep.gid + 12, me.ip.bytes.data(), 4);  // IPv4 is bytes 0..3
          }
          rep.node_guid = 0x024d520000000000ull | uint64_t{rep.gid[12]} << 24 |
                          uint64_t{rep.gid[13]} << 16 | uint64_t{rep.gid[14]} << 8 | rep.gid[15];
          rep.lid = static_cast<uint16_t>(rep.gid[14] << 8 | rep.gid[15]);
          rep.udp_port = s.udp_port();
          rep.mtu_bytes = cfg_.engine.max_payload;
          rep.max_msg_bytes = transport::kMaxMessageBytes;
          rep.max_mr_bytes = cfg_.limits.max_mr_bytes;
          rep.max_qp = std::min(cfg_.limits.max_qps, ipc::kMaxQpsPerApp);
          rep.max_cq = cfg_.limits.max_cqs;
          rep.max_mr = cfg_.limits.max_mrs;
          rep.max_pd = cfg_.limits.max_pds;
          rep.max_qp_wr = std::min(cfg_.limits.max_qp_wr, ipc::kMaxRingDepth);
          rep.max_cqe = std::min(cfg_.limits.max_cqe, ipc::kMaxRingDepth);
          rep.max_sge = ipc::kMaxSge;
          rep.max_inline = ipc::kMaxInlineBytes;
          rep.max_qp_rd_atom = 64;
          rep.max_comp_channels = cfg_.limits.max_comp_channels;
          rep.max_srq = cfg_.limits.max_srqs;
          rep.lanes = lanes;
          reply.resize(sizeof(rep));
          std::memcpy(reply.data(), &rep, sizeof(rep));
          reply_fds = {app->seg->fd(), app->async_efd};
          reply_fds.insert(reply_fds.end(), app->kick_efds.begin(), app->kick_efds.end());
        }
      }
    }
  } else if (app->seg == nullptr) {
    status = EPROTO;  // Hello first
  } else {
    status = Execute(app, op, body, h.body_len, fds, nfds, &reply, &reply_fds);
  }
  PublishObjects(app);
  ipc::CloseFds(fds, nfds);
  ipc::CtlHeader r = h;
  r.status = status;
  const int err = ipc::SendCtl(app->sock, r, reply.data(), status == 0 ? reply.size() : 0,
                               status == 0 ? reply_fds.data() : nullptr,
                               status == 0 ? static_cast<int>(reply_fds.size()) : 0);
  if (err != 0 || status == EPROTO) Drop(app);
}

void Server::Drop(App* app) {
  const int sock = app->sock;
  MR_LOG(INFO, "metaroced: app %llu (pid %d) detached: %u QPs, %u CQs, %u MRs reclaimed",
         static_cast<unsigned long long>(app->id), app->pid, app->qps.size(), app->cqs.size(),
         app->mrs.size());  // read here, before the shard destroys them
  for (const auto& part : app->parts) part->mem->gone.store(true);
  app->qps.ForEach([&](uint32_t, const QpMeta& qp) { qpns_.erase(qp.qpn); });
  if (!app->parts.empty()) {
    OnEveryShard(app, [](ShardService* sh, AppPart* part) { sh->DetachPart(part); });
    app->parts.clear();
  }
  PublishObjects(app);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, sock, nullptr);
  if (app->pidfd >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, app->pidfd, nullptr);
    close(app->pidfd);
  }
  close(sock);
  apps_.erase(sock);
}

void Server::CloseAll() {
  for (auto& [sock, app] : apps_) {
    if (app->seg != nullptr) {
      app->head()->daemon_gone.v.store(1, std::memory_order_release);
      ipc::FutexWakeAll(&app->head()->poll_wait.v);  // a poll asleep sees it now
    }
  }
  while (!apps_.empty()) Drop(apps_.begin()->second.get());
}

}  // namespace metaroce::daemon
