/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Per-application telemetry (/metaroced/apps). The control thread publishes
// what each application holds after every request; each shard publishes what
// its part of each application did, when one attaches or detaches and at most
// every telemetry::kTelemetryPublishNs while it runs. DPDK's telemetry thread
// adds up the latest rows, so no application state is read across threads.

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
  std::map<uint64_t, AppRow> objects;                ///< by application, from the control thread
  std::map<uint16_t, std::vector<AppRow>> by_shard;  ///< the work of each shard's parts
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
  std::map<uint64_t, AppRow> apps = dir.objects;
  for (const auto& [shard, rows] : dir.by_shard) {
    for (const AppRow& w : rows) {
      auto it = apps.find(w.id);
      if (it == apps.end()) continue;  // detached since
      it->second.wrs_posted += w.wrs_posted;
      it->second.recvs_posted += w.recvs_posted;
      it->second.completions += w.completions;
      it->second.bad_entries += w.bad_entries;
      it->second.poll_wakes += w.poll_wakes;
    }
  }
  size_t n = 0;
  for (const auto& [id, r] : apps) {
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
        {"poll_wakes", r.poll_wakes},
    };
    for (const auto& [name, v] : fields) rte_tel_data_add_dict_u64(a, name, v);
    rte_tel_data_add_dict_container(d, std::to_string(r.id).c_str(), a, 0);
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
  rows.reserve(parts_.size());
  for (const AppPart* part : parts_) {
    AppRow r;
    r.id = part->app->id;
    r.wrs_posted = part->wrs_posted;
    r.recvs_posted = part->recvs_posted;
    r.completions = part->completions;
    r.bad_entries = part->bad_entries;
    r.poll_wakes = part->poll_wakes;
    rows.push_back(r);
  }
  Directory& dir = Dir();
  std::lock_guard<std::mutex> lock(dir.mu);
  dir.by_shard[index_] = std::move(rows);
  apps_published_at_ = shard_ != nullptr ? shard_->Now() : 0;
}

}  // namespace metaroce::daemon

namespace metaroce::daemon {

void Server::PublishObjects(const App* app) {
  Directory& dir = Dir();
  std::lock_guard<std::mutex> lock(dir.mu);
  if (app->seg == nullptr || app->parts.empty()) {
    dir.objects.erase(app->id);
    return;
  }
  AppRow& r = dir.objects[app->id];
  r.id = app->id;
  r.pid = app->pid;
  r.uid = app->uid;
  r.shard = app->home;
  r.pds = app->pds.size();
  r.mrs = app->mrs.size();
  r.mr_bytes = app->mr_bytes;
  r.cqs = app->cqs.size();
  r.qps = app->qps.size();
  r.srqs = app->srqs.size();
}

}  // namespace metaroce::daemon
