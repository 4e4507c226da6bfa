/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// metaroced's configuration: built-in defaults (kernel UDP on 127.0.0.1, no
// file needed), then the file (config/metaroced.conf, INI parsed with DPDK's
// rte_cfgfile), then command-line overrides. Every value is checked; an error
// names the section, the key and what is allowed (doc/daemon.md).

#ifndef METAROCE_APP_METAROCED_CONFIG_H
#define METAROCE_APP_METAROCED_CONFIG_H

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_ipc.h"
#include "mr_ipc_ring.h"
#include "mr_transport.h"

namespace metaroce::daemon {

/** What one application may hold at once ([limits] section). */
struct AppLimits {
  uint32_t max_pds = 64;
  uint32_t max_mrs = 1024;
  uint64_t max_mr_bytes = uint64_t{16} << 30;  ///< registered bytes, all regions
  uint32_t max_cqs = 256;
  uint32_t max_qps = 256;  ///< <= ipc::kMaxQpsPerApp
  uint32_t max_comp_channels = 64;
  uint32_t max_srqs = 64;     ///< <= ipc::kMaxSrqsPerApp
  uint32_t max_qp_wr = 4096;  ///< deepest send or receive queue, <= ipc::kMaxRingDepth
  uint32_t max_cqe = 16384;   ///< deepest CQ, <= ipc::kMaxRingDepth
};

struct DaemonConfig {
  // [daemon]
  std::string socket_path = ipc::kDefaultSocketPath;  ///< socket=
  uint32_t socket_mode = 0666;                        ///< socket_mode= (octal): who may attach
  std::string name = "metaroced";                     ///< name= (telemetry, logs)
  uint32_t max_apps = 64;                             ///< max_apps=: applications attached at once
  bool telemetry = true;                              ///< telemetry=yes|no
  std::string log_level = "info";                     ///< log_level=error|warning|notice|info|debug
  // [dataplane]
  std::string port = "udp:ip=127.0.0.1";  ///< port= driver spec (as mr-perf --port)
  std::string faults;                     ///< faults= fault stage spec (tests)
  std::vector<std::string> planes;        ///< planes=: ports of planes 1.. ("spec|spec")
  uint16_t lcores = 1;                    ///< lcores=: shards, 1..runtime::kMaxShards
  std::vector<int> cpus;                  ///< cpus=: pin shard i to cpus[i] (list "2,3")
  uint32_t yield_after_idle_polls = 0;    ///< yield_after_idle_polls=
  /**
   * idle_sleep_us=: 0 busy-polls (dedicated cores). Otherwise an idle shard
   * sleeps until the engine's next deadline, woken by its port's descriptor
   * and by applications' kicks where the port has one (kernel UDP), else
   * napping this long at a time (DPDK ports, and while a CQ ring is full).
   */
  uint64_t idle_sleep_ns = 20'000;
  uint64_t pace_bytes_per_sec = 0;  ///< pace=: bytes/s, K/M/G suffixes; 0: unpaced
  // [engine]: paths=, max_payload=, path_window=, conn_window=, ... (EngineConfig fields)
  transport::EngineConfig engine;
  // [limits]
  AppLimits limits;
};

/** Where the file comes from when none is given: none (the built-in defaults stand). */
inline constexpr char kDefaultConfigPath[] = "/etc/metaroce/metaroced.conf";

/**
 * Reads @p path (INI: [daemon], [dataplane], [engine], [limits]) over the
 * defaults of @p cfg. Unknown sections or keys, values out of range and
 * unparsable values fail with InvalidArgument naming "section.key" and the
 * allowed range or form.
 */
absl::Status LoadConfigFile(const std::string& path, DaemonConfig* cfg);

/**
 * Applies one override "section.key=value" (the --set option), with the same
 * checks as the file.
 */
absl::Status ApplyOverride(const std::string& assignment, DaemonConfig* cfg);

/** Checks the values together (e.g. cpus given for every lcore); called after the overrides. */
absl::Status ValidateConfig(const DaemonConfig& cfg);

/** The configuration as an INI text that LoadConfigFile() reads back to the same values. */
std::string FormatConfig(const DaemonConfig& cfg);

}  // namespace metaroce::daemon

#endif  // METAROCE_APP_METAROCED_CONFIG_H
