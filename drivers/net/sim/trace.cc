/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <cstring>

#include "mr_sim_rng.h"
#include "mr_sim_trace.h"

namespace metaroce::sim {
namespace {

constexpr uint64_t kSecret0 = 0xa0761d6478bd642fULL;
constexpr uint64_t kSecret1 = 0xe7037ed1a0b428dbULL;
constexpr uint64_t kSecret2 = 0x8ebc6af09c88c6e3ULL;
constexpr uint64_t kSecret3 = 0x589965cc75374cc3ULL;

// Little-endian load regardless of host byte order (compiles to one load on x86).
uint64_t Load64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

// 64x64 -> 128 multiply, folded: the mixing step of wyhash.
uint64_t Mum(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

}  // namespace

uint64_t HashBytes(std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  // Four independent lanes of 16 bytes each, so the multiplies overlap.
  uint64_t a = kSecret0, b = kSecret1, c = kSecret2, d = kSecret3;
  while (n >= 64) {
    a = Mum(Load64(p) ^ kSecret1, Load64(p + 8) ^ a);
    b = Mum(Load64(p + 16) ^ kSecret2, Load64(p + 24) ^ b);
    c = Mum(Load64(p + 32) ^ kSecret3, Load64(p + 40) ^ c);
    d = Mum(Load64(p + 48) ^ kSecret0, Load64(p + 56) ^ d);
    p += 64;
    n -= 64;
  }
  uint64_t h = a ^ Mix64(b) ^ Mix64(c + kSecret1) ^ Mix64(d + kSecret2);
  while (n >= 16) {
    h = Mum(Load64(p) ^ kSecret1, Load64(p + 8) ^ h);
    p += 16;
    n -= 16;
  }
  uint64_t t0 = 0, t1 = 0;
  for (size_t i = 0; i < n; i++) {
    if (i < 8) {
      t0 |= static_cast<uint64_t>(p[i]) << (8 * i);
    } else {
      t1 |= static_cast<uint64_t>(p[i]) << (8 * (i - 8));
    }
  }
  h = Mum(t0 ^ kSecret1 ^ (static_cast<uint64_t>(n) << 56), t1 ^ h ^ kSecret3);
  return Mix64(h ^ bytes.size());
}

void TraceHash::Add(const TraceRecord& r) {
  // Two rounds over odd-multiplier combinations of the fields: cheap, and a
  // change in any one field changes the result.
  const uint64_t what = (static_cast<uint64_t>(r.kind) << 32 | r.component) * 0x9e3779b97f4a7c15ULL;
  uint64_t h = Mix64(h_ ^ static_cast<uint64_t>(r.time) ^ what);
  h = Mix64(h ^ r.frame_id * 0xc2b2ae3d27d4eb4fULL ^ r.frame_hash ^ r.arg * 0x165667b19e3779f9ULL);
  h_ = h;
  n_++;
}

const char* TraceKindName(TraceKind k) {
  switch (k) {
    case TraceKind::kSend: return "send";
    case TraceKind::kSendRejected: return "send_rejected";
    case TraceKind::kEnqueue: return "enqueue";
    case TraceKind::kEcnMark: return "ecn_mark";
    case TraceKind::kTxDone: return "tx_done";
    case TraceKind::kDrop: return "drop";
    case TraceKind::kCorrupt: return "corrupt";
    case TraceKind::kDuplicate: return "duplicate";
    case TraceKind::kReorder: return "reorder";
    case TraceKind::kArrive: return "arrive";
    case TraceKind::kDeliver: return "deliver";
    case TraceKind::kTimer: return "timer";
    case TraceKind::kRouteChange: return "route_change";
    case TraceKind::kCallback: return "callback";
    case TraceKind::kPfcPause: return "pfc_pause";
  }
  return "unknown";
}

}  // namespace metaroce::sim
