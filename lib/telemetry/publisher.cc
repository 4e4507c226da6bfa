/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Publishers and the process-wide registry the telemetry commands read.
// Locking: the registry's mutex guards the index -> slot map (taken by
// Create, the destructor and the commands, never by Publish); each slot's
// mutex guards its published snapshot. The polling thread only try-locks a
// slot, so a telemetry reader can delay a publication, never a poll.

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "format_private.h"
#include "mr_telemetry.h"

namespace metaroce::telemetry {

namespace {

/** Longest engine name kept (rte_tel_data strings hold 127 bytes). */
constexpr size_t kMaxNameBytes = 127;

class Registry {
 public:
  std::shared_ptr<PublishedSlot> Add(std::string name) {
    auto slot = std::make_shared<PublishedSlot>();
    slot->name = std::move(name);
    std::lock_guard<std::mutex> lock(mu_);
    slot->index = next_index_++;
    slot->snapshot.engine = slot->index;
    slot->snapshot.name = slot->name;
    slots_[slot->index] = slot;
    return slot;
  }

  void Remove(uint32_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    slots_.erase(index);
  }

  std::shared_ptr<PublishedSlot> Find(uint32_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(index);
    return it == slots_.end() ? nullptr : it->second;
  }

  std::vector<std::pair<uint32_t, std::string>> List() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<uint32_t, std::string>> v;
    for (const auto& [index, slot] : slots_) v.emplace_back(index, slot->name);
    return v;
  }

 private:
  std::mutex mu_;
  uint32_t next_index_ = 0;
  std::map<uint32_t, std::shared_ptr<PublishedSlot>> slots_;
};

// Never destroyed: the telemetry thread may still ask while the process exits.
Registry& Reg() {
  static Registry* r = new Registry();
  return *r;
}

std::string PeerText(const transport::ConnInfo& c) {
  return c.peer.ip.v6 ? absl::StrCat("[", c.peer.ip.ToString(), "]:", c.peer.udp_port)
                      : absl::StrCat(c.peer.ip.ToString(), ":", c.peer.udp_port);
}

}  // namespace

std::vector<std::pair<uint32_t, std::string>> ListEngines() { return Reg().List(); }

std::optional<Snapshot> LatestOf(uint32_t index) {
  std::shared_ptr<PublishedSlot> slot = Reg().Find(index);
  if (slot == nullptr) return std::nullopt;
  std::lock_guard<std::mutex> lock(slot->mu);
  return slot->snapshot;
}

std::vector<Event> Diff(const Snapshot& before, const Snapshot& after) {
  using State = transport::ConnInfo::State;
  std::vector<Event> events;
  for (const transport::ConnInfo& c : after.conns) {
    auto it = std::find_if(before.conns.begin(), before.conns.end(),
                           [&](const transport::ConnInfo& b) { return b.conn_id == c.conn_id; });
    const transport::ConnInfo* b = it == before.conns.end() ? nullptr : &*it;
    const std::string who =
        absl::StrCat(after.name, ": connection ", c.conn_id, " to ", PeerText(c));
    if (c.state == State::kUp && (b == nullptr || b->state != State::kUp)) {
      events.push_back({log::Level::kInfo, absl::StrCat(who, " up: ", c.paths.size(), " paths, ",
                                                        c.chunk_bytes, "-byte chunks")});
    }
    if (c.state == State::kFailed && (b == nullptr || b->state != State::kFailed)) {
      events.push_back({log::Level::kWarning, absl::StrCat(who, " failed")});
    }
    if (b == nullptr) continue;
    const size_t n = std::min(b->paths.size(), c.paths.size());
    for (size_t i = 0; i < n; i++) {
      const transport::PathInfo& was = b->paths[i];
      const transport::PathInfo& now = c.paths[i];
      // Paths fail and come back routinely (that is how spraying routes around a
      // bad link): DEBUG, with the counts in telemetry; connections log above it.
      if (now.failures > was.failures) {
        events.push_back({log::Level::kDebug,
                          absl::StrCat(who, ": path ", now.path_id, " failed (source port ",
                                       was.src_port, "; ", now.failures, " failures so far)")});
      }
      // A path fails into re-probing; a probe answered on a fresh port makes it active again.
      if (now.active && (!was.active || now.failures > was.failures)) {
        events.push_back(
            {log::Level::kDebug, absl::StrCat(who, ": path ", now.path_id,
                                              " active again on source port ", now.src_port)});
      }
    }
  }
  return events;
}

std::unique_ptr<Publisher> Publisher::Create(std::string name, transport::TimeNs period_ns) {
  if (absl::Status s = RegisterCommands(); !s.ok()) {
    MR_LOG(WARNING, "telemetry: %s", s.ToString().c_str());
  }
  if (name.size() > kMaxNameBytes) name.resize(kMaxNameBytes);
  return std::unique_ptr<Publisher>(new Publisher(Reg().Add(std::move(name)), period_ns));
}

Publisher::Publisher(std::shared_ptr<PublishedSlot> slot, transport::TimeNs period_ns)
    : slot_(std::move(slot)), index_(slot_->index), name_(slot_->name), period_ns_(period_ns) {}

Publisher::~Publisher() { Reg().Remove(index_); }

bool Publisher::Publish(transport::TimeNs now, const transport::Engine& engine,
                        const port::PortStats* port, std::vector<Event>* events) {
  if (events != nullptr) events->clear();
  next_.engine = index_;
  next_.name = name_;
  next_.seq = seq_ + 1;
  next_.taken_at_ns = now;
  next_.stats = engine.stats();
  next_.has_port = port != nullptr;
  next_.port = port != nullptr ? *port : port::PortStats{};
  next_.conns = engine.GetConnections();
  next_.share = engine.GetShareInfo();
  {
    std::unique_lock<std::mutex> lock(slot_->mu, std::try_to_lock);
    if (!lock.owns_lock()) return false;  // a reader is copying it: the next poll tries again
    std::swap(slot_->snapshot, next_);
  }
  seq_++;
  next_at_ = now + period_ns_;
  // next_ now holds the previous snapshot. Readers may read the published one
  // concurrently; only this thread writes it, and not here.
  if (events != nullptr) *events = Diff(next_, slot_->snapshot);
  return true;
}

Snapshot Publisher::Latest() const {
  std::lock_guard<std::mutex> lock(slot_->mu);
  return slot_->snapshot;
}

}  // namespace metaroce::telemetry
