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

/** Byte access to registered memory. Calls never overlap (one engine, one thread). */
class MemoryAccess {
 public:
  virtual ~MemoryAccess() = default;
  /** Copies @p len bytes from @p src to address @p va. */
  virtual void Write(uint64_t va, const void* src, size_t len) = 0;
  /** Copies @p len bytes at address @p va to @p dst. */
  virtual void Read(uint64_t va, void* dst, size_t len) = 0;
  /** Adds @p add to the 8-byte word at @p va; returns its previous value. */
  virtual uint64_t FetchAdd(uint64_t va, uint64_t add) = 0;
  /** Stores @p swap at @p va if it holds @p compare; returns its previous value. */
  virtual uint64_t CompareSwap(uint64_t va, uint64_t compare, uint64_t swap) = 0;
};

/** Memory of this process: an address is a pointer. Atomics are real CPU atomics. */
class ProcessMemory final : public MemoryAccess {
 public:
  void Write(uint64_t va, const void* src, size_t len) override;
  void Read(uint64_t va, void* dst, size_t len) override;
  uint64_t FetchAdd(uint64_t va, uint64_t add) override;
  uint64_t CompareSwap(uint64_t va, uint64_t compare, uint64_t swap) override;
};

}  // namespace metaroce::transport

#endif  // METAROCE_MR_MEMORY_H
