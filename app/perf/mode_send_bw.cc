/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// send_bw: SENDs with `depth` outstanding per QP into the server's posted
// receives (it keeps 2 x depth posted and re-posts each as it completes).
// With --verify the server checks every received byte.

#include "run.h"

namespace metaroce::perf {
namespace {

using namespace transport;

uint64_t PostSendMsg(Endpoint& ep, PerfQp& q, const TestSpec& s, TimeNs now, Result* r) {
  uint8_t* src = SrcSlot(ep, q, s, q.posted);
  if (s.verify) FillPattern(src, s.size, kKindSend, q.index, q.sends_posted);
  SendWr w;
  w.wr_id = MakeWrId(q.index, kKindSend, q.posted);
  w.opcode = Opcode::kSend;
  w.sg.push_back({reinterpret_cast<uint64_t>(src), s.size, ep.lkey()});
  if (!Post(ep, q, w, now, r)) return 0;
  q.sends_posted++;
  return s.size;
}

void CompleteSend(Endpoint&, PerfQp& q, const Completion&, const TestSpec& s, Result* r) {
  r->bytes += s.size;
  q.sends_done++;
  r->data_sends++;
}

}  // namespace

void RunSendBw(Endpoint& ep, const TestSpec& s, Result* r) {
  PostingLoop(ep, s, r, {PostSendMsg, CompleteSend});
}

}  // namespace metaroce::perf
