/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Per-application telemetry (/metaroced/apps). Each shard publishes what its
// applications hold and did, when one attaches or detaches and at most every
// telemetry::kTelemetryPublishNs while it runs; DPDK's telemetry thread
// formats the latest rows, so no application state is read across threads.

#include <rte_telemetry.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon.h"
#include "mr_telemetry.h"

namespace metaroce::daemon {
namespace {

struct Directory {
  std::mutex mu;
  std::map<uint16_t, std::vector<AppRow>> by_shard;
};

Directory& Dir() {
  static Directory* d = new Directory();  // outlives every thread that may ask
  return *d;
}

int AppsCallback(const char* /*cmd*/, const char* params, rte_tel_data* d) {
  if (params != nullptr && *params != '\0') return -EINVAL;  // takes no parameters
  rte_tel_data_start_dict(d);
  Directory& dir = Dir();
  std::lock_guard<std::mutex> lock(dir.mu);
  size_t n = 0;
  for (const auto& [shard, rows] : dir.by_shard) {
    for (const AppRow& r : rows) {
      if (n++ == RTE_TEL_MAX_DICT_ENTRIES) return 0;  // DPDK's limit; the rest is left out
      rte_tel_data* a = rte_tel_data_alloc();
      if (a == nullptr) return -ENOMEM;
      rte_tel_data_start_dict(a);
      const std::pair<const char*, uint64_t> fields[] = {
          {"pid", static_cast<uint64_t>(r.pid)},
          {"uid", r.uid},
          {"shard", r.shard},
          {"pds", r.pds},
          {"mrs", r.mrs},
          {"mr_bytes", r.mr_bytes},
          {"cqs", r.cqs},
          {"qps", r.qps},
          {"srqs", r.srqs},
          {"wrs_posted", r.wrs_posted},
          {"recvs_posted", r.recvs_posted},
          {"completions", r.completions},
          {"bad_entries", r.bad_entries},
      };
      for (const auto& [name, v] : fields) rte_tel_data_add_dict_u64(a, name, v);
      rte_tel_data_add_dict_container(d, std::to_string(r.id).c_str(), a, 0);
    }
  }
  return 0;
}

}  // namespace

absl::Status RegisterAppTelemetry() {
  static std::once_flag once;
  static int rc = 0;
  std::call_once(once, [] {
    rc = rte_telemetry_register_cmd(
        kCmdApps, AppsCallback, "metaroced applications: objects held, work done. No parameters");
  });
  if (rc == 0) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("metaroced: rte_telemetry_register_cmd(", kCmdApps, ") failed: ", -rc));
}

void ShardService::PublishApps() {
  std::vector<AppRow> rows;
  rows.reserve(apps_.size());
  for (const App* app : apps_) {
    AppRow r;
    r.id = app->id;
    r.pid = app->pid;
    r.uid = app->uid;
    r.shard = index_;
    r.pds = app->pds.size();
    r.mrs = app->mrs.size();
    r.mr_bytes = app->mr_bytes;
    r.cqs = app->cqs.size();
    r.qps = app->qps.size();
    r.srqs = app->srqs.size();
    r.wrs_posted = app->wrs_posted;
    r.recvs_posted = app->recvs_posted;
    r.completions = app->completions;
    r.bad_entries = app->bad_entries;
    rows.push_back(r);
  }
  Directory& dir = Dir();
  std::lock_guard<std::mutex> lock(dir.mu);
  dir.by_shard[index_] = std::move(rows);
  apps_published_at_ = shard_ != nullptr ? shard_->Now() : 0;
}

}  // namespace metaroce::daemon
