/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// send_lat: SEND ping-pong; the server answers each SEND with a SEND of the
// same size. Half the round trip is the one-way latency, as in ib_send_lat.

#include "run.h"

namespace metaroce::perf {
namespace {

using namespace transport;

absl::Status PostPing(Endpoint& ep, PerfQp& q, const TestSpec& s, uint64_t iter) {
  uint8_t* src = SrcSlot(ep, q, s, iter);
  if (s.verify) FillPattern(src, s.size, kKindSend, q.index, iter);
  SendWr w;
  w.wr_id = MakeWrId(q.index, kKindSend, iter);
  w.opcode = Opcode::kSend;
  w.sg.push_back({reinterpret_cast<uint64_t>(src), s.size, ep.lkey()});
  return ep.engine().PostSend(ep.Now(), q.qpn, w);
}

bool IsPong(Endpoint& ep, PerfQp& q, const Completion& c, const TestSpec& s, uint64_t iter,
            Result* r) {
  if (c.opcode != WcOpcode::kRecv) return false;
  if (s.verify) {
    const uint8_t* at = ep.RecvBuf(q, WrSlot(c.wr_id));
    if (c.byte_len == s.size && CheckPattern(at, s.size, kKindSend, q.index, iter)) {
      r->verified_msgs++;
    } else {
      r->verify_errors++;
    }
  }
  return true;
}

}  // namespace

void RunSendLat(Endpoint& ep, const TestSpec& s, Result* r) {
  PingLoop(ep, s, r, {PostPing, IsPong, true});
}

}  // namespace metaroce::perf
