/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/*
 * Frame buffers in flight. A frame is named by a 32-bit handle; buffers are
 * recycled through a free list and keep their capacity, so after warm-up a
 * frame costs no allocation. Slots live in fixed-size chunks, so a reference
 * to a slot stays valid while other frames are allocated.
 */

#ifndef METAROCE_SIM_FRAME_POOL_PRIVATE_H
#define METAROCE_SIM_FRAME_POOL_PRIVATE_H

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "mr_sim_rng.h"

namespace metaroce::sim {

using FrameHandle = uint32_t;

/** Layer 3 of a frame as parsed when it entered the fabric. */
enum class L3Kind : uint8_t { kNone, kIpv4, kIpv6 };

/** One frame and what the fabric learned about it on entry. */
struct alignas(64) Frame {  // one cache line of metadata
  std::vector<uint8_t> bytes;
  uint64_t id = 0;  ///< trace id (1-based, creation order)
  /**
   * Content fingerprint for the trace: HashBytes() when the frame enters the
   * fabric, then folded with a description of each change (Touch()), which
   * is as deterministic as rehashing and does not read the frame again.
   */
  uint64_t hash = 0;
  uint64_t flow_hash = 0;  ///< unseeded hash of the 5-tuple (per-switch seeds are mixed in later)
  uint32_t dst_host = 0;   ///< destination host, or kNoHost
  uint16_t l3_offset = 0;  ///< where the IP header starts
  L3Kind l3 = L3Kind::kNone;
  union {
    uint32_t next_free = 0;  ///< while free: the next free slot
    /** While queued in a PFC switch: the ingress port it is accounted to (else kNone). */
    uint32_t pfc_ingress;
  };

  std::span<const uint8_t> view() const { return bytes; }
  /** Records a change of content in the fingerprint. */
  void Touch(uint64_t change) { hash = Mix64(hash ^ Mix64(change)); }
};

class FramePool {
 public:
  static constexpr uint32_t kChunkBits = 10;
  static constexpr uint32_t kChunkFrames = 1u << kChunkBits;
  static constexpr uint32_t kNone = UINT32_MAX;

  /** Capacity a buffer gets on first use: a 4 KiB-MTU frame never reallocates. */
  static constexpr size_t kReserveBytes = 4096 + 256;

  FrameHandle Alloc() {
    if (free_ == kNone) AddChunk();
    const FrameHandle h = free_;
    Frame& f = (*this)[h];
    free_ = f.next_free;
    f.pfc_ingress = kNone;
    if (f.bytes.capacity() < kReserveBytes) f.bytes.reserve(kReserveBytes);
    live_++;
    return h;
  }
  void Free(FrameHandle h) {
    (*this)[h].next_free = free_;
    free_ = h;
    live_--;
  }
  Frame& operator[](FrameHandle h) { return chunks_[h >> kChunkBits][h & (kChunkFrames - 1)]; }
  /** Frames allocated and not yet freed. */
  size_t live() const { return live_; }
  /** Slots ever created. */
  size_t capacity() const { return chunks_.size() * kChunkFrames; }

 private:
  void AddChunk() {
    const auto base = static_cast<uint32_t>(chunks_.size() * kChunkFrames);
    chunks_.push_back(std::make_unique<Frame[]>(kChunkFrames));
    Frame* c = chunks_.back().get();
    for (uint32_t i = 0; i < kChunkFrames; i++) {
      c[i].next_free = (i + 1 < kChunkFrames) ? base + i + 1 : free_;
    }
    free_ = base;
  }
  std::vector<std::unique_ptr<Frame[]>> chunks_;
  uint32_t free_ = kNone;
  size_t live_ = 0;
};

}  // namespace metaroce::sim

#endif  // METAROCE_SIM_FRAME_POOL_PRIVATE_H
