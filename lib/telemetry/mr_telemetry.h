/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Engine figures over DPDK telemetry (doc/observability.md). The thread that
 * polls an engine publishes a snapshot of it at most every
 * kTelemetryPublishNs through a Publisher; DPDK's telemetry thread answers
 * the /metaroce/ commands from the latest snapshots and never touches an
 * engine. Publishing never blocks the polling thread: it only try-locks.
 *
 * Commands (read them with dpdk-telemetry.py):
 * - /metaroce/engines                      registered engines: index -> name
 * - /metaroce/stats,ENGINE                 engine counters, drops by reason, port counters
 * - /metaroce/conns,ENGINE[,FIRST]         per connection figures, kConnsPerReply at a time
 * - /metaroce/paths,ENGINE,CONN[,FIRST]    per path figures of a connection, kPathsPerReply at a
 * time
 * - /metaroce/allocator,ENGINE[,FIRST]     the receiver's fair-share allocator and the senders it
 *   gives hints to, kSharesPerReply at a time
 *
 * The commands are registered whether or not EAL runs; they are served only
 * once EAL has started its telemetry thread (the DPDK driver's EAL, a
 * program's own, or StartEal()).
 */

#ifndef METAROCE_MR_TELEMETRY_H
#define METAROCE_MR_TELEMETRY_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "mr_log.h"
#include "mr_port.h"
#include "mr_transport.h"

struct rte_tel_data;

namespace metaroce::telemetry {

/** Shortest time between two snapshots of one engine (10 ms). */
inline constexpr transport::TimeNs kTelemetryPublishNs = 10'000'000;
/** Connections in one /metaroce/conns reply (a reply is at most 16 KiB of JSON). */
inline constexpr size_t kConnsPerReply = 16;
/** Paths in one /metaroce/paths reply. */
inline constexpr size_t kPathsPerReply = 32;
/** Senders in one /metaroce/allocator reply. */
inline constexpr size_t kSharesPerReply = 64;
/** Longest reply DPDK 22.11's telemetry sends (MAX_OUTPUT_LEN in lib/telemetry). */
inline constexpr size_t kMaxReplyBytes = 16 * 1024;

inline constexpr char kCmdEngines[] = "/metaroce/engines";
inline constexpr char kCmdStats[] = "/metaroce/stats";
inline constexpr char kCmdConns[] = "/metaroce/conns";
inline constexpr char kCmdPaths[] = "/metaroce/paths";
inline constexpr char kCmdAllocator[] = "/metaroce/allocator";

/** One engine's figures at one instant, as its polling thread published them. */
struct Snapshot {
  uint32_t engine = 0;  ///< the engine's index (Publisher::index())
  std::string name;
  uint64_t seq = 0;                   ///< snapshots published before and including this one
  transport::TimeNs taken_at_ns = 0;  ///< the polling thread's clock (CLOCK_MONOTONIC ns)
  transport::EngineStats stats;
  bool has_port = false;  ///< port counters were given
  port::PortStats port;
  std::vector<transport::ConnInfo> conns;
  transport::ShareInfo share;
};

/** A change between two snapshots worth a log line. */
struct Event {
  log::Level level = log::Level::kInfo;
  std::string text;
};

/**
 * What changed from @p before to @p after: connections that came up or
 * failed, paths that failed or became active again. Pure.
 */
std::vector<Event> Diff(const Snapshot& before, const Snapshot& after);

struct PublishedSlot;

/**
 * Publishes one engine's snapshots for telemetry. Created, used and destroyed
 * by the engine's polling thread; its snapshots are read by any thread.
 */
class Publisher {
 public:
  /**
   * Registers an engine called @p name (any text; shown by /metaroce/engines)
   * under a new index, never reused in the process, and registers the
   * /metaroce/ commands with DPDK telemetry on first use.
   * @param period_ns shortest time between two snapshots
   */
  static std::unique_ptr<Publisher> Create(std::string name,
                                           transport::TimeNs period_ns = kTelemetryPublishNs);
  /** Unregisters: the commands no longer know the index. */
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  uint32_t index() const { return index_; }
  const std::string& name() const { return name_; }

  /** True when a snapshot is due at @p now: one comparison, for every poll. */
  bool Due(transport::TimeNs now) const { return now >= next_at_; }

  /**
   * Snapshots @p engine (and @p port counters, if not null) and makes it the
   * one telemetry reads, unless a reader holds the snapshot at this moment:
   * then nothing is published and Due() stays true, so the next poll tries
   * again. Never blocks. Polling thread only.
   * @param now the polling thread's CLOCK_MONOTONIC nanoseconds
   * @param events if not null, receives what changed since the last
   *        published snapshot (see Diff()); cleared first
   * @return true if the snapshot was published
   */
  bool Publish(transport::TimeNs now, const transport::Engine& engine,
               const port::PortStats* port = nullptr, std::vector<Event>* events = nullptr);

  /** A copy of the latest published snapshot (seq 0 before the first). Any thread. */
  Snapshot Latest() const;

 private:
  Publisher(std::shared_ptr<PublishedSlot> slot, transport::TimeNs period_ns);
  std::shared_ptr<PublishedSlot> slot_;
  uint32_t index_ = 0;
  std::string name_;
  transport::TimeNs period_ns_ = kTelemetryPublishNs;
  transport::TimeNs next_at_ = 0;
  uint64_t seq_ = 0;
  Snapshot next_;  ///< built here, then swapped with the published one
  friend class PublisherPeer;
};

/**
 * Registers the /metaroce/ commands with rte_telemetry, once per process
 * (Publisher::Create() calls it). Works before, after and without EAL.
 */
absl::Status RegisterCommands();

/**
 * The handler DPDK's telemetry thread calls for every /metaroce/ command:
 * fills @p d from the latest snapshots.
 * @return 0, or a negative errno for a bad command or parameter (DPDK then
 *         answers {"<cmd>": null})
 */
int HandleCommand(const char* cmd, const char* params, rte_tel_data* d);

/**
 * Answers @p request ("/metaroce/paths,0,123") as the telemetry socket would,
 * without EAL: {"<cmd>": {...}}, or {"<cmd>": null} for a bad request. For
 * programs that print their figures, and tests.
 */
std::string Query(absl::string_view request);

/**
 * Starts a minimal EAL only so that telemetry is served, for processes
 * without DPDK ports (the kernel UDP driver): no hugepages (16 MiB of
 * ordinary memory), no PCI scan, no shared config (--no-shconf, which
 * telemetry does not need), the calling thread's CPU affinity kept. The
 * socket is /var/run/dpdk/<file_prefix>/dpdk_telemetry.v2 (root; else under
 * $XDG_RUNTIME_DIR or /tmp); EAL removes it at exit, not the directory.
 * OK if EAL already runs. A DPDK port opened later reuses this EAL and its
 * eal= arguments are ignored: processes with DPDK ports get telemetry from
 * their EAL instead.
 */
absl::Status StartEal(const std::string& file_prefix);

}  // namespace metaroce::telemetry

#endif  // METAROCE_MR_TELEMETRY_H
