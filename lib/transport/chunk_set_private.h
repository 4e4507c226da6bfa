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
