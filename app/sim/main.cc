/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-sim: runs the chosen experiments and writes their reports.

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_format.h"
#include "sim.h"

namespace metaroce::mrsim {

namespace {
const Experiment kExperiments[] = {
    {"calibration", "one flow across the fabric: goodput against line rate", RunCalibration},
    {"loss", "one flow under random loss on every link: goodput against lossless", RunLossSweep},
    {"bursty", "the same flow, the loss in bursts of 8 frames' time: goodput against lossless",
     RunBurstyLoss},
    {"gray", "random loss on one spine's links under a permutation: the slowest flow",
     RunGraySpine},
    {"incast", "N senders into one receiver: completion, queue, fairness", RunIncast},
    {"incast-qps", "every host into one, over Q QPs each (up to 4,032): the same figures",
     RunIncastQps},
    {"permutation", "every host sends to another, each receiving once: flow completion times",
     RunPermutation},
    {"alltoall", "every host sends to every other at once: bus bandwidth", RunAllToAll},
    {"allreduce", "ring all-reduce over every host, steps chained: bus bandwidth", RunAllReduce},
    {"planes", "P planes, every host to every other: throughput against P x one plane",
     RunPlaneScaling},
    {"failure", "a plane goes dark under load: throughput after, recovery time, QP errors",
     RunFailure},
    {"spine", "a spine goes dark under load, routes reconverge later or never: the same figures",
     RunSpineFailure},
    {"link",
     "one leaf-spine link goes dark under load, routes reconverge later or never: the same figures",
     RunLinkFailure},
    {"longhaul",
     "a second site behind long links: short- and long-RTT flows into one host, Jain's index",
     RunLongHaul},
    {"longhaul-loss", "the same flows, random loss on the long links: the long flows, stalls",
     RunLongHaulLoss},
};
}  // namespace

std::span<const Experiment> Experiments() { return kExperiments; }

void Runner::Done(const Lab& lab, const std::string& what, double wall_s) {
  const uint64_t events = lab.totals().events;
  speed_.wall_s += wall_s;
  speed_.events += events;
  speed_.runs++;
  if (p_.progress) {
    std::fprintf(stderr, "mr-sim: %s %s: %.2f s wall, %.2f M events/s\n", experiment_, what.c_str(),
                 wall_s, wall_s > 0 ? static_cast<double>(events) / wall_s / 1e6 : 0);
  }
}

namespace {

int Main(int argc, char** argv) {
  bool help = false;
  auto params = ParseParams(argc, argv, &help);
  if (!params.ok()) {
    std::fprintf(stderr, "mr-sim: %s\n", std::string(params.status().message()).c_str());
    return 2;
  }
  if (help) {
    PrintUsage(stdout);
    return 0;
  }
  const Params& p = *params;
  if (mkdir(p.out_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "mr-sim: cannot create %s: %s\n", p.out_dir.c_str(), strerror(errno));
    return 1;
  }
  if (auto st = StartSummary(p); !st.ok()) {
    std::fprintf(stderr, "mr-sim: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  int failed = 0;
  for (const Experiment& e : Experiments()) {
    if (!p.experiments.empty() &&
        std::find(p.experiments.begin(), p.experiments.end(), e.name) == p.experiments.end()) {
      continue;
    }
    Runner runner(p, e.name);
    auto r = e.run(p, runner);
    if (!r.ok()) {
      std::fprintf(stderr, "mr-sim: %s: %s\n", e.name, std::string(r.status().message()).c_str());
      failed++;
      continue;
    }
    if (auto st = WriteReport(p, e, *r, runner.speed()); !st.ok()) {
      std::fprintf(stderr, "mr-sim: %s: %s\n", e.name, std::string(st.message()).c_str());
      failed++;
      continue;
    }
    uint32_t met = 0;
    for (const Verdict& v : r->verdicts) met += v.met;
    std::printf("%-12s %u/%zu targets met, %u runs, %.1f s wall, %.2f M events/s -> %s/%s.*\n",
                e.name, met, r->verdicts.size(), runner.speed().runs, runner.speed().wall_s,
                runner.speed().wall_s > 0
                    ? static_cast<double>(runner.speed().events) / runner.speed().wall_s / 1e6
                    : 0,
                p.out_dir.c_str(), e.name);
  }
  std::printf("summary: %s/summary.md\n", p.out_dir.c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace metaroce::mrsim

int main(int argc, char** argv) { return metaroce::mrsim::Main(argc, argv); }
