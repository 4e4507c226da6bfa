/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Helpers for driver authors (as DPDK's *_driver.h headers): not needed by
 * programs that only use ports.
 */

#ifndef METAROCE_MR_PORT_DRIVER_H
#define METAROCE_MR_PORT_DRIVER_H

#include <atomic>
#include <cstdint>

namespace metaroce::port {

/**
 * A statistics counter written by one data-path thread and read by any
 * thread (Port::stats()): relaxed atomics, no read-modify-write on the
 * fast path.
 */
class StatCounter {
 public:
  void Add(uint64_t n) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

}  // namespace metaroce::port

#endif  // METAROCE_MR_PORT_DRIVER_H
