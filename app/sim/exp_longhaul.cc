/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 8, long haul (scale-across): the last leaf is a second site,
// joined to the first (the other leaves and the spines) by its links to
// the spines, x ms each one way. Host 0 of that site receives from the
// other hosts of its own site (round trips of microseconds) and from as
// many hosts of the first site (milliseconds) at once, every flow endless.
// longhaul: do the long flows get their share of the bottleneck?
// longhaul-loss: with loss on the long links, do they keep it, unstalled?
// (doc/mr-sim.md)

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "exp_util.h"

namespace metaroce::mrsim {
namespace {

constexpr uint64_t kMsgBytes = kMiB;
// Every flow keeps this many times its fair share's bandwidth-delay product
// outstanding (and at least kMinDepth WRITEs), so that none is held back by
// the application: what a flow gets is the transport's doing.
constexpr double kDepthBdps = 2;
constexpr uint32_t kMinDepth = 8;
// Warm-up and measured time: this many of the long round trips, plus 1 ms.
constexpr uint32_t kWarmupRtts = 5;
constexpr uint32_t kMeasureRtts = 5;
// Jain's index between short- and long-RTT flows (simulation.md).
constexpr double kJainTarget = 0.9;
// longhaul-loss: the long links' one-way delay, and what the long flows keep
// at 1 % loss on them (the loss sweep's target) with no stall longer than
// this many long round trips.
constexpr double kLossDelayMs = 1;
constexpr double kLossKeepTarget = 0.9;
constexpr double kStallRttsTarget = 2;
// A stall is measured in samples of a quarter of a long round trip.
constexpr uint32_t kSamplesPerRtt = 4;

/** What the flows into the second site's host 0 did over the measured time. */
struct LongHaulRun {
  std::vector<double> gbps;  ///< per flow: the short ones (its own site) first
  uint32_t short_flows = 0;
  double long_rtt_us = 0;
  double total_pct = 0;       ///< their sum, of the receiver's link
  double max_stall_rtts = 0;  ///< longest time a long flow completed nothing, in long RTTs
  double resent_pct = 0;
  uint32_t qp_errors = 0;
  double ShortMean() const { return Mean(0, short_flows); }
  double LongMean() const { return Mean(short_flows, gbps.size()); }
  double Mean(size_t from, size_t to) const {
    double sum = 0;
    for (size_t i = from; i < to; i++) sum += gbps[i];
    return to > from ? sum / static_cast<double>(to - from) : kNaN;
  }
};

/**
 * Host 0 of the second site (the last leaf) receives from the other hosts of
 * its site and from as many hosts of leaf 0 at once, every flow endless;
 * measured over kMeasureRtts long round trips (and 1 ms) after as long a
 * warm-up, plus @p before (the loss, set when the flows are up).
 */
absl::StatusOr<LongHaulRun> RunLongHaulFlows(Lab& l, const Params& p,
                                             const std::function<absl::Status(Lab&)>& before) {
  LongHaulRun run;
  const uint32_t h = p.hosts_per_leaf;
  const uint32_t dst = FarHost(l);  // host 0 of the second site
  const uint32_t n = 2 * (h - 1);   // h - 1 from each site
  run.short_flows = h - 1;
  const sim::SimTime long_rtt = l.BaseRttPs(0, dst);
  run.long_rtt_us = static_cast<double>(long_rtt) / sim::kPsPerUs;
  const double share_bps = static_cast<double>(l.host_bps()) / n;
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < n; i++) {
    FlowSpec f;
    f.src = i < h - 1 ? dst + 1 + i : i - (h - 1);  // its own site first
    f.dst = dst;
    f.msg_bytes = kMsgBytes;
    const double bdp = share_bps / 8 * static_cast<double>(l.BaseRttPs(f.src, dst)) /
                       static_cast<double>(sim::kPsPerSec);
    f.depth = std::max<uint32_t>(kMinDepth,
                                 static_cast<uint32_t>(std::ceil(kDepthBdps * bdp / kMsgBytes)));
    auto id = l.AddFlow(f);
    if (!id.ok()) return id.status();
    ids.push_back(*id);
  }
  auto established = l.Establish();
  if (!established.ok()) return established.status();
  if (auto st = before(l); !st.ok()) return st;
  const sim::SimTime start = *established + kWarmupRtts * long_rtt + sim::kPsPerMs;
  l.Run(start);
  std::vector<uint64_t> done0(n);
  for (uint32_t i = 0; i < n; i++) done0[i] = l.flow(ids[i]).done;
  const Totals t0 = l.totals();
  const sim::SimTime measure = kMeasureRtts * long_rtt + sim::kPsPerMs;
  const sim::SimTime sample = std::max<sim::SimTime>(long_rtt / kSamplesPerRtt, 1);
  l.Run(start + measure, sample);
  const Totals t1 = l.totals();
  const double secs = static_cast<double>(measure) / sim::kPsPerSec;
  double sum = 0;
  for (uint32_t i = 0; i < n; i++) {
    const FlowState& f = l.flow(ids[i]);
    run.gbps.push_back(static_cast<double>(f.done - done0[i]) * 8 / secs / 1e9);
    sum += run.gbps.back();
    run.qp_errors += f.failed;
    if (i < run.short_flows) continue;
    uint32_t still = 0, longest = 0;
    for (size_t k = 1; k < f.done_at.size(); k++) {
      still = f.done_at[k] == f.done_at[k - 1] ? still + 1 : 0;
      longest = std::max(longest, still);
    }
    run.max_stall_rtts =
        std::max(run.max_stall_rtts, static_cast<double>(longest) / kSamplesPerRtt);
  }
  run.total_pct = 100 * sum * 1e9 / static_cast<double>(l.host_bps());
  const uint64_t data = t1.data_pkts - t0.data_pkts;
  run.resent_pct = data == 0 ? 0
                             : 100.0 * static_cast<double>(t1.resent_pkts - t0.resent_pkts) /
                                   static_cast<double>(data);
  return run;
}

/** The lab of a run: the last leaf a second site behind links of @p one_way_ms. */
LabConfig TwoSites(Proto proto, uint64_t seed, double one_way_ms) {
  LabConfig c{proto, seed, 0};
  c.site_link_delay_ps = static_cast<sim::SimTime>(one_way_ms * sim::kPsPerMs);
  return c;
}

absl::Status CheckShape(const Params& p) {
  if (p.hosts_per_leaf < 2) {
    return absl::InvalidArgumentError("longhaul needs 2 hosts per leaf or more (--hosts-per-leaf)");
  }
  if (p.leaves < 2) return absl::InvalidArgumentError("longhaul needs 2 leaves or more (--leaves)");
  return absl::OkStatus();
}

std::string FlowsNote(const Params& p) {
  return absl::StrFormat(
      "The last leaf is a second site: its links to the spines are its only way to the first "
      "(the other leaves and the spines). Host 0 of the second site receives from the other %u "
      "hosts of its site and from as many of the first (hosts 0.. of leaf 0) at once, every flow "
      "endless 1 MiB WRITEs with at least %g fair shares' bandwidth-delay products outstanding "
      "(and %u WRITEs). Measured over %u long round trips plus 1 ms, after %u plus 1 ms. Both "
      "protocols are set up for the long round trip (doc/mr-sim.md). `jain`: Jain's index of the "
      "%u flows' goodputs; `long_vs_short`: the long flows' mean over the short ones'; "
      "`total_pct`: their sum, of the receiver's link; `long_rtt_us`: the long flows' base RTT.",
      p.hosts_per_leaf - 1, kDepthBdps, kMinDepth, kMeasureRtts, kWarmupRtts,
      2 * (p.hosts_per_leaf - 1));
}

}  // namespace

