/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "run.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace metaroce::perf {

using namespace transport;

namespace {

constexpr ModeInfo kModes[] = {
    {"write_bw", false, "RDMA WRITE bandwidth (WRITE_WITH_IMM when --verify)"},
    {"read_bw", false, "RDMA READ bandwidth"},
    {"send_bw", false, "SEND bandwidth"},
    {"write_lat", true, "WRITE_WITH_IMM ping-pong, one-way latency (RTT/2)"},
    {"read_lat", true, "RDMA READ round-trip latency"},
    {"send_lat", true, "SEND ping-pong, one-way latency (RTT/2)"},
    {"atomic_lat", true, "FETCH_AND_ADD round-trip latency"},
    {"mixed", false, "a seeded mix of WRITE_WITH_IMM, SEND, READ, FETCH_AND_ADD, CMP_AND_SWAP"},
};
static_assert(std::size(kModes) == static_cast<size_t>(ModeId::kCount));

constexpr uint32_t kWarmupIters = 16;

bool WantMore(const TestSpec& s, const PerfQp& q, TimeNs now, TimeNs end, uint64_t bytes_posted) {
  if (s.iters != 0 && q.posted >= s.iters) return false;
  if (s.bytes != 0 && bytes_posted >= s.bytes) return false;
  return now < end;
}

std::string CompletionError(const Completion& c) {
  return absl::StrCat("work request on QP ", c.qp_num, " failed: ", WcStatusName(c.status));
}

}  // namespace

const ModeInfo& Mode(ModeId m) { return kModes[static_cast<size_t>(m)]; }

ModeId ModeByName(const std::string& name) {
  for (size_t i = 0; i < std::size(kModes); i++) {
    if (name == kModes[i].name) return static_cast<ModeId>(i);
  }
  return ModeId::kCount;
}

bool Post(Endpoint& ep, PerfQp& q, const SendWr& wr, TimeNs now, Result* r) {
  if (auto st = ep.engine().PostSend(now, q.qpn, wr); !st.ok()) {
    r->error = absl::StrCat("posting on QP ", q.qpn, " failed: ", st.message());
    return false;
  }
  q.posted++;
  return true;
}

uint8_t* SrcSlot(const Endpoint& ep, const PerfQp& q, const TestSpec& s, uint64_t n) {
  return s.verify ? q.src + uint64_t{ep.msg_bytes()} * (n % ep.send_slots()) : q.src;
}

uint8_t* ReadSlot(const Endpoint& ep, const PerfQp& q, const TestSpec& s, uint64_t n) {
  return s.verify ? q.read_dst + uint64_t{ep.msg_bytes()} * (n % ep.send_slots()) : q.read_dst;
}

void PostingLoop(Endpoint& ep, const TestSpec& s, Result* r, const PostingOps& ops) {
  std::array<Completion, 64> wc;
  const TimeNs start = ep.Now();
  const TimeNs end = s.duration_ns != 0 ? start + s.duration_ns : kNever;
  TimeNs last_progress = start;
  uint64_t bytes_posted = 0;
  for (;;) {
    const TimeNs now = ep.Now();
    bool active = false;
    for (PerfQp& q : ep.qps()) {
      while (q.posted - q.completed < s.depth && WantMore(s, q, now, end, bytes_posted)) {
        const uint64_t n = ops.post(ep, q, s, now, r);
        if (n == 0) break;
        bytes_posted += n;
      }
      active |= q.posted != q.completed || WantMore(s, q, now, end, bytes_posted);
    }
    if (!r->error.empty() || !active) break;
    const size_t n = ep.Poll(wc);
    for (size_t i = 0; i < n && r->error.empty(); i++) {
      const Completion& c = wc[i];
      if (c.status != WcStatus::kSuccess) {
        r->error = CompletionError(c);
        break;
      }
      if (WrKind(c.wr_id) == kKindRecv) {
        r->error = "unexpected receive completion in a bandwidth test";
        break;
      }
      PerfQp& q = ep.qps()[WrQp(c.wr_id)];
      q.completed++;
      r->msgs++;
      ops.complete(ep, q, c, s, r);
    }
    if (n > 0) {
      last_progress = now;
    } else if (now - last_progress > kStallTimeoutNs) {
      r->error = absl::StrCat("no completion for ", kStallTimeoutNs / 1'000'000'000,
                              " s: is the peer still there?");
      break;
    }
  }
  r->seconds = static_cast<double>(ep.Now() - start) / 1e9;
}

