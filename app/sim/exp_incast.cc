/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 7: N senders write S bytes each into host 0 at once
// (doc/mr-sim.md): when the last finishes against N x S at line rate, the
// receiver's downlink queue against a BDP, drops and pauses, and how soon
// the senders share the link evenly.

#include <algorithm>

#include "exp_util.h"

namespace metaroce::mrsim {
namespace {

// The senders' rates are compared over windows of at least this many base
// RTTs, and long enough for this many full packets per sender at C/N: the
// rate of fewer packets is too coarse to be within 10 %.
constexpr uint32_t kWindowRtts = 4;
constexpr uint32_t kWindowPkts = 16;
constexpr uint64_t kPktBytes = 4096;
constexpr double kEvenWithin = 0.10;

}  // namespace

absl::StatusOr<Result> RunIncast(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "senders";
  t.metrics = {"finish_us",  "vs_ideal_pct",  "queue_max_kb", "queue_bdps", "drops",
               "pfc_pauses", "even_after_us", "jain",         "qp_errors"};
  t.plot_metric = t.Metric("vs_ideal_pct");
  const uint64_t bytes = p.quick ? 256 * 1024 : kMiB;
  std::vector<double> xs;
  for (double n : XsOf(p, {8, 32, 63}, {7})) {
    if (n >= 1 && n < p.Hosts()) xs.push_back(n);
  }
  if (xs.empty()) return absl::InvalidArgumentError("incast needs 1..hosts-1 senders");
  sim::SimTime window_ps = 0;
  auto st = Sweep(
      p, r, xs, &t, PlainLab,
      [&](Lab& l, Proto, uint64_t, double x) -> absl::StatusOr<std::vector<double>> {
        const auto n = static_cast<uint32_t>(x);
        // Senders from the last host back: the far leaves first, then host 0's own.
        const sim::SimTime rtt = l.BaseRttPs(0, l.hosts() - 1);
        window_ps = std::max<sim::SimTime>(
            kWindowRtts * rtt, sim::SerializationPs(kWindowPkts * kPktBytes * n, l.host_bps()));
        for (uint32_t i = 0; i < n; i++) {
          FlowSpec f;
          f.src = l.hosts() - 1 - i;
          f.dst = 0;
          f.bytes = bytes;
          f.msg_bytes = std::min<uint64_t>(bytes, 64 * 1024);
          if (auto id = l.AddFlow(f); !id.ok()) return id.status();
        }
        const double ideal_ps =
            static_cast<double>(n * bytes * 8) / static_cast<double>(l.host_bps()) * sim::kPsPerSec;
        auto t0 = l.Establish();
        if (!t0.ok()) return t0.status();
        l.Run(*t0 + static_cast<sim::SimTime>(ideal_ps * 20) + 10 * sim::kPsPerMs, window_ps);
        sim::SimTime last = 0, first = sim::kSimTimeNever;  // since *t0
        uint32_t errors = 0;
        for (uint32_t i = 0; i < n; i++) {
          const FlowState& f = l.flow(i);
          errors += f.failed;
          const sim::SimTime end = (f.end_ps == 0 ? l.fabric().Now() : f.end_ps) - *t0;
          last = std::max(last, end);
          first = std::min(first, end);
        }
        // Windows while every sender was sending: the rates, even or not.
        const size_t windows = std::min<size_t>(first / window_ps, l.flow(0).done_at.size());
        double even_after = kNaN;
        std::vector<double> total(n);
        for (size_t w = windows; w-- > 0;) {
          std::vector<double> rate(n);
          double sum = 0;
          for (uint32_t i = 0; i < n; i++) {
            const auto& d = l.flow(i).done_at;
            rate[i] = static_cast<double>(d[w] - (w == 0 ? 0 : d[w - 1]));
            sum += rate[i];
          }
          bool even = sum > 0;
          for (double v : rate) even &= std::fabs(v - sum / n) <= kEvenWithin * sum / n;
          if (!even) break;
          even_after = static_cast<double>(w * window_ps) / sim::kPsPerUs;
        }
        for (uint32_t i = 0; i < n; i++) {
          total[i] = windows == 0 ? 0 : static_cast<double>(l.flow(i).done_at[windows - 1]);
        }
        const sim::PortStats& down = l.fabric().port_stats(l.DownlinkOf(0));
        const Totals tot = l.totals();
        const double bdp = static_cast<double>(l.BdpBytes(0, l.hosts() - 1));
        return std::vector<double>{static_cast<double>(last) / sim::kPsPerUs,
                                   100 * ideal_ps / static_cast<double>(last),
                                   static_cast<double>(down.max_queue_bytes) / 1000,
                                   static_cast<double>(down.max_queue_bytes) / bdp,
                                   static_cast<double>(tot.drops),
                                   static_cast<double>(tot.pfc_pauses),
                                   even_after,
                                   windows == 0 ? kNaN : sim::JainIndex(total),
                                   static_cast<double>(errors)};
      });
  if (!st.ok()) return st;
  for (double x : xs) {
    if (!HasMetaRoce(p)) break;
    auto median = [&](const char* metric) {
      return SpreadOf(t, Proto::kMetaRoce, x, t.Metric(metric)).median;
    };
    const double q = median("queue_bdps"), v = median("vs_ideal_pct"), d = median("drops");
    res.verdicts.push_back(
        {absl::StrFormat("metaroce, %g senders: the queue", x), "< 1 BDP", Fmt(q) + " BDP", q < 1});
    res.verdicts.push_back({absl::StrFormat("metaroce, %g senders: completion", x),
                            "within 5 % of N S / C", Fmt(v) + " %", v >= 95});
    res.verdicts.push_back(
        {absl::StrFormat("metaroce, %g senders: no drops", x), "0", Fmt(d), d == 0});
  }
  res.notes = absl::StrFormat(
      "Each sender writes %u bytes (64 KiB WRITEs, 8 outstanding) to host 0 from the last host "
      "back. `vs_ideal_pct`: N x S at line rate (payload only) over the time the last finished. "
      "`queue_*`: the most host 0's downlink held, against the bandwidth-delay product of a "
      "base RTT. `even_after_us`: the start of the first window (of %u base RTTs or %u "
      "packets per sender, whichever is longer; %.1f us in the last run) from which every "
      "window until the first sender finished had every sender within 10 %% of the mean; empty "
      "if the last window was not even. `jain`: over the bytes each sent until the first finished.",
      bytes, kWindowRtts, kWindowPkts, static_cast<double>(window_ps) / sim::kPsPerUs);
  return res;
}

}  // namespace metaroce::mrsim
