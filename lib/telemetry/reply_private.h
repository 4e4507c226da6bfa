/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// A telemetry reply before it goes into an rte_tel_data: a dict of unsigned,
// string and dict values, nested, which is what DPDK 22.11 can send (a dict
// may hold dicts; an array may not). The formatting code builds one, the
// command handler copies it into DPDK's structure with Fill(), and tests read
// it or its JSON directly, without a telemetry socket.

#ifndef METAROCE_TELEMETRY_REPLY_PRIVATE_H
#define METAROCE_TELEMETRY_REPLY_PRIVATE_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

struct rte_tel_data;

namespace metaroce::telemetry {

class Dict {
 public:
  struct Entry;

  /** Keys: letters, digits, '_' and '/' only (rte_tel_data_add_dict_*() refuses others). */
  void AddU64(std::string key, uint64_t value);
  void AddString(std::string key, std::string value);
  /** A nested dict; the reference stays valid while this dict lives. */
  Dict& AddDict(std::string key);

  /** The value under @p key, or nullptr if there is none of that kind. */
  const uint64_t* U64(absl::string_view key) const;
  const std::string* String(absl::string_view key) const;
  const Dict* Sub(absl::string_view key) const;

  size_t size() const { return entries_.size(); }
  const std::vector<Entry>& entries() const { return entries_; }

  /** JSON as DPDK 22.11 writes it (no spaces, keys in insertion order). */
  std::string ToJson() const;

  /**
   * Fills @p d, which must be fresh (a callback's argument, or from
   * rte_tel_data_alloc()): starts a dict and adds every entry; nested dicts
   * are containers from rte_tel_data_alloc(), which DPDK frees when it writes
   * the reply. On failure the containers added so far are freed here (DPDK
   * then answers null without looking at @p d).
   * @param containers if not null, receives every container added (to free
   *        them when no DPDK telemetry thread will: tests)
   * @return 0, or the first negative errno an rte_tel_data_*() call returned
   */
  int Fill(rte_tel_data* d, std::vector<rte_tel_data*>* containers = nullptr) const;

 private:
  const Entry* Find(absl::string_view key) const;
  int FillInto(rte_tel_data* d, std::vector<rte_tel_data*>* containers) const;
  std::vector<Entry> entries_;
};

struct Dict::Entry {
  enum class Kind : uint8_t { kU64, kString, kDict };
  std::string key;
  Kind kind = Kind::kU64;
  uint64_t u64 = 0;
  std::string str;
  std::unique_ptr<Dict> dict;  ///< a pointer: the address stays put as entries_ grows
};

/** @p s as a JSON string literal, quotes included. */
std::string JsonString(absl::string_view s);

}  // namespace metaroce::telemetry

#endif  // METAROCE_TELEMETRY_REPLY_PRIVATE_H
