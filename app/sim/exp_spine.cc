/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 6 (failure of a spine, of one link): every host writes endlessly
// to another; under load, every link of spine 0 (spine), or the link between
// leaf 0 and spine 0 (link), drops everything in both directions, and routing
// takes the swept time to reconverge (to stop choosing them).
// Throughput after, time to get back, QP errors (doc/mr-sim.md).

#include <functional>

#include "exp_util.h"

namespace metaroce::mrsim {
namespace {

/** What goes dark, and what it leaves. */
struct RouteFailure {
  const char* what;  ///< in the verdicts: "spine dark", ...
  std::function<std::vector<sim::LinkId>(const Lab&)> links;
  /** The share of the rate before that the fabric leaves, in a seed's run. */
  std::function<double(const Lab&, uint64_t seed)> share;
  std::string notes;  ///< before FailureNote()
};

absl::StatusOr<Result> RunRouteFailure(const Params& p, Runner& r, const RouteFailure& rf) {
  Result res;
  Table& t = res.table;
  t.x_name = "reconverge_ms";
  t.metrics = kFailureMetrics;
  t.plot_metric = t.Metric("after_ratio");
  // 10 ms: after the run's end, so routes stay as they are while it is measured.
  const std::vector<double> xs = XsOf(p, {0.1, 1, 10}, {0.1, 10});
  double share = 0;  // the verdicts': the largest of the seeds' shares, the strictest
  auto st =
      Sweep(p, r, xs, &t, PlainLab,
            [&](Lab& l, Proto, uint64_t seed, double x) -> absl::StatusOr<std::vector<double>> {
              const double s = rf.share(l, seed);
              share = std::max(share, s);
              sim::FaultConfig f;
              f.reconverge_after_ps = static_cast<sim::SimTime>(x * sim::kPsPerMs);
              return FailureRow(l, seed, rf.links(l), f, s);
            });
  if (!st.ok()) return st;
  for (double x : xs) {
    RecoveryVerdicts(p, t, x, absl::StrFormat("%s, routes after %g ms", rf.what, x), share,
                     &res.verdicts);
  }
  res.notes = rf.notes + FailureNote();
  return res;
}

constexpr char kEndless[] =
    "Every host writes endlessly to another (a random derangement per seed, 64 KiB WRITEs, 8 "
    "outstanding, one QP each). ";

}  // namespace

absl::StatusOr<Result> RunSpineFailure(const Params& p, Runner& r) {
  if (p.spines < 2) return absl::InvalidArgumentError("spine needs 2 spines or more (--spines)");
  RouteFailure rf;
  rf.what = "spine dark";
  rf.links = [](const Lab& l) {
    std::vector<sim::LinkId> spine;
    for (uint32_t leaf = 0; leaf < l.topo().leaves_per_plane(); leaf++) {
      spine.push_back(l.topo().fabric_link(leaf, 0));
    }
    return spine;
  };
  // The other spines' share of every leaf's uplinks.
  rf.share = [&](const Lab&, uint64_t) { return (p.spines - 1.0) / p.spines; };
  rf.notes = std::string(kEndless) +
             "The failure: every link of spine 0 drops everything; `reconverge_ms` later every "
             "switch stops choosing them (at 10 ms, after the run: the routes stay as they were "
             "while it is measured). The share left is (S - 1) / S of the leaves' uplinks. A RoCE "
             "QP hashed onto the spine stalls until routes change, and fails if its retries (7 "
             "local ACK timeouts of 100 us) run out first; metaroce moves the paths that crossed "
             "the spine to other source ports. ";
  return RunRouteFailure(p, r, rf);
}

absl::StatusOr<Result> RunLinkFailure(const Params& p, Runner& r) {
  if (p.spines < 2) return absl::InvalidArgumentError("link needs 2 spines or more (--spines)");
  if (p.leaves < 2) return absl::InvalidArgumentError("link needs 2 leaves or more (--leaves)");
  RouteFailure rf;
  rf.what = "one link dark";
  rf.links = [](const Lab& l) { return std::vector<sim::LinkId>{l.topo().fabric_link(0, 0)}; };
  // A flow between leaves that starts or ends on leaf 0 keeps (S - 1) / S of
  // its leaf's links there, every other flow all of its own.
  rf.share = [&](const Lab& l, uint64_t seed) {
    const std::vector<uint32_t> to = Derangement(l.hosts(), seed);
    double sum = 0;
    for (uint32_t i = 0; i < l.hosts(); i++) {
      const uint32_t a = l.LeafOf(i), b = l.LeafOf(to[i]);
      sum += a != b && (a == 0 || b == 0) ? (p.spines - 1.0) / p.spines : 1.0;
    }
    return sum / l.hosts();
  };
  rf.notes = std::string(kEndless) +
             "The failure: the link between leaf 0 and spine 0 drops everything, both ways; "
             "`reconverge_ms` later every switch stops choosing it (at 10 ms, after the run: the "
             "route stays as it was while it is measured). The share left: a flow between leaves "
             "that starts or ends on leaf 0 keeps (S - 1) / S, the others all (the verdicts use "
             "the largest share of the seeds, the strictest). A RoCE QP hashed onto the link "
             "stalls until routes change, and fails if its retries run out first; metaroce moves "
             "the paths that crossed it to other source ports. ";
  return RunRouteFailure(p, r, rf);
}

}  // namespace metaroce::mrsim
