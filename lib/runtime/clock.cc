/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The shards' clock: the TSC scaled to nanoseconds when EAL has measured its rate,
// CLOCK_MONOTONIC otherwise (kernel UDP ports, no EAL in the process).

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_cycles.h>
#pragma GCC diagnostic pop
#include <time.h>

#include "mr_runtime.h"

namespace metaroce::runtime {
namespace {

constexpr double kNsPerSecond = 1e9;

transport::TimeNs Monotonic() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<transport::TimeNs>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

void Runtime::InitClock() {
  const uint64_t hz = rte_get_tsc_hz();  // 0 until rte_eal_init() measured it
  base_ns_ = Monotonic();
  if (hz == 0) {
    ns_per_cycle_ = 0;
    return;
  }
  base_cycles_ = rte_get_tsc_cycles();
  ns_per_cycle_ = kNsPerSecond / static_cast<double>(hz);
}

transport::TimeNs Runtime::ClockNs() const {
  if (ns_per_cycle_ == 0) return Monotonic();
  // Signed: another core's TSC may be a few cycles behind the one that took the base.
  const int64_t cycles = static_cast<int64_t>(rte_get_tsc_cycles() - base_cycles_);
  if (cycles <= 0) return base_ns_;
  // A double holds 2^53 cycles exactly (years); rounding keeps the result monotonic.
  return base_ns_ + static_cast<transport::TimeNs>(static_cast<double>(cycles) * ns_per_cycle_);
}

transport::TimeNs Shard::Now() const {
  const transport::TimeNs t = rt_->ClockNs();
  transport::TimeNs last = last_now_.load(std::memory_order_relaxed);
  while (t > last) {
    if (last_now_.compare_exchange_weak(last, t, std::memory_order_relaxed)) return t;
  }
  return last;
}

}  // namespace metaroce::runtime
