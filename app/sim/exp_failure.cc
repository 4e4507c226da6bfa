/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 6 (a plane goes dark): P planes, every host sending to another
// (a derangement) on P QPs, one per plane for RoCE as multi-rail NICs do;
// every link of the last plane is blackholed, with no reconvergence. Whether
// the hosts get back (P - 1) / P of their throughput, how soon, and at what
// cost in failed QPs (doc/mr-sim.md).

#include <algorithm>

#include "exp_util.h"

namespace metaroce::mrsim {
namespace {

// Within this share of the rate expected after, averaged over this many
// bins, counts as back: a bin's rate moves by several percent with the
// 64 KiB messages that happen to complete in it.
constexpr double kBackWithin = 0.90;
constexpr uint32_t kBinRtts = 2;
constexpr size_t kBackBins = 4;

}  // namespace

Recovery RunFailureTimeline(Lab& l, sim::SimTime t0, const FailureTimeline& tl, double share) {
  const sim::SimTime rtt = l.BaseRttPs(0, l.hosts() - 1), bin = kBinRtts * rtt;
  const sim::SimTime dark = tl.DarkAt(t0);
  l.Run(dark + tl.after_ps, bin);
  const std::vector<double> g = BinGbps(l, bin);
  const size_t warm = tl.warm_ps / bin, dark_bin = (dark - t0) / bin;
  const size_t tail = (dark + tl.after_ps - tl.tail_ps - t0) / bin;
  Recovery r;
  r.before_gbps = MeanOf(g, warm, dark_bin);
  r.after_gbps = MeanOf(g, tail, g.size());
  const double floor = kBackWithin * share * r.before_gbps;
  // The first window of kBackBins bins after the dark from which every
  // window is above the floor.
  const size_t none = g.size() - kBackBins + 1;
  size_t back = none;
  while (back > dark_bin && MeanOf(g, back - 1, back - 1 + kBackBins) >= floor) back--;
  r.back_rtts =
      back == none ? kNaN : static_cast<double>((back - dark_bin) * bin) / static_cast<double>(rtt);
  return r;
}

void RecoveryVerdicts(const Params& p, const Table& t, double x, const std::string& what,
                      double share, std::vector<Verdict>* out) {
  if (!HasMetaRoce(p)) return;
  const double ratio = SpreadOf(t, Proto::kMetaRoce, x, t.Metric("after_ratio")).median;
  const double rtts = SpreadOf(t, Proto::kMetaRoce, x, t.Metric("back_after_rtts")).median;
  const double errors = SpreadOf(t, Proto::kMetaRoce, x, t.Metric("qp_errors")).max;
  out->push_back({absl::StrFormat("metaroce, %s: throughput after", what),
                  absl::StrFormat(">= %.2f of before", share), Fmt(ratio),
                  ratio >= share * kBackWithin});
  out->push_back({absl::StrFormat("metaroce, %s: back within", what), "10 base RTTs",
                  Fmt(rtts) + " RTTs", rtts <= 10});
  out->push_back({absl::StrFormat("metaroce, %s: QP errors", what), "0", Fmt(errors), errors == 0});
}

std::string RecoveryNote(const FailureTimeline& tl) {
  return absl::StrFormat(
      "After %u us of warm-up and %u us measured (`before_gbps`, per host), the failure. "
      "`after_gbps`: the last %u ms of the %u ms that follow. `back_after_rtts`: from the failure "
      "to the first bin from which every %u bins (of %u base RTTs) had at least %.0f %% of the "
      "share of the rate before that the fabric left; empty if the last did not. `qp_errors`: QPs "
      "failed (retries exhausted).",
      tl.warm_ps / sim::kPsPerUs, tl.before_ps / sim::kPsPerUs, tl.tail_ps / sim::kPsPerMs,
      tl.after_ps / sim::kPsPerMs, kBackBins, kBinRtts, 100 * kBackWithin);
}

absl::StatusOr<Result> RunFailure(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "planes";
  t.metrics = {"before_gbps", "after_gbps", "after_ratio", "back_after_rtts", "qp_errors"};
  t.plot_metric = t.Metric("after_ratio");
  std::vector<double> xs;
  for (double v : XsOf(p, {2, 4}, {2})) {
    if (v >= 2 && v <= sim::kMaxSimPlanes) xs.push_back(v);
  }
  if (xs.empty()) return absl::InvalidArgumentError("failure needs 2..8 planes (--x)");
  auto st =
      Sweep(p, r, xs, &t, PlanesLab,
            [&](Lab& l, Proto, uint64_t seed, double) -> absl::StatusOr<std::vector<double>> {
              const uint32_t planes = l.planes();
              const std::vector<uint32_t> to = Derangement(l.hosts(), seed);
              for (uint32_t i = 0; i < l.hosts(); i++) {
                for (uint32_t k = 0; k < planes; k++) {
                  FlowSpec f;
                  f.plane = k;
                  f.src = i;
                  f.dst = to[i];
                  f.msg_bytes = kSteadyMsgBytes;
                  if (auto id = l.AddFlow(f); !id.ok()) return id.status();
                }
              }
              auto t0 = l.Establish();
              if (!t0.ok()) return t0.status();
              const FailureTimeline tl;
              sim::FaultConfig f;
              f.blackhole_at_ps = tl.DarkAt(*t0);
              for (sim::LinkId link : l.topo().PlaneLinks(planes - 1)) {
                if (auto s = l.fabric().SetLinkFaults(link, f); !s.ok()) return s;
              }
              const Recovery rec = RunFailureTimeline(l, *t0, tl, (planes - 1.0) / planes);
              const double n = l.hosts();
              return std::vector<double>{rec.before_gbps / n, rec.after_gbps / n,
                                         rec.before_gbps > 0 ? rec.after_gbps / rec.before_gbps : 0,
                                         rec.back_rtts, static_cast<double>(l.totals().qp_errors)};
            });
  if (!st.ok()) return st;
  for (double x : xs) {
    RecoveryVerdicts(p, t, x, absl::StrFormat("%g planes, one dark", x), (x - 1) / x,
                     &res.verdicts);
  }
  res.notes =
      "Every host writes endlessly to another (64 KiB WRITEs, 8 outstanding) on P QPs; RoCE puts "
      "QP k on plane k. The failure: every link of the last plane drops everything, and routing "
      "never reconverges. The share left is (P - 1) / P. " +
      RecoveryNote(FailureTimeline{});
  return res;
}

}  // namespace metaroce::mrsim
