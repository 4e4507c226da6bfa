/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// read_lat: one RDMA READ at a time; the latency is the whole round trip, as
// in ib_read_lat. With --verify every READ takes a different offset of the
// server's patterned region and the client checks the bytes.

#include "run.h"

namespace metaroce::perf {
namespace {

using namespace transport;

uint64_t Offset(const PerfQp& q, const TestSpec& s, uint64_t iter) {
  if (!s.verify || q.remote.read_len <= s.size) return 0;
  return (((iter + 1) * 0x9e3779b97f4a7c15ull ^ s.seed) % (q.remote.read_len - s.size)) & ~7ull;
}

absl::Status PostPing(Endpoint& ep, PerfQp& q, const TestSpec& s, uint64_t iter) {
  SendWr w;
  w.wr_id = MakeWrId(q.index, kKindRead, iter);
  w.opcode = Opcode::kRead;
  w.remote_addr = q.remote.read_base + Offset(q, s, iter);
  w.rkey = q.remote.rkey;
  w.sg.push_back({reinterpret_cast<uint64_t>(ReadSlot(ep, q, s, iter)), s.size, ep.lkey()});
  return ep.engine().PostSend(ep.Now(), q.qpn, w);
}

bool IsAnswer(Endpoint& ep, PerfQp& q, const Completion& c, const TestSpec& s, uint64_t iter,
              Result* r) {
  if (c.opcode != WcOpcode::kRdmaRead) return false;
  if (s.verify) {
    if (c.byte_len == s.size &&
        CheckReadRegion(ReadSlot(ep, q, s, iter), s.size, Offset(q, s, iter), 0)) {
      r->verified_msgs++;
    } else {
      r->verify_errors++;
    }
  }
  return true;
}

}  // namespace

void RunReadLat(Endpoint& ep, const TestSpec& s, Result* r) {
  PingLoop(ep, s, r, {PostPing, IsAnswer, false});
}

}  // namespace metaroce::perf
