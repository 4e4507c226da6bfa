/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// atomic_lat: one FETCH_AND_ADD of 1 at a time on the server's counter; the
// latency is the whole round trip, as in ib_atomic_lat. With --verify each
// fetched value must be the number of adds before it.

#include "run.h"

namespace metaroce::perf {
namespace {

using namespace transport;

absl::Status PostPing(Endpoint& ep, PerfQp& q, const TestSpec&, uint64_t iter) {
  SendWr w;
  w.wr_id = MakeWrId(q.index, kKindFetchAdd, iter);
  w.opcode = Opcode::kAtomicFetchAdd;
  w.remote_addr = q.remote.atomic_va;
  w.rkey = q.remote.rkey;
  w.compare_add = 1;
  w.sg.push_back({reinterpret_cast<uint64_t>(q.atomic_results), 8, ep.lkey()});
  return ep.engine().PostSend(ep.Now(), q.qpn, w);
}

bool IsAnswer(Endpoint&, PerfQp& q, const Completion& c, const TestSpec& s, uint64_t iter,
              Result* r) {
  if (c.opcode != WcOpcode::kFetchAdd) return false;
  if (s.verify) {
    if (*q.atomic_results == iter) {
      r->verified_msgs++;
    } else {
      r->verify_errors++;
    }
  }
  return true;
}

}  // namespace

void RunAtomicLat(Endpoint& ep, const TestSpec& s, Result* r) {
  PingLoop(ep, s, r, {PostPing, IsAnswer, false});
}

}  // namespace metaroce::perf
