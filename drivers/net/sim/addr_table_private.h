/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * Address -> host table: open addressing with linear probing over a
 * power-of-two array, keyed by the address as two 64-bit words. Looked up
 * once per frame sent, so it is kept small and branch-light. Never iterated.
 */

#ifndef METAROCE_SIM_ADDR_TABLE_PRIVATE_H
#define METAROCE_SIM_ADDR_TABLE_PRIVATE_H

#include <cstdint>
#include <vector>

#include "mr_sim_rng.h"
#include "mr_wire_frame.h"

namespace metaroce::sim {

class AddrTable {
 public:
  static constexpr uint32_t kNotFound = UINT32_MAX;

  /** Value stored for @p a, or kNotFound. */
  uint32_t Find(const wire::IpAddr& a) const {
    if (slots_.empty()) return kNotFound;
    const Key k = KeyOf(a);
    for (size_t i = Hash(k) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kNotFound) return kNotFound;
      if (s.key.hi == k.hi && s.key.lo == k.lo) return s.value;
    }
  }

  /** Inserts or replaces. */
  void Insert(const wire::IpAddr& a, uint32_t value) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    const Key k = KeyOf(a);
    for (size_t i = Hash(k) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == kNotFound) {
        s = {k, value};
        size_++;
        return;
      }
      if (s.key.hi == k.hi && s.key.lo == k.lo) {
        s.value = value;
        return;
      }
    }
  }

 private:
  struct Key {
    uint64_t hi = 0;
    uint64_t lo = 0;
  };
  struct Slot {
    Key key;
    uint32_t value = kNotFound;
  };

  static Key KeyOf(const wire::IpAddr& a) {
    Key k;
    for (int i = 0; i < 8; i++) k.hi = k.hi << 8 | a.bytes[static_cast<size_t>(i)];
    for (int i = 8; i < 16; i++) k.lo = k.lo << 8 | a.bytes[static_cast<size_t>(i)];
    // IPv4 uses only the first four bytes: tag it so 1.2.3.4 and 102:304:: differ.
    if (!a.v6) k.lo = 1;
    return k;
  }
  static size_t Hash(const Key& k) { return static_cast<size_t>(Mix64(k.hi ^ Mix64(k.lo))); }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.value == kNotFound) continue;
      for (size_t i = Hash(s.key) & mask_;; i = (i + 1) & mask_) {
        if (slots_[i].value == kNotFound) {
          slots_[i] = s;
          size_++;
          break;
        }
      }
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace metaroce::sim

#endif  // METAROCE_SIM_ADDR_TABLE_PRIVATE_H