absl::StatusOr<Result> RunLongHaul(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "one_way_ms";
  t.metrics = {"jain",      "long_vs_short", "total_pct",  "short_gbps",
               "long_gbps", "long_rtt_us",   "resent_pct", "qp_errors"};
  t.plot_metric = t.Metric("jain");
  if (auto st = CheckShape(p); !st.ok()) return st;
  const std::vector<double> xs = XsOf(p, {0, 1, 5}, {1});
  for (double x : xs) {
    if (!(x >= 0 && x <= 100)) {
      return absl::InvalidArgumentError("longhaul: --x is the long links' one-way delay in ms");
    }
  }
  auto lab_of = [](Proto proto, uint64_t seed, double x) { return TwoSites(proto, seed, x); };
  auto st = Sweep(p, r, xs, &t, lab_of,
                  [&](Lab& l, Proto, uint64_t, double) -> absl::StatusOr<std::vector<double>> {
                    auto run = RunLongHaulFlows(l, p, [](Lab&) { return absl::OkStatus(); });
                    if (!run.ok()) return run.status();
                    const double s = run->ShortMean(), g = run->LongMean();
                    return std::vector<double>{sim::JainIndex(run->gbps),
                                               s > 0 ? g / s : kNaN,
                                               run->total_pct,
                                               s,
                                               g,
                                               run->long_rtt_us,
                                               run->resent_pct,
                                               static_cast<double>(run->qp_errors)};
                  });
  if (!st.ok()) return st;
  if (HasMetaRoce(p)) {
    for (double x : xs) {
      if (x == 0) continue;
      const double j = SpreadOf(t, Proto::kMetaRoce, x, t.Metric("jain")).median;
      res.verdicts.push_back(
          {absl::StrFormat("metaroce, long links of %g ms: Jain's index, short and long flows", x),
           absl::StrFormat(">= %.1f", kJainTarget), Fmt(j), j >= kJainTarget});
      const double e = SpreadOf(t, Proto::kMetaRoce, x, t.Metric("qp_errors")).median;
      res.verdicts.push_back(
          {absl::StrFormat("metaroce, long links of %g ms: QP errors", x), "0", Fmt(e), e == 0});
    }
  }
  res.notes = "`one_way_ms`: the long links' delay (0: as every link). " + FlowsNote(p) +
              " Not measured here: the engine's state per connection at these round trips.";
  return res;
}

