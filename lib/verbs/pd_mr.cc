/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Protection domains and memory regions, and how the daemon reaches a
// region's bytes while the application makes no verbs call (perftest's
// passive side).
//
// Two ways (ipc::MrMemory):
// - kSharedFd: the region's pages are backed by a memfd the daemon maps too.
//   Memory the application got from malloc/mmap is private anonymous memory:
//   at registration the shim moves the page-rounded range onto a memfd (copy
//   the current bytes into the memfd, then mmap it MAP_FIXED|MAP_SHARED over
//   the same addresses with the same protection). From then on the daemon
//   reads and writes the very pages the application uses, with plain memcpy.
// - kCrossMemory: the daemon uses process_vm_readv/writev (any memory; needs
//   ptrace rights over the application). Used for everything that cannot be
//   moved (file-backed, shared, stack, hugetlb, partly ours...), when
//   METAROCE_MR_MEMORY=cma, or when the daemon prefers it.
//
// CAVEAT of the move: between the copy and the remap (a few microseconds per
// MiB), stores another thread of the application makes to those pages are
// lost, and the pages are briefly unmapped-and-replaced under it. Verbs
// programs register buffers before they use them, but a program that
// registers memory other threads are writing at that moment (e.g. a heap page
// that also holds unrelated, live objects) must use METAROCE_MR_MEMORY=cma.
//
// fork(): a MAP_SHARED range would stay shared with a child, which could then
// silently overwrite the parent's (heap) pages. A pthread_atfork child handler
// turns every moved range back into private anonymous memory holding the
// bytes of the moment of the fork, so the child sees what fork() always gives
// (a copy) and the parent keeps its registered memory: IBV_FORK_UNNEEDED is
// true. (vfork/posix_spawn share the address space until exec: nothing to do.)

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <string>

#include "verbs_private.h"

namespace metaroce::verbs {
namespace {

constexpr uint64_t kPage = 4096;
constexpr char kMemfdName[] = "metaroce-mr";
constexpr char kMemfdPath[] = "/memfd:metaroce-mr (deleted)";

// Our memfds, by inode. They stay open for the life of the process: a later
// registration inside a moved range must send the daemon the same memfd, and
// an open descriptor is the only way to get it back (the mapping alone does
// not give one without CAP_SYS_ADMIN). The mapping keeps the memory alive
// either way; the cost is one descriptor per moved range.
std::mutex g_memfd_mu;  // also serialises moves, so two threads never move one range twice
std::unordered_map<uint64_t, int>* g_memfds = nullptr;

struct MapLine {
  uint64_t start, end, pgoff, inode;
  char perms[5];
  std::string path;
};

bool ReadMaps(std::vector<MapLine>* out) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    MapLine m{};
    unsigned long start, end, pgoff, inode;
    int used = 0;
    if (sscanf(line.c_str(), "%lx-%lx %4s %lx %*s %lu %n", &start, &end, m.perms, &pgoff, &inode,
               &used) < 5) {
      continue;
    }
    m.start = start;
    m.end = end;
    m.pgoff = pgoff;
    m.inode = inode;
    if (used > 0 && static_cast<size_t>(used) <= line.size()) m.path = line.substr(used);
    out->push_back(std::move(m));
  }
  return true;
}

int ProtOf(const char* perms) {
  int p = 0;
  if (perms[0] == 'r') p |= PROT_READ;
  if (perms[1] == 'w') p |= PROT_WRITE;
  if (perms[2] == 'x') p |= PROT_EXEC;
  return p;
}

bool Movable(const MapLine& m) {
  return m.perms[0] == 'r' && m.perms[1] == 'w' && m.perms[3] == 'p' && m.inode == 0 &&
         (m.path.empty() || m.path == "[heap]");
}

// In a forked child: replaces our memfd mapping @p m with private anonymous
// memory holding the same bytes (mremap moves the copy over it atomically).
struct Range {
  uint64_t start, end;
  char perms[5];
};

// Copies whole pages of this process: the page-rounded range holds bytes
// outside the program's objects (allocator metadata, a sanitizer's redzones)
// that move with it, so the kernel copies them rather than an (instrumented)
// memcpy; memcpy only if the kernel refuses.
void CopyOwnPages(void* dst, uint64_t src, size_t len) {
  iovec local{dst, len};
  iovec remote{reinterpret_cast<void*>(src), len};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len)) return;
  memcpy(dst, reinterpret_cast<void*>(src), len);
}

void Privatize(const Range& m) {
  const size_t len = m.end - m.start;
  void* tmp = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (tmp == MAP_FAILED) return;
  void* at = reinterpret_cast<void*>(m.start);
  const int prot = ProtOf(m.perms);
  if ((prot & PROT_READ) == 0) mprotect(at, len, prot | PROT_READ);
  CopyOwnPages(tmp, m.start, len);
  if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED) {
    munmap(tmp, len);
    return;
  }
  mprotect(at, len, prot);
}

