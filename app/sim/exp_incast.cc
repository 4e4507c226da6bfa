/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 7: N senders write S bytes each into host 0 at once
// (doc/mr-sim.md): when the last finishes against N x S at line rate, the
// receiver's downlink queue against a BDP, drops and pauses, and how soon
// the senders share the link evenly. incast-qps: every other host sends, its
// S bytes spread over Q QPs (up to 4,032 QPs into one host).

#include <algorithm>
#include <cmath>
#include <optional>

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

const std::vector<std::string> kMetrics = {
    "finish_us",     "vs_ideal_pct", "queue_max_kb", "queue_bdps",    "drops",     "pfc_pauses",
    "even_after_us", "jain",         "qp_errors",    "delivered_pct", "victim_pct"};

// The victim keeps at least this share of its link's rate while the incast
// runs: one flow alone makes 96-97 % of it (calibration: the headers).
constexpr double kVictimPct = 90;
// The victim runs this long before the senders start, so that the incast
// meets it at its full rate (slow start is over in a few round trips).
constexpr uint32_t kVictimLeadRtts = 20;

/**
 * The victim beside an incast of @p senders: from the host below the
 * senders (it shares their leaf's uplinks when it is on their leaf) to host
 * 1 (beside the receiver, behind the same leaf switch), writing endlessly.
 * Only when that host is neither a sender nor on host 0's leaf, so that it
 * crosses the fabric into the receiver's leaf: {} otherwise.
 */
std::optional<FlowSpec> VictimOf(const Lab& l, uint32_t senders) {
  if (l.hosts() < senders + 3) return std::nullopt;
  FlowSpec f;
  f.src = l.hosts() - 1 - senders;
  f.dst = 1;
  if (l.LeafOf(f.src) == l.LeafOf(0) || l.LeafOf(f.dst) != l.LeafOf(0)) return std::nullopt;
  f.msg_bytes = 64 * 1024;
  return f;
}

struct Shape {
  uint32_t senders = 0;
  uint32_t qps = 1;    ///< per sender, each with bytes / qps
  uint64_t bytes = 0;  ///< per sender
};

/**
 * One incast of @p s into host 0, senders from the last host back (the far
 * leaves first, then host 0's own); kMetrics' values. A sender's rate is
 * the sum of its QPs'. Sets *window_ps to the window its rates were taken over.
 */
