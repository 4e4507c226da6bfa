/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * Which chunks of a message are done (placed at the receiver, acknowledged at
 * the sender). Messages are cut into chunks of the connection's chunk size,
 * so a chunk index is offset / chunk size; duplicates set a bit twice and
 * count once. Up to 64 chunks need no allocation.
 */

#ifndef METAROCE_TRANSPORT_CHUNK_SET_PRIVATE_H
#define METAROCE_TRANSPORT_CHUNK_SET_PRIVATE_H

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace metaroce::transport {

class ChunkSet {
 public:
  /** n chunks, none set. */
  void Reset(uint32_t n) {
    n_ = n;
    count_ = 0;
    small_ = 0;
    if (n > 64) {
      big_.assign((n + 63) / 64, 0);
    } else {
      big_.clear();
    }
  }
  /** Unsets every chunk, keeping the size. */
  void Clear() { Reset(n_); }
  /** Sets chunk i; true if it was not set. i must be < size(). */
  bool Set(uint32_t i) {
    uint64_t& w = n_ > 64 ? big_[i / 64] : small_;
    const uint64_t bit = uint64_t{1} << (i % 64);
    if (w & bit) return false;
    w |= bit;
    count_++;
    return true;
  }
  /** Unsets chunk i; true if it was set. i must be < size(). */
  bool Unset(uint32_t i) {
    uint64_t& w = n_ > 64 ? big_[i / 64] : small_;
    const uint64_t bit = uint64_t{1} << (i % 64);
    if ((w & bit) == 0) return false;
    w &= ~bit;
    count_--;
    return true;
  }
  /** The first unset chunk at or after @p from (size() if none). */
  uint32_t NextUnset(uint32_t from) const {
    while (from < n_) {
      const uint64_t w = ~(n_ > 64 ? big_[from / 64] : small_) >> (from % 64);
      if (w != 0) return std::min<uint32_t>(n_, from + static_cast<uint32_t>(std::countr_zero(w)));
      from = (from / 64 + 1) * 64;
    }
    return n_;
  }
  /** The first set chunk at or after @p from (size() if none). */
  uint32_t NextSet(uint32_t from) const {
    while (from < n_) {
      const uint64_t w = (n_ > 64 ? big_[from / 64] : small_) >> (from % 64);
      if (w != 0) return std::min<uint32_t>(n_, from + static_cast<uint32_t>(std::countr_zero(w)));
      from = (from / 64 + 1) * 64;
    }
    return n_;
  }
  /** Bytes of heap this set holds. */
  size_t HeapBytes() const { return big_.capacity() * sizeof(uint64_t); }
  /** Heap bytes a set of @p n chunks needs. */
  static size_t HeapBytesFor(uint32_t n) { return n > 64 ? (n + 63) / 64 * sizeof(uint64_t) : 0; }
  bool Test(uint32_t i) const {
    const uint64_t w = n_ > 64 ? big_[i / 64] : small_;
    return (w >> (i % 64)) & 1;
  }
  bool Full() const { return count_ == n_; }
  uint32_t count() const { return count_; }
  uint32_t size() const { return n_; }

 private:
  uint32_t n_ = 0;
  uint32_t count_ = 0;
  uint64_t small_ = 0;
  std::vector<uint64_t> big_;
};

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_CHUNK_SET_PRIVATE_H