void PingLoop(Endpoint& ep, const TestSpec& s, Result* r, const PingOps& ops) {
  std::array<Completion, 16> wc;
  PerfQp& q = ep.qps()[0];
  const uint64_t warmup = s.iters > 4 * kWarmupIters ? kWarmupIters : 0;
  const TimeNs begin = ep.Now();
  const TimeNs end = s.duration_ns != 0 ? begin + s.duration_ns : kNever;
  TimeNs measured_from = begin;
  for (uint64_t iter = 0; (s.iters == 0 || iter < s.iters) && r->error.empty(); iter++) {
    const TimeNs start = ep.Now();
    if (start >= end) break;
    if (iter == warmup) measured_from = start;
    if (auto st = ops.post(ep, q, s, iter); !st.ok()) {
      r->error = absl::StrCat("posting on QP ", q.qpn, " failed: ", st.message());
      break;
    }
    q.posted++;
    bool answered = false;
    TimeNs last_progress = start;
    while (!answered && r->error.empty()) {
      const size_t n = ep.Poll(wc);
      const TimeNs now = ep.Now();
      for (size_t i = 0; i < n; i++) {
        const Completion& c = wc[i];
        if (c.status != WcStatus::kSuccess) {
          r->error = CompletionError(c);
          break;
        }
        if (WrKind(c.wr_id) == kKindRecv) {
          if (auto st = ep.PostRecv(q); !st.ok()) r->error = std::string(st.message());
        } else {
          q.completed++;
        }
        if (ops.answers(ep, q, c, s, iter, r)) {
          answered = true;
          const double rtt_us = static_cast<double>(now - start) / 1e3;
          if (iter >= warmup)
            r->lat_us.push_back(ops.round_trip_is_one_way_x2 ? rtt_us / 2 : rtt_us);
        }
      }
      if (n > 0) {
        last_progress = now;
      } else if (now - last_progress > kStallTimeoutNs) {
        r->error = absl::StrCat("no answer for ", kStallTimeoutNs / 1'000'000'000,
                                " s: is the peer still there?");
      }
    }
    if (iter >= warmup) r->msgs++;
  }
  // The send completions of the last requests may still be on their way.
  const TimeNs drain_end = ep.Now() + kStallTimeoutNs;
  while (r->error.empty() && q.completed < q.posted && ep.Now() < drain_end) {
    const size_t n = ep.Poll(wc);
    for (size_t i = 0; i < n; i++) {
      if (wc[i].status != WcStatus::kSuccess) r->error = CompletionError(wc[i]);
      if (WrKind(wc[i].wr_id) != kKindRecv) q.completed++;
    }
  }
  r->seconds = static_cast<double>(ep.Now() - measured_from) / 1e9;
  r->bytes = r->msgs * s.size;
}

void RunMode(Endpoint& ep, const TestSpec& s, Result* r) {
  switch (static_cast<ModeId>(s.mode)) {
    case ModeId::kWriteBw: return RunWriteBw(ep, s, r);
    case ModeId::kReadBw: return RunReadBw(ep, s, r);
    case ModeId::kSendBw: return RunSendBw(ep, s, r);
    case ModeId::kWriteLat: return RunWriteLat(ep, s, r);
    case ModeId::kReadLat: return RunReadLat(ep, s, r);
    case ModeId::kSendLat: return RunSendLat(ep, s, r);
    case ModeId::kAtomicLat: return RunAtomicLat(ep, s, r);
    case ModeId::kMixed: return RunMixed(ep, s, r);
    case ModeId::kCount: break;
  }
  r->error = "unknown mode";
}

}  // namespace metaroce::perf
