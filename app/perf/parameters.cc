/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-perf's command line (testpmd's parameters.c): every option, its range
// and the message that says what to fix.

#include <getopt.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "absl/strings/numbers.h"
#include "perf.h"

namespace metaroce::perf {
namespace {

constexpr char kDefaultPort[] = "udp:ip=127.0.0.1,port=0";

void Usage(FILE* to) {
  std::fprintf(
      to,
      "usage: mr-perf [--port DRIVER:ARGS] [--faults SPEC] --listen TCPPORT        (server)\n"
      "       mr-perf [--port DRIVER:ARGS] [--faults SPEC] --connect HOST:TCPPORT  (client)\n"
      "               [--mode MODE] [--size BYTES | --all] [--qps N] [--depth N]\n"
      "               [--iters N | --duration SECS | --bytes N] [--paths N] [--verify] [--json]\n"
      "\n"
      "The client chooses the test and tells the server over the TCP connection;\n"
      "the server only needs --port, --faults, --paths and --listen.\n"
      "\n"
      "  -p, --port SPEC       port driver and arguments (default %s)\n"
      "  -f, --faults SPEC     fault injection in front of the port, e.g. drop=0.01,seed=3\n"
      "  -l, --listen PORT     server: wait for the client on this TCP port\n"
      "  -c, --connect H:PORT  client: the server's TCP port\n"
      "  -m, --mode MODE       test mode (default write_bw), one of:\n",
      kDefaultPort);
  for (int m = 0; m < static_cast<int>(ModeId::kCount); m++) {
    std::fprintf(to, "                          %-10s %s\n", Mode(static_cast<ModeId>(m)).name,
                 Mode(static_cast<ModeId>(m)).help);
  }
  std::fprintf(
      to,
      "  -s, --size BYTES      message size, 1..%u, K/M suffixes (default 65536; 8 for "
      "atomic_lat;\n"
      "                        mixed: the largest, sizes are drawn from 1..BYTES)\n"
      "  -a, --all             sweep sizes 2, 4, ... up to --size (default 8M with -a)\n"
      "  -q, --qps N           QPs, 1..256 (default 1; latency modes use 1)\n"
      "  -d, --depth N         outstanding work requests per QP, 1..4096 (default 64; latency: 1)\n"
      "  -n, --iters N         work requests per QP (default 5000 for bandwidth, 1000 for "
      "latency;\n"
      "                        with -a and no -n: min(5000, 1 GiB / size))\n"
      "  -D, --duration SECS   run for this long instead of a number of iterations\n"
      "  -B, --bytes N         stop after N payload bytes in all (K/M/G suffixes)\n"
      "  -P, --paths N         paths (UDP source ports) per connection, 1..1024 (default 8)\n"
      "  -R, --pace GBPS       pace this side's transmission to GBPS Gbit/s (default: unpaced)\n"
      "  -V, --verify          check every byte of every message (see doc/mr-perf.md)\n"
      "  -S, --seed N          seed of the mixed mode's operations and sizes (default 1)\n"
      "  -j, --json            one JSON object per line instead of tables\n"
      "  -h, --help            this text and the port drivers' arguments\n",
      kMaxMsgBytes);
  std::fprintf(to, "\nport drivers:\n");
  for (const port::PortDriver* d : port::Drivers())
    std::fprintf(to, "  %s:\n%s\n", d->name, d->help);
}

int Bad(const char* what) {
  std::fprintf(stderr, "mr-perf: %s (see --help)\n", what);
  return 2;
}

// "64", "4K", "1M", "2G" (binary multiples).
bool ParseBytes(const char* text, uint64_t lo, uint64_t hi, uint64_t* out) {
  std::string t(text);
  uint64_t mul = 1;
  if (!t.empty()) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
    if (last == 'K') mul = 1ull << 10;
    if (last == 'M') mul = 1ull << 20;
    if (last == 'G') mul = 1ull << 30;
    if (mul != 1) t.pop_back();
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(t, &v) || v > hi / mul) return false;
  v *= mul;
  if (v < lo) return false;
  *out = v;
  return true;
}

}  // namespace