// The fork handlers. Until the child has privatized its copies, both
// processes share those pages: the parent waits in its handler (a pipe) so
// that it changes nothing there meanwhile, and the child allocates nothing
// (malloc would write heap pages the parent still sees).
int g_fork_pipe[2] = {-1, -1};

void PrepareFork() {
  g_memfd_mu.lock();
  if (pipe2(g_fork_pipe, O_CLOEXEC) != 0) g_fork_pipe[0] = g_fork_pipe[1] = -1;
}

void ParentAfterFork() {
  if (g_fork_pipe[0] >= 0) {
    close(g_fork_pipe[1]);
    char b;
    while (read(g_fork_pipe[0], &b, 1) < 0 && errno == EINTR) {
    }
    close(g_fork_pipe[0]);
  }
  g_memfd_mu.unlock();
}

void ChildAfterFork() {
  constexpr int kMax = 1024;
  static Range found[kMax];  // static: no allocation in the child
  int n = 0;
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    static char buf[8192];
    static char line[512];
    size_t len = 0;
    bool overlong = false;
    for (;;) {
      const ssize_t r = read(fd, buf, sizeof(buf));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      for (ssize_t i = 0; i < r; i++) {
        if (buf[i] != '\n') {
          if (len + 1 < sizeof(line)) {
            line[len++] = buf[i];
          } else {
            overlong = true;
          }
          continue;
        }
        line[len] = '\0';
        unsigned long start, end, pgoff, inode;
        char perms[5];
        int used = 0;
        if (!overlong && n < kMax &&
            sscanf(line, "%lx-%lx %4s %lx %*s %lu %n", &start, &end, perms, &pgoff, &inode,
                   &used) >= 5 &&
            used > 0 && strcmp(line + used, kMemfdPath) == 0 && g_memfds->count(inode) != 0) {
          Range& m = found[n++];
          m.start = start;
          m.end = end;
          memcpy(m.perms, perms, sizeof(perms));
        }
        len = 0;
        overlong = false;
      }
    }
    close(fd);
  }
  for (int i = 0; i < n; i++) Privatize(found[i]);
  if (g_fork_pipe[1] >= 0) {
    close(g_fork_pipe[0]);
    const char b = 1;
    if (write(g_fork_pipe[1], &b, 1) < 0) {
      // The parent then sees EOF when we exit: it never blocks for ever.
    }
    close(g_fork_pipe[1]);
  }
  g_memfd_mu.unlock();
}

// Moves [start, end) onto a new memfd; pieces are the mappings covering it.
int MoveToMemfd(uint64_t start, uint64_t end, const std::vector<const MapLine*>& pieces) {
  const size_t len = end - start;
  const int fd = memfd_create(kMemfdName, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(len)) != 0) {
    close(fd);
    return -1;
  }
  void* tmp = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (tmp == MAP_FAILED) {
    close(fd);
    return -1;
  }
  CopyOwnPages(tmp, start, len);
  bool moved_any = false;
  bool ok = true;
  for (const MapLine* m : pieces) {
    const uint64_t s = m->start > start ? m->start : start;
    const uint64_t e = m->end < end ? m->end : end;
    void* p = mmap(reinterpret_cast<void*>(s), e - s, ProtOf(m->perms), MAP_SHARED | MAP_FIXED, fd,
                   static_cast<off_t>(s - start));
    if (p == MAP_FAILED) {
      // The pieces already moved hold the same bytes: consistent, just not all ours.
      ok = false;
      break;
    }
    moved_any = true;
  }
  munmap(tmp, len);
  fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
  if (moved_any) {
    struct stat st;
    if (fstat(fd, &st) == 0) (*g_memfds)[st.st_ino] = fd;
  } else {
    close(fd);
  }
  return ok ? fd : -1;
}

// Decides how the daemon reaches [addr, addr + len): fills req->memory and
// map_* and returns the memfd to send (-1: none, kCrossMemory).
int ChooseMemory(uint64_t addr, uint64_t len, ipc::RegMrReq* req) {
  req->memory = static_cast<uint32_t>(ipc::MrMemory::kCrossMemory);
  const char* mode = getenv("METAROCE_MR_MEMORY");
  if (mode != nullptr && strcmp(mode, "cma") == 0) return -1;
  if (len == 0 || addr + len < addr) return -1;
  const uint64_t start = addr & ~(kPage - 1);
  const uint64_t end = (addr + len + kPage - 1) & ~(kPage - 1);
  std::lock_guard<std::mutex> lock(g_memfd_mu);
  if (g_memfds == nullptr) {
    g_memfds = new std::unordered_map<uint64_t, int>();
    pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork);
  }
  std::vector<MapLine> maps;
  if (!ReadMaps(&maps)) return -1;
  std::vector<const MapLine*> pieces;
  for (const MapLine& m : maps) {
    if (m.end > start && m.start < end) pieces.push_back(&m);
  }
  if (pieces.empty() || pieces.front()->start > start || pieces.back()->end < end) return -1;
  for (size_t i = 1; i < pieces.size(); i++) {
    if (pieces[i]->start != pieces[i - 1]->end) return -1;  // a hole
  }
  // Already inside one mapping of one of our memfds: the same memfd again.
  if (pieces.size() == 1 && pieces[0]->path == kMemfdPath) {
    const auto it = g_memfds->find(pieces[0]->inode);
    if (it == g_memfds->end()) return -1;
    req->memory = static_cast<uint32_t>(ipc::MrMemory::kSharedFd);
    req->map_va = pieces[0]->start;
    req->map_len = pieces[0]->end - pieces[0]->start;
    req->map_offset = pieces[0]->pgoff;
    return it->second;
  }
  for (const MapLine* m : pieces) {
    if (!Movable(*m)) return -1;
  }
  const int fd = MoveToMemfd(start, end, pieces);
  if (fd < 0) return -1;
  req->memory = static_cast<uint32_t>(ipc::MrMemory::kSharedFd);
  req->map_va = start;
  req->map_len = end - start;
  req->map_offset = 0;
  return fd;
}