absl::StatusOr<Result> RunLongHaulLoss(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "loss_pct";
  t.metrics = {"long_gbps",     "vs_lossless", "max_stall_rtts", "jain",
               "long_vs_short", "total_pct",   "resent_pct",     "qp_errors"};
  t.plot_metric = t.Metric("vs_lossless");
  if (auto st = CheckShape(p); !st.ok()) return st;
  std::vector<double> xs = XsOf(p, {0, 0.1, 1}, {0, 1});
  if (xs.front() != 0) xs.insert(xs.begin(), 0);  // the reference
  for (double x : xs) {
    if (!(x >= 0 && x < 100)) {
      return absl::InvalidArgumentError("longhaul-loss: --x is loss in % (0..100)");
    }
  }
  auto lab_of = [](Proto proto, uint64_t seed, double) {
    return TwoSites(proto, seed, kLossDelayMs);
  };
  auto st =
      Sweep(p, r, xs, &t, lab_of,
            [&](Lab& l, Proto, uint64_t, double x) -> absl::StatusOr<std::vector<double>> {
              // Every long link drops with x, both directions, once the flows are up.
              auto lossy = [x](Lab& lab) -> absl::Status {
                if (x == 0) return absl::OkStatus();
                sim::FaultConfig f;
                f.loss_probability = x / 100;
                const uint32_t last = lab.topo().leaves_per_plane() - 1;
                for (uint32_t s = 0; s < lab.topo().spines_per_plane(); s++) {
                  if (auto st = lab.fabric().SetLinkFaults(lab.topo().fabric_link(last, s), f);
                      !st.ok()) {
                    return st;
                  }
                }
                return absl::OkStatus();
              };
              auto run = RunLongHaulFlows(l, p, lossy);
              if (!run.ok()) return run.status();
              const double s = run->ShortMean(), g = run->LongMean();
              return std::vector<double>{g,
                                         kNaN,
                                         run->max_stall_rtts,
                                         sim::JainIndex(run->gbps),
                                         s > 0 ? g / s : kNaN,
                                         run->total_pct,
                                         run->resent_pct,
                                         static_cast<double>(run->qp_errors)};
            });
  if (!st.ok()) return st;
  AgainstZero(&t, "long_gbps", "vs_lossless");
  if (HasMetaRoce(p)) {
    for (double x : xs) {
      if (x != 1) continue;
      auto median = [&](const char* m) {
        return SpreadOf(t, Proto::kMetaRoce, x, t.Metric(m)).median;
      };
      const double keep = median("vs_lossless"), stall = median("max_stall_rtts");
      res.verdicts.push_back(
          {"metaroce, 1 % loss on the long links: the long flows against lossless",
           absl::StrFormat(">= %.1f", kLossKeepTarget), Fmt(keep), keep >= kLossKeepTarget});
      res.verdicts.push_back({"metaroce, 1 % loss on the long links: longest stall of a long flow",
                              absl::StrFormat("<= %g long RTTs", kStallRttsTarget), Fmt(stall),
                              stall <= kStallRttsTarget});
      const double e = median("qp_errors");
      res.verdicts.push_back(
          {"metaroce, 1 % loss on the long links: QP errors", "0", Fmt(e), e == 0});
    }
  }
  res.notes = absl::StrFormat(
                  "The long links are %g ms one way and drop `loss_pct` of the frames, both "
                  "directions, from "
                  "when the connections are up. ",
                  kLossDelayMs) +
              FlowsNote(p) +
              absl::StrFormat(
                  " `long_gbps`: the long flows' mean goodput; `vs_lossless`: against the same "
                  "protocol and seed at 0 %%; `max_stall_rtts`: the longest time any long flow "
                  "completed no WRITE, in long round trips (sampled every %u-th of one; a flow "
                  "of 1 MiB WRITEs at its share completes several per round trip).",
                  kSamplesPerRtt);
  return res;
}

}  // namespace metaroce::mrsim
