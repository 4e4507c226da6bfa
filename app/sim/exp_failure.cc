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

// The timeline: flows warmed, measured, then the failure, and this long
// after it, the last kTailPs of which give the rate after.
constexpr sim::SimTime kWarmPs = 100 * sim::kPsPerUs;
constexpr sim::SimTime kBeforePs = 200 * sim::kPsPerUs;  // measured before the failure
constexpr sim::SimTime kAfterPs = 3 * sim::kPsPerMs;
constexpr sim::SimTime kTailPs = sim::kPsPerMs;
// Within this share of the rate expected after, averaged over this many
// bins, counts as back: a bin's rate moves by several percent with the
// 64 KiB messages that happen to complete in it.
constexpr double kBackWithin = 0.90;
constexpr uint32_t kBinRtts = 2;
constexpr size_t kBackBins = 4;

}  // namespace

absl::StatusOr<std::vector<double>> FailureRow(Lab& l, uint64_t seed,
                                               const std::vector<sim::LinkId>& dark_links,
                                               sim::FaultConfig dark, double share) {
  const std::vector<uint32_t> to = Derangement(l.hosts(), seed);
  for (uint32_t i = 0; i < l.hosts(); i++) {
    for (uint32_t k = 0; k < l.planes(); k++) {
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
  const sim::SimTime at = *t0 + kWarmPs + kBeforePs;
  dark.blackhole_at_ps = at;
  for (sim::LinkId link : dark_links) {
    if (auto s = l.fabric().SetLinkFaults(link, dark); !s.ok()) return s;
  }
  const sim::SimTime rtt = l.BaseRttPs(0, l.hosts() - 1), bin = kBinRtts * rtt;
  l.Run(at + kAfterPs, bin);
  const std::vector<double> g = BinGbps(l, bin);
  const size_t warm = kWarmPs / bin, at_bin = (at - *t0) / bin;
  const size_t tail = (at + kAfterPs - kTailPs - *t0) / bin;
  const double before = MeanOf(g, warm, at_bin), after = MeanOf(g, tail, g.size());
  const double floor = kBackWithin * share * before;
  // The first window of kBackBins bins after the failure from which every
  // window is above the floor.
  const size_t none = g.size() - kBackBins + 1;
  size_t back = none;
  while (back > at_bin && MeanOf(g, back - 1, back - 1 + kBackBins) >= floor) back--;
  const double back_rtts =
      back == none ? kNaN : static_cast<double>((back - at_bin) * bin) / static_cast<double>(rtt);
  const double n = l.hosts();
  return std::vector<double>{before / n, after / n, before > 0 ? after / before : 0, back_rtts,
                             static_cast<double>(l.totals().qp_errors)};
}

std::string FailureNote() {
  return absl::StrFormat(
      "After %u us of warm-up and %u us measured (`before_gbps`, per host), the failure. "
      "`after_gbps`: the last %u ms of the %u ms that follow. `back_after_rtts`: from the failure "
      "to the first bin from which every %u bins (of %u base RTTs) had at least %.0f %% of the "
      "share of the rate before that the fabric left; empty if the last did not. `qp_errors`: QPs "
      "failed (retries exhausted).",
      kWarmPs / sim::kPsPerUs, kBeforePs / sim::kPsPerUs, kTailPs / sim::kPsPerMs,
      kAfterPs / sim::kPsPerMs, kBackBins, kBinRtts, 100 * kBackWithin);
}

void RecoveryVerdicts(const Params& p, const Table& t, double x, const std::string& what,
                      double share, std::vector<Verdict>* out) {
  if (!HasMetaRoce(p)) return;
  const double ratio = SpreadOf(t, Proto::kMetaRoce, x, t.Metric("after_ratio")).median;
  const double rtts = SpreadOf(t, Proto::kMetaRoce, x, t.Metric("back_after_rtts")).median;
  const double errors = SpreadOf(t, Proto::kMetaRoce, x, t.Metric("qp_errors")).max;
  out->push_back({absl::StrFormat("metaroce, %s: throughput after", what),
                  absl::StrFormat(">= %g x %.2f of before", kBackWithin, share), Fmt(ratio),
                  ratio >= share * kBackWithin});
  out->push_back({absl::StrFormat("metaroce, %s: back within", what), "10 base RTTs",
                  Fmt(rtts) + " RTTs", rtts <= 10});
  out->push_back({absl::StrFormat("metaroce, %s: QP errors", what), "0", Fmt(errors), errors == 0});
}

absl::StatusOr<Result> RunFailure(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "planes";
  t.metrics = kFailureMetrics;
  t.plot_metric = t.Metric("after_ratio");
  std::vector<double> xs;
  for (double v : XsOf(p, {2, 4}, {2})) {
    if (v >= 2 && v <= sim::kMaxSimPlanes) xs.push_back(v);
  }
  if (xs.empty()) return absl::InvalidArgumentError("failure needs 2..8 planes (--x)");
  auto st = Sweep(p, r, xs, &t, PlanesLab,
                  [&](Lab& l, Proto, uint64_t seed, double) -> absl::StatusOr<std::vector<double>> {
                    const uint32_t planes = l.planes();
                    return FailureRow(l, seed, l.topo().PlaneLinks(planes - 1), sim::FaultConfig{},
                                      (planes - 1.0) / planes);
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
      FailureNote();
  return res;
}

}  // namespace metaroce::mrsim
