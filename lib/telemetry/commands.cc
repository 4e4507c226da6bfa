/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The /metaroce/ telemetry commands: registration, parameter parsing and the
// handler DPDK's telemetry thread calls. Also a minimal EAL for telemetry alone.

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_telemetry.h>
#pragma GCC diagnostic pop
#include <errno.h>
#include <sched.h>
#include <time.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "format_private.h"
#include "mr_eal_rundir.h"
#include "mr_telemetry.h"

namespace metaroce::telemetry {
namespace {

/** Memory of the telemetry-only EAL: it allocates next to nothing. */
constexpr int kStandaloneEalMemMb = 16;

transport::TimeNs MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<transport::TimeNs>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Splits "0,123,32" into numbers; false if a part is not a decimal number or there
// are fewer than @p min or more than @p max parts.
bool ParseParams(absl::string_view params, size_t min, size_t max, std::vector<uint64_t>* out) {
  out->clear();
  params = absl::StripAsciiWhitespace(params);
  if (params.empty()) return min == 0;
  for (absl::string_view part : absl::StrSplit(params, ',')) {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &v)) return false;
    out->push_back(v);
  }
  return out->size() >= min && out->size() <= max;
}

absl::StatusOr<Snapshot> EngineSnapshot(uint64_t index) {
  std::optional<Snapshot> s =
      index <= UINT32_MAX ? LatestOf(static_cast<uint32_t>(index)) : std::nullopt;
  if (!s.has_value()) {
    return absl::NotFoundError(absl::StrCat("no engine ", index, " (see ", kCmdEngines, ")"));
  }
  return *std::move(s);
}

int TelemetryCallback(const char* cmd, const char* params, rte_tel_data* d) {
  return HandleCommand(cmd, params, d);
}

}  // namespace

absl::StatusOr<Dict> Answer(absl::string_view cmd, absl::string_view params,
                            transport::TimeNs now) {
  std::vector<uint64_t> p;
  if (cmd == kCmdEngines) return FormatEngines(ListEngines());
  if (cmd == kCmdStats) {
    if (!ParseParams(params, 1, 1, &p)) return absl::InvalidArgumentError("usage: ENGINE");
    absl::StatusOr<Snapshot> s = EngineSnapshot(p[0]);
    if (!s.ok()) return s.status();
    return FormatStats(*s, now);
  }
  if (cmd == kCmdConns) {
    if (!ParseParams(params, 1, 2, &p)) return absl::InvalidArgumentError("usage: ENGINE[,FIRST]");
    absl::StatusOr<Snapshot> s = EngineSnapshot(p[0]);
    if (!s.ok()) return s.status();
    return FormatConns(*s, p.size() > 1 ? p[1] : 0);
  }
  if (cmd == kCmdPaths) {
    if (!ParseParams(params, 2, 3, &p) || p[1] > UINT32_MAX) {
      return absl::InvalidArgumentError("usage: ENGINE,CONN[,FIRST]");
    }
    absl::StatusOr<Snapshot> s = EngineSnapshot(p[0]);
    if (!s.ok()) return s.status();
    return FormatPaths(*s, static_cast<uint32_t>(p[1]), p.size() > 2 ? p[2] : 0);
  }
  if (cmd == kCmdAllocator) {
    if (!ParseParams(params, 1, 2, &p)) return absl::InvalidArgumentError("usage: ENGINE[,FIRST]");
    absl::StatusOr<Snapshot> s = EngineSnapshot(p[0]);
    if (!s.ok()) return s.status();
    return FormatAllocator(*s, p.size() > 1 ? p[1] : 0);
  }
  return absl::NotFoundError(absl::StrCat("unknown command ", cmd));
}

int HandleCommandFor(const char* cmd, const char* params, rte_tel_data* d,
                     std::vector<rte_tel_data*>* containers) {
  if (cmd == nullptr || d == nullptr) return -EINVAL;
  absl::StatusOr<Dict> reply = Answer(cmd, params != nullptr ? params : "", MonotonicNs());
  if (!reply.ok()) return -EINVAL;
  return reply->Fill(d, containers);
}

int HandleCommand(const char* cmd, const char* params, rte_tel_data* d) {
  return HandleCommandFor(cmd, params, d, nullptr);
}

std::string Query(absl::string_view request) {
  const size_t comma = request.find(',');
  const absl::string_view cmd = request.substr(0, comma);
  const absl::string_view params =
      comma == absl::string_view::npos ? absl::string_view() : request.substr(comma + 1);
  absl::StatusOr<Dict> reply = Answer(cmd, params, MonotonicNs());
  return absl::StrCat("{", JsonString(cmd), ":", reply.ok() ? reply->ToJson() : "null", "}");
}

absl::Status RegisterCommands() {
  static std::once_flag once;
  static absl::Status status;
  std::call_once(once, [] {
    const struct {
      const char* cmd;
      const char* help;  // at most 63 characters (DPDK's MAX_HELP_LEN)
    } commands[] = {
        {kCmdEngines, "MetaRoCE engines: index -> name. No parameters"},
        {kCmdStats, "MetaRoCE engine counters and drops. Parameters: engine"},
        {kCmdConns, "MetaRoCE connections. Parameters: engine[,first]"},
        {kCmdPaths, "MetaRoCE paths of a connection. Params: engine,conn[,first]"},
        {kCmdAllocator, "MetaRoCE fair-share allocator. Parameters: engine[,first]"},
    };
    for (const auto& c : commands) {
      const int rc = rte_telemetry_register_cmd(c.cmd, TelemetryCallback, c.help);
      if (rc < 0) {
        status = absl::InternalError(
            absl::StrCat("rte_telemetry_register_cmd(", c.cmd, ") failed: ", rte_strerror(-rc)));
        return;
      }
    }
  });
  return status;
}

absl::Status StartEal(const std::string& file_prefix) {
  if (file_prefix.empty() || file_prefix.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("telemetry: file prefix '", file_prefix, "' must be a non-empty name"));
  }
  if (absl::Status s = RegisterCommands(); !s.ok()) return s;
  // Keep the calling thread where it may run: rte_eal_init() pins it to the main lcore's CPUs.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) {
    return absl::InternalError(absl::StrCat("telemetry: sched_getaffinity: ", strerror(errno)));
  }
  std::vector<std::string> list;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (CPU_ISSET(c, &cpus)) list.push_back(absl::StrCat(c));
  }
  std::vector<std::string> words = {"metaroce-telemetry",
                                    "--no-huge",
                                    "-m",
                                    absl::StrCat(kStandaloneEalMemMb),
                                    "--no-pci",
                                    "--no-shconf",
                                    absl::StrCat("--file-prefix=", file_prefix),
                                    absl::StrCat("--lcores=0@(", absl::StrJoin(list, ","), ")")};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  log::RemoveEmptyEalRuntimeDirAtExit();
  if (rte_eal_init(static_cast<int>(argv.size() - 1), argv.data()) >= 0) return absl::OkStatus();
  const int err = rte_errno;
  if (err == EALREADY) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "telemetry: rte_eal_init(", absl::StrJoin(words, " "), ") failed: ", rte_strerror(err)));
}

}  // namespace metaroce::telemetry
