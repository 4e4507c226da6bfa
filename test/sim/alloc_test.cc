/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Once warm, the fabric runs without heap allocation per event: frame buffers
// are recycled, queues and the event heap keep their capacity. This binary
// counts every operator new to prove it (its own executable, since replacing
// the global allocator affects the whole program).

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "gtest/gtest.h"
#include "mr_sim.h"
#include "sim_test_util.h"
#include "sim_workload.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) std::abort();
  return p;
}
void* operator new(std::size_t n, std::align_val_t a) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const auto align = static_cast<std::size_t>(a);
  void* p = std::aligned_alloc(align, (n + align - 1) / align * align);
  if (p == nullptr) std::abort();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace metaroce::sim {
namespace {

TEST(Allocation, WarmFabricDoesNotAllocatePerEvent) {
  Fabric fabric(3);
  LeafSpineConfig c;
  c.leaves = 4;
  c.spines = 4;
  c.hosts_per_leaf = 4;
  c.host_tx_queue_frames = 8;
  // The workload has no congestion control: queues fill to the buffer limit,
  // and a small buffer gets there (the steady state) quickly.
  c.port_buffer_bytes = 128 * 1024;
  const Topology t = testing::Must(BuildLeafSpine(fabric, c));
  FaultConfig f;
  f.loss_probability = 0.01;
  f.reorder_probability = 0.05;
  f.reorder_max_delay_ps = 1 * kPsPerUs;
  f.duplicate_probability = 0.01;
  f.corrupt_probability = 0.001;
  ASSERT_TRUE(fabric.SetAllLinkFaults(f).ok());
  testing::WorkloadConfig w;
  w.fill_nic = true;
  auto eps = testing::StartWorkload(t.hosts, w);

  fabric.RunUntil(1 * kPsPerMs);  // warm-up: pool, queues and heap reach their sizes
  const uint64_t events0 = fabric.events_processed();
  const uint64_t allocs0 = g_allocations.load();
  fabric.RunUntil(3 * kPsPerMs);
  const uint64_t events = fabric.events_processed() - events0;
  const uint64_t allocs = g_allocations.load() - allocs0;
  std::printf("%llu events, %llu allocations after warm-up\n",
              static_cast<unsigned long long>(events), static_cast<unsigned long long>(allocs));
  EXPECT_GT(events, 1'000'000u);
  // A few growth steps (a queue reaching a new maximum, a recycled buffer
  // meeting a larger frame) are fine; one per event would be 10^6.
  EXPECT_LT(allocs * 100'000, events);
}

}  // namespace
}  // namespace metaroce::sim
