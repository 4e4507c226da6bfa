/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// What every figure of bench_transport (bench_main.cc) uses: small utilities,
// the JSON writer and the options.

#ifndef METAROCE_TEST_TRANSPORT_BENCH_COMMON_H
#define METAROCE_TEST_TRANSPORT_BENCH_COMMON_H

#include <time.h>
#include <unistd.h>
#include <array>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "mr_transport.h"

namespace metaroce::bench {

namespace tr = transport;
using Clock = std::chrono::steady_clock;

// ---- Small utilities ----

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "bench_transport: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) Die(std::string(what) + ": " + std::string(v.status().message()));
  return *std::move(v);
}

inline void MustOk(const absl::Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + std::string(s.message()));
}

inline double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// CPU time of this thread: the denominator of every per-core rate, so time
// the scheduler gives to other processes on a shared machine does not count.
inline double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline uint64_t Addr(const std::vector<uint8_t>& v) { return reinterpret_cast<uint64_t>(v.data()); }

struct Spread {
  double mean = 0, median = 0, min = 0, max = 0;
};

inline Spread SpreadOf(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  const size_t n = v.size();
  s.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  return s;
}

// Minimal JSON writer: keys in insertion order, numbers as %.6g.
class Json {
 public:
  void Open(const char* key, char bracket) {
    Key(key);
    out_ += bracket;
    comma_ = false;
  }
  void Close(char bracket) {
    out_ += bracket;
    comma_ = true;
  }
  void Num(const char* key, double v) {
    Key(key);
    if (std::isfinite(v)) {
      char b[32];
      std::snprintf(b, sizeof(b), "%.6g", v);
      out_ += b;
    } else {
      out_ += "null";
    }
    comma_ = true;
  }
  void Int(const char* key, uint64_t v) {
    Key(key);
    out_ += std::to_string(v);
    comma_ = true;
  }
  void Bool(const char* key, bool v) {
    Key(key);
    out_ += v ? "true" : "false";
    comma_ = true;
  }
  void Str(const char* key, const std::string& v) {
    Key(key);
    out_ += '"';
    for (char ch : v) {
      if (ch == '"' || ch == '\\') out_ += '\\';
      if (static_cast<unsigned char>(ch) >= 0x20) out_ += ch;
    }
    out_ += '"';
    comma_ = true;
  }
  void SpreadObj(const char* key, const Spread& s) {
    Open(key, '{');
    Num("mean", s.mean);
    Num("median", s.median);
    Num("min", s.min);
    Num("max", s.max);
    Close('}');
  }
  const std::string& str() const { return out_; }

 private:
  void Key(const char* key) {
    if (comma_) out_ += ',';
    if (key != nullptr) {
      out_ += '"';
      out_ += key;
      out_ += "\":";
    }
  }
  std::string out_;
  bool comma_ = false;
};

// ---- Options ----

enum Figure : unsigned { kGoodput = 1, kCost = 2, kState = 4, kAll = 7 };

struct Options {
  bool quick = false;
  bool json = false;
  double seconds = 0;  ///< wall time per engine-cost measurement; 0: the mode's default
  int seeds = 0;       ///< 0: the mode's default
  unsigned figures = kAll;
  long rounds = 0;  ///< engine cost: fixed rounds per row instead of wall time (callgrind)
};

// Engine cost rows measure this many rounds when non-zero (--rounds): the
// same work whatever the load, so callgrind's instruction counts compare.
inline long g_cost_rounds = 0;

// A progress line that rewrites itself only makes sense on a terminal.
inline bool Progress(const Options& o) { return !o.json && isatty(STDERR_FILENO) != 0; }

constexpr uint16_t kNumPaths = 8;  // paths per connection in every figure
// The engine-cost figure's path-scaling rows: one connection of this many
// paths (kNumPaths is the idle-scaling series' first row).
constexpr std::array<uint16_t, 2> kPathScaling = {64, 512};
constexpr uint32_t kMsgBytes = 1u << 20;  // the large WRITE of figures 1 to 3

// One file per figure: each runs its figure and prints it as text, or adds it
// to @p j with --json.
void GoodputFigureMain(const Options& o, Json& j);  // bench_goodput.cc
void CostFigureMain(const Options& o, Json& j);     // bench_cost.cc
void StateFigureMain(const Options& o, Json& j);    // bench_state.cc

}  // namespace metaroce::bench

#endif  // METAROCE_TEST_TRANSPORT_BENCH_COMMON_H
