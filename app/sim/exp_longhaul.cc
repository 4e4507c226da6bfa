/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 8, long haul (scale-across): the last leaf is a second site,
// joined to the first (the other leaves and the spines) by its links to
// the spines, each x ms one way. Host 0 of that site receives from the
// other hosts of its own site (round trips of microseconds) and from as
// many hosts of the first site (milliseconds) at once, every flow endless:
// do the long flows get their share of the bottleneck (doc/mr-sim.md)?

#include <algorithm>
#include <cmath>

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

const std::vector<std::string> kMetrics = {"jain",      "long_vs_short", "total_pct",  "short_gbps",
                                           "long_gbps", "long_rtt_us",   "resent_pct", "qp_errors"};

}  // namespace

absl::StatusOr<Result> RunLongHaul(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "one_way_ms";
  t.metrics = kMetrics;
  t.plot_metric = t.Metric("jain");
  if (p.hosts_per_leaf < 2) {
    return absl::InvalidArgumentError("longhaul needs 2 hosts per leaf or more (--hosts-per-leaf)");
  }
  if (p.leaves < 2) return absl::InvalidArgumentError("longhaul needs 2 leaves or more (--leaves)");
  const std::vector<double> xs = XsOf(p, {0, 1, 5}, {1});
  for (double x : xs) {
    if (!(x >= 0 && x <= 100)) {
      return absl::InvalidArgumentError("longhaul: --x is the long links' one-way delay in ms");
    }
  }
  auto lab_of = [](Proto proto, uint64_t seed, double x) {
    LabConfig c{proto, seed, 0};
    c.site_link_delay_ps = static_cast<sim::SimTime>(x * sim::kPsPerMs);
    return c;
  };
  auto st = Sweep(
      p, r, xs, &t, lab_of,
      [&](Lab& l, Proto, uint64_t, double) -> absl::StatusOr<std::vector<double>> {
        const uint32_t h = p.hosts_per_leaf;
        const uint32_t dst = FarHost(l);  // host 0 of the second site
        const uint32_t n = 2 * (h - 1);   // h - 1 from each site
        const sim::SimTime long_rtt = l.BaseRttPs(0, dst);
        const double share_bps = static_cast<double>(l.host_bps()) / n;
        std::vector<uint32_t> ids;
        for (uint32_t i = 0; i < n; i++) {
          FlowSpec f;
          f.src = i < h - 1 ? dst + 1 + i : i - (h - 1);  // its own site first
          f.dst = dst;
          f.msg_bytes = kMsgBytes;
          const double bdp = share_bps / 8 * static_cast<double>(l.BaseRttPs(f.src, dst)) /
                             static_cast<double>(sim::kPsPerSec);
          f.depth = std::max<uint32_t>(
              kMinDepth, static_cast<uint32_t>(std::ceil(kDepthBdps * bdp / kMsgBytes)));
          auto id = l.AddFlow(f);
          if (!id.ok()) return id.status();
          ids.push_back(*id);
        }
        auto established = l.Establish();
        if (!established.ok()) return established.status();
        const sim::SimTime start = *established + kWarmupRtts * long_rtt + sim::kPsPerMs;
        l.Run(start);
        std::vector<uint64_t> done0(n);
        for (uint32_t i = 0; i < n; i++) done0[i] = l.flow(ids[i]).done;
        const Totals t0 = l.totals();
        const sim::SimTime measure = kMeasureRtts * long_rtt + sim::kPsPerMs;
        l.Run(start + measure);
        const Totals t1 = l.totals();
        const double secs = static_cast<double>(measure) / sim::kPsPerSec;
        std::vector<double> gbps(n);
        double sum = 0, short_sum = 0;
        uint32_t errors = 0;
        for (uint32_t i = 0; i < n; i++) {
          gbps[i] = static_cast<double>(l.flow(ids[i]).done - done0[i]) * 8 / secs / 1e9;
          sum += gbps[i];
          if (i < h - 1) short_sum += gbps[i];
          errors += l.flow(ids[i]).failed;
        }
        const double short_mean = short_sum / (h - 1), long_mean = (sum - short_sum) / (h - 1);
        const uint64_t data = t1.data_pkts - t0.data_pkts;
        return std::vector<double>{
            sim::JainIndex(gbps),
            short_mean > 0 ? long_mean / short_mean : kNaN,
            100 * sum * 1e9 / static_cast<double>(l.host_bps()),
            short_mean,
            long_mean,
            static_cast<double>(long_rtt) / sim::kPsPerUs,
            data == 0 ? 0
                      : 100.0 * static_cast<double>(t1.resent_pkts - t0.resent_pkts) /
                            static_cast<double>(data),
            static_cast<double>(errors)};
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
  res.notes = absl::StrFormat(
      "The last leaf is a second site: its links to the spines are `one_way_ms` long (0: as "
      "every link), the site's only way to the first (the other leaves and the spines). Host 0 "
      "of the second site receives from the other %u hosts of its site and from as many of the "
      "first (hosts 0.. of leaf 0) at once, every flow endless 1 MiB WRITEs with at least %g "
      "fair shares' bandwidth-delay products outstanding (and %u WRITEs). Measured over %u long "
      "round trips plus 1 ms, after %u plus 1 ms. `jain`: Jain's index of the %u flows' "
      "goodputs; `long_vs_short`: the long flows' mean over the short ones'; `total_pct`: "
      "their sum, of the receiver's link; `long_rtt_us`: the long flows' base RTT. Not "
      "measured here: loss on a long link, and the engine's state per connection at these "
      "RTTs.",
      p.hosts_per_leaf - 1, kDepthBdps, kMinDepth, kMeasureRtts, kWarmupRtts,
      2 * (p.hosts_per_leaf - 1));
  return res;
}

}  // namespace metaroce::mrsim
