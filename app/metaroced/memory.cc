/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// How the engine reaches application memory (doc/daemon.md "Memory"):
// memfd-backed regions are mapped into the daemon and copied with memcpy;
// anything else goes through cross-memory attach. Inline send data is read
// from the daemon's view of the send ring.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "daemon.h"

namespace metaroce::daemon {

absl::StatusOr<std::unique_ptr<Segment>> Segment::Create(const char* what, size_t bytes) {
  std::unique_ptr<Segment> s(new Segment());
  s->fd_ = memfd_create(what, MFD_CLOEXEC);
  if (s->fd_ < 0) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": memfd_create: ", strerror(errno)));
  }
  if (ftruncate(s->fd_, static_cast<off_t>(bytes)) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": ftruncate(", bytes, "): ", strerror(errno)));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd_, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": mmap: ", strerror(errno)));
  }
  s->base_ = p;
  s->bytes_ = bytes;
  return s;
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

AppMemory::~AppMemory() {
  for (auto& [va, m] : maps_) munmap(m.base, m.map_bytes);
}

uint64_t AppMemory::AddMapping(int fd, uint64_t va, uint64_t len, uint64_t offset) {
  // The application keeps the memfd: it must not be able to shrink it under
  // our mapping (a SIGBUS in the daemon), so only sealed ones are used.
  const int seals = fcntl(fd, F_GET_SEALS);
  struct stat st;
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0 || fstat(fd, &st) != 0 || len == 0 ||
      va % 4096 != 0 || offset % 4096 != 0 || offset + len < offset ||
      offset + len > static_cast<uint64_t>(st.st_size) || va >= kInlineVaBase) {
    return 0;
  }
  if (auto it = maps_.find(va); it != maps_.end()) {
    if (it->second.len == len) {
      it->second.users++;
      return va;
    }
    return 0;
  }
  // No overlap with another mapping: one address, one backing.
  auto next = maps_.lower_bound(va);
  if (next != maps_.end() && next->first < va + len) return 0;
  if (next != maps_.begin() && std::prev(next)->first + std::prev(next)->second.len > va) return 0;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) return 0;
  maps_[va] = Mapping{len, static_cast<uint8_t*>(p), p, len, 1};
  return va;
}

void AppMemory::ReleaseMapping(uint64_t key) {
  auto it = maps_.find(key);
  if (it == maps_.end()) return;
  if (--it->second.users != 0) return;
  munmap(it->second.base, it->second.map_bytes);
  maps_.erase(it);
}

void AppMemory::SetInlineWindow(uint32_t slot, uint8_t* ring, size_t bytes) {
  if (slot >= windows_.size()) windows_.resize(slot + 1);
  windows_[slot] = Window{ring, bytes};
}

uint8_t* AppMemory::Find(uint64_t va, size_t len) {
  if (va >= kInlineVaBase) {
    const uint64_t rel = va - kInlineVaBase;
    const uint64_t slot = rel >> kInlineWindowShift;
    const uint64_t off = rel & ((uint64_t{1} << kInlineWindowShift) - 1);
    if (slot >= windows_.size() || windows_[slot].ring == nullptr) return nullptr;
    if (off + len > windows_[slot].bytes) return nullptr;
    return windows_[slot].ring + off;
  }
  auto it = maps_.upper_bound(va);
  if (it == maps_.begin()) return nullptr;
  --it;
  const uint64_t start = it->first;
  if (va + len < va || va + len > start + it->second.len) return nullptr;
  return it->second.ptr + (va - start);
}

bool AppMemory::Read(uint64_t va, void* dst, size_t len) {
  if (gone.load(std::memory_order_relaxed)) return false;
  if (uint8_t* p = Find(va, len)) {
    std::memcpy(dst, p, len);
    shared_copies_++;
    return true;
  }
  if (va >= kInlineVaBase) return false;
  iovec local{dst, len}, remote{reinterpret_cast<void*>(va), len};
  cma_calls_++;
  return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

bool AppMemory::Write(uint64_t va, const void* src, size_t len) {
  if (gone.load(std::memory_order_relaxed)) return false;
  if (va >= kInlineVaBase) return false;  // inline windows are read only
  if (uint8_t* p = Find(va, len)) {
    std::memcpy(p, src, len);
    shared_copies_++;
    return true;
  }
  iovec local{const_cast<void*>(src), len}, remote{reinterpret_cast<void*>(va), len};
  cma_calls_++;
  return process_vm_writev(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

bool AppMemory::Atomic(uint64_t va, bool cas, uint64_t a, uint64_t b, uint64_t* old) {
  if (gone.load(std::memory_order_relaxed) || va >= kInlineVaBase || va % 8 != 0) return false;
  if (uint8_t* p = Find(va, 8)) {
    std::atomic_ref<uint64_t> w(*reinterpret_cast<uint64_t*>(p));
    if (cas) {
      uint64_t expect = a;
      w.compare_exchange_strong(expect, b);
      *old = expect;
    } else {
      *old = w.fetch_add(a);
    }
    return true;
  }
  uint64_t v;
  if (!Read(va, &v, 8)) return false;
  *old = v;
  if (cas && v != a) return true;
  const uint64_t nv = cas ? b : v + a;
  return Write(va, &nv, 8);
}

AppMemory* DaemonMemory::Of(uint64_t owner) {
  auto it = apps_.find(owner);
  return it == apps_.end() ? nullptr : it->second;
}

bool DaemonMemory::Write(uint64_t owner, uint64_t va, const void* src, size_t len) {
  AppMemory* m = Of(owner);
  return m != nullptr && m->Write(va, src, len);
}

bool DaemonMemory::Read(uint64_t owner, uint64_t va, void* dst, size_t len) {
  AppMemory* m = Of(owner);
  return m != nullptr && m->Read(va, dst, len);
}

bool DaemonMemory::FetchAdd(uint64_t owner, uint64_t va, uint64_t add, uint64_t* old) {
  AppMemory* m = Of(owner);
  return m != nullptr && m->Atomic(va, false, add, 0, old);
}

bool DaemonMemory::CompareSwap(uint64_t owner, uint64_t va, uint64_t compare, uint64_t swap,
                               uint64_t* old) {
  AppMemory* m = Of(owner);
  return m != nullptr && m->Atomic(va, true, compare, swap, old);
}

}  // namespace metaroce::daemon