absl::StatusOr<std::vector<double>> Incast(Lab& l, const Shape& s, sim::SimTime* window_ps) {
  const uint32_t n = s.senders;
  const sim::SimTime rtt = l.BaseRttPs(0, l.hosts() - 1);
  *window_ps = std::max<sim::SimTime>(
      kWindowRtts * rtt, sim::SerializationPs(kWindowPkts * kPktBytes * n, l.host_bps()));
  const uint64_t per_qp = s.bytes / s.qps;
  const std::optional<FlowSpec> victim = s.qps == 1 ? VictimOf(l, n) : std::nullopt;
  const sim::SimTime lead = victim.has_value() ? kVictimLeadRtts * rtt : 0;
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t k = 0; k < s.qps; k++) {
      FlowSpec f;
      f.src = l.hosts() - 1 - i;
      f.dst = 0;
      f.bytes = per_qp;
      f.msg_bytes = std::min<uint64_t>(per_qp, 64 * 1024);
      f.start_ps = lead;
      if (auto id = l.AddFlow(f); !id.ok()) return id.status();
    }
  }
  const double ideal_ps = static_cast<double>(uint64_t{n} * s.qps * per_qp * 8) /
                          static_cast<double>(l.host_bps()) * sim::kPsPerSec;
  if (victim.has_value()) {
    if (auto id = l.AddFlow(*victim); !id.ok()) return id.status();
  }
  auto established = l.Establish();
  if (!established.ok()) return established.status();
  // The incast's time runs from its senders' start.
  const sim::SimTime t0 = *established + lead;
  uint64_t victim_before = 0;
  if (victim.has_value()) {
    l.Run(t0);
    victim_before = l.flow(n * s.qps).done;
  }
  l.Run(t0 + static_cast<sim::SimTime>(ideal_ps * 20) + 10 * sim::kPsPerMs, *window_ps);
  // Per sender: when its last QP finished, and its bytes done at each sample.
  sim::SimTime last = 0, first = sim::kSimTimeNever;  // since t0
  uint32_t errors = 0;
  uint64_t delivered = 0;
  std::vector<std::vector<uint64_t>> done(n);
  for (uint32_t i = 0; i < n; i++) {
    sim::SimTime end = 0;
    for (uint32_t k = 0; k < s.qps; k++) {
      const FlowState& f = l.flow(i * s.qps + k);
      errors += f.failed;
      delivered += f.done;
      end = std::max(end, (f.end_ps == 0 ? l.fabric().Now() : f.end_ps) - t0);
      done[i].resize(f.done_at.size());
      for (size_t w = 0; w < f.done_at.size(); w++) done[i][w] += f.done_at[w];
    }
    last = std::max(last, end);
    first = std::min(first, end);
  }
  // Windows while every sender was sending: the rates, even or not.
  const size_t windows = std::min<size_t>(first / *window_ps, done[0].size());
  double even_after = kNaN;
  for (size_t w = windows; w-- > 0;) {
    std::vector<double> rate(n);
    double sum = 0;
    for (uint32_t i = 0; i < n; i++) {
      rate[i] = static_cast<double>(done[i][w] - (w == 0 ? 0 : done[i][w - 1]));
      sum += rate[i];
    }
    bool even = sum > 0;
    for (double v : rate) even &= std::fabs(v - sum / n) <= kEvenWithin * sum / n;
    if (!even) break;
    even_after = static_cast<double>(w * *window_ps) / sim::kPsPerUs;
  }
  std::vector<double> total(n);
  for (uint32_t i = 0; i < n; i++) {
    total[i] = windows == 0 ? 0 : static_cast<double>(done[i][windows - 1]);
  }
  const sim::PortStats& down = l.fabric().port_stats(l.DownlinkOf(0));
  const Totals tot = l.totals();
  const double bdp = static_cast<double>(l.BdpBytes(0, l.hosts() - 1));
  // The victim's goodput while the incast ran (the lab stops with the last
  // sender), of its link's rate.
  const double victim_pct =
      !victim.has_value() || last == 0
          ? kNaN
          : 100 * static_cast<double>(l.flow(n * s.qps).done - victim_before) * 8 /
                (static_cast<double>(last) / sim::kPsPerSec) / static_cast<double>(l.host_bps());
  return std::vector<double>{
      static_cast<double>(last) / sim::kPsPerUs,
      100 * ideal_ps / static_cast<double>(last),
      static_cast<double>(down.max_queue_bytes) / 1000,
      static_cast<double>(down.max_queue_bytes) / bdp,
      static_cast<double>(tot.drops),
      static_cast<double>(tot.pfc_pauses),
      even_after,
      windows == 0 ? kNaN : sim::JainIndex(total),
      static_cast<double>(errors),
      100 * static_cast<double>(delivered) / static_cast<double>(uint64_t{n} * s.qps * per_qp),
      victim_pct};
}

/** metaroce's verdicts at each x: the queue, the completion, no drops, no failed QP. */
void IncastVerdicts(const Params& p, const std::vector<double>& xs, const char* what, Result* res) {
  if (!HasMetaRoce(p)) return;
  const Table& t = res->table;
  for (double x : xs) {
    auto median = [&](const char* metric) {
      return SpreadOf(t, Proto::kMetaRoce, x, t.Metric(metric)).median;
    };
    const double q = median("queue_bdps"), v = median("vs_ideal_pct"), d = median("drops");
    res->verdicts.push_back({absl::StrFormat("metaroce, %g %s: the queue", x, what), "< 1 BDP",
                             Fmt(q) + " BDP", q < 1});
    res->verdicts.push_back({absl::StrFormat("metaroce, %g %s: completion", x, what),
                             "within 5 % of N S / C", Fmt(v) + " %", v >= 95});
    res->verdicts.push_back(
        {absl::StrFormat("metaroce, %g %s: no drops", x, what), "0", Fmt(d), d == 0});
    if (const Spread v = SpreadOf(t, Proto::kMetaRoce, x, t.Metric("victim_pct")); v.n > 0) {
      res->verdicts.push_back({absl::StrFormat("metaroce, %g %s: the victim", x, what),
                               absl::StrFormat(">= %.0f %% of its link", kVictimPct),
                               Fmt(v.median) + " %", v.median >= kVictimPct});
    }
  }
}

