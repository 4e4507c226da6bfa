/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Parsing of fault specs ("drop=0.01,burst=0.001:8,...").

#include <cmath>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "mr_port_fault.h"

namespace metaroce::port {
namespace {

constexpr const char* kKeys = "drop, burst, reorder, dup, ecn, corrupt, blackhole_port, seed";

absl::Status Bad(absl::string_view key, absl::string_view value, absl::string_view allowed) {
  return absl::InvalidArgumentError(
      absl::StrCat("faults: ", key, "='", value, "' is not allowed: ", allowed));
}

bool Digits(absl::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == absl::string_view::npos;
}

bool Probability(absl::string_view s, double* out) {
  double v = 0;
  if (s.empty() || !absl::SimpleAtod(s, &v) || !std::isfinite(v) || v < 0 || v > 1) return false;
  *out = v;
  return true;
}

bool Count(absl::string_view s, uint64_t lo, uint64_t hi, uint64_t* out) {
  uint64_t v = 0;
  if (!Digits(s) || !absl::SimpleAtoi(s, &v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// "p:n" with p a probability and n in [lo, hi].
bool ProbabilityAndCount(absl::string_view s, uint64_t lo, uint64_t hi, double* p, uint32_t* n) {
  const size_t colon = s.find(':');
  if (colon == absl::string_view::npos) return false;
  uint64_t v = 0;
  if (!Probability(s.substr(0, colon), p) || !Count(s.substr(colon + 1), lo, hi, &v)) return false;
  *n = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

absl::StatusOr<FaultSpec> ParseFaultSpec(const std::string& spec) {
  FaultSpec f;
  if (spec.empty()) return f;
  std::set<std::string> seen;
  for (absl::string_view item : absl::StrSplit(spec, ',')) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("faults: '", item, "' is not key=value; keys: ", kKeys));
    }
    const absl::string_view key = item.substr(0, eq);
    const absl::string_view value = item.substr(eq + 1);
    if (!seen.insert(std::string(key)).second) {
      return absl::InvalidArgumentError(absl::StrCat("faults: ", key, " is given twice"));
    }
    uint64_t v = 0;
    if (key == "drop" || key == "dup" || key == "ecn" || key == "corrupt") {
      double* dst = key == "drop"  ? &f.drop
                    : key == "dup" ? &f.dup
                    : key == "ecn" ? &f.ecn
                                   : &f.corrupt;
      if (!Probability(value, dst)) return Bad(key, value, "a probability 0..1");
    } else if (key == "burst") {
      if (!ProbabilityAndCount(value, 1, 1000000, &f.burst, &f.burst_len)) {
        return Bad(key, value, "p:n, a probability 0..1 and a burst length 1..1000000");
      }
    } else if (key == "reorder") {
      if (!ProbabilityAndCount(value, 1, 4096, &f.reorder, &f.reorder_depth)) {
        return Bad(key, value, "p:k, a probability 0..1 and a depth 1..4096 packets");
      }
    } else if (key == "blackhole_port") {
      if (!Count(value, 1, 65535, &v)) return Bad(key, value, "a UDP port 1..65535");
      f.blackhole_port = static_cast<uint16_t>(v);
    } else if (key == "seed") {
      if (!Count(value, 0, UINT64_MAX, &v)) return Bad(key, value, "an unsigned 64-bit integer");
      f.seed = v;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("faults: unknown key '", key, "'; keys: ", kKeys));
    }
  }
  return f;
}

}  // namespace metaroce::port
