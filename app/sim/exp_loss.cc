/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 4: one flow across the fabric under random loss on every link
// and both directions, set so that a packet is lost end to end with the
// swept probability; goodput against the same protocol and seed without
// loss, and for RoCEv2 the analytic go-back-N curve (doc/mr-sim.md). The
// loss is Bernoulli (`loss`) or comes in bursts (`bursty`).

#include <cmath>

#include "exp_util.h"
#include "mr_rocev2.h"

namespace metaroce::mrsim {
namespace {

// `bursty`: a burst loses this many frames in a row on average (the bad
// state of a Gilbert-Elliott link loses every frame).
constexpr double kBurstFrames = 8;

absl::StatusOr<Result> LossSweep(const Params& p, Runner& r, double burst_frames) {
  Result res;
  Table& t = res.table;
  t.x_name = "loss_pct";
  t.metrics = {"goodput_gbps", "vs_lossless", "gbn_model",
               "resent_pct",   "qp_errors",   "first_done_us"};
  t.plot_metric = t.Metric("vs_lossless");
  const sim::SimTime warm = 100 * sim::kPsPerUs;
  const sim::SimTime measure = (p.quick ? 1 : 2) * sim::kPsPerMs;
  std::vector<double> xs = XsOf(p, {0, 0.01, 0.1, 1, 2, 5, 10}, {0, 1, 10});
  if (xs.front() != 0) xs.insert(xs.begin(), 0);  // the reference
  // Links a data packet crosses: host-leaf, leaf-spine, spine-leaf, leaf-host.
  const double hops = p.leaves > 1 ? 4 : 2;
  const double window = rocev2::Config{}.window_pkts;
  auto lossy = [&](Proto proto, uint64_t seed, double x) {
    LabConfig c{proto, seed, 1 - std::pow(1 - x / 100, 1 / hops)};  // per link
    c.burst_frames = burst_frames;
    return c;
  };
  auto st =
      Sweep(p, r, xs, &t, lossy,
            [&](Lab& l, Proto proto, uint64_t, double x) -> absl::StatusOr<std::vector<double>> {
              auto s = RunSteadyFlow(l, warm, measure);
              if (!s.ok()) return s.status();
              // A loss costs the window: the sender runs at line rate, so
              // what the path's BDP does not hold waits in the NIC and
              // switch queues, in flight all the same.
              const double q = x / 100;
              const double model =
                  proto == Proto::kMetaRoce || burst_frames > 0 ? kNaN : (1 - q) / (1 + q * window);
              return std::vector<double>{
                  s->gbps,         kNaN, model, 100 * s->resent, static_cast<double>(s->qp_errors),
                  s->first_done_us};
            });
  if (!st.ok()) return st;
  AgainstZero(&t, "goodput_gbps", "vs_lossless");
  LossVerdicts(p, t, xs, "", &res.verdicts);
  const std::string model =
      burst_frames > 0
          ? absl::StrFormat(
                "The loss comes in bursts: a link enters a state that loses every frame, for %g "
                "full frames' time at line rate on average, as often as makes p of a busy link's "
                "frames (Gilbert-Elliott, stepping with time: an idle link leaves a burst as "
                "soon); `gbn_model`, a curve for independent losses, does not apply. ",
                burst_frames)
          : absl::StrFormat(
                "`gbn_model` is (1 - q) / (1 + q W) with W = %.0f packets, the baseline's window: "
                "each loss costs what is in flight, and at line rate the window is in flight "
                "(what the path's bandwidth-delay product does not hold waits in the NIC and "
                "switch queues). The baseline keeps fewer than W in flight after a go-back (it "
                "resends from the gap), so it does a little better than the curve here; "
                "doc/rocev2.md checks the curve where the window is the limit. ",
                window);
  res.notes = absl::StrFormat(
      "`loss_pct` is end to end: every link drops with p = 1 - (1 - q)^(1/%.0f) in both "
      "directions, so a data packet (and an ACK) crossing the %.0f links is lost with q. %s"
      "`qp_errors`: flows whose QP failed (retries exhausted); their goodput stops. Goodput is "
      "measured from 100 us after the first WRITE completed (`first_done_us`: the handshake and "
      "the first 64 KiB behind).",
      hops, hops, model);
  return res;
}

}  // namespace

absl::StatusOr<Result> RunLossSweep(const Params& p, Runner& r) { return LossSweep(p, r, 0); }

absl::StatusOr<Result> RunBurstyLoss(const Params& p, Runner& r) {
  return LossSweep(p, r, kBurstFrames);
}

}  // namespace metaroce::mrsim