std::string WindowNote(sim::SimTime window_ps) {
  return absl::StrFormat(
      "`vs_ideal_pct`: N x S at line rate (payload only) over the time the last QP finished "
      "or failed; `delivered_pct`: the payload that arrived, of N x S (below 100 when QPs "
      "failed). "
      "`queue_*`: the most host 0's downlink held, against the bandwidth-delay product of a "
      "base RTT. `even_after_us`: the start of the first window (of %u base RTTs or %u "
      "packets per sender, whichever is longer; %.1f us in the last run) from which every "
      "window until the first sender finished had every sender within 10 %% of the mean; empty "
      "if the last window was not even. `jain`: over the bytes each sender sent until the first "
      "finished. `victim_pct`: with one QP per sender, a victim writes endlessly (64 KiB WRITEs, "
      "8 outstanding) from the host below the senders to host 1, beside the receiver; its goodput "
      "until the last sender finished, of its link's rate (one flow alone makes 96-97 %%: the "
      "headers). Empty where that host sends or is on host 0's leaf.",
      kWindowRtts, kWindowPkts, static_cast<double>(window_ps) / sim::kPsPerUs);
}

}  // namespace

absl::StatusOr<Result> RunIncast(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "senders";
  t.metrics = kMetrics;
  t.plot_metric = t.Metric("vs_ideal_pct");
  const uint64_t bytes = p.quick ? 256 * 1024 : kMiB;
  std::vector<double> xs;
  for (double n : XsOf(p, {8, 32, 63}, {3, 7})) {
    if (n >= 1 && n < p.Hosts()) xs.push_back(n);
  }
  if (xs.empty()) return absl::InvalidArgumentError("incast needs 1..hosts-1 senders");
  sim::SimTime window_ps = 0;
  auto st = Sweep(p, r, xs, &t, PlainLab,
                  [&](Lab& l, Proto, uint64_t, double x) -> absl::StatusOr<std::vector<double>> {
                    return Incast(l, Shape{static_cast<uint32_t>(x), 1, bytes}, &window_ps);
                  });
  if (!st.ok()) return st;
  IncastVerdicts(p, xs, "senders", &res);
  res.notes =
      absl::StrFormat(
          "Each sender writes %u bytes (64 KiB WRITEs, 8 outstanding) to host 0 from the last host "
          "back. ",
          bytes) +
      WindowNote(window_ps);
  return res;
}

absl::StatusOr<Result> RunIncastQps(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "qps_per_sender";
  t.metrics = kMetrics;
  t.plot_metric = t.Metric("vs_ideal_pct");
  const uint64_t bytes = p.quick ? 256 * 1024 : kMiB;
  const uint32_t senders = p.Hosts() - 1;
  std::vector<double> xs;
  for (double q : XsOf(p, {1, 16, 64}, {1, 4})) {
    if (q >= 1 && q <= 256 && bytes / static_cast<uint64_t>(q) >= 4096) xs.push_back(q);
  }
  if (xs.empty()) return absl::InvalidArgumentError("incast-qps needs 1..256 QPs per sender");
  sim::SimTime window_ps = 0;
  auto st = Sweep(p, r, xs, &t, PlainLab,
                  [&](Lab& l, Proto, uint64_t, double x) -> absl::StatusOr<std::vector<double>> {
                    return Incast(l, Shape{senders, static_cast<uint32_t>(x), bytes}, &window_ps);
                  });
  if (!st.ok()) return st;
  IncastVerdicts(p, xs, "QPs per sender", &res);
  res.notes =
      absl::StrFormat(
          "All %u other hosts write %u bytes each to host 0, spread evenly over Q QPs per sender "
          "(%u x Q QPs into one host; WRITEs of up to 64 KiB, 8 outstanding per QP). metaroce "
          "carries a sender's QPs on its one connection to host 0; RoCEv2 runs a DCQCN rate "
          "controller per QP. ",
          senders, bytes, senders) +
      WindowNote(window_ps);
  return res;
}

}  // namespace metaroce::mrsim