constexpr unsigned kSupportedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                      IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB;
constexpr unsigned kKnownAccess = kSupportedAccess | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED;

}  // namespace
}  // namespace metaroce::verbs

using namespace metaroce;
using namespace metaroce::verbs;

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  Context* c = ToCtx(context);
  ipc::HandleMsg rep;
  const int err = Request(c, ipc::Op::kAllocPd, nullptr, 0, &rep, sizeof(rep));
  if (err != 0) {
    errno = err;
    return nullptr;
  }
  auto* pd = new Pd();
  pd->pd.context = context;
  pd->pd.handle = rep.handle;
  pd->ctx = c;
  return &pd->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  const int err = RequestHandle(ToCtx(pd->context), ipc::Op::kDeallocPd, pd->handle);
  if (err != 0 && err != EIO) return err;
  delete reinterpret_cast<Pd*>(pd);
  return 0;
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  const unsigned mandatory = access & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
  if ((mandatory & ~kKnownAccess) != 0) {
    Debug("ibv_reg_mr: unknown access bits 0x%x", mandatory & ~kKnownAccess);
    errno = EINVAL;
    return nullptr;
  }
  if ((mandatory & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 &&
      (mandatory & IBV_ACCESS_LOCAL_WRITE) == 0) {
    Debug("ibv_reg_mr: REMOTE_WRITE/REMOTE_ATOMIC need LOCAL_WRITE");
    errno = EINVAL;
    return nullptr;
  }
  if ((mandatory & IBV_ACCESS_MW_BIND) != 0) {
    MR_UNSUPPORTED("ibv_reg_mr", "IBV_ACCESS_MW_BIND: no memory windows");
    return nullptr;
  }
  if ((mandatory & IBV_ACCESS_ZERO_BASED) != 0) {
    MR_UNSUPPORTED("ibv_reg_mr", "IBV_ACCESS_ZERO_BASED: use ibv_reg_mr_iova");
    return nullptr;
  }
  Context* c = ToCtx(pd->context);
  ipc::RegMrReq req;
  req.pd = pd->handle;
  req.access = mandatory;
  req.addr = reinterpret_cast<uintptr_t>(addr);
  req.length = length;
  req.iova = iova;
  const int fd = ChooseMemory(req.addr, req.length, &req);
  ipc::RegMrRep rep;
  const int err = Request(c, ipc::Op::kRegMr, &req, sizeof(req), &rep, sizeof(rep),
                          fd >= 0 ? &fd : nullptr, fd >= 0 ? 1 : 0);
  if (err != 0) {
    errno = err;
    return nullptr;
  }
  auto* mr = new Mr();
  mr->mr.context = pd->context;
  mr->mr.pd = pd;
  mr->mr.addr = addr;
  mr->mr.length = length;
  mr->mr.handle = rep.handle;
  mr->mr.lkey = rep.lkey;
  mr->mr.rkey = rep.rkey;
  mr->memory = rep.memory;
  Debug("reg_mr %p+%zu: lkey 0x%x rkey 0x%x, %s", addr, length, rep.lkey, rep.rkey,
        rep.memory == static_cast<uint32_t>(ipc::MrMemory::kSharedFd) ? "shared memfd"
                                                                      : "cross-memory");
  return &mr->mr;
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                          static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

int ibv_dereg_mr(ibv_mr* mr) {
  const int err = RequestHandle(ToCtx(mr->context), ipc::Op::kDeregMr, mr->handle);
  if (err != 0 && err != EIO) return err;
  delete reinterpret_cast<Mr*>(mr);
  return 0;
}

int ibv_rereg_mr(ibv_mr*, int, ibv_pd*, void*, size_t, int) {
  MR_UNSUPPORTED("ibv_rereg_mr", "deregister and register again");
  return IBV_REREG_MR_ERR_INPUT;
}
