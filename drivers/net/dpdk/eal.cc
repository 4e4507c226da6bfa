/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// EAL, once per process; its log lines are captured so a failure can say why.
// Once EAL is up, packet capture (rte_pdump) is offered to dpdk-dumpcap.

// DPDK 22.11 headers use ++/-- on volatile members (-Wvolatile in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wvolatile"
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_pdump.h>
#pragma GCC diagnostic pop
#include <stdio.h>
#include <stdlib.h>

#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "mr_eal_rundir.h"
#include "mr_log.h"
#include "mr_net_dpdk.h"

namespace metaroce::dpdk {
namespace {

std::mutex eal_mu;
bool eal_tried = false;
absl::Status eal_status;

// The last @p max bytes of @p log, without the trailing newline.
std::string Tail(const std::string& log, size_t max) {
  std::string t = log.size() > max ? "..." + log.substr(log.size() - max) : log;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  return t;
}

// Lets dpdk-dumpcap (a secondary process) capture this primary's ports, and says in the log
// whether it can: a secondary needs the primary's shared config (no --no-shconf, no
// --in-memory) and hugepage-backed memory (no --no-huge). doc/observability.md.
void InitPdump() {
  if (rte_eal_process_type() != RTE_PROC_PRIMARY) return;
  const std::string dir = rte_eal_get_runtime_dir();
  const std::string prefix = dir.substr(dir.find_last_of('/') + 1);
  rte_errno = 0;
  if (rte_pdump_init() < 0) {
    MR_LOG(WARNING, "pdump: rte_pdump_init failed: %s; no packet capture", rte_strerror(rte_errno));
    return;
  }
  if (rte_errno == ENOTSUP) {  // rte_pdump_init() accepts an EAL without multi-process
    MR_LOG(NOTICE,
           "pdump: unavailable: EAL runs without multi-process (--no-shconf or --in-memory), "
           "so dpdk-dumpcap cannot attach");
  } else if (!rte_eal_has_hugepages()) {
    MR_LOG(NOTICE,
           "pdump: initialised, but EAL runs without hugepages (--no-huge): dpdk-dumpcap "
           "cannot attach (a secondary process maps hugepage memory)");
  } else {
    MR_LOG(INFO, "pdump: ready: dpdk-dumpcap --file-prefix=%s -i <port> captures", prefix.c_str());
  }
}

}  // namespace

absl::Status InitEal(const std::vector<std::string>& eal_args) {
  std::lock_guard<std::mutex> lock(eal_mu);
  if (eal_tried) return eal_status;
  eal_tried = true;

  std::vector<std::string> words = {"metaroce"};
  words.insert(words.end(), eal_args.begin(), eal_args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  // EAL logs to stderr; during rte_eal_init() its lines also go to a buffer.
  char* buf = nullptr;
  size_t len = 0;
  FILE* log = open_memstream(&buf, &len);
  if (log != nullptr) rte_openlog_stream(log);
  log::RemoveEmptyEalRuntimeDirAtExit();
  const int rc = rte_eal_init(static_cast<int>(argv.size() - 1), argv.data());
  const int err = rte_errno;
  if (log != nullptr) {
    rte_openlog_stream(nullptr);
    fclose(log);
  }
  const std::string text = buf != nullptr ? std::string(buf, len) : std::string();
  free(buf);
  if (!text.empty()) fputs(text.c_str(), stderr);  // still shown, as without the capture

  if (rc >= 0) {
    eal_status = absl::OkStatus();
    InitPdump();
  } else if (err == EALREADY && rte_lcore_count() > 0) {
    eal_status = absl::OkStatus();  // the program initialised EAL itself
  } else {
    eal_status = absl::FailedPreconditionError(absl::StrCat(
        "dpdk: rte_eal_init(", absl::StrJoin(eal_args, " "), ") failed: ", rte_strerror(err),
        text.empty() ? "" : "; EAL said: ", Tail(text, 1500)));
  }
  return eal_status;
}

}  // namespace metaroce::dpdk