int ParseOptions(int argc, char** argv, Options* o) {
  static const option kLong[] = {{"port", required_argument, nullptr, 'p'},
                                 {"faults", required_argument, nullptr, 'f'},
                                 {"listen", required_argument, nullptr, 'l'},
                                 {"connect", required_argument, nullptr, 'c'},
                                 {"mode", required_argument, nullptr, 'm'},
                                 {"size", required_argument, nullptr, 's'},
                                 {"all", no_argument, nullptr, 'a'},
                                 {"qps", required_argument, nullptr, 'q'},
                                 {"depth", required_argument, nullptr, 'd'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"duration", required_argument, nullptr, 'D'},
                                 {"bytes", required_argument, nullptr, 'B'},
                                 {"paths", required_argument, nullptr, 'P'},
                                 {"verify", no_argument, nullptr, 'V'},
                                 {"seed", required_argument, nullptr, 'S'},
                                 {"json", no_argument, nullptr, 'j'},
                                 {"pace", required_argument, nullptr, 'R'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  o->dev.port = kDefaultPort;
  bool size_given = false, qps_given = false, depth_given = false, test_option = false;
  uint64_t v = 0;
  double secs = 0;
  int c;
  while ((c = getopt_long(argc, argv, "p:f:l:c:m:s:aq:d:n:D:B:P:VS:jR:h", kLong, nullptr)) != -1) {
    if (std::strchr("msaqdnDBVS", c) != nullptr) test_option = true;
    switch (c) {
      case 'p': o->dev.port = optarg; break;
      case 'f': o->dev.faults = optarg; break;
      case 'l':
        if (!port::ParseUintArg(optarg, 1, 65535, &v))
          return Bad("--listen takes a TCP port 1..65535");
        o->listen_port = static_cast<uint16_t>(v);
        break;
      case 'c': o->connect = optarg; break;
      case 'm':
        o->mode = ModeByName(optarg);
        if (o->mode == ModeId::kCount) return Bad("unknown --mode");
        break;
      case 's':
        if (!ParseBytes(optarg, 1, kMaxMsgBytes, &v)) return Bad("--size takes 1..8M bytes");
        o->spec.size = static_cast<uint32_t>(v);
        size_given = true;
        break;
      case 'a': o->sweep = true; break;
      case 'q':
        if (!port::ParseUintArg(optarg, 1, 256, &v)) return Bad("--qps takes 1..256");
        o->spec.qps = static_cast<uint16_t>(v);
        qps_given = true;
        break;
      case 'd':
        if (!port::ParseUintArg(optarg, 1, 4096, &v)) return Bad("--depth takes 1..4096");
        o->spec.depth = static_cast<uint32_t>(v);
        depth_given = true;
        break;
      case 'n':
        if (!port::ParseUintArg(optarg, 1, UINT64_MAX, &v))
          return Bad("--iters takes a positive number");
        o->spec.iters = v;
        break;
      case 'D':
        if (!absl::SimpleAtod(optarg, &secs) || !(secs > 0) || secs > 86400) {
          return Bad("--duration takes seconds, more than 0 and at most 86400");
        }
        o->spec.duration_ns = static_cast<uint64_t>(secs * 1e9);
        break;
      case 'B':
        if (!ParseBytes(optarg, 1, UINT64_MAX, &v))
          return Bad("--bytes takes a positive size (K/M/G)");
        o->spec.bytes = v;
        break;
      case 'P':
        if (!port::ParseUintArg(optarg, 1, transport::kMaxPaths, &v))
          return Bad("--paths takes 1..1024");
        o->dev.engine.num_paths = static_cast<uint16_t>(v);
        break;
      case 'V': o->spec.verify = 1; break;
      case 'S':
        if (!port::ParseUintArg(optarg, 0, UINT64_MAX, &v)) return Bad("--seed takes a number");
        o->spec.seed = v;
        break;
      case 'j': o->json = true; break;
      case 'R':
        if (!absl::SimpleAtod(optarg, &secs) || !(secs > 0) || secs > 1000) {
          return Bad("--pace takes Gbit/s, more than 0 and at most 1000");
        }
        o->dev.pace_bytes_per_sec = static_cast<uint64_t>(secs * 1e9 / 8);
        break;
      case 'h': Usage(stdout); return 0;
      default: Usage(stderr); return 2;
    }
  }
  if (optind != argc) return Bad("unexpected argument; options only");
  if ((o->listen_port == 0) == o->connect.empty())
    return Bad("give exactly one of --listen and --connect");
  if (o->listen_port != 0 && test_option) {
    return Bad("the server takes no test options: give them to the client");
  }
  const ModeInfo& mi = Mode(o->mode);
  o->spec.mode = static_cast<uint8_t>(o->mode);
  if (mi.latency) {
    if (qps_given && o->spec.qps != 1) return Bad("latency modes run one QP: drop --qps");
    if (depth_given && o->spec.depth != 1)
      return Bad("latency modes run one request at a time: drop --depth");
    o->spec.qps = 1;
    o->spec.depth = 1;
    if (o->spec.bytes != 0) return Bad("--bytes is for bandwidth and mixed modes");
  }
  if (o->mode == ModeId::kAtomicLat) {
    if (size_given && o->spec.size != 8) return Bad("atomic_lat moves 8 bytes: drop --size");
    if (o->sweep) return Bad("atomic_lat has one size: drop --all");
    o->spec.size = 8;
  }
  if (o->sweep && !size_given) o->spec.size = kMaxMsgBytes;
  if (o->spec.iters == 0 && o->spec.duration_ns == 0 && o->spec.bytes == 0 && !o->sweep) {
    o->spec.iters = mi.latency ? 1000 : 5000;
  }
  return -1;  // the engine's keys and ids come from the OS (EngineConfig::seed 0)
}

}  // namespace metaroce::perf
