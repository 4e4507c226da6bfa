/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * A FIFO ring of trivially copyable values (frame handles) with power-of-two
 * capacity that doubles when full and never shrinks: no allocation in steady
 * state.
 */

#ifndef METAROCE_SIM_FIFO_PRIVATE_H
#define METAROCE_SIM_FIFO_PRIVATE_H

#include <cstddef>
#include <vector>

namespace metaroce::sim {

template <typename T>
class Fifo {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  const T& front() const { return buf_[head_ & mask_]; }

  void push_back(T v) {
    if (size() == buf_.size()) Grow();
    buf_[tail_++ & mask_] = v;
  }
  void pop_front() { head_++; }

 private:
  void Grow() {
    const size_t n = size();
    std::vector<T> next(buf_.empty() ? 8 : buf_.size() * 2);
    for (size_t i = 0; i < n; i++) next[i] = buf_[(head_ + i) & mask_];
    buf_.swap(next);
    mask_ = buf_.size() - 1;
    head_ = 0;
    tail_ = n;
  }
  std::vector<T> buf_;
  size_t mask_ = 0;
  size_t head_ = 0;  // free-running indices; size = tail - head
  size_t tail_ = 0;
};

}  // namespace metaroce::sim

#endif  // METAROCE_SIM_FIFO_PRIVATE_H
