/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * How the engine reaches application memory. Addresses are the application's
 * virtual addresses; the engine checks every access against its memory
 * regions first, so an implementation only moves bytes. In-process embedding
 * uses ProcessMemory; the daemon implements it over shared mappings.
 */

#ifndef METAROCE_MR_MEMORY_H
#define METAROCE_MR_MEMORY_H

#include <cstddef>
#include <cstdint>

namespace metaroce::transport {

/**
 * Byte access to registered memory. Calls never overlap (one engine, one
 * thread). @p owner is the owner tag of the protection domain the access is
 * made under (Engine::AllocPd): which application's address space @p va is
 * in, for a daemon serving several. A call that cannot reach the memory (the
 * owner unmapped it or is gone) returns false and moves nothing it reports;
 * the engine then fails the work as a protection / remote access error.
 */
class MemoryAccess {
 public:
  virtual ~MemoryAccess() = default;
  /** Copies @p len bytes from @p src to address @p va. */
  virtual bool Write(uint64_t owner, uint64_t va, const void* src, size_t len) = 0;
  /** Copies @p len bytes at address @p va to @p dst. */
  virtual bool Read(uint64_t owner, uint64_t va, void* dst, size_t len) = 0;
  /** Adds @p add to the 8-byte word at @p va; its previous value goes to @p old. */
  virtual bool FetchAdd(uint64_t owner, uint64_t va, uint64_t add, uint64_t* old) = 0;
  /** Stores @p swap at @p va if it holds @p compare; its previous value goes to @p old. */
  virtual bool CompareSwap(uint64_t owner, uint64_t va, uint64_t compare, uint64_t swap,
                           uint64_t* old) = 0;
};

/** Memory of this process: an address is a pointer, the owner is ignored. Real CPU atomics. */
class ProcessMemory final : public MemoryAccess {
 public:
  bool Write(uint64_t owner, uint64_t va, const void* src, size_t len) override;
  bool Read(uint64_t owner, uint64_t va, void* dst, size_t len) override;
  bool FetchAdd(uint64_t owner, uint64_t va, uint64_t add, uint64_t* old) override;
  bool CompareSwap(uint64_t owner, uint64_t va, uint64_t compare, uint64_t swap,
                   uint64_t* old) override;
};

}  // namespace metaroce::transport

#endif  // METAROCE_MR_MEMORY_H
