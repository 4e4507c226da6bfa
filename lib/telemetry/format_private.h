/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The /metaroce/ replies built from snapshots: pure functions, tested without
// a telemetry socket (test/telemetry). Field names and units: doc/observability.md.

#ifndef METAROCE_TELEMETRY_FORMAT_PRIVATE_H
#define METAROCE_TELEMETRY_FORMAT_PRIVATE_H

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "mr_telemetry.h"
#include "reply_private.h"

namespace metaroce::telemetry {

/** Most entries rte_tel_data holds in one dict (RTE_TEL_MAX_DICT_ENTRIES). */
inline constexpr size_t kMaxDictEntries = 256;

/** One registered engine: its latest snapshot, shared by its Publisher and the registry. */
struct PublishedSlot {
  uint32_t index = 0;
  std::string name;
  std::mutex mu;      ///< the publisher only try-locks it
  Snapshot snapshot;  ///< guarded by mu; written only by the publisher's thread
};

/**
 * /metaroce/engines: index -> name, as many as fit in a reply; if some do not,
 * a last entry "more" counts them.
 */
Dict FormatEngines(const std::vector<std::pair<uint32_t, std::string>>& engines);

/** /metaroce/stats: engine counters, drops by reason, port counters; @p now for the age. */
Dict FormatStats(const Snapshot& s, transport::TimeNs now);

/** /metaroce/allocator: the allocator, and senders [first, first + kSharesPerReply). */
Dict FormatAllocator(const Snapshot& s, size_t first);

/** /metaroce/conns: connections [first, first + kConnsPerReply) in engine order. */
Dict FormatConns(const Snapshot& s, size_t first);

/** /metaroce/paths: paths [first, first + kPathsPerReply) of connection @p conn_id. */
absl::StatusOr<Dict> FormatPaths(const Snapshot& s, uint32_t conn_id, size_t first);

/**
 * The reply to @p cmd with @p params (what follows the first comma), from the
 * registered engines' latest snapshots. InvalidArgument / NotFound for a bad
 * command, parameter, engine or connection.
 */
absl::StatusOr<Dict> Answer(absl::string_view cmd, absl::string_view params, transport::TimeNs now);

/**
 * HandleCommand() with the containers it adds to @p d: DPDK frees them when it
 * writes a reply; a test that calls the handler frees them itself.
 */
int HandleCommandFor(const char* cmd, const char* params, rte_tel_data* d,
                     std::vector<rte_tel_data*>* containers);

// ---- The registry of publishers (publisher.cc) ----

/** Registered engines, by index. */
std::vector<std::pair<uint32_t, std::string>> ListEngines();
/** The latest snapshot of engine @p index (seq 0 if none yet); nullopt if no such engine. */
std::optional<Snapshot> LatestOf(uint32_t index);

}  // namespace metaroce::telemetry

#endif  // METAROCE_TELEMETRY_FORMAT_PRIVATE_H
