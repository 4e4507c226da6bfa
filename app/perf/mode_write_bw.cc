/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// write_bw: RDMA WRITEs with `depth` outstanding per QP. With --verify each
// WRITE carries an immediate so the server checks it as it lands, every
// message gets its own remote slot, and a slot is reused only after the
// server has checked it and WRITEn its count back (the credit word).

#include "run.h"

namespace metaroce::perf {
namespace {

using namespace transport;

uint64_t PostWrite(Endpoint& ep, PerfQp& q, const TestSpec& s, TimeNs now, Result* r) {
  const uint64_t seq = q.writes_posted;
  if (s.verify && seq >= *q.credit_word + ep.write_slots()) return 0;
  uint8_t* src = SrcSlot(ep, q, s, q.posted);
  SendWr w;
  w.wr_id = MakeWrId(q.index, kKindWrite, q.posted);
  w.rkey = q.remote.rkey;
  if (s.verify) {
    FillPattern(src, s.size, kKindWrite, q.index, seq);
    w.opcode = Opcode::kWriteImm;
    w.imm = static_cast<uint32_t>(seq & 0xffffff);
    w.remote_addr = q.remote.write_base + (seq % ep.write_slots()) * ep.msg_bytes();
  } else {
    w.opcode = Opcode::kWrite;
    w.remote_addr = q.remote.write_base;
  }
  w.sg.push_back({reinterpret_cast<uint64_t>(src), s.size, ep.lkey()});
  if (!Post(ep, q, w, now, r)) return 0;
  q.writes_posted++;
  return s.size;
}

void CompleteWrite(Endpoint&, PerfQp& q, const Completion&, const TestSpec& s, Result* r) {
  r->bytes += s.size;
  if (s.verify) {
    q.writes_done++;
    r->data_writes++;
  }
}

}  // namespace

void RunWriteBw(Endpoint& ep, const TestSpec& s, Result* r) {
  PostingLoop(ep, s, r, {PostWrite, CompleteWrite});
}

}  // namespace metaroce::perf
