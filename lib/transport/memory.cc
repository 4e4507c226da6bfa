/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <atomic>
#include <cstring>

#include "mr_memory.h"

namespace metaroce::transport {

bool ProcessMemory::Write(uint64_t, uint64_t va, const void* src, size_t len) {
  std::memcpy(reinterpret_cast<void*>(va), src, len);
  return true;
}

bool ProcessMemory::Read(uint64_t, uint64_t va, void* dst, size_t len) {
  std::memcpy(dst, reinterpret_cast<const void*>(va), len);
  return true;
}

bool ProcessMemory::FetchAdd(uint64_t, uint64_t va, uint64_t add, uint64_t* old) {
  *old = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(va)).fetch_add(add);
  return true;
}

bool ProcessMemory::CompareSwap(uint64_t, uint64_t va, uint64_t compare, uint64_t swap,
                                uint64_t* old) {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(va))
      .compare_exchange_strong(compare, swap);
  *old = compare;  // holds the previous value either way
  return true;
}

}  // namespace metaroce::transport
