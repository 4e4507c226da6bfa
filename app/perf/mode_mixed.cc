/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mixed: every QP posts a seeded random mix of WRITE_WITH_IMM, SEND, READ,
// FETCH_AND_ADD and CMP_AND_SWAP of random sizes (half of them one packet,
// half up to --size), `depth` outstanding. With --verify nothing goes
// unchecked: the server checks every WRITE and SEND byte (and credits write
// slots back), the client every READ byte, the fetch-add results must be
// exactly 0..n-1 and every compare-and-swap must find what the last one left.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "run.h"

namespace metaroce::perf {
namespace {

using namespace transport;

uint64_t Mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  return x ^ (x >> 33);
}

// Percent of operations by kind: WRITE, SEND, READ, FETCH_ADD, CMP_SWAP.
constexpr uint32_t kMixPct[] = {35, 30, 25, 7, 3};

uint32_t PickKind(const TestSpec& s, const PerfQp& q) {
  uint32_t roll = static_cast<uint32_t>(Mix(s.seed ^ (uint64_t{q.index} << 44) ^ q.posted) % 100);
  for (uint32_t k = 0; k < 5; k++) {
    if (roll < kMixPct[k]) return k;
    roll -= kMixPct[k];
  }
  return kKindSend;
}

uint64_t PostMixed(Endpoint& ep, PerfQp& q, const TestSpec& s, TimeNs now, Result* r) {
  uint32_t kind = PickKind(s, q);
  if (kind == kKindWrite && s.verify && q.writes_posted >= *q.credit_word + ep.write_slots()) {
    kind = kKindSend;  // no write slot free until the server has checked one
  }
  if (kind == kKindCas && q.cas_outstanding) kind = kKindFetchAdd;
  const uint64_t slot = q.posted % ep.send_slots();
  SlotMeta& m = q.meta[slot];
  SendWr w;
  w.wr_id = MakeWrId(q.index, kind, q.posted);
  w.rkey = q.remote.rkey;
  uint8_t* src = SrcSlot(ep, q, s, q.posted);
  uint64_t seq = 0;
  switch (kind) {
    case kKindWrite:
      seq = q.writes_posted;
      m.len = MixedSize(s.seed, kKindWrite, q.index, seq, s.size);
      if (s.verify) FillPattern(src, m.len, kKindWrite, q.index, seq);
      w.opcode = Opcode::kWriteImm;
      w.imm = static_cast<uint32_t>(seq & 0xffffff);
      w.remote_addr = q.remote.write_base + (seq % ep.write_slots()) * ep.msg_bytes();
      w.sg.push_back({reinterpret_cast<uint64_t>(src), m.len, ep.lkey()});
      break;
    case kKindSend:
      seq = q.sends_posted;
      m.len = MixedSize(s.seed, kKindSend, q.index, seq, s.size);
      if (s.verify) FillPattern(src, m.len, kKindSend, q.index, seq);
      w.opcode = Opcode::kSend;
      w.sg.push_back({reinterpret_cast<uint64_t>(src), m.len, ep.lkey()});
      break;
    case kKindRead: {
      seq = q.reads_posted;
      m.len = MixedSize(s.seed, kKindRead, q.index, seq, s.size);
      const uint64_t span = q.remote.read_len > m.len ? q.remote.read_len - m.len : 1;
      m.offset = Mix(s.seed + seq * 31 + q.index) % span;  // any byte alignment
      w.opcode = Opcode::kRead;
      w.remote_addr = q.remote.read_base + m.offset;
      w.sg.push_back({reinterpret_cast<uint64_t>(ReadSlot(ep, q, s, q.posted)), m.len, ep.lkey()});
      break;
    }
    case kKindFetchAdd:
      m.len = 8;
      w.opcode = Opcode::kAtomicFetchAdd;
      w.remote_addr = q.remote.atomic_va;
      w.compare_add = 1;
      w.sg.push_back({reinterpret_cast<uint64_t>(q.atomic_results + slot), 8, ep.lkey()});
      break;
    case kKindCas:
      m.len = 8;
      seq = q.cas_value;  // what the word must hold
      w.opcode = Opcode::kAtomicCompSwap;
      w.remote_addr = q.remote.atomic_va + 8;
      w.compare_add = q.cas_value;
      w.swap = q.cas_value + 1;
      w.sg.push_back({reinterpret_cast<uint64_t>(q.atomic_results + slot), 8, ep.lkey()});
      q.cas_outstanding = true;
      break;
  }
  m.kind = static_cast<uint8_t>(kind);
  m.seq = seq;
  if (!Post(ep, q, w, now, r)) return 0;
  if (kind == kKindWrite) q.writes_posted++;
  if (kind == kKindSend) q.sends_posted++;
  if (kind == kKindRead) q.reads_posted++;
  return m.len;
}

void CompleteMixed(Endpoint& ep, PerfQp& q, const Completion& c, const TestSpec& s, Result* r) {
  const uint64_t n = WrSlot(c.wr_id);
  const SlotMeta& m = q.meta[n % ep.send_slots()];
  const uint32_t kind = WrKind(c.wr_id);
  r->op_counts[kind]++;
  r->bytes += m.len;
  bool ok = true;
  switch (kind) {
    case kKindWrite: r->data_writes++; return;
    case kKindSend: r->data_sends++; return;
    case kKindRead:
      ok = c.byte_len == m.len && CheckReadRegion(ReadSlot(ep, q, s, n), m.len, m.offset, 0);
      break;
    case kKindFetchAdd: q.fetched.push_back(q.atomic_results[n % ep.send_slots()]); return;
    case kKindCas:
      ok = q.atomic_results[n % ep.send_slots()] == m.seq;
      q.cas_value = m.seq + 1;
      q.cas_outstanding = false;
      break;
  }
  if (!s.verify) return;
  if (ok) {
    r->verified_msgs++;
  } else {
    r->verify_errors++;
  }
}

}  // namespace

void RunMixed(Endpoint& ep, const TestSpec& s, Result* r) {
  PostingLoop(ep, s, r, {PostMixed, CompleteMixed});
  if (!s.verify || !r->error.empty()) return;
  // Every fetch-add returned a different earlier count: sorted, they are 0..n-1.
  for (PerfQp& q : ep.qps()) {
    std::sort(q.fetched.begin(), q.fetched.end());
    for (uint64_t i = 0; i < q.fetched.size(); i++) {
      if (q.fetched[i] != i) {
        r->verify_errors++;
        r->error = absl::StrCat("QP ", q.index, ": fetch-add results are not 0..",
                                q.fetched.size() - 1, " (", q.fetched[i], " at ", i, ")");
        return;
      }
    }
    r->verified_msgs += q.fetched.size();
  }
}

}  // namespace metaroce::perf
