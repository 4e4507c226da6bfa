/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Experiment 3 (ring all-reduce): N ranks on hosts in a random order, each
// rank writing to the next. Of the 2 (N - 1) steps, reduce-scatter then
// all-gather, each moves S / N bytes per rank, and a rank sends step k's
// chunk only as it receives step k - 1's from the rank before it: one flow
// per rank, chained to the one before it with a lead of one chunk (its own
// data, step 0). The collective ends when the last rank's flow does; its
// bus bandwidth, as NCCL reports it, against line rate (doc/mr-sim.md).

#include <algorithm>
#include <numeric>
#include <random>

#include "exp_util.h"

namespace metaroce::mrsim {
namespace {

// A step's chunk goes as WRITEs of at most this (NCCL's slices are of this
// order), so that the next rank can go on before the whole chunk arrived.
constexpr uint64_t kSliceBytes = 256 * 1024;
// WRITEs outstanding per rank: 1 MiB, more than a base RTT at 400 Gbit/s.
constexpr uint32_t kRankDepth = 4;

/** The ring: hosts in a random order from @p seed (a scheduler's placement, not the racks'). */
std::vector<uint32_t> RingOrder(uint32_t n, uint64_t seed) {
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace

absl::StatusOr<Result> RunAllReduce(const Params& p, Runner& r) {
  Result res;
  Table& t = res.table;
  t.x_name = "size_mib";
  t.metrics = kCollectiveMetrics;
  t.metrics.push_back("cross_leaf");
  t.plot_metric = t.Metric("line_pct");
  t.log_x = true;
  const std::vector<double> xs = XsOf(p, {4, 16, 64}, {0.25, 4});
  auto st =
      Sweep(p, r, xs, &t, PlainLab,
            [&](Lab& l, Proto, uint64_t seed, double x) -> absl::StatusOr<std::vector<double>> {
              const uint32_t n = l.hosts();
              const auto chunk = static_cast<uint64_t>(x * kMiB) / n;
              if (chunk == 0) return absl::InvalidArgumentError("allreduce: S / hosts is 0 bytes");
              const uint64_t per_rank = 2 * (n - 1) * chunk;
              const std::vector<uint32_t> ring = RingOrder(n, seed);
              uint32_t cross_leaf = 0;
              for (uint32_t k = 0; k < n; k++) {
                FlowSpec f;
                f.src = ring[k];
                f.dst = ring[(k + 1) % n];
                f.bytes = per_rank;
                f.msg_bytes = std::min(chunk, kSliceBytes);
                f.depth = kRankDepth;
                cross_leaf += l.LeafOf(f.src) != l.LeafOf(f.dst);
                if (auto id = l.AddFlow(f); !id.ok()) return id.status();
              }
              for (uint32_t k = 0; k < n; k++) {
                if (auto c = l.Chain(k, (k + n - 1) % n, chunk); !c.ok()) return c;
              }
              auto run = RunCollective(l, per_rank);
              if (!run.ok()) return run.status();
              std::vector<double> row = run->Row();
              row.push_back(cross_leaf);
              return row;
            });
  if (!st.ok()) return st;
  CollectiveVerdicts(p, t, xs, &res.verdicts);
  res.notes = absl::StrFormat(
      "Ranks on the hosts in a random order per seed (`cross_leaf`: ring steps between leaves), "
      "each rank one QP to the next. A rank's flow moves 2 (N - 1) chunks of S / N "
      "(reduce-scatter, "
      "then all-gather) as WRITEs of at most %u KiB, %u outstanding, and posts a chunk's bytes "
      "only "
      "as the rank before it has completed the same bytes of the step before (its WRITEs' "
      "completions stand for the data's arrival): the first chunk is its own. `busbw_gbps`: "
      "2 (N - 1) / N x S over the time the last rank finished (NCCL's bus bandwidth for "
      "all-reduce). While a chunk is less than the bandwidth-delay product, the chain holds every "
      "protocol below line rate: with 64 ranks, a 4 MiB all-reduce has chunks of 64 KiB.",
      kSliceBytes / 1024, kRankDepth);
  return res;
}

}  // namespace metaroce::mrsim
