/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Verified traffic between two runtimes: a QP for every pair of shards (one on each
// runtime), each carrying a WRITE one way and a SEND the other, run by both runtimes'
// threads and checked byte for byte afterwards.

#ifndef METAROCE_TEST_RUNTIME_TRAFFIC_H
#define METAROCE_TEST_RUNTIME_TRAFFIC_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mr_runtime.h"

namespace metaroce::testing {

/** Engine settings for a loaded test machine (a silent peer is dead only after 10 s). */
transport::EngineConfig TestEngineConfig(uint64_t seed);

class Traffic {
 public:
  struct Options {
    uint32_t write_bytes = 1024 * 1024;  ///< per QP, from runtime A to B
    uint32_t send_bytes = 256 * 1024;    ///< per QP, from runtime B to A
    uint32_t qps_per_pair = 1;           ///< QPs between each pair of shards
    std::chrono::seconds timeout{25};
  };

  /**
   * Creates a PD and CQ per shard, and per pair of shards (i of @p a, j of @p b)
   * one connected QP on each side with its buffer and MR; posts the receives.
   * Control path: neither runtime may be running.
   */
  static absl::StatusOr<std::unique_ptr<Traffic>> Setup(runtime::Runtime& a, runtime::Runtime& b,
                                                        const Options& opt);

  /**
   * Runs both runtimes (A on a second thread) until every work request has
   * completed or the timeout passed; the shards post their WRITEs and SENDs from
   * the app callback on their first turn. Returns the first Run() error.
   */
  absl::Status Run();

  /** What went wrong (missing or failed completions, wrong bytes); empty when all is well. */
  std::vector<std::string> Problems() const;

  /** One line per shard of both runtimes: its counters and its engine's, for failure messages. */
  std::string Report() const;

  /** QPs per runtime (shards of A x shards of B x qps_per_pair). */
  size_t num_qps() const { return qps_.size(); }
  /** Seconds the last Run() took. */
  double seconds() const { return seconds_; }
  /** Payload bytes moved (WRITEs + SENDs). */
  uint64_t bytes() const { return uint64_t{opt_.write_bytes + opt_.send_bytes} * qps_.size(); }

 private:
  struct ShardCtx {
    uint32_t pd = 0;
    uint32_t cq = 0;
    bool posted = false;
    std::vector<std::pair<uint32_t, transport::SendWr>> to_post;  // (qpn, work request)
    std::vector<transport::Completion> done;
    std::vector<std::string> errors;
  };
  struct End {
    uint16_t shard = 0;
    uint32_t qpn = 0;
    std::vector<uint8_t> buf;
    transport::MrInfo mr;
    uint64_t Addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data()) + off; }
  };
  struct Qp {
    End a, b;
  };

  Traffic(runtime::Runtime& a, runtime::Runtime& b, const Options& opt) : a_(a), b_(b), opt_(opt) {}
  bool App(std::vector<ShardCtx>& side, runtime::Shard& s);

  runtime::Runtime& a_;
  runtime::Runtime& b_;
  Options opt_;
  std::vector<ShardCtx> sa_, sb_;
  std::vector<Qp> qps_;
  std::atomic<int64_t> remaining_{0};
  std::chrono::steady_clock::time_point deadline_;
  double seconds_ = 0;
};

}  // namespace metaroce::testing

#endif  // METAROCE_TEST_RUNTIME_TRAFFIC_H
