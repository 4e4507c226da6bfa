/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 5 (plane scaling): every host writes endlessly to every other,
// one QP per pair (64 hosts: 4,032 QPs and as many host-pair connections), on
// P = 1, 2, 4, 8 planes. Throughput per host against P times the one-plane
// run of the same protocol and seed (doc/mr-sim.md).

#include "exp_util.h"

namespace metaroce::mrsim {
namespace {

constexpr sim::SimTime kWarmPs = 100 * sim::kPsPerUs;
constexpr sim::SimTime kMeasurePs = 500 * sim::kPsPerUs;
// Small WRITEs, few outstanding per plane: 63 flows per host share its NICs,
// and what they keep in flight grows with the planes so that the load does
// not fall short of P links' bandwidth-delay product.
constexpr uint64_t kMsgBytes = 16 * 1024;
constexpr uint32_t kDepthPerPlane = 2;

}  // namespace

absl::StatusOr<Result> RunPlaneScaling(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "planes";
  t.metrics = {"gbps_per_host", "line_pct", "vs_one_plane", "qp_errors"};
  t.plot_metric = t.Metric("vs_one_plane");
  t.log_x = true;
  std::vector<double> xs = XsOf(p, {1, 2, 4, 8}, {1, 2});
  for (double v : xs) {
    if (v < 1 || v > sim::kMaxSimPlanes) {
      return absl::InvalidArgumentError("planes takes 1..8 planes (--x)");
    }
  }
  if (xs.front() != 1) xs.insert(xs.begin(), 1);  // the reference
  auto st = Sweep(
      p, r, xs, &t, PlanesLab,
      [&](Lab& l, Proto, uint64_t, double) -> absl::StatusOr<std::vector<double>> {
        for (uint32_t i = 0; i < l.hosts(); i++) {
          for (uint32_t k = 1; k < l.hosts(); k++) {
            FlowSpec f;
            f.src = i;
            f.dst = (i + k) % l.hosts();
            f.msg_bytes = kMsgBytes;
            f.depth = kDepthPerPlane * l.planes();
            if (auto id = l.AddFlow(f); !id.ok()) return id.status();
          }
        }
        auto t0 = l.Establish();
        if (!t0.ok()) return t0.status();
        l.Run(*t0 + kWarmPs);
        const uint64_t done0 = l.DoneBytes();
        l.Run(*t0 + kWarmPs + kMeasurePs);
        const double gbps = static_cast<double>(l.DoneBytes() - done0) * 8 /
                            (static_cast<double>(kMeasurePs) / sim::kPsPerSec) / 1e9 / l.hosts();
        return std::vector<double>{gbps, 100 * gbps * 1e9 / static_cast<double>(l.host_bps()), kNaN,
                                   static_cast<double>(l.totals().qp_errors)};
      });
  if (!st.ok()) return st;
  const size_t g = t.Metric("gbps_per_host"), vs = t.Metric("vs_one_plane");
  for (Table::Row& row : t.rows) {
    for (const Table::Row& ref : t.rows) {
      if (ref.x == 1 && ref.proto == row.proto && ref.seed == row.seed && ref.v[g] > 0) {
        row.v[vs] = row.v[g] / (ref.v[g] * row.x);
      }
    }
  }
  for (double x : xs) {
    if (x == 1 || !HasMetaRoce(p)) continue;
    const double v = SpreadOf(t, Proto::kMetaRoce, x, vs).median;
    res.verdicts.push_back(
        {absl::StrFormat("metaroce, %g planes: throughput against %g x one", x, x), ">= 0.95",
         Fmt(v), v >= 0.95});
  }
  res.notes = absl::StrFormat(
      "Every host writes to every other on one QP per pair (%u KiB WRITEs, %u outstanding per "
      "plane), "
      "measured for %u us after %u us. RoCE puts the QP of hosts a and b on plane (a + b) mod P; "
      "metaroce spreads each "
      "connection's paths over the planes. `vs_one_plane`: throughput against P times the same "
      "protocol and seed on one plane.",
      kMsgBytes / 1024, kDepthPerPlane, kMeasurePs / sim::kPsPerUs, kWarmPs / sim::kPsPerUs);
  return res;
}

}  // namespace metaroce::mrsim
