/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-run PROGRAM [ARGS...]: runs an unmodified verbs program over metaroce.
// It checks that a daemon answers on the socket (failing at once with how to
// start one if not), then puts the verbs shim (a libibverbs.so.1 of our own)
// first on the program's library path and executes it.

#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "mr_ipc.h"

namespace {

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: mr-run PROGRAM [ARGS...]\n"
               "Runs a verbs program (ibv_rc_pingpong, ib_write_bw, ...) over metaroce.\n"
               "  METAROCE_SOCKET   the daemon's socket (default %s)\n"
               "  METAROCE_SHIM_DIR where libibverbs.so.1 of metaroce is (default: found)\n",
               metaroce::ipc::kDefaultSocketPath);
}

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The build tree's shim (mr-run in BUILD/app, the shim in BUILD/lib/verbs),
// else the installed one.
std::string ShimDir() {
  if (const char* d = std::getenv("METAROCE_SHIM_DIR"); d != nullptr && *d != '\0') return d;
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir.resize(dir.rfind('/'));
    const std::string build = dir + "/../lib/verbs";
    if (IsFile(build + "/libibverbs.so.1")) return build;
  }
  return MR_SHIM_INSTALL_DIR;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    Usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char* env = std::getenv(metaroce::ipc::kSocketEnv);
  const std::string sock = env != nullptr && *env != '\0' ? env : metaroce::ipc::kDefaultSocketPath;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (sock.size() >= sizeof(addr.sun_path)) {
    std::fprintf(stderr, "mr-run: %s=%s is too long for a Unix socket path\n",
                 metaroce::ipc::kSocketEnv, sock.c_str());
    return 2;
  }
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::fprintf(stderr,
                 "mr-run: no metaroce daemon at %s (%s).\n"
                 "Start one first: `metaroced` (kernel UDP on 127.0.0.1, no configuration), or\n"
                 "`metaroced --socket PATH` and set %s=PATH here.\n",
                 sock.c_str(), std::strerror(errno), metaroce::ipc::kSocketEnv);
    return 2;
  }
  close(fd);
  const std::string shim = ShimDir();
  if (!IsFile(shim + "/libibverbs.so.1")) {
    std::fprintf(stderr, "mr-run: the verbs shim is not in %s (set METAROCE_SHIM_DIR)\n",
                 shim.c_str());
    return 2;
  }
  const char* old = std::getenv("LD_LIBRARY_PATH");
  const std::string path = old != nullptr && *old != '\0' ? shim + ":" + old : shim;
  setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  setenv(metaroce::ipc::kSocketEnv, sock.c_str(), 1);
  execvp(argv[1], argv + 1);
  std::fprintf(stderr, "mr-run: cannot run %s: %s\n", argv[1], std::strerror(errno));
  return 127;
}
