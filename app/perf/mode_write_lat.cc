/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// write_lat: WRITE_WITH_IMM ping-pong. The client WRITEs, the server answers
// with a WRITE of the same size when its completion says the data is all
// there; half the round trip is the one-way latency. (perftest polls the
// last byte instead; MetaRoCE places packets out of order, so only the
// completion says a multi-packet message is complete.)

#include "run.h"

namespace metaroce::perf {
namespace {

using namespace transport;

absl::Status PostPing(Endpoint& ep, PerfQp& q, const TestSpec& s, uint64_t iter) {
  uint8_t* src = SrcSlot(ep, q, s, iter);
  if (s.verify) FillPattern(src, s.size, kKindWrite, q.index, iter);
  SendWr w;
  w.wr_id = MakeWrId(q.index, kKindWrite, iter);
  w.opcode = Opcode::kWriteImm;
  w.imm = static_cast<uint32_t>(iter & 0xffffff);
  w.remote_addr = q.remote.write_base + (iter % ep.write_slots()) * ep.msg_bytes();
  w.rkey = q.remote.rkey;
  w.sg.push_back({reinterpret_cast<uint64_t>(src), s.size, ep.lkey()});
  return ep.engine().PostSend(ep.Now(), q.qpn, w);
}

bool IsPong(Endpoint& ep, PerfQp& q, const Completion& c, const TestSpec& s, uint64_t iter,
            Result* r) {
  if (c.opcode != WcOpcode::kRecvRdmaWithImm) return false;
  if (s.verify) {
    const uint8_t* at = q.write_slots + (iter % ep.write_slots()) * ep.msg_bytes();
    if (c.imm == (iter & 0xffffff) && CheckPattern(at, s.size, kKindWrite, q.index, iter)) {
      r->verified_msgs++;
    } else {
      r->verify_errors++;
    }
  }
  return true;
}

}  // namespace

void RunWriteLat(Endpoint& ep, const TestSpec& s, Result* r) {
  PingLoop(ep, s, r, {PostPing, IsPong, true});
}

}  // namespace metaroce::perf
