/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * A FIFO on a power-of-two ring that grows, for the engine's per-message and
 * per-packet queues (send queues, ready lists, ACK queues, completions).
 * std::deque cost ~130 instructions per 64-byte data packet in its block
 * arithmetic (doc/transport-figures.md, "Engine cost"); here an index is a
 * mask and an add. Capacity only grows: a queue that was once deep keeps its
 * storage, as the deque kept its blocks.
 */

#ifndef METAROCE_TRANSPORT_RING_PRIVATE_H
#define METAROCE_TRANSPORT_RING_PRIVATE_H

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <utility>

namespace metaroce::transport {

template <typename T>
class Ring {
 public:
  Ring() = default;
  Ring(const Ring& o) { *this = o; }
  Ring& operator=(const Ring& o) {
    if (this == &o) return *this;
    clear();
    for (const T& v : o) push_back(v);
    return *this;
  }
  Ring(Ring&& o) noexcept { swap(o); }
  Ring& operator=(Ring&& o) noexcept {
    Ring tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~Ring() = default;

  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  size_t capacity() const { return mask_ + (buf_ != nullptr ? 1 : 0); }

  /** The @p i-th element from the front. */
  T& operator[](size_t i) {
    assert(i < count_);
    return buf_[(head_ + i) & mask_];
  }
  const T& operator[](size_t i) const {
    assert(i < count_);
    return buf_[(head_ + i) & mask_];
  }
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }
  T& back() { return (*this)[count_ - 1]; }
  const T& back() const { return (*this)[count_ - 1]; }

  void push_back(const T& v) {
    if (count_ == capacity()) Grow();
    buf_[(head_ + count_) & mask_] = v;
    count_++;
  }
  void push_back(T&& v) {
    if (count_ == capacity()) Grow();
    buf_[(head_ + count_) & mask_] = std::move(v);
    count_++;
  }
  template <typename... A>
  T& emplace_back(A&&... a) {
    if (count_ == capacity()) Grow();
    T& slot = buf_[(head_ + count_) & mask_];
    slot = T(std::forward<A>(a)...);
    count_++;
    return slot;
  }
  void push_front(const T& v) {
    if (count_ == capacity()) Grow();
    head_ = (head_ - 1) & mask_;
    buf_[head_] = v;
    count_++;
  }
  /**
   * Drops the front element. Its slot keeps the value (and any storage it
   * holds) until a push overwrites it or the ring goes.
   */
  void pop_front() {
    assert(count_ != 0);
    head_ = (head_ + 1) & mask_;
    count_--;
  }
  void pop_back() {
    assert(count_ != 0);
    count_--;
  }
  void clear() {
    while (count_ != 0) pop_front();
    head_ = 0;
  }

  template <typename R, typename V>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = V*;
    using reference = V&;
    Iter() = default;
    Iter(R* r, size_t i) : r_(r), i_(i) {}
    V& operator*() const { return (*r_)[i_]; }
    V* operator->() const { return &(*r_)[i_]; }
    Iter& operator++() {
      i_++;
      return *this;
    }
    Iter operator++(int) {
      Iter t = *this;
      i_++;
      return t;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_; }

   private:
    R* r_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = Iter<Ring, T>;
  using const_iterator = Iter<const Ring, const T>;
  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, count_); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, count_); }

  void swap(Ring& o) noexcept {
    std::swap(buf_, o.buf_);
    std::swap(mask_, o.mask_);
    std::swap(head_, o.head_);
    std::swap(count_, o.count_);
  }

 private:
  static constexpr size_t kFirstCapacity = 8;

  void Grow() {
    const size_t cap = count_ == 0 ? kFirstCapacity : std::bit_ceil(count_ * 2);
    std::unique_ptr<T[]> bigger(new T[cap]);
    for (size_t i = 0; i < count_; i++) bigger[i] = std::move((*this)[i]);
    buf_ = std::move(bigger);
    mask_ = cap - 1;
    head_ = 0;
  }

  std::unique_ptr<T[]> buf_;
  size_t mask_ = 0;  ///< capacity - 1 (0 with no storage: capacity() says 0)
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace metaroce::transport

#endif  // METAROCE_TRANSPORT_RING_PRIVATE_H
