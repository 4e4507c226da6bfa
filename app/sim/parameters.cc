/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-sim's command line: every option, its range and the message that says
// what to fix.

#include <getopt.h>

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "sim.h"

namespace metaroce::mrsim {
namespace {

absl::Status Bad(const char* opt, const char* arg, const char* want) {
  return absl::InvalidArgumentError(absl::StrFormat("--%s %s: %s", opt, arg, want));
}

template <typename T>
absl::Status ParseUint(const char* opt, const char* arg, uint64_t lo, uint64_t hi, T* out) {
  uint64_t v;
  if (!absl::SimpleAtoi(arg, &v) || v < lo || v > hi) {
    return Bad(opt, arg, absl::StrFormat("want an integer in %u..%u", lo, hi).c_str());
  }
  *out = static_cast<T>(v);
  return absl::OkStatus();
}

}  // namespace

void PrintUsage(FILE* to) {
  std::fprintf(to,
               "usage: mr-sim [EXPERIMENT...] [--protocols LIST] [--seeds N] [--first-seed N]\n"
               "              [--gbps N] [--leaves N] [--spines N] [--hosts-per-leaf N]\n"
               "              [--link-delay-ns N] [--x LIST] [--out DIR] [--no-plots] [--quiet]\n"
               "              [--quick]\n"
               "\n"
               "Runs experiments on the simulated fabric with metaroce's engine and the RoCEv2\n"
               "baseline side by side (doc/mr-sim.md). With no EXPERIMENT, runs them all.\n"
               "Writes DIR/<experiment>.{csv,json,dat,gp,png} and DIR/summary.md.\n"
               "\n");
  std::fprintf(to, "experiments:\n");
  for (const Experiment& e : Experiments()) std::fprintf(to, "  %-12s %s\n", e.name, e.what);
  std::fprintf(
      to,
      "\n"
      "  -p, --protocols LIST  comma-separated: metaroce, rocev2-pfc, rocev2 (default: all)\n"
      "  -s, --seeds N         runs per point, 1..1000 (default 10)\n"
      "      --first-seed N    seed of the first run (default 1)\n"
      "  -g, --gbps N          link rate, 1..1600 Gbit/s (default 400)\n"
      "      --leaves N        leaves, 1..%u (default 8)\n"
      "      --spines N        spines, 1..64 (default 8)\n"
      "      --hosts-per-leaf N  1..%u (default 8)\n"
      "      --planes N        parallel fabrics, a NIC port on each per host, 1..%u (default 1)\n"
      "      --link-delay-ns N propagation delay of every link, 1..100000000 (default 500)\n"
      "  -x, --x LIST          the swept values, comma-separated, instead of the experiment's\n"
      "  -o, --out DIR         output directory (default mr-sim-out; created)\n"
      "      --no-plots        no PNGs (no gnuplot needed)\n"
      "  -q, --quiet           no progress lines on stderr\n"
      "      --quick           the CI run: 2 leaves x 4 hosts, 4 spines, 100 Gbit/s, one seed,\n"
      "                        fewer and smaller points (under a minute)\n"
      "  -h, --help            this text\n",
      sim::kMaxLeaves, sim::kMaxHostsPerLeaf, sim::kMaxSimPlanes);
}

absl::StatusOr<Params> ParseParams(int argc, char** argv, bool* help) {
  enum { kFirstSeed = 256, kLeaves, kSpines, kHostsPerLeaf, kPlanes, kDelay, kNoPlots, kQuick };
  static const option kOptions[] = {
      {"protocols", required_argument, nullptr, 'p'},
      {"seeds", required_argument, nullptr, 's'},
      {"first-seed", required_argument, nullptr, kFirstSeed},
      {"gbps", required_argument, nullptr, 'g'},
      {"leaves", required_argument, nullptr, kLeaves},
      {"spines", required_argument, nullptr, kSpines},
      {"hosts-per-leaf", required_argument, nullptr, kHostsPerLeaf},
      {"planes", required_argument, nullptr, kPlanes},
      {"link-delay-ns", required_argument, nullptr, kDelay},
      {"x", required_argument, nullptr, 'x'},
      {"out", required_argument, nullptr, 'o'},
      {"no-plots", no_argument, nullptr, kNoPlots},
      {"quiet", no_argument, nullptr, 'q'},
      {"quick", no_argument, nullptr, kQuick},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  Params p;
  bool topology_set = false, gbps_set = false, seeds_set = false;
  *help = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":p:s:g:x:o:qh", kOptions, nullptr)) != -1) {
    absl::Status st;
    switch (c) {
      case 'p':
        p.protos.clear();
        for (absl::string_view name : absl::StrSplit(optarg, ',')) {
          bool found = false;
          for (int i = 0; i < static_cast<int>(Proto::kCount); i++) {
            if (name == ProtoName(static_cast<Proto>(i))) {
              p.protos.push_back(static_cast<Proto>(i));
              found = true;
            }
          }
          if (!found) {
            return Bad(
                "protocols", optarg,
                absl::StrFormat("no protocol '%s': want metaroce, rocev2-pfc or rocev2", name)
                    .c_str());
          }
        }
        break;
      case 's':
        st = ParseUint("seeds", optarg, 1, 1000, &p.seeds);
        seeds_set = true;
        break;
      case kFirstSeed: st = ParseUint("first-seed", optarg, 1, UINT32_MAX, &p.first_seed); break;
      case 'g':
        st = ParseUint("gbps", optarg, 1, 1600, &p.gbps);
        gbps_set = true;
        break;
      case kLeaves:
        st = ParseUint("leaves", optarg, 1, sim::kMaxLeaves, &p.leaves);
        topology_set = true;
        break;
      case kSpines:
        st = ParseUint("spines", optarg, 1, 64, &p.spines);
        topology_set = true;
        break;
      case kHostsPerLeaf:
        st = ParseUint("hosts-per-leaf", optarg, 1, sim::kMaxHostsPerLeaf, &p.hosts_per_leaf);
        topology_set = true;
        break;
      case kPlanes: st = ParseUint("planes", optarg, 1, sim::kMaxSimPlanes, &p.planes); break;
      case kDelay: {
        uint64_t ns;
        st = ParseUint("link-delay-ns", optarg, 1, 100'000'000, &ns);
        p.link_delay_ps = ns * sim::kPsPerNs;
        break;
      }
      case 'x':
        p.xs.clear();
        for (absl::string_view v : absl::StrSplit(optarg, ',')) {
          double d;
          if (!absl::SimpleAtod(v, &d) || d < 0) return Bad("x", optarg, "want numbers >= 0");
          p.xs.push_back(d);
        }
        break;
      case 'o':
        if (*optarg == '\0') return Bad("out", "''", "want a directory");
        p.out_dir = optarg;
        break;
      case kNoPlots: p.plots = false; break;
      case 'q': p.progress = false; break;
      case kQuick: p.quick = true; break;
      case 'h': *help = true; return p;
      case ':':
        return absl::InvalidArgumentError(
            absl::StrFormat("%s needs a value (mr-sim --help)", argv[optind - 1]));
      default:
        return absl::InvalidArgumentError(
            absl::StrFormat("unknown option %s (mr-sim --help)", argv[optind - 1]));
    }
    if (!st.ok()) return st;
  }
  for (int i = optind; i < argc; i++) {
    bool found = false;
    for (const Experiment& e : Experiments()) found |= e.name == std::string(argv[i]);
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrFormat("no experiment %s (mr-sim --help lists them)", argv[i]));
    }
    p.experiments.push_back(argv[i]);
  }
  if (p.quick) {
    if (!topology_set) {
      p.leaves = 2;
      p.spines = 4;
      p.hosts_per_leaf = 4;
    }
    if (!gbps_set) p.gbps = 100;
    if (!seeds_set) p.seeds = 1;
  }
  if (p.Hosts() < 2) {
    return absl::InvalidArgumentError(
        "the fabric needs at least 2 hosts (--leaves, --hosts-per-leaf)");
  }
  return p;
}

}  // namespace metaroce::mrsim
