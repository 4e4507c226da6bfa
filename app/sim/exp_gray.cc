/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 4, loss on one path only: a gray spine. Every link of spine 0
// drops packets at random, both directions, while every host writes S to
// another (a permutation); the slowest flow against the same protocol and
// seed without loss (doc/mr-sim.md).

#include <algorithm>

#include "exp_util.h"

namespace metaroce::mrsim {
namespace {

constexpr double kSizeMib = 4, kQuickSizeMib = 1;

}  // namespace

absl::StatusOr<Result> RunGraySpine(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "loss_pct";
  t.metrics = {"fct_p50_us", "fct_max_us", "tail_pct", "vs_lossless",
               "resent_pct", "unfinished", "qp_errors"};
  t.plot_metric = t.Metric("vs_lossless");
  if (p.spines < 2) return absl::InvalidArgumentError("gray needs 2 spines or more (--spines)");
  std::vector<double> xs = XsOf(p, {0, 1, 10}, {0, 10});
  if (xs.front() != 0) xs.insert(xs.begin(), 0);  // the reference
  for (double x : xs) {
    if (!(x >= 0 && x < 100)) return absl::InvalidArgumentError("gray: --x is loss in % (0..100)");
  }
  const auto bytes = static_cast<uint64_t>((p.quick ? kQuickSizeMib : kSizeMib) * kMiB);
  auto st = Sweep(
      p, r, xs, &t, PlainLab,
      [&](Lab& l, Proto, uint64_t seed, double x) -> absl::StatusOr<std::vector<double>> {
        // Each of the spine's links drops with x: a packet crossing it
        // (leaf -> spine -> leaf) is lost with about 2x.
        auto gray = [x](Lab& lab) -> absl::Status {
          if (x == 0) return absl::OkStatus();
          sim::FaultConfig f;
          f.loss_probability = x / 100;
          for (uint32_t leaf = 0; leaf < lab.topo().leaves_per_plane(); leaf++) {
            if (auto s = lab.fabric().SetLinkFaults(lab.topo().fabric_link(leaf, 0), f); !s.ok()) {
              return s;
            }
          }
          return absl::OkStatus();
        };
        auto run = RunPermutationFlows(l, seed, bytes, gray);
        if (!run.ok()) return run.status();
        const Totals tot = l.totals();
        const bool all = run->unfinished == 0;
        const double max = all ? *std::max_element(run->fct_us.begin(), run->fct_us.end()) : kNaN;
        return std::vector<double>{
            run->fct_us.empty() ? kNaN : Percentile(run->fct_us, 0.5),
            max,
            all ? 100 * run->ideal_us / max : 0,
            kNaN,
            tot.data_pkts > 0
                ? 100.0 * static_cast<double>(tot.resent_pkts) / static_cast<double>(tot.data_pkts)
                : 0,
            static_cast<double>(run->unfinished),
            static_cast<double>(run->errors)};
      });
  if (!st.ok()) return st;
  AgainstZero(&t, "tail_pct", "vs_lossless");  // the slowest flow's
  LossVerdicts(p, t, xs, " on one spine", &res.verdicts);
  res.notes = absl::StrFormat(
      "Every host writes %g MiB to another (a random derangement per seed, 1 MiB WRITEs, 8 "
      "outstanding), and every link of spine 0 drops with `loss_pct`, both directions, from when "
      "the connections are up. `vs_lossless`: the slowest flow's goodput (`tail_pct`, S at line "
      "rate over its completion time) against the same protocol and seed at 0 %%. A RoCE QP "
      "whose ECMP path crosses the spine pays go-back-N on every loss; metaroce's paths through "
      "it see the loss, and one that loses much more than its connection's others fails and "
      "moves to a fresh source port. `resent_pct`: data packets sent again, of all.",
      p.quick ? kQuickSizeMib : kSizeMib);
  return res;
}

}  // namespace metaroce::mrsim
