/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// read_bw: RDMA READs with `depth` outstanding per QP. The server's READ
// region holds a pattern that depends only on the offset; with --verify each
// READ takes a different offset and the client checks every byte it got.

#include "run.h"

namespace metaroce::perf {
namespace {

using namespace transport;

uint64_t ReadOffset(const PerfQp& q, const TestSpec& s, uint64_t seq) {
  if (!s.verify || q.remote.read_len <= s.size) return 0;
  const uint64_t h = (seq + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t{q.index} << 32) ^ s.seed;
  return (h % (q.remote.read_len - s.size)) & ~7ull;
}

uint64_t PostRead(Endpoint& ep, PerfQp& q, const TestSpec& s, TimeNs now, Result* r) {
  const uint64_t seq = q.reads_posted;
  const uint64_t off = ReadOffset(q, s, seq);
  SlotMeta& m = q.meta[q.posted % ep.send_slots()];
  m = {.kind = kKindRead, .len = s.size, .seq = seq, .offset = off};
  SendWr w;
  w.wr_id = MakeWrId(q.index, kKindRead, q.posted);
  w.opcode = Opcode::kRead;
  w.remote_addr = q.remote.read_base + off;
  w.rkey = q.remote.rkey;
  w.sg.push_back({reinterpret_cast<uint64_t>(ReadSlot(ep, q, s, q.posted)), s.size, ep.lkey()});
  if (!Post(ep, q, w, now, r)) return 0;
  q.reads_posted++;
  return s.size;
}

void CompleteRead(Endpoint& ep, PerfQp& q, const Completion& c, const TestSpec& s, Result* r) {
  r->bytes += s.size;
  if (!s.verify) return;
  const uint64_t n = WrSlot(c.wr_id);
  const SlotMeta& m = q.meta[n % ep.send_slots()];
  if (c.byte_len == m.len && CheckReadRegion(ReadSlot(ep, q, s, n), m.len, m.offset, 0)) {
    r->verified_msgs++;
  } else {
    r->verify_errors++;
  }
}

}  // namespace

void RunReadBw(Endpoint& ep, const TestSpec& s, Result* r) {
  PostingLoop(ep, s, r, {PostRead, CompleteRead});
}

}  // namespace metaroce::perf
