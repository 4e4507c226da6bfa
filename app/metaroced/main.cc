/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// metaroced: the MetaRoCE dataplane daemon (doc/daemon.md). With no
// arguments it serves verbs applications on this host over kernel UDP on
// 127.0.0.1; a config file and --set overrides say otherwise.

#include <getopt.h>
#include <rte_log.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "config.h"
#include "daemon.h"
#include "mr_log.h"
#include "mr_runtime.h"
#include "mr_telemetry.h"

namespace metaroce::daemon {
namespace {

/** Longest SIGTERM waits for work in flight before the applications are detached. */
constexpr auto kDrainTimeout = std::chrono::seconds(2);

void Usage(FILE* f) {
  std::fprintf(f,
               "usage: metaroced [options]\n"
               "  -c, --config FILE    configuration file (default %s if it exists;\n"
               "                       without one, built-in defaults: kernel UDP on 127.0.0.1)\n"
               "  -s, --set S.KEY=VAL  override one setting, e.g. --set dataplane.lcores=2\n"
               "      --socket PATH    same as --set daemon.socket=PATH\n"
               "      --port SPEC      same as --set dataplane.port=SPEC\n"
               "      --print-config   print the effective configuration and exit\n"
               "  -h, --help           this text\n"
               "Verbs programs reach the daemon with mr-run (doc/daemon.md, doc/verbs.md).\n",
               kDefaultConfigPath);
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "metaroced: %s\n", std::string(s.message()).c_str());
  return 2;
}

log::Level LevelOf(const std::string& name) {
  if (name == "error") return log::Level::kErr;
  if (name == "warning") return log::Level::kWarning;
  if (name == "notice") return log::Level::kNotice;
  if (name == "debug") return log::Level::kDebug;
  return log::Level::kInfo;
}

int Main(int argc, char** argv) {
  static const option kOptions[] = {{"config", required_argument, nullptr, 'c'},
                                    {"set", required_argument, nullptr, 's'},
                                    {"socket", required_argument, nullptr, 'S'},
                                    {"port", required_argument, nullptr, 'P'},
                                    {"print-config", no_argument, nullptr, 'p'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  std::string config_path;
  std::vector<std::string> sets;
  bool print = false;
  for (int c; (c = getopt_long(argc, argv, "c:s:h", kOptions, nullptr)) != -1;) {
    switch (c) {
      case 'c': config_path = optarg; break;
      case 's': sets.push_back(optarg); break;
      case 'S': sets.push_back(absl::StrCat("daemon.socket=", optarg)); break;
      case 'P': sets.push_back(absl::StrCat("dataplane.port=", optarg)); break;
      case 'p': print = true; break;
      case 'h': Usage(stdout); return 0;
      default: Usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    std::fprintf(stderr, "metaroced: unexpected argument '%s'\n", argv[optind]);
    Usage(stderr);
    return 2;
  }
  DaemonConfig cfg;
  if (!config_path.empty()) {
    if (absl::Status s = LoadConfigFile(config_path, &cfg); !s.ok()) return Fail(s);
  } else if (access(kDefaultConfigPath, F_OK) == 0) {
    if (absl::Status s = LoadConfigFile(kDefaultConfigPath, &cfg); !s.ok()) return Fail(s);
  }
  for (const std::string& a : sets) {
    if (absl::Status s = ApplyOverride(a, &cfg); !s.ok()) return Fail(s);
  }
  if (absl::Status s = ValidateConfig(cfg); !s.ok()) return Fail(s);
  if (print) {
    std::fputs(FormatConfig(cfg).c_str(), stdout);
    return 0;
  }
  rte_log_set_level(static_cast<uint32_t>(log::LogType()),
                    static_cast<uint32_t>(LevelOf(cfg.log_level)));

  // Every application holds descriptors here (its socket, pidfd, eventfds,
  // one memfd per ring segment): take the hard limit, as the soft one is
  // often 1024.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &nofile) != 0) {
      MR_LOG(WARNING, "metaroced: cannot raise the descriptor limit: %s", strerror(errno));
    }
  }

  // Signals are taken by the control thread's signalfd: block them everywhere.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);  // logs every shard's applications and connections
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  if (cfg.telemetry) {
    if (absl::Status s = RegisterAppTelemetry(); !s.ok()) return Fail(s);
    // A DPDK port starts EAL itself; otherwise EAL runs for telemetry alone
    // (no hugepages, no devices), under the daemon's name as file prefix.
    if (!absl::StartsWith(cfg.port, "dpdk:")) {
      if (absl::Status s = telemetry::StartEal(cfg.name); !s.ok()) {
        MR_LOG(WARNING, "metaroced: serving without telemetry: %s",
               std::string(s.message()).c_str());
      }
    }
  }

  std::vector<std::unique_ptr<ShardService>> services;
  runtime::RuntimeConfig rc;
  rc.port = cfg.port;
  rc.faults = cfg.faults;
  for (const std::string& plane : cfg.planes) rc.planes.push_back({plane, ""});
  rc.lcores = cfg.lcores;
  rc.cpus = cfg.cpus;
  rc.engine = cfg.engine;
  rc.yield_after_idle_polls = cfg.yield_after_idle_polls;
  rc.name = cfg.name;
  rc.telemetry = cfg.telemetry;
  rc.pace_bytes_per_sec = cfg.pace_bytes_per_sec;
  for (uint16_t i = 0; i < cfg.lcores; i++) {
    services.push_back(std::make_unique<ShardService>(cfg, i));
    rc.memory.push_back(services.back()->memory());
  }
  auto rt = runtime::Runtime::Open(rc);
  if (!rt.ok()) return Fail(rt.status());
  std::vector<ShardService*> raw;
  for (uint16_t i = 0; i < cfg.lcores; i++) {
    services[i]->set_shard(&(*rt)->shard(i));
    raw.push_back(services[i].get());
  }
  Server server(cfg, rt->get(), raw);
  if (absl::Status s = server.Listen(); !s.ok()) return Fail(s);
  const transport::PeerAddr a = (*rt)->shard(0).address();
  MR_LOG(NOTICE, "metaroced: serving %s:%u (%s, %u shard%s, steering %s)", a.ip.ToString().c_str(),
         a.udp_port, cfg.port.c_str(), cfg.lcores, cfg.lcores == 1 ? "" : "s",
         runtime::SteeringName((*rt)->steering()));

  absl::Status run_status;
  std::thread dataplane([&] {
    run_status = (*rt)->Run([&](runtime::Shard& s) {
      services[s.index()]->Iterate();
      return true;
    });
  });
  server.Serve();

  // SIGTERM: let work in flight finish (bounded), then detach every application.
  const auto until = std::chrono::steady_clock::now() + kDrainTimeout;
  for (;;) {
    bool busy = false;
    for (auto& svc : services) {
      svc->RunOnShard([&] { busy |= svc->Busy(); });
    }
    if (!busy || std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server.CloseAll();
  (*rt)->Stop();
  for (auto& svc : services) svc->Kick();  // a shard waiting for events sees the stop now
  dataplane.join();
  if (!run_status.ok()) return Fail(run_status);
  MR_LOG(NOTICE, "metaroced: stopped");
  return 0;
}

}  // namespace
}  // namespace metaroce::daemon

int main(int argc, char** argv) { return metaroce::daemon::Main(argc, argv); }
