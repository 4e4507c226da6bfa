/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <errno.h>
#include <rte_telemetry.h>
#include <stdio.h>

#include "absl/strings/str_cat.h"
#include "reply_private.h"

namespace metaroce::telemetry {

void Dict::AddU64(std::string key, uint64_t value) {
  Entry& e = entries_.emplace_back();
  e.key = std::move(key);
  e.kind = Entry::Kind::kU64;
  e.u64 = value;
}

void Dict::AddString(std::string key, std::string value) {
  Entry& e = entries_.emplace_back();
  e.key = std::move(key);
  e.kind = Entry::Kind::kString;
  e.str = std::move(value);
}

Dict& Dict::AddDict(std::string key) {
  Entry& e = entries_.emplace_back();
  e.key = std::move(key);
  e.kind = Entry::Kind::kDict;
  e.dict = std::make_unique<Dict>();
  return *e.dict;
}

const Dict::Entry* Dict::Find(absl::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

const uint64_t* Dict::U64(absl::string_view key) const {
  const Entry* e = Find(key);
  return e != nullptr && e->kind == Entry::Kind::kU64 ? &e->u64 : nullptr;
}

const std::string* Dict::String(absl::string_view key) const {
  const Entry* e = Find(key);
  return e != nullptr && e->kind == Entry::Kind::kString ? &e->str : nullptr;
}

const Dict* Dict::Sub(absl::string_view key) const {
  const Entry* e = Find(key);
  return e != nullptr && e->kind == Entry::Kind::kDict ? e->dict.get() : nullptr;
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string Dict::ToJson() const {
  std::string out = "{";
  for (size_t i = 0; i < entries_.size(); i++) {
    const Entry& e = entries_[i];
    if (i != 0) out += ',';
    absl::StrAppend(&out, JsonString(e.key), ":");
    switch (e.kind) {
      case Entry::Kind::kU64: absl::StrAppend(&out, e.u64); break;
      case Entry::Kind::kString: out += JsonString(e.str); break;
      case Entry::Kind::kDict: out += e.dict->ToJson(); break;
    }
  }
  out += '}';
  return out;
}

int Dict::Fill(rte_tel_data* d, std::vector<rte_tel_data*>* containers) const {
  std::vector<rte_tel_data*> added;
  const int rc = FillInto(d, &added);
  if (rc < 0) {
    for (rte_tel_data* c : added) rte_tel_data_free(c);
    added.clear();
  }
  if (containers != nullptr) *containers = std::move(added);
  return rc;
}

int Dict::FillInto(rte_tel_data* d, std::vector<rte_tel_data*>* added) const {
  int rc = rte_tel_data_start_dict(d);
  if (rc < 0) return rc;
  for (const Entry& e : entries_) {
    switch (e.kind) {
      case Entry::Kind::kU64: rc = rte_tel_data_add_dict_u64(d, e.key.c_str(), e.u64); break;
      case Entry::Kind::kString:
        rc = rte_tel_data_add_dict_string(d, e.key.c_str(), e.str.c_str());  // E2BIG: truncated
        break;
      case Entry::Kind::kDict: {
        rte_tel_data* sub = rte_tel_data_alloc();
        if (sub == nullptr) return -ENOMEM;
        added->push_back(sub);
        rc = e.dict->FillInto(sub, added);
        if (rc >= 0) rc = rte_tel_data_add_dict_container(d, e.key.c_str(), sub, 0);
        break;
      }
    }
    if (rc < 0) return rc;
  }
  return 0;
}

}  // namespace metaroce::telemetry
