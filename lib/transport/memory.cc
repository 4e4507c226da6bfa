/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <atomic>
#include <cstring>

#include "mr_memory.h"

namespace metaroce::transport {

void ProcessMemory::Write(uint64_t va, const void* src, size_t len) {
  std::memcpy(reinterpret_cast<void*>(va), src, len);
}

void ProcessMemory::Read(uint64_t va, void* dst, size_t len) {
  std::memcpy(dst, reinterpret_cast<const void*>(va), len);
}

uint64_t ProcessMemory::FetchAdd(uint64_t va, uint64_t add) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(va)).fetch_add(add);
}

uint64_t ProcessMemory::CompareSwap(uint64_t va, uint64_t compare, uint64_t swap) {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(va))
      .compare_exchange_strong(compare, swap);
  return compare;  // holds the previous value either way
}

}  // namespace metaroce::transport
