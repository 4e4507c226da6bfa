/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The two client loops every mode is built from: a posting loop that keeps
// `depth` work requests outstanding per QP (bandwidth modes), and a ping loop
// that times one request at a time (latency modes).

#ifndef METAROCE_APP_PERF_RUN_H
#define METAROCE_APP_PERF_RUN_H

#include <string>

#include "perf.h"

namespace metaroce::perf {

/** What a bandwidth mode does per work request. */
struct PostingOps {
  /** Posts one work request on @p q; returns its payload bytes, or 0 if it cannot post now. */
  uint64_t (*post)(Endpoint& ep, PerfQp& q, const TestSpec& s, TimeNs now, Result* r);
  /** Checks a completed send-queue work request (slot meta in q.meta). */
  void (*complete)(Endpoint& ep, PerfQp& q, const transport::Completion& c, const TestSpec& s,
                   Result* r);
};
void PostingLoop(Endpoint& ep, const TestSpec& s, Result* r, const PostingOps& ops);

/** What a latency mode does per iteration. */
struct PingOps {
  /** Posts the request of iteration @p iter. */
  absl::Status (*post)(Endpoint& ep, PerfQp& q, const TestSpec& s, uint64_t iter);
  /** True when @p c ends the iteration (checks the data if s.verify). */
  bool (*answers)(Endpoint& ep, PerfQp& q, const transport::Completion& c, const TestSpec& s,
                  uint64_t iter, Result* r);
  bool round_trip_is_one_way_x2;  ///< report RTT/2 (write/send ping-pong) rather than RTT
};
void PingLoop(Endpoint& ep, const TestSpec& s, Result* r, const PingOps& ops);

/** Posts @p wr on @p q; on failure records the error in @p r and returns false. */
bool Post(Endpoint& ep, PerfQp& q, const transport::SendWr& wr, TimeNs now, Result* r);
/** Address of send slot @p slot of @p q's source buffer (slot 0 without --verify). */
uint8_t* SrcSlot(const Endpoint& ep, const PerfQp& q, const TestSpec& s, uint64_t n);
uint8_t* ReadSlot(const Endpoint& ep, const PerfQp& q, const TestSpec& s, uint64_t n);

}  // namespace metaroce::perf

#endif  // METAROCE_APP_PERF_RUN_H
