/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 2: every host writes S bytes to another, each host receiving
// once (a random derangement per seed): flow completion times against S at
// line rate. RoCEv2's one ECMP path per QP collides on the spines; metaroce
// sprays (doc/mr-sim.md).

#include <algorithm>
#include <functional>
#include <random>

#include "exp_util.h"

namespace metaroce::mrsim {

std::vector<uint32_t> Derangement(uint32_t n, uint64_t seed) {
  std::vector<uint32_t> to(n);
  std::mt19937_64 rng(seed);
  for (;;) {
    for (uint32_t i = 0; i < n; i++) to[i] = i;
    std::shuffle(to.begin(), to.end(), rng);
    bool fixed = false;
    for (uint32_t i = 0; i < n; i++) fixed |= to[i] == i;
    if (!fixed) return to;
  }
}

absl::StatusOr<PermutationRun> RunPermutationFlows(Lab& l, uint64_t seed, uint64_t bytes,
                                                   const std::function<absl::Status(Lab&)>& fault) {
  if (bytes == 0) return absl::InvalidArgumentError("permutation: sizes are > 0 MiB");
  const std::vector<uint32_t> to = Derangement(l.hosts(), seed);
  for (uint32_t i = 0; i < l.hosts(); i++) {
    FlowSpec f;
    f.src = i;
    f.dst = to[i];
    f.bytes = bytes;
    f.msg_bytes = std::min<uint64_t>(bytes, kMiB);
    if (auto id = l.AddFlow(f); !id.ok()) return id.status();
  }
  PermutationRun run;
  run.ideal_us = static_cast<double>(bytes * 8) / static_cast<double>(l.host_bps()) * 1e6;
  auto t0 = l.Establish();
  if (!t0.ok()) return t0.status();
  if (fault) {
    if (auto st = fault(l); !st.ok()) return st;
  }
  l.Run(*t0 + static_cast<sim::SimTime>(run.ideal_us * 20 * sim::kPsPerUs) + 10 * sim::kPsPerMs);
  for (uint32_t i = 0; i < l.hosts(); i++) {
    const FlowState& f = l.flow(i);
    run.errors += f.failed;
    if (f.end_ps == 0) {
      run.unfinished++;
      continue;
    }
    run.fct_us.push_back(static_cast<double>(f.end_ps - *t0) / sim::kPsPerUs);
  }
  return run;
}

absl::StatusOr<Result> RunPermutation(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "size_mib";
  t.metrics = {"fct_p50_us", "fct_p99_us", "fct_max_us", "mean_pct",
               "tail_pct",   "unfinished", "qp_errors"};
  t.plot_metric = t.Metric("tail_pct");
  t.log_x = true;
  const std::vector<double> xs = XsOf(p, {1, 16, 64}, {1, 4});
  auto st =
      Sweep(p, r, xs, &t, PlainLab,
            [&](Lab& l, Proto, uint64_t seed, double x) -> absl::StatusOr<std::vector<double>> {
              auto run = RunPermutationFlows(l, seed, static_cast<uint64_t>(x * kMiB));
              if (!run.ok()) return run.status();
              const std::vector<double>& fct = run->fct_us;
              std::vector<double> pct;
              for (double us : fct) pct.push_back(100 * run->ideal_us / us);
              const uint32_t unfinished = run->unfinished, errors = run->errors;
              const double ideal_us = run->ideal_us;
              double mean = 0;
              for (double v : pct) mean += v;
              const bool all = unfinished == 0;
              return std::vector<double>{
                  fct.empty() ? kNaN : Percentile(fct, 0.5),
                  fct.empty() ? kNaN : Percentile(fct, 0.99),
                  all ? *std::max_element(fct.begin(), fct.end()) : kNaN,
                  pct.empty() ? kNaN : mean / static_cast<double>(pct.size()),
                  all ? 100 * ideal_us / *std::max_element(fct.begin(), fct.end()) : 0,
                  static_cast<double>(unfinished),
                  static_cast<double>(errors)};
            });
  if (!st.ok()) return st;
  const size_t p99 = t.Metric("fct_p99_us"), mean = t.Metric("mean_pct");
  for (double x : xs) {
    if (!HasMetaRoce(p)) break;
    const double m = SpreadOf(t, Proto::kMetaRoce, x, mean).median;
    res.verdicts.push_back({absl::StrFormat("metaroce, %g MiB: mean goodput of ideal", x),
                            ">= 90 %", Fmt(m) + " %", m >= 90});
    const double mp99 = SpreadOf(t, Proto::kMetaRoce, x, p99).median;
    for (Proto proto : p.protos) {
      if (proto == Proto::kMetaRoce) continue;
      const double ratio = SpreadOf(t, proto, x, p99).median / mp99;
      res.verdicts.push_back(
          {absl::StrFormat("%g MiB: p99 FCT of %s over metaroce's", x, ProtoName(proto)), ">= 3",
           Fmt(ratio), ratio >= 3});
    }
  }
  res.notes =
      "1 MiB WRITEs, 8 outstanding per flow. `mean_pct` and `tail_pct`: S at line rate (payload "
      "only) over the mean and the longest completion time; `unfinished` flows ran out of time "
      "(20 x ideal + 10 ms).";
  return res;
}

}  // namespace metaroce::mrsim
