/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// bench_transport: figures of the transport engine. A benchmark, not a test:
// it prints what it measured, judges the goals of the issue PASS or MISS and
// exits 0 either way (non-zero only for bad arguments or a broken run).
//
//  1. Goodput vs random loss: two hosts on a simulated 2 x 8 leaf-spine at
//     100 Gbit/s, one connection with 8 paths, 1 MiB RDMA WRITEs kept
//     outstanding; then one leaf-spine link blackholed at half time.
//  2. Engine cost: data packets per second on one core, two engines wired back
//     to back in-process, next to wire::EncodeFrame + ParseFrame alone.
//  3. State size: bytes per idle connection, per path and per QP (sizeof and
//     owned heap, cross-checked against operator new).
//
//   bench_transport [--quick] [--json] [--seconds N] [--seeds N] [--only WHAT]
//
// doc/transport-figures.md has the figures measured and how to read them.
//
// One file per figure (bench_goodput.cc, bench_cost.cc, bench_state.cc), each
// one entry of kFigures below.

#include <getopt.h>

#include <string>
#include <thread>

#include "bench_common.h"

namespace metaroce::bench {
namespace {

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: bench_transport [--quick] [--json] [--seconds N] [--seeds N] "
               "[--only goodput|cost|state]\n"
               "  --quick       short run (< 10 s): shorter simulated time, 0.2 s per cost row\n"
               "  --json        print one JSON object instead of text tables\n"
               "  --seconds N   wall seconds per engine-cost measurement (default 1, quick 0.2)\n"
               "  --seeds N     simulation seeds per goodput point, 3..20 (default 5, quick 3)\n"
               "  --only LIST   comma-separated figures to run: goodput, cost, state\n"
               "  --rounds N    engine cost: N rounds per row instead of wall time, for\n"
               "                instruction counts (valgrind --tool=callgrind) that do not move\n"
               "                with the machine's load\n"
               "  -h, --help    this text\n");
}

// Returns 0 to run, 1 to exit 0 (help), 2 for bad arguments (message printed).
int ParseArgs(int argc, char** argv, Options* o) {
  static const option kLong[] = {
      {"quick", no_argument, nullptr, 'q'},         {"json", no_argument, nullptr, 'j'},
      {"seconds", required_argument, nullptr, 's'}, {"seeds", required_argument, nullptr, 'n'},
      {"only", required_argument, nullptr, 'o'},    {"rounds", required_argument, nullptr, 'r'},
      {"help", no_argument, nullptr, 'h'},          {nullptr, 0, nullptr, 0},
  };
  auto bad = [](const std::string& msg) {
    std::fprintf(stderr, "bench_transport: %s\n", msg.c_str());
    Usage(stderr);
    return 2;
  };
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, ":h", kLong, nullptr)) != -1) {
    switch (ch) {
      case 'q': o->quick = true; break;
      case 'j': o->json = true; break;
      case 's': {
        char* end = nullptr;
        const double v = std::strtod(optarg, &end);
        if (end == optarg || *end != '\0' || !(v >= 0.01 && v <= 600)) {
          return bad(std::string("--seconds wants a number of seconds in 0.01..600, not '") +
                     optarg + "'");
        }
        o->seconds = v;
        break;
      }
      case 'n': {
        char* end = nullptr;
        const long v = std::strtol(optarg, &end, 10);
        if (end == optarg || *end != '\0' || v < 3 || v > 20) {
          return bad(std::string("--seeds wants a whole number in 3..20, not '") + optarg + "'");
        }
        o->seeds = static_cast<int>(v);
        break;
      }
      case 'o': {
        o->figures = 0;
        std::string list = optarg;
        size_t pos = 0;
        while (pos <= list.size()) {
          const size_t comma = std::min(list.find(',', pos), list.size());
          const std::string w = list.substr(pos, comma - pos);
          if (w == "goodput") {
            o->figures |= kGoodput;
          } else if (w == "cost") {
            o->figures |= kCost;
          } else if (w == "state") {
            o->figures |= kState;
          } else {
            return bad("--only takes goodput, cost or state (comma-separated), not '" + w + "'");
          }
          pos = comma + 1;
        }
        break;
      }
      case 'r': {
        char* end = nullptr;
        const long v = std::strtol(optarg, &end, 10);
        if (end == optarg || *end != '\0' || v < 1 || v > 100'000'000) {
          return bad(std::string("--rounds wants a whole number in 1..100000000, not '") + optarg +
                     "'");
        }
        o->rounds = v;
        break;
      }
      case 'h': Usage(stdout); return 1;
      case ':': return bad(std::string("option ") + argv[optind - 1] + " needs a value");
      default:
        if (optopt != 0) return bad(std::string("unknown option '-") + char(optopt) + "'");
        return bad(std::string("unknown option '") + argv[optind - 1] + "'");
    }
  }
  if (optind < argc) return bad(std::string("unexpected argument '") + argv[optind] + "'");
  return 0;
}

// ---- Machine ----

std::string CpuModel() {
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (f == nullptr) return "unknown CPU";
  char line[512];
  std::string model = "unknown CPU";
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "model name", 10) == 0) {
      const char* colon = std::strchr(line, ':');
      if (colon != nullptr) {
        model = colon + 2;
        while (!model.empty() && (model.back() == '\n' || model.back() == ' ')) model.pop_back();
      }
      break;
    }
  }
  std::fclose(f);
  return model;
}

#ifdef __OPTIMIZE__
constexpr bool kOptimized = true;
#else
constexpr bool kOptimized = false;
#endif

struct FigureEntry {
  Figure bit;
  void (*run)(const Options& o, Json& j);
};
constexpr FigureEntry kFigures[] = {
    {kGoodput, &GoodputFigureMain},
    {kCost, &CostFigureMain},
    {kState, &StateFigureMain},
};

}  // namespace
}  // namespace metaroce::bench

int main(int argc, char** argv) {
  using namespace metaroce::bench;
  Options o;
  if (const int rc = ParseArgs(argc, argv, &o); rc != 0) return rc == 1 ? 0 : rc;
  g_cost_rounds = o.rounds;
  const Clock::time_point wall0 = Clock::now();
  const unsigned cpus = std::thread::hardware_concurrency();
  const std::string cpu = CpuModel();
  if (!o.json) {
    std::printf("bench_transport%s: %u CPUs (%s), %s build\n\n", o.quick ? " --quick" : "", cpus,
                cpu.c_str(), kOptimized ? "optimized" : "UNOPTIMIZED (figures 2 meaningless)");
    std::fflush(stdout);
  }
  Json j;
  j.Open(nullptr, '{');
  j.Bool("quick", o.quick);
  j.Int("cpus", cpus);
  j.Str("cpu", cpu);
  j.Bool("optimized", kOptimized);
  for (const FigureEntry& f : kFigures) {
    if (o.figures & f.bit) f.run(o, j);
  }
  const double wall = SecondsSince(wall0);
  j.Num("wall_s", wall);
  j.Close('}');
  if (o.json) {
    std::printf("%s\n", j.str().c_str());
  } else {
    std::printf("total %.1f s wall\n", wall);
  }
  return 0;
}
