/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 1: one flow across the fabric reaches line rate less its
// headers (doc/mr-sim.md). Also RunSteadyFlow, which the loss sweep shares.

#include "exp_util.h"

namespace metaroce::mrsim {

absl::StatusOr<SteadyFlow> RunSteadyFlow(Lab& l, sim::SimTime warmup_ps, sim::SimTime measure_ps) {
  FlowSpec f;
  f.src = 0;
  f.dst = FarHost(l);
  f.msg_bytes = kSteadyMsgBytes;
  f.depth = kSteadyDepth;
  auto id = l.AddFlow(f);
  if (!id.ok()) return id.status();
  // Steady state: from the first completion (the handshake and the first
  // message behind, however long loss made them) plus the warm-up.
  SteadyFlow s;
  constexpr sim::SimTime kFirstLimitPs = 50 * sim::kPsPerMs;
  while (l.flow(*id).done == 0 && !l.flow(*id).failed && l.fabric().Now() < kFirstLimitPs) {
    l.Run(l.fabric().Now() + 10 * sim::kPsPerUs);
  }
  s.first_done_us = static_cast<double>(l.fabric().Now()) / sim::kPsPerUs;
  const sim::SimTime start = l.fabric().Now() + warmup_ps;
  l.Run(start);
  // What the sender's NIC ports put on their links (every plane): frames and
  // their preamble and gap.
  auto wire_bytes = [&] {
    uint64_t n = 0;
    for (uint32_t plane = 0; plane < l.planes(); plane++) {
      const sim::PortStats& port =
          l.fabric().port_stats(l.topo().hosts[plane * l.hosts() + f.src]->port());
      n += port.tx_bytes + port.tx_frames * sim::kDefaultWireOverheadBytes;
    }
    return n;
  };
  const uint64_t done0 = l.flow(*id).done, wire0 = wire_bytes();
  const Totals t0s = l.totals();
  l.Run(start + measure_ps);
  const Totals t1s = l.totals();
  const double secs = static_cast<double>(measure_ps) / sim::kPsPerSec;
  s.gbps = static_cast<double>(l.flow(*id).done - done0) * 8 / secs / 1e9;
  const uint64_t data = t1s.data_pkts - t0s.data_pkts, resent = t1s.resent_pkts - t0s.resent_pkts;
  s.resent = data == 0 ? 0 : static_cast<double>(resent) / static_cast<double>(data);
  const auto wire = static_cast<double>(wire_bytes() - wire0);
  s.link_busy = wire * (1 - s.resent) * 8 / secs / static_cast<double>(l.host_bps());
  s.qp_errors = t1s.qp_errors;
  s.host_gbps = static_cast<double>(l.host_bps()) / 1e9;
  return s;
}

absl::StatusOr<Result> RunCalibration(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "gbps";
  t.metrics = {"goodput_gbps", "line_pct", "header_adjusted_pct", "resent_pct"};
  const sim::SimTime warm = 100 * sim::kPsPerUs;
  const sim::SimTime measure = (p.quick ? 1 : 2) * sim::kPsPerMs;
  auto st = Sweep(p, r, {static_cast<double>(p.gbps)}, &t, PlainLab,
                  [&](Lab& l, Proto, uint64_t, double) -> absl::StatusOr<std::vector<double>> {
                    auto s = RunSteadyFlow(l, warm, measure);
                    if (!s.ok()) return s.status();
                    return std::vector<double>{s->gbps, 100 * s->gbps / s->host_gbps,
                                               100 * s->link_busy, 100 * s->resent};
                  });
  if (!st.ok()) return st;
  t.plot_metric = t.Metric("header_adjusted_pct");
  for (Proto proto : p.protos) {
    const Spread s =
        SpreadOf(t, proto, static_cast<double>(p.gbps), t.Metric("header_adjusted_pct"));
    res.verdicts.push_back(
        {absl::StrFormat("%s: one flow, share of the header-adjusted line rate", ProtoName(proto)),
         ">= 98 %", Fmt(s.median) + " %", s.median >= 98});
  }
  res.notes =
      "The header-adjusted rate is what the sender's link can carry with this protocol's "
      "headers and the 20 bytes of preamble and gap per frame: `header_adjusted_pct` is the "
      "share of its time the link spent on first transmissions.";
  return res;
}

}  // namespace metaroce::mrsim
