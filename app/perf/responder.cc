/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The server side of every mode. WRITEs and READs need nothing from it but a
// running device; SENDs and WRITE_WITH_IMMs it checks (--verify), re-posts
// the receive, answers (latency modes) and, for verified writes, WRITEs its
// count of checked writes back so the client may reuse those slots.

#include <array>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "perf.h"

namespace metaroce::perf {
namespace {

using namespace transport;

struct Responder {
  Endpoint& ep;
  const TestSpec& s;
  ServerReport rep;
  std::string error;
  ModeId mode() const { return static_cast<ModeId>(s.mode); }

  uint32_t SizeOf(uint32_t kind, const PerfQp& q, uint64_t seq) const {
    return mode() == ModeId::kMixed ? MixedSize(s.seed, kind, q.index, seq, s.size) : s.size;
  }

  void Check(bool ok) {
    if (!s.verify) return;
    if (ok) {
      rep.verified_msgs++;
    } else {
      rep.verify_errors++;
    }
  }

  bool PostOrFail(PerfQp& q, const SendWr& w) {
    if (auto st = ep.engine().PostSend(ep.Now(), q.qpn, w); !st.ok()) {
      error = absl::StrCat("posting on QP ", q.qpn, " failed: ", st.message());
      return false;
    }
    q.posted++;
    return true;
  }

  void OnWrite(PerfQp& q, const Completion& c) {
    const uint64_t seq = q.writes_seen++;
    const uint32_t len = SizeOf(kKindWrite, q, seq);
    const uint8_t* at = q.write_slots + (seq % ep.write_slots()) * ep.msg_bytes();
    Check(c.imm == (seq & 0xffffff) && c.byte_len == len &&
          CheckPattern(at, len, kKindWrite, q.index, seq));
    if (mode() == ModeId::kWriteLat) {
      uint8_t* src = q.src;
      if (s.verify) FillPattern(src, s.size, kKindWrite, q.index, seq);
      SendWr w;
      w.wr_id = MakeWrId(q.index, kKindCredit, q.posted);
      w.opcode = Opcode::kWriteImm;
      w.imm = c.imm;
      w.remote_addr = q.remote.write_base + (seq % ep.write_slots()) * ep.msg_bytes();
      w.rkey = q.remote.rkey;
      w.sg.push_back({reinterpret_cast<uint64_t>(src), s.size, ep.lkey()});
      PostOrFail(q, w);
    } else if (s.verify && q.writes_seen - q.credit_sent >= std::max(1u, ep.write_slots() / 4)) {
      // The source word may change again before it is sent: the client then
      // sees a larger count, which is just as true.
      *q.credit_src = q.writes_seen;
      q.credit_sent = q.writes_seen;
      SendWr w;
      w.wr_id = MakeWrId(q.index, kKindCredit, q.posted);
      w.opcode = Opcode::kWrite;
      w.remote_addr = q.remote.credit_va;
      w.rkey = q.remote.rkey;
      w.sg.push_back({reinterpret_cast<uint64_t>(q.credit_src), 8, ep.lkey()});
      PostOrFail(q, w);
    }
  }

  void OnSend(PerfQp& q, const Completion& c) {
    const uint64_t seq = q.sends_seen++;
    const uint32_t len = SizeOf(kKindSend, q, seq);
    Check(c.byte_len == len &&
          CheckPattern(ep.RecvBuf(q, WrSlot(c.wr_id)), len, kKindSend, q.index, seq));
    if (mode() == ModeId::kSendLat) {
      if (s.verify) FillPattern(q.src, s.size, kKindSend, q.index, seq);
      SendWr w;
      w.wr_id = MakeWrId(q.index, kKindSend, q.posted);
      w.opcode = Opcode::kSend;
      w.sg.push_back({reinterpret_cast<uint64_t>(q.src), s.size, ep.lkey()});
      PostOrFail(q, w);
    }
  }

  bool AllSeen(const ClientDone& d) const {
    uint64_t writes = 0, sends = 0;
    for (const PerfQp& q : ep.qps()) {
      if (q.completed != q.posted) return false;
      writes += q.writes_seen;
      sends += q.sends_seen;
    }
    return writes >= d.data_writes && sends >= d.data_sends;
  }
};

}  // namespace

ServerReport RunResponder(Endpoint& ep, const TestSpec& s, Control& ctl) {
  Responder r{ep, s, {}, {}};
  std::array<Completion, 64> wc;
  ClientDone done{};
  bool have_done = false;
  TimeNs done_at = 0;
  for (uint64_t loop = 0;; loop++) {
    const size_t n = ep.Poll(wc);
    for (size_t i = 0; i < n && r.error.empty(); i++) {
      const Completion& c = wc[i];
      if (c.status != WcStatus::kSuccess) {
        r.error =
            absl::StrCat("work request on QP ", c.qp_num, " failed: ", WcStatusName(c.status));
        break;
      }
      PerfQp& q = ep.qps()[WrQp(c.wr_id)];
      if (WrKind(c.wr_id) != kKindRecv) {
        q.completed++;
        continue;
      }
      r.rep.msgs_received++;
      if (c.opcode == WcOpcode::kRecvRdmaWithImm) {
        r.OnWrite(q, c);
      } else {
        r.OnSend(q, c);
      }
      if (auto st = ep.PostRecv(q); !st.ok()) r.error = std::string(st.message());
    }
    if (!r.error.empty()) break;
    // A syscall: not on every idle poll (that would be most of a server's CPU).
    if (!have_done && loop % kControlPollEvery == 0) {
      bool closed = false;
      if (ctl.TryRecv(&done, sizeof(done), &closed)) {
        have_done = true;
        done_at = ep.Now();
      } else if (closed) {
        r.error = "the client went away during the test";
        break;
      }
    }
    if (have_done) {
      if (done.failed != 0 || r.AllSeen(done)) break;
      if (ep.Now() - done_at > kStallTimeoutNs) {
        r.error = "the client's last messages never arrived";
        break;
      }
    }
  }
  r.rep.ok = r.error.empty() && r.rep.verify_errors == 0;
  std::snprintf(r.rep.error, sizeof(r.rep.error), "%s", r.error.c_str());
  return r.rep;
}

}  // namespace metaroce::perf
