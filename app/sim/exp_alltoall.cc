/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 3 (all-to-all): every host writes S / (N - 1) bytes to every
// other at once; the collective ends when the last flow does. Its bus
// bandwidth, as NCCL reports it, against line rate (doc/mr-sim.md).

#include <algorithm>

#include "exp_util.h"

namespace metaroce::mrsim {

absl::StatusOr<CollectiveRun> RunCollective(Lab& l, uint64_t bytes_per_host) {
  const double ideal_us =
      static_cast<double>(bytes_per_host * 8) / static_cast<double>(l.host_bps()) * 1e6;
  auto t0 = l.Establish();
  if (!t0.ok()) return t0.status();
  l.Run(*t0 + static_cast<sim::SimTime>(ideal_us * 20 * sim::kPsPerUs) + 10 * sim::kPsPerMs);
  CollectiveRun run;
  sim::SimTime last = 0;
  for (uint32_t i = 0; i < l.flow_count(); i++) {
    const FlowState& f = l.flow(i);
    run.errors += f.failed;
    run.unfinished += f.end_ps == 0;
    last = std::max(last, f.end_ps);
  }
  if (run.unfinished > 0) return run;
  run.time_us = static_cast<double>(last - *t0) / sim::kPsPerUs;
  // NCCL's bus bandwidth: for all-to-all algbw x (N - 1) / N, for all-reduce
  // algbw x 2 (N - 1) / N; either way what each rank sent, per second.
  run.busbw_gbps = static_cast<double>(bytes_per_host * 8) / (run.time_us * 1e-6) / 1e9;
  run.line_pct = 100 * run.busbw_gbps * 1e9 / static_cast<double>(l.host_bps());
  return run;
}

absl::StatusOr<Result> RunAllToAll(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "size_mib";
  t.metrics = kCollectiveMetrics;
  t.plot_metric = t.Metric("line_pct");
  t.log_x = true;
  const std::vector<double> xs = XsOf(p, {4, 64}, {1});
  auto st = Sweep(p, r, xs, &t, PlainLab,
                  [&](Lab& l, Proto, uint64_t, double x) -> absl::StatusOr<std::vector<double>> {
                    const uint32_t n = l.hosts();
                    const auto chunk = static_cast<uint64_t>(x * kMiB) / (n - 1);
                    if (chunk == 0)
                      return absl::InvalidArgumentError("alltoall: S / (hosts - 1) is 0 bytes");
                    for (uint32_t i = 0; i < n; i++) {
                      for (uint32_t k = 1; k < n; k++) {
                        FlowSpec f;
                        f.src = i;
                        f.dst = (i + k) % n;
                        f.bytes = chunk;
                        f.msg_bytes = std::min<uint64_t>(chunk, 256 * 1024);
                        f.depth = 4;
                        if (auto id = l.AddFlow(f); !id.ok()) return id.status();
                      }
                    }
                    auto run = RunCollective(l, chunk * (n - 1));
                    if (!run.ok()) return run.status();
                    return run->Row();
                  });
  if (!st.ok()) return st;
  CollectiveVerdicts(p, t, xs, &res.verdicts);
  res.notes =
      "Each host has one flow (one QP) to every other, 256 KiB WRITEs, 4 outstanding per flow, "
      "all started at once. `busbw_gbps`: the bytes each host sent over the time the last flow "
      "finished (NCCL's bus bandwidth for all-to-all).";
  return res;
}

}  // namespace metaroce::mrsim
