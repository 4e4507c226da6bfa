/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 6 (failure of one link): every host writes endlessly to another;
// under load, the link between leaf 0 and spine 0 drops everything in both
// directions, and routing takes the swept time to reconverge. Throughput
// after, time to get back, QP errors (doc/mr-sim.md).

#include "exp_util.h"

namespace metaroce::mrsim {

namespace {

// What the fabric leaves of the rate before: a flow between leaves that
// starts or ends on leaf 0 keeps (S - 1) / S of its leaf's links there,
// every other flow all of its own.
double LinkShare(const Lab& l, uint64_t seed, uint32_t spines) {
  const std::vector<uint32_t> to = Derangement(l.hosts(), seed);
  double sum = 0;
  for (uint32_t i = 0; i < l.hosts(); i++) {
    const uint32_t a = l.LeafOf(i), b = l.LeafOf(to[i]);
    sum += a != b && (a == 0 || b == 0) ? (spines - 1.0) / spines : 1.0;
  }
  return sum / l.hosts();
}

}  // namespace

absl::StatusOr<Result> RunLinkFailure(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "reconverge_ms";
  t.metrics = kFailureMetrics;
  t.plot_metric = t.Metric("after_ratio");
  if (p.spines < 2) return absl::InvalidArgumentError("link needs 2 spines or more (--spines)");
  if (p.leaves < 2) return absl::InvalidArgumentError("link needs 2 leaves or more (--leaves)");
  // 10 ms: after the run's end, so the route stays as it is while it is measured.
  const std::vector<double> xs = XsOf(p, {0.1, 1, 10}, {0.1, 10});
  double share = 0;  // the verdicts': the largest of the seeds' shares, the strictest
  auto st =
      Sweep(p, r, xs, &t, PlainLab,
            [&](Lab& l, Proto, uint64_t seed, double x) -> absl::StatusOr<std::vector<double>> {
              const double s = LinkShare(l, seed, p.spines);
              share = std::max(share, s);
              sim::FaultConfig f;
              f.reconverge_after_ps = static_cast<sim::SimTime>(x * sim::kPsPerMs);
              return FailureRow(l, seed, {l.topo().fabric_link(0, 0)}, f, s);
            });
  if (!st.ok()) return st;
  for (double x : xs) {
    RecoveryVerdicts(p, t, x, absl::StrFormat("one link dark, routes after %g ms", x), share,
                     &res.verdicts);
  }
  res.notes =
      "Every host writes endlessly to another (a random derangement per seed, 64 KiB WRITEs, 8 "
      "outstanding, one QP each). The failure: the link between leaf 0 and spine 0 drops "
      "everything, both ways; `reconverge_ms` later every switch stops choosing it (at 10 ms, "
      "after "
      "the run: the route stays as it was while it is measured). The share left: a flow between "
      "leaves that starts or ends on leaf 0 keeps (S - 1) / S, the others all (the verdicts use "
      "the largest share of the seeds, the strictest). A RoCE QP hashed onto the link stalls until "
      "routes change, "
      "and fails if its retries run out first; metaroce moves the paths that crossed it to other "
      "source ports. " +
      FailureNote();
  return res;
}

}  // namespace metaroce::mrsim
