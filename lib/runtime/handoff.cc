/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Hand-off rings: rte_rings initialised in memory of their own, so they work
// with or without EAL (rte_ring_create() would need EAL's memzones).

// The hand-off rings are only ever touched through this file, so it may pick rte_ring's
// C11 variant: head and tail moves as explicit acquire/release atomics (the same
// instructions on x86 as the default variant's volatile accesses and compiler barriers),
// which ThreadSanitizer can follow.
#define RTE_USE_C11_MEM_MODEL 1
// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_ring.h>
#pragma GCC diagnostic pop

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime_private.h"

namespace metaroce::runtime {
namespace {

// rte_ring wants its memory on a cache line.
constexpr size_t kRingAlignBytes = 64;

}  // namespace

absl::StatusOr<std::unique_ptr<HandoffRing>> HandoffRing::Create(const std::string& name,
                                                                 uint32_t slots) {
  // Multi-producer enqueue (CAS on the head, no lock), single-consumer dequeue,
  // holding exactly @p slots (not slots - 1).
  const unsigned flags = RING_F_SC_DEQ | RING_F_EXACT_SZ;
  // With RING_F_EXACT_SZ the ring is the next power of two above slots (as in rte_ring_create()).
  const ssize_t bytes = slots == 0 ? -1 : rte_ring_get_memsize(rte_align32pow2(slots + 1));
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("runtime: ring of ", slots, " slots"));
  }
  std::unique_ptr<HandoffRing> r(new HandoffRing());
  const size_t size =
      (static_cast<size_t>(bytes) + kRingAlignBytes - 1) / kRingAlignBytes * kRingAlignBytes;
  r->mem_ = std::aligned_alloc(kRingAlignBytes, size);
  if (r->mem_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("runtime: no memory for ring ", name));
  }
  std::memset(r->mem_, 0, size);
  r->ring_ = static_cast<rte_ring*>(r->mem_);
  const int rc = rte_ring_init(r->ring_, name.c_str(), slots, flags);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("runtime: rte_ring_init(", name, ", ", slots, ") failed: ", strerror(-rc)));
  }
  return r;
}

HandoffRing::~HandoffRing() { std::free(mem_); }

unsigned HandoffRing::Enqueue(void* const* objs, unsigned n) {
  return rte_ring_enqueue_burst(ring_, objs, n, nullptr);
}

unsigned HandoffRing::Dequeue(void** objs, unsigned n) {
  return rte_ring_dequeue_burst(ring_, objs, n, nullptr);
}

unsigned HandoffRing::Count() const { return rte_ring_count(ring_); }

absl::Status InitHandoff(uint16_t index, ShardState* st) {
  auto in = HandoffRing::Create(absl::StrCat("mr_rt_in", index), kHandoffRingSlots);
  if (!in.ok()) return in.status();
  auto fr = HandoffRing::Create(absl::StrCat("mr_rt_free", index), kHandoffDescriptors);
  if (!fr.ok()) return fr.status();
  st->inbound = std::move(*in);
  st->free = std::move(*fr);
  st->descriptors = std::vector<Handoff>(kHandoffDescriptors);
  for (Handoff& h : st->descriptors) {
    h.owner = index;
    void* p = &h;
    if (st->free->Enqueue(&p, 1) != 1) {
      return absl::InternalError("runtime: hand-off descriptor ring is too small");
    }
  }
  return absl::OkStatus();
}

}  // namespace metaroce::runtime
