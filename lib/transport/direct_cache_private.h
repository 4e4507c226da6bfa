/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * A direct-mapped cache of 32-bit keys to objects, in front of the hash maps
 * that own the engine's QPs and connections: every data packet looks up one
 * of each (doc/transport-figures.md, "Engine cost"). A hit is one load and
 * one compare; a miss falls back to the map, which stays the authority, and
 * fills the slot. Keys are not made guessable to index a table: a QP number
 * is the verbs-visible one, a connection id stays 32 random bits.
 */

#ifndef METAROCE_TRANSPORT_DIRECT_CACHE_PRIVATE_H
#define METAROCE_TRANSPORT_DIRECT_CACHE_PRIVATE_H

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mr_config.h"

namespace metaroce::transport {

template <typename T>
class DirectCache {
 public:
  /** The object cached for @p key (never 0) at slot hash @p h, or nullptr. */
  T* Get(uint32_t key, uint32_t h) const {
    if (slots_.empty()) return nullptr;
    const Slot& s = slots_[h & (slots_.size() - 1)];
    return s.key == key ? s.value : nullptr;
  }
  /** Caches @p value for @p key, evicting what had the slot. */
  void Put(uint32_t key, uint32_t h, T* value) {
    if (slots_.empty()) return;
    slots_[h & (slots_.size() - 1)] = Slot{key, value};
  }
  /** Forgets @p key (its object is going away). */
  void Erase(uint32_t key, uint32_t h) {
    if (slots_.empty()) return;
    Slot& s = slots_[h & (slots_.size() - 1)];
    if (s.key == key) s = Slot{};
  }
  /**
   * Sizes the table for @p live objects: twice as many slots, a power of two
   * from config::kDirectCacheMinSlots. Growing empties it (the map refills
   * it); it never shrinks.
   */
  void Fit(size_t live) {
    const size_t want = std::bit_ceil(std::max<size_t>(2 * live, config::kDirectCacheMinSlots));
    if (want > slots_.size()) slots_.assign(want, Slot{});
  }
  size_t slots() const { return slots_.size(); }

 private:
  struct Slot {
    uint32_t key = 0;  ///< 0: empty (no QP number or connection id is 0)
    T* value = nullptr;
  };
  std::vector<Slot> slots_;
};

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_DIRECT_CACHE_PRIVATE_H
