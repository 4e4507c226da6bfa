/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// What several experiments do alike: the sweep over protocols, seeds and x,
// the wall clock, one steady flow across the fabric, verdict wording.

#ifndef METAROCE_APP_SIM_EXP_UTIL_H
#define METAROCE_APP_SIM_EXP_UTIL_H

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>

#include "absl/strings/str_format.h"
#include "sim.h"

namespace metaroce::mrsim {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr uint64_t kMiB = 1 << 20;

/** The swept values: --x if given, else the experiment's (quick or full). */
inline std::vector<double> XsOf(const Params& p, std::vector<double> full,
                                std::vector<double> quick) {
  if (!p.xs.empty()) return p.xs;
  return p.quick ? quick : full;
}

/** Seconds since an arbitrary start (the runs' wall time). */
inline double WallS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/** The lab of a run: protocol and seed, no loss, the fabric's planes. */
inline LabConfig PlainLab(Proto proto, uint64_t seed, double) { return {proto, seed, 0}; }

/** The lab of a run on x planes. */
inline LabConfig PlanesLab(Proto proto, uint64_t seed, double x) {
  LabConfig c{proto, seed, 0};
  c.planes = static_cast<uint32_t>(x);
  return c;
}

/**
 * For every x, protocol and seed (in that nesting, x outermost): opens the
 * lab @p lab_of(proto, seed, x) names, calls @p run(lab, proto, seed, x) for
 * the row's metrics, and accounts the run's wall time and events (a progress
 * line on stderr).
 */
template <typename L, typename F>
absl::Status Sweep(const Params& p, Runner& r, const std::vector<double>& xs, Table* t, L&& lab_of,
                   F&& run) {
  for (double x : xs) {
    for (Proto proto : p.protos) {
      for (uint32_t s = 0; s < r.seeds(); s++) {
        const uint64_t seed = p.first_seed + s;
        const double w0 = WallS();
        auto lab = r.Open(lab_of(proto, seed, x));
        if (!lab.ok()) return lab.status();
        absl::StatusOr<std::vector<double>> v = run(**lab, proto, seed, x);
        r.Done(**lab, absl::StrFormat("%s %s=%g seed %u", ProtoName(proto), t->x_name, x, seed),
               WallS() - w0);
        if (!v.ok()) return v.status();
        if (v->size() != t->metrics.size()) return absl::InternalError("metrics and values differ");
        t->rows.push_back({proto, seed, x, std::move(*v)});
      }
    }
  }
  return absl::OkStatus();
}

/** The host under the last leaf: a flow from host 0 to it crosses a spine. */
inline uint32_t FarHost(const Lab& lab) { return lab.hosts() - lab.topo().hosts_per_leaf; }

// A steady flow's WRITEs: small enough that the bytes completed in a
// measured millisecond are not a handful of messages, enough of them
// outstanding (1 MiB) to cover a lossy round trip.
inline constexpr uint64_t kSteadyMsgBytes = 64 * 1024;
inline constexpr uint32_t kSteadyDepth = 16;

/** One endless flow from host 0 to FarHost(), measured after its first completion and a warm-up. */
struct SteadyFlow {
  double first_done_us = 0;  ///< when its first WRITE completed (10 us steps)
  double gbps = 0;           ///< payload completed in the measured time
  double host_gbps = 0;      ///< the line rate times the planes
  double link_busy = 0;      ///< the sender's link: wire bytes of first sends / capacity
  double resent = 0;         ///< resent data packets / data packets
  uint64_t qp_errors = 0;
};
absl::StatusOr<SteadyFlow> RunSteadyFlow(Lab& l, sim::SimTime warmup_ps, sim::SimTime measure_ps);

/** The metrics of a failure experiment's row, in FailureRow's order. */
inline const std::vector<std::string> kFailureMetrics = {"before_gbps", "after_gbps", "after_ratio",
                                                         "back_after_rtts", "qp_errors"};

/**
 * Every host writes endlessly to another (Derangement(hosts, @p seed)),
 * 64 KiB WRITEs, one QP per plane (RoCE: QP k on plane k). After a warm-up
 * and a measured time, @p dark_links get the faults @p dark from then on
 * (its blackhole time is set here), and the lab runs 3 ms more. The row:
 * the rate before and after per host, their ratio, when the rate was back
 * to stay at @p share of before (in base RTTs; NaN: never), QP errors.
 */
absl::StatusOr<std::vector<double>> FailureRow(Lab& l, uint64_t seed,
                                               const std::vector<sim::LinkId>& dark_links,
                                               sim::FaultConfig dark, double share);
/** How FailureRow measures, for an experiment's notes. */
std::string FailureNote();

/**
 * metaroce's verdicts at @p x of a table of FailureRow's rows: back to
 * @p share of before, within 10 base RTTs, with no QP error. @p what names
 * the failure.
 */
void RecoveryVerdicts(const Params& p, const Table& t, double x, const std::string& what,
                      double share, std::vector<Verdict>* out);

/** "0.912" style numbers for verdicts. */
inline std::string Fmt(double v) { return std::isnan(v) ? "n/a" : absl::StrFormat("%.3g", v); }

/** Whether metaroce is among the protocols run (its verdicts need it). */
inline bool HasMetaRoce(const Params& p) {
  return std::find(p.protos.begin(), p.protos.end(), Proto::kMetaRoce) != p.protos.end();
}

/** The metrics CollectiveRun::Row gives, in its order. */
inline const std::vector<std::string> kCollectiveMetrics = {"time_us", "busbw_gbps", "line_pct",
                                                            "unfinished", "qp_errors"};

/** A collective's flows, run to the end. */
struct CollectiveRun {
  double time_us = kNaN;  ///< until the last flow finished; NaN if one did not
  double busbw_gbps = 0;  ///< what each host sent, over that time
  double line_pct = 0;    ///< busbw against the host's line rate
  uint32_t unfinished = 0, errors = 0;
  /** time_us, busbw_gbps, line_pct, unfinished, qp_errors: the start of a collective's row. */
  std::vector<double> Row() const {
    return {time_us, busbw_gbps, line_pct, static_cast<double>(unfinished),
            static_cast<double>(errors)};
  }
};
/**
 * Runs the flows added to @p l, every host sending @p bytes_per_host, until
 * the last one finished or 20 x the ideal time + 10 ms.
 */
absl::StatusOr<CollectiveRun> RunCollective(Lab& l, uint64_t bytes_per_host);

/**
 * Sets metric @p to of every row of @p t to its metric @p from over that of
 * the row of its protocol and seed at x = 0 (loss sweeps: against lossless).
 */
inline void AgainstZero(Table* t, const std::string& from, const std::string& to) {
  const size_t f = t->Metric(from), v = t->Metric(to);
  for (Table::Row& row : t->rows) {
    for (const Table::Row& ref : t->rows) {
      if (ref.x == 0 && ref.proto == row.proto && ref.seed == row.seed && ref.v[f] > 0) {
        row.v[v] = row.v[f] / ref.v[f];
      }
    }
  }
}

/**
 * A loss sweep's verdicts on `vs_lossless` (simulation.md): metaroce keeps
 * >= 0.90 at 1 % loss and >= 0.50 at 10 %, ahead of every other protocol;
 * @p where follows "N % loss" in the claims (" on one spine").
 */
inline void LossVerdicts(const Params& p, const Table& t, const std::vector<double>& xs,
                         const std::string& where, std::vector<Verdict>* out) {
  if (!HasMetaRoce(p)) return;
  const size_t vs = t.Metric("vs_lossless");
  for (double x : {1.0, 10.0}) {
    if (std::find(xs.begin(), xs.end(), x) == xs.end()) continue;
    const double m = SpreadOf(t, Proto::kMetaRoce, x, vs).median;
    const double target = x == 1 ? 0.9 : 0.5;
    out->push_back({absl::StrFormat("metaroce at %g %% loss%s, against lossless", x, where),
                    absl::StrFormat(">= %.2f", target), Fmt(m), m >= target});
    for (Proto proto : p.protos) {
      if (proto == Proto::kMetaRoce) continue;
      const double v = SpreadOf(t, proto, x, vs).median;
      out->push_back(
          {absl::StrFormat("%g %% loss%s: metaroce ahead of %s", x, where, ProtoName(proto)),
           "> " + Fmt(v), Fmt(m), m > v});
    }
  }
}

/**
 * A collective's verdicts at every size: metaroce's bus bandwidth (`line_pct`)
 * at >= 90 % of line rate and ahead of every other protocol run.
 */
inline void CollectiveVerdicts(const Params& p, const Table& t, const std::vector<double>& xs,
                               std::vector<Verdict>* out) {
  if (!HasMetaRoce(p)) return;
  const size_t line = t.Metric("line_pct");
  for (double x : xs) {
    const double m = SpreadOf(t, Proto::kMetaRoce, x, line).median;
    out->push_back({absl::StrFormat("metaroce, %g MiB: bus bandwidth of line rate", x), ">= 90 %",
                    Fmt(m) + " %", m >= 90});
    for (Proto proto : p.protos) {
      if (proto == Proto::kMetaRoce) continue;
      const double o = SpreadOf(t, proto, x, line).median;
      out->push_back({absl::StrFormat("%g MiB: metaroce ahead of %s", x, ProtoName(proto)),
                      Fmt(o) + " %", Fmt(m) + " %", m > o});
    }
  }
}

/**
 * The flows' completed bytes per sample of Lab::Run(..., @p bin_ps), summed
 * over the flows, as Gbit/s per bin.
 */
inline std::vector<double> BinGbps(Lab& l, sim::SimTime bin_ps) {
  std::vector<double> out;
  for (uint32_t i = 0; i < l.flow_count(); i++) {
    const std::vector<uint64_t>& d = l.flow(i).done_at;
    out.resize(std::max(out.size(), d.size()));
    for (size_t b = 0; b < d.size(); b++) {
      out[b] += static_cast<double>(d[b] - (b == 0 ? 0 : d[b - 1])) * 8 /
                (static_cast<double>(bin_ps) / sim::kPsPerSec) / 1e9;
    }
  }
  return out;
}

/** Mean of @p v over [from, to). */
inline double MeanOf(const std::vector<double>& v, size_t from, size_t to) {
  double sum = 0;
  for (size_t i = from; i < to && i < v.size(); i++) sum += v[i];
  return to > from ? sum / static_cast<double>(to - from) : 0;
}

/** A permutation's flows, when each finished. */
struct PermutationRun {
  std::vector<double> fct_us;  ///< the finished flows' completion times
  uint32_t unfinished = 0, errors = 0;
  double ideal_us = 0;  ///< S at the host's line rate
};
/**
 * Every host writes @p bytes to another (Derangement(hosts, @p seed)), 1 MiB
 * WRITEs, 8 outstanding; @p fault, if any, is called once the connections
 * are up, before the flows start; the run ends when every flow has, or at
 * 20 x ideal + 10 ms.
 */
absl::StatusOr<PermutationRun> RunPermutationFlows(
    Lab& l, uint64_t seed, uint64_t bytes, const std::function<absl::Status(Lab&)>& fault = {});

/** A random derangement of 0..n-1 (no host sends to itself), from @p seed. */
std::vector<uint32_t> Derangement(uint32_t n, uint64_t seed);

}  // namespace metaroce::mrsim

#endif  // METAROCE_APP_SIM_EXP_UTIL_H
