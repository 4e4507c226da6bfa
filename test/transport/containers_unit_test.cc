/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The engine's containers: Ring<T>, its FIFO (ring_private.h), against
// std::deque driven by the same operations; DirectCache<T>, the lookup cache
// in front of its QP and connection maps (direct_cache_private.h).

#include <deque>
#include <random>
#include <string>
#include <vector>

#include "direct_cache_private.h"
#include "gtest/gtest.h"
#include "ring_private.h"

namespace metaroce::transport {
namespace {

template <typename T>
void ExpectSame(const Ring<T>& r, const std::deque<T>& d) {
  ASSERT_EQ(r.size(), d.size());
  ASSERT_EQ(r.empty(), d.empty());
  size_t i = 0;
  for (const T& v : r) {
    ASSERT_EQ(v, d[i]) << "at " << i;
    ASSERT_EQ(r[i], d[i]) << "at " << i;
    i++;
  }
  ASSERT_EQ(i, d.size());
  if (!d.empty()) {
    EXPECT_EQ(r.front(), d.front());
    EXPECT_EQ(r.back(), d.back());
  }
}

TEST(Ring, EmptyHoldsNoStorage) {
  Ring<int> r;
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.capacity(), 0u);
  EXPECT_EQ(r.begin(), r.end());
}

TEST(Ring, GrowingWhileWrappedKeepsTheOrder) {
  Ring<int> r;
  std::deque<int> d;
  // Fill, drain half so that the head is mid-buffer, then push past the
  // capacity: the copy into the bigger buffer must unwrap.
  for (int i = 0; i < 8; i++) r.push_back(i), d.push_back(i);
  EXPECT_EQ(r.capacity(), 8u);
  for (int i = 0; i < 5; i++) r.pop_front(), d.pop_front();
  for (int i = 8; i < 20; i++) r.push_back(i), d.push_back(i);
  ExpectSame(r, d);
  EXPECT_EQ(r.capacity(), 16u);
  r.push_front(-1), d.push_front(-1);
  ExpectSame(r, d);
}

TEST(Ring, MatchesADequeUnderRandomOperations) {
  std::mt19937 rng(7);
  Ring<std::string> r;
  std::deque<std::string> d;
  for (int step = 0; step < 20000; step++) {
    const std::string v = std::to_string(step);
    switch (rng() % 6) {
      case 0:
      case 1: r.push_back(v), d.push_back(v); break;
      case 2: r.push_front(v), d.push_front(v); break;
      case 3:
        if (!d.empty()) r.pop_front(), d.pop_front();
        break;
      case 4:
        if (!d.empty()) r.pop_back(), d.pop_back();
        break;
      case 5:
        if (rng() % 64 == 0) r.clear(), d.clear();
        break;
    }
    if (step % 97 == 0) ExpectSame(r, d);
  }
  ExpectSame(r, d);
}

TEST(Ring, CopiesAndMovesAreIndependent) {
  Ring<std::vector<int>> a;
  a.push_back({1, 2});
  a.push_back({3});
  a.pop_front();
  a.push_back({4, 5, 6});
  Ring<std::vector<int>> b = a;
  b.front().push_back(9);
  EXPECT_EQ(a.front(), (std::vector<int>{3}));
  EXPECT_EQ(b.front(), (std::vector<int>{3, 9}));
  Ring<std::vector<int>> c = std::move(b);
  EXPECT_TRUE(b.empty());
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.back(), (std::vector<int>{4, 5, 6}));
  a = c;
  EXPECT_EQ(a.front(), (std::vector<int>{3, 9}));
}

TEST(DirectCache, HitsOnlyTheKeyItHoldsAndForgetsErasedOnes) {
  DirectCache<int> c;
  int a = 1, b = 2;
  c.Put(5, 5, &a);  // no slots yet: nothing is cached
  EXPECT_EQ(c.Get(5, 5), nullptr);
  c.Fit(1);
  EXPECT_EQ(c.slots(), config::kDirectCacheMinSlots);
  c.Put(5, 5, &a);
  EXPECT_EQ(c.Get(5, 5), &a);
  // Another key on the same slot misses, then evicts.
  const uint32_t same_slot = 5 + config::kDirectCacheMinSlots;
  EXPECT_EQ(c.Get(same_slot, same_slot), nullptr);
  c.Put(same_slot, same_slot, &b);
  EXPECT_EQ(c.Get(5, 5), nullptr);
  EXPECT_EQ(c.Get(same_slot, same_slot), &b);
  // Erasing a key the slot does not hold leaves the slot alone.
  c.Erase(5, 5);
  EXPECT_EQ(c.Get(same_slot, same_slot), &b);
  c.Erase(same_slot, same_slot);
  EXPECT_EQ(c.Get(same_slot, same_slot), nullptr);
  // Growing to twice the live objects empties it.
  c.Put(7, 7, &a);
  c.Fit(config::kDirectCacheMinSlots);
  EXPECT_EQ(c.slots(), 2 * config::kDirectCacheMinSlots);
  EXPECT_EQ(c.Get(7, 7), nullptr);
  c.Fit(1);  // never shrinks
  EXPECT_EQ(c.slots(), 2 * config::kDirectCacheMinSlots);
}

}  // namespace
}  // namespace metaroce::transport
