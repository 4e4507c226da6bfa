/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 6 (failure of a spine): every host writes endlessly to another;
// under load, every link of spine 0 drops everything, and routing takes the
// swept time to reconverge (to stop choosing the spine).
// Throughput after, time to get back, QP errors (doc/mr-sim.md).

#include "exp_util.h"

namespace metaroce::mrsim {

absl::StatusOr<Result> RunSpineFailure(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "reconverge_ms";
  t.metrics = kFailureMetrics;
  t.plot_metric = t.Metric("after_ratio");
  if (p.spines < 2) return absl::InvalidArgumentError("spine needs 2 spines or more (--spines)");
  // 10 ms: after the run's end, so routes stay as they are while it is measured.
  const std::vector<double> xs = XsOf(p, {0.1, 1, 10}, {0.1, 10});
  // What is left: the other spines' share of every leaf's uplinks.
  const double share = (p.spines - 1.0) / p.spines;
  auto st =
      Sweep(p, r, xs, &t, PlainLab,
            [&](Lab& l, Proto, uint64_t seed, double x) -> absl::StatusOr<std::vector<double>> {
              std::vector<sim::LinkId> spine;
              for (uint32_t leaf = 0; leaf < l.topo().leaves_per_plane(); leaf++) {
                spine.push_back(l.topo().fabric_link(leaf, 0));
              }
              sim::FaultConfig f;
              f.reconverge_after_ps = static_cast<sim::SimTime>(x * sim::kPsPerMs);
              return FailureRow(l, seed, spine, f, share);
            });
  if (!st.ok()) return st;
  for (double x : xs) {
    RecoveryVerdicts(p, t, x, absl::StrFormat("spine dark, routes after %g ms", x), share,
                     &res.verdicts);
  }
  res.notes =
      "Every host writes endlessly to another (a random derangement per seed, 64 KiB WRITEs, 8 "
      "outstanding, one QP each). The failure: every link of spine 0 drops everything; "
      "`reconverge_ms` later every switch stops choosing them (at 10 ms, after the run: the "
      "routes stay as they were while it is measured). The share left is "
      "(S - 1) / S of the leaves' uplinks. A RoCE QP hashed onto the spine stalls until routes "
      "change, and fails if its retries (7 local ACK timeouts of 100 us) run out first; metaroce "
      "moves the paths that crossed the spine to other source ports. " +
      FailureNote();
  return res;
}

}  // namespace metaroce::mrsim
