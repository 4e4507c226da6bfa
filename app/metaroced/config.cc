/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// metaroced's configuration (config.h). One table of keys drives the file, the
// --set overrides, FormatConfig() and every error message.

#include "config.h"

#include <rte_cfgfile.h>
#include <sched.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "mr_runtime.h"

namespace metaroce::daemon {
namespace {

// ---- The table ----

/** What a number counts, how it is stored and which multiplier suffixes it takes. */
struct Unit {
  const char* name;      ///< after the range in messages ("" for plain counts)
  uint64_t scale;        ///< stored value = given value * scale (us -> ns)
  uint64_t base;         ///< suffix i multiplies by base^(i+1); 0: no suffixes
  const char* suffixes;  ///< accepted after the digits, either case
};

constexpr Unit kCount{"", 1, 0, ""};
constexpr Unit kPackets{"packets", 1, 0, ""};
constexpr Unit kBytes{"bytes", 1, 0, ""};
constexpr Unit kUs{"us", 1'000, 0, ""};
constexpr Unit kMs{"ms", 1'000'000, 0, ""};
constexpr Unit kMiB{"MiB", uint64_t{1} << 20, 0, ""};
constexpr Unit kRate{"bytes/s", 1, 1000, "KMG"};
constexpr Unit kMemory{"bytes", 1, 1024, "KMGT"};

struct Key;
/** Stores @p v in @p c; false if @p v is not allowed (*why: a reason beyond "must be ..."). */
using Setter = bool (*)(const Key& k, absl::string_view v, DaemonConfig* c, std::string* why);
/** The value as the file gives it. */
using Getter = std::string (*)(const Key& k, const DaemonConfig& c);

struct Key {
  const char* section;
  const char* name;
  const char* help;     ///< meaning, in messages and FormatConfig()
  std::string allowed;  ///< what follows "must be"
  Setter set;
  Getter get;
  uint64_t lo = 0, hi = 0;                       ///< numbers, in unit
  Unit unit = kCount;                            ///< numbers
  bool (*valid)(absl::string_view v) = nullptr;  ///< strings
};

// With the largest suffix that divides x exactly: "16G", "1500K", "0".
std::string FormatNumber(const Unit& u, uint64_t x) {
  size_t n = 0;
  while (u.suffixes[n] != '\0' && x != 0 && x % u.base == 0) {
    x /= u.base;
    ++n;
  }
  return n == 0 ? absl::StrCat(x) : absl::StrCat(x, std::string(1, u.suffixes[n - 1]));
}

bool Refuse(std::string* why, std::string reason) {
  *why = std::move(reason);
  return false;
}

// Decimal digits and an optional suffix of u; the result (after the suffix) within lo..hi.
bool ParseNumber(absl::string_view v, const Unit& u, uint64_t lo, uint64_t hi, uint64_t* out,
                 std::string* why) {
  uint64_t mul = 1;
  const char* s = v.empty() ? nullptr : std::strchr(u.suffixes, absl::ascii_toupper(v.back()));
  if (s != nullptr && *s != '\0') {
    for (const char* p = u.suffixes; p <= s; ++p) mul *= u.base;
    v.remove_suffix(1);
  }
  if (v.empty()) return Refuse(why, "no digits");
  if (v[0] == '-') return Refuse(why, "negative");
  uint64_t x = 0;
  for (char ch : v) {
    if (!absl::ascii_isdigit(ch)) return Refuse(why, "not a decimal number");
    const uint64_t d = static_cast<uint64_t>(ch - '0');
    if (x > (std::numeric_limits<uint64_t>::max() - d) / 10) return Refuse(why, "too large");
    x = x * 10 + d;
  }
  if (x > std::numeric_limits<uint64_t>::max() / mul) return Refuse(why, "too large");
  x *= mul;
  if (x < lo || x > hi) return false;  // the range says it all
  *out = x;
  return true;
}

/** FIELD(engine.dscp): the accessor of a field, for the templates below. */
#define FIELD(f) \
  [](auto& c) -> auto& { return c.f; }

template <typename Get>
using FieldOf = std::remove_cvref_t<decltype(Get{}(std::declval<DaemonConfig&>()))>;

template <typename Get>
Key Num(const char* s, const char* n, Get, uint64_t lo, uint64_t hi, Unit u, const char* help) {
  using T = FieldOf<Get>;
  if (hi > std::numeric_limits<T>::max() / u.scale) std::abort();  // the table is wrong
  Key k{s, n, help,
        absl::StrCat(FormatNumber(u, lo), "..", FormatNumber(u, hi), *u.name ? " " : "", u.name)};
  k.set = [](const Key& k, absl::string_view v, DaemonConfig* c, std::string* why) {
    uint64_t x = 0;
    if (!ParseNumber(v, k.unit, k.lo, k.hi, &x, why)) return false;
    Get{}(*c) = static_cast<T>(x * k.unit.scale);
    return true;
  };
  k.get = [](const Key& k, const DaemonConfig& c) {
    return FormatNumber(k.unit, Get{}(c) / k.unit.scale);
  };
  k.lo = lo;
  k.hi = hi;
  k.unit = u;
  return k;
}

template <typename Get>
Key Bool(const char* s, const char* n, Get, const char* help) {
  Key k{s, n, help, "yes, no, true, false, 1 or 0"};
  k.set = [](const Key&, absl::string_view v, DaemonConfig* c, std::string*) {
    const std::string t = absl::AsciiStrToLower(v);
    const bool yes = t == "yes" || t == "true" || t == "1";
    if (!yes && t != "no" && t != "false" && t != "0") return false;
    Get{}(*c) = yes;
    return true;
  };
  k.get = [](const Key&, const DaemonConfig& c) { return std::string(Get{}(c) ? "yes" : "no"); };
  return k;
}

bool IsPrintable(absl::string_view v) {
  return std::all_of(v.begin(), v.end(), [](char ch) { return absl::ascii_isprint(ch); });
}

template <typename Get>
Key Str(const char* s, const char* n, Get, bool (*valid)(absl::string_view), const char* allowed,
        const char* help) {
  Key k{s, n, help, allowed};
  k.valid = valid;
  k.set = [](const Key& k, absl::string_view v, DaemonConfig* c, std::string*) {
    if (!IsPrintable(v) || !k.valid(v)) return false;
    Get{}(*c) = std::string(v);
    return true;
  };
  k.get = [](const Key&, const DaemonConfig& c) { return std::string(Get{}(c)); };
  return k;
}

bool IsSocketPath(absl::string_view v) {
  return !v.empty() && v.size() < sizeof(sockaddr_un::sun_path);
}

bool IsName(absl::string_view v) {
  return !v.empty() && v.size() < 64 && std::all_of(v.begin(), v.end(), [](char ch) {
    return absl::ascii_isalnum(ch) || ch == '.' || ch == '_' || ch == '-';
  });
}

bool IsLogLevel(absl::string_view v) {
  return v == "error" || v == "warning" || v == "notice" || v == "info" || v == "debug";
}

bool IsNonEmpty(absl::string_view v) { return !v.empty(); }
bool IsAny(absl::string_view) { return true; }

bool SetSocketMode(const Key&, absl::string_view v, DaemonConfig* c, std::string*) {
  uint32_t mode = 0;
  if (v.empty() || v.size() > 4) return false;
  for (char ch : v) {
    if (ch < '0' || ch > '7') return false;
    mode = mode * 8 + static_cast<uint32_t>(ch - '0');
  }
  if (mode > 0777) return false;
  c->socket_mode = mode;
  return true;
}

std::string GetSocketMode(const Key&, const DaemonConfig& c) {
  return absl::StrFormat("%04o", c.socket_mode);
}

bool SetCpus(const Key&, absl::string_view v, DaemonConfig* c, std::string* why) {
  if (absl::StripAsciiWhitespace(v).empty()) {  // threads not pinned
    c->cpus.clear();
    return true;
  }
  std::vector<int> cpus;
  for (absl::string_view item : absl::StrSplit(v, ',')) {
    item = absl::StripAsciiWhitespace(item);
    uint64_t cpu = 0;
    if (!ParseNumber(item, kCount, 0, CPU_SETSIZE - 1, &cpu, why)) {
      return Refuse(why, absl::StrCat("CPU \"", absl::CHexEscape(item),
                                      "\": ", why->empty() ? "out of range" : *why));
    }
    if (std::find(cpus.begin(), cpus.end(), static_cast<int>(cpu)) != cpus.end()) {
      return Refuse(why, absl::StrCat("CPU ", cpu, " is listed twice"));
    }
    cpus.push_back(static_cast<int>(cpu));
  }
  c->cpus = std::move(cpus);
  return true;
}

std::string GetCpus(const Key&, const DaemonConfig& c) { return absl::StrJoin(c.cpus, ","); }

// Port specs hold ',' and '=', and ';' starts a comment in the file: '|' separates them.
bool SetPlanes(const Key&, absl::string_view v, DaemonConfig* c, std::string* why) {
  std::vector<std::string> planes;
  if (!absl::StripAsciiWhitespace(v).empty()) {
    for (absl::string_view item : absl::StrSplit(v, '|')) {
      item = absl::StripAsciiWhitespace(item);
      if (item.empty()) return Refuse(why, "an empty plane between two '|'");
      planes.emplace_back(item);
    }
  }
  if (planes.size() > wire::kMaxPlanes - 1) {
    return Refuse(
        why, absl::StrCat(planes.size(), " planes besides port=; at most ", wire::kMaxPlanes - 1));
  }
  c->planes = std::move(planes);
  return true;
}

std::string GetPlanes(const Key&, const DaemonConfig& c) { return absl::StrJoin(c.planes, "|"); }

const std::vector<Key>& Keys() {
  static const std::vector<Key> keys = {
      // [daemon]
      Str("daemon", "socket", FIELD(socket_path), IsSocketPath, "a path of 1..107 characters",
          "the Unix socket applications attach to"),
      {"daemon", "socket_mode", "who may attach: the socket's permissions",
       "an octal mode 0000..0777", SetSocketMode, GetSocketMode},
      Str("daemon", "name", FIELD(name), IsName, "1..63 letters, digits, '.', '_' or '-'",
          "this daemon in telemetry and logs"),
      Num("daemon", "max_apps", FIELD(max_apps), 1, 4096, kCount, "applications attached at once"),
      Bool("daemon", "telemetry", FIELD(telemetry), "serve DPDK telemetry under /metaroce/"),
      Str("daemon", "log_level", FIELD(log_level), IsLogLevel,
          "error, warning, notice, info or debug", "least severe log messages written"),
      // [dataplane]
      Str("dataplane", "port", FIELD(port), IsNonEmpty,
          "a port driver spec such as udp:ip=127.0.0.1 (as mr-perf --port)",
          "the port every shard sends and receives on"),
      Str("dataplane", "faults", FIELD(faults), IsAny,
          "a fault stage spec (as mr-perf --faults) or empty",
          "faults injected on the port, tests"),
      {"dataplane", "planes",
       "the ports of planes 1.. (doc/transport.md, \"Planes\"): each like port=, with its own "
       "address and the same UDP port; empty: one plane",
       absl::StrCat("port specs separated by '|', at most ", wire::kMaxPlanes - 1), SetPlanes,
       GetPlanes},
      Num("dataplane", "lcores", FIELD(lcores), 1, runtime::kMaxShards, kCount,
          "engine shards, one polling thread each"),
      {"dataplane", "cpus", "pin shard i to the i-th CPU; empty: threads are not pinned",
       absl::StrCat("a comma-separated list of distinct CPU numbers 0..", CPU_SETSIZE - 1), SetCpus,
       GetCpus},
      Num("dataplane", "yield_after_idle_polls", FIELD(yield_after_idle_polls), 0,
          std::numeric_limits<uint32_t>::max(), kCount,
          "idle polls after which a shard yields its CPU; 0: busy poll"),
      Num("dataplane", "idle_sleep_us", FIELD(idle_sleep_ns), 0, 10'000'000, kUs,
          "0: busy poll, for dedicated cores; else an idle shard sleeps, until its port has "
          "packets or an application rings (kernel UDP), or this long at a time (DPDK ports, and "
          "while a CQ ring is full)"),
      Num("dataplane", "pace", FIELD(pace_bytes_per_sec), 0, 1'000'000'000'000, kRate,
          "each shard's transmit rate, K/M/G = 10^3/10^6/10^9; 0: unpaced"),
      // [engine]
      Num("engine", "paths", FIELD(engine.num_paths), 1, transport::kMaxPaths, kCount,
          "paths (UDP source ports) per connection"),
      Num("engine", "max_payload", FIELD(engine.max_payload), wire::kMinConnPayloadBytes, 9000,
          kBytes, "largest payload per packet"),
      Num("engine", "path_window", FIELD(engine.path_window_pkts), 1, 255, kPackets,
          "in flight per path, all within the 256-bit SACK"),
      Num("engine", "conn_window", FIELD(engine.conn_window_pkts), 1, 1 << 20, kPackets,
          "in flight per connection, over all paths"),
      Bool("engine", "congestion_control", FIELD(engine.congestion_control),
           "ECN AIMD byte windows per path and per connection (doc/congestion.md); no: the "
           "packet windows alone"),
      Num("engine", "initial_window", FIELD(engine.initial_window_bytes), 0, UINT32_MAX, kBytes,
          "a new connection's congestion window, doubled per round trip until the first "
          "congestion signal (doc/congestion.md); 0: the full window at once"),
      Num("engine", "pacing_gain_pct", FIELD(engine.pacing_gain_pct), 0, 1000, kCount,
          "window pacing: send at this % of the congestion window per RTT, 101..1000 "
          "(doc/congestion.md); 0: only the receiver's rate hint paces"),
      Num("engine", "rx_capacity_mbps", FIELD(engine.rx_capacity_mbps), 0, UINT32_MAX, kCount,
          "inbound capacity in Mbit/s, shared fairly among the senders and sent in every ACK "
          "as each one's rate hint (divided among the shards by their senders); 0: no hints"),
      Num("engine", "cc_delay_target_us", FIELD(engine.cc_delay_target_ns), 0, 60'000'000, kUs,
          "queueing delay above the base RTT at which a path's window shrinks, where nothing "
          "marks CE (doc/congestion.md); below rto_max_us; 0: off"),
      Num("engine", "rto_min_us", FIELD(engine.rto_min_ns), 1, 60'000'000, kUs,
          "lowest retransmission timeout"),
      Num("engine", "rto_max_us", FIELD(engine.rto_max_ns), 1, 60'000'000, kUs,
          "highest retransmission timeout, after backoff"),
      Num("engine", "rto_initial_us", FIELD(engine.rto_initial_ns), 1, 60'000'000, kUs,
          "retransmission timeout before the first RTT sample"),
      Num("engine", "rto_silent_us", FIELD(engine.rto_silent_ns), 0, 60'000'000, kUs,
          "a timeout while the whole connection is silent after the peer was heard waits for "
          "this much silence (a stalled peer); 0: off"),
      Bool("engine", "tail_loss_probe", FIELD(engine.tail_loss_probe),
           "re-send a silent path's newest packet after 2 SRTT"),
      Num("engine", "tlp_min_us", FIELD(engine.tlp_min_ns), 0, 1'000'000, kUs,
          "shortest wait before a tail-loss probe"),
      Num("engine", "ack_every", FIELD(engine.ack_every_pkts), 1, 255, kPackets,
          "a receiver acknowledges at least every this many, per path"),
      Num("engine", "ack_delay_us", FIELD(engine.ack_delay_ns), 0, 10'000, kUs,
          "longest a receiver delays an ACK"),
      Num("engine", "path_fail_timeouts", FIELD(engine.path_fail_timeouts), 1, 1000, kCount,
          "consecutive timeouts that fail a path, which is then re-probed"),
      Num("engine", "path_probe_interval_us", FIELD(engine.path_probe_interval_ns), 1, 60'000'000,
          kUs, "interval between probes of a failed path"),
      Num("engine", "conn_fail_after_ms", FIELD(engine.conn_fail_after_ns), 1, 3'600'000, kMs,
          "a connection fails once every path has failed, or its peer was silent, this long"),
      Num("engine", "keepalive_ms", FIELD(engine.keepalive_ns), 1, 3'600'000, kMs,
          "probe a peer silent this long; below conn_fail_after_ms"),
      Num("engine", "msg_probe_min_us", FIELD(engine.msg_probe_min_ns), 1, 60'000'000, kUs,
          "first wait for a stream ACK before a message probe"),
      Num("engine", "msg_probe_max_us", FIELD(engine.msg_probe_max_ns), 1, 60'000'000, kUs,
          "longest wait between message probes"),
      Num("engine", "stream_window", FIELD(engine.stream_window_msgs), 1, 1 << 20, kCount,
          "unacknowledged messages per stream this receiver tracks"),
      Num("engine", "max_connections", FIELD(engine.max_connections), 1, 1 << 20, kCount,
          "connections the engine keeps, including ones peers open"),
      Num("engine", "max_connections_per_host", FIELD(engine.max_connections_per_host), 1, 1 << 20,
          kCount, "connections to one peer IP address"),
      Num("engine", "conn_idle_ms", FIELD(engine.conn_idle_ns), 1, 86'400'000, kMs,
          "a connection without local QPs this long is closed"),
      Num("engine", "reorder_window_us", FIELD(engine.reorder_window_ns), 0, 1'000'000, kUs,
          "how late a packet overtaken on its path may be before it counts as lost"),
      Num("engine", "rx_msg_state_mib", FIELD(engine.rx_msg_state_bytes), 1, 65536, kMiB,
          "arrival state the peer's incomplete messages may hold, per connection"),
      Num("engine", "dscp", FIELD(engine.dscp), 0, 63, kCount, "DSCP of every packet sent"),
      // [limits]
      Num("limits", "max_pds", FIELD(limits.max_pds), 1, 65536, kCount,
          "protection domains one application may hold"),
      Num("limits", "max_mrs", FIELD(limits.max_mrs), 1, 1 << 20, kCount,
          "memory regions one application may hold"),
      Num("limits", "max_mr_bytes", FIELD(limits.max_mr_bytes), 1, uint64_t{1} << 50, kMemory,
          "bytes one application may register, all regions; K/M/G/T = 2^10/2^20/2^30/2^40"),
      Num("limits", "max_cqs", FIELD(limits.max_cqs), 1, 65536, kCount,
          "CQs one application may hold"),
      Num("limits", "max_qps", FIELD(limits.max_qps), 1, ipc::kMaxQpsPerApp, kCount,
          "QPs one application may hold"),
      Num("limits", "max_comp_channels", FIELD(limits.max_comp_channels), 1, 4096, kCount,
          "completion channels one application may hold"),
      Num("limits", "max_srqs", FIELD(limits.max_srqs), 1, ipc::kMaxSrqsPerApp, kCount,
          "shared receive queues one application may hold"),
      Num("limits", "max_qp_wr", FIELD(limits.max_qp_wr), 1, ipc::kMaxRingDepth, kCount,
          "deepest send or receive queue"),
      Num("limits", "max_cqe", FIELD(limits.max_cqe), 1, ipc::kMaxRingDepth, kCount,
          "deepest completion queue"),
  };
  return keys;
}

#undef FIELD

// ---- Lookup and messages ----

std::vector<absl::string_view> Sections() {
  std::vector<absl::string_view> out;
  for (const Key& k : Keys()) {
    if (out.empty() || out.back() != k.section) out.push_back(k.section);
  }
  return out;
}

std::vector<absl::string_view> KeysOf(absl::string_view section) {
  std::vector<absl::string_view> out;
  for (const Key& k : Keys()) {
    if (k.section == section) out.push_back(k.name);
  }
  return out;
}

const Key* Find(absl::string_view section, absl::string_view name) {
  for (const Key& k : Keys()) {
    if (k.section == section && k.name == name) return &k;
  }
  return nullptr;
}

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The name closest to @p word, if close enough to be a typo; "" otherwise.
absl::string_view Closest(absl::string_view word, const std::vector<absl::string_view>& names) {
  absl::string_view best;
  size_t best_d = 4;  // farther is no typo
  for (absl::string_view n : names) {
    const size_t d = EditDistance(word, n);
    if (d < best_d && d < word.size()) {
      best = n;
      best_d = d;
    }
  }
  return best;
}

std::string Prefix(absl::string_view origin) {
  return origin.empty() ? "" : absl::StrCat(origin, ": ");
}

absl::Status UnknownSection(absl::string_view origin, absl::string_view section) {
  const absl::string_view near = Closest(section, Sections());
  return absl::InvalidArgumentError(
      absl::StrCat(Prefix(origin), "unknown section [", section, "]",
                   near.empty() ? "" : absl::StrCat(" (did you mean [", near, "]?)"),
                   "; the sections are [", absl::StrJoin(Sections(), "], ["), "]"));
}

absl::Status UnknownKey(absl::string_view origin, absl::string_view section,
                        absl::string_view name) {
  std::string near(Closest(name, KeysOf(section)));
  for (const Key& k : Keys()) {
    if (k.name == name) near = absl::StrCat(k.section, ".", k.name);  // in another section
  }
  return absl::InvalidArgumentError(
      absl::StrCat(Prefix(origin), "unknown key ", section, ".", name,
                   near.empty() ? "" : absl::StrCat(" (did you mean ", near, "?)"), "; [", section,
                   "] has ", absl::StrJoin(KeysOf(section), ", ")));
}

absl::Status BadValue(absl::string_view origin, const Key& k, absl::string_view v,
                      absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(Prefix(origin), k.section, ".", k.name, " = \"", absl::CHexEscape(v),
                   "\": ", why, why.empty() ? "" : "; ", "must be ", k.allowed, " (", k.help, ")"));
}

// Sets section.name = v: the one path of the file, the overrides and ValidateConfig().
absl::Status Apply(absl::string_view origin, absl::string_view section, absl::string_view name,
                   absl::string_view v, DaemonConfig* cfg) {
  if (KeysOf(section).empty()) return UnknownSection(origin, section);
  const Key* k = Find(section, name);
  if (k == nullptr) return UnknownKey(origin, section, name);
  std::string why;
  if (!k->set(*k, v, cfg, &why)) return BadValue(origin, *k, v, why);
  return absl::OkStatus();
}

// "section.key = value" with the current value, for messages about several keys.
std::string Show(const DaemonConfig& cfg, absl::string_view section, absl::string_view name) {
  const Key* k = Find(section, name);
  return absl::StrCat(section, ".", name, " = ", k->get(*k, cfg));
}

// ---- The file ----

// One line as rte_cfgfile will read it. rte_cfgfile skips a line that is neither
// "[section]" nor "key = value", ignores text after ']', truncates long names and
// values and fails without a word on a key before any section: catch those here.
std::string CheckLine(absl::string_view line, bool* in_section) {
  constexpr size_t kMaxLine = CFG_NAME_LEN + CFG_VALUE_LEN + 2;  // rte_cfgfile's line buffer
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (line.size() > kMaxLine) return absl::StrCat("longer than ", kMaxLine, " characters");
  const size_t semi = line.find(';');  // rte_cfgfile: only the first ';' may be "\;"
  if (semi != line.npos && (semi == 0 || line[semi - 1] != '\\')) line = line.substr(0, semi);
  line = absl::StripAsciiWhitespace(line);
  if (line.empty()) return "";
  if (line[0] == '[') {
    const size_t end = line.find(']');
    if (end == line.npos) return "no ']' after the section name";
    if (end + 1 != line.size()) return "text after ']'";
    if (end - 1 >= CFG_NAME_LEN) return "section name too long";
    *in_section = true;
    return "";
  }
  const size_t eq = line.find('=');
  if (eq == line.npos) {
    return absl::StrCat("\"", absl::CHexEscape(line), "\" is neither [section] nor key = value");
  }
  if (!*in_section) return "key = value before the first [section]";
  const absl::string_view key = absl::StripAsciiWhitespace(line.substr(0, eq));
  if (key.empty()) return "no key before '='";
  if (key.size() >= CFG_NAME_LEN) return "key too long";
  if (absl::StripAsciiWhitespace(line.substr(eq + 1)).size() >= CFG_VALUE_LEN) {
    return absl::StrCat("value longer than ", CFG_VALUE_LEN - 1, " characters");
  }
  return "";
}

absl::Status CheckLines(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return absl::ErrnoToStatus(errno, path);
  char* buf = nullptr;
  size_t cap = 0;
  bool in_section = false;
  std::string bad;
  int line = 0;
  for (ssize_t len; bad.empty() && (len = getline(&buf, &cap, f)) >= 0;) {
    ++line;
    bad = CheckLine(absl::string_view(buf, static_cast<size_t>(len)), &in_section);
  }
  std::free(buf);
  std::fclose(f);
  if (bad.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", bad));
}

absl::Status ApplyFile(const std::string& path, rte_cfgfile* file, DaemonConfig* cfg) {
  std::set<std::string> seen;  // rte_cfgfile keeps duplicates; a section may come back
  const int sections = rte_cfgfile_num_sections(file, nullptr, 0);
  for (int i = 0; i < sections; ++i) {
    char section[CFG_NAME_LEN];
    const int n = std::max(rte_cfgfile_section_num_entries_by_index(file, section, i), 0);
    std::vector<rte_cfgfile_entry> entries(static_cast<size_t>(n));
    rte_cfgfile_section_entries_by_index(file, i, section, entries.data(), n);
    if (KeysOf(section).empty()) return UnknownSection(path, section);  // even if empty
    for (const rte_cfgfile_entry& e : entries) {
      if (!seen.insert(absl::StrCat(section, ".", e.name)).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": ", section, ".", e.name, " is given twice"));
      }
      if (auto st = Apply(path, section, e.name, e.value, cfg); !st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadConfigFile(const std::string& path, DaemonConfig* cfg) {
  if (auto st = CheckLines(path); !st.ok()) return st;
  rte_cfgfile* file = rte_cfgfile_load(path.c_str(), CFG_FLAG_EMPTY_VALUES);
  if (file == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": rte_cfgfile cannot read it"));
  }
  DaemonConfig c = *cfg;  // all or nothing
  const absl::Status st = ApplyFile(path, file, &c);
  rte_cfgfile_close(file);
  if (st.ok()) *cfg = std::move(c);
  return st;
}

absl::Status ApplyOverride(const std::string& assignment, DaemonConfig* cfg) {
  const size_t eq = assignment.find('=');
  const absl::string_view lhs =
      absl::StripAsciiWhitespace(absl::string_view(assignment).substr(0, eq));
  const size_t dot = lhs.find('.');
  if (eq == std::string::npos || dot == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set \"", absl::CHexEscape(assignment), "\": must be SECTION.KEY=VALUE"));
  }
  return Apply("--set", lhs.substr(0, dot), lhs.substr(dot + 1),
               absl::StripAsciiWhitespace(absl::string_view(assignment).substr(eq + 1)), cfg);
}

absl::Status ValidateConfig(const DaemonConfig& cfg) {
  for (const Key& k : Keys()) {  // each value as a file would have to give it
    DaemonConfig scratch;
    if (auto st = Apply("", k.section, k.name, k.get(k, cfg), &scratch); !st.ok()) return st;
  }
  auto bad = [](auto... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (!cfg.cpus.empty() && cfg.cpus.size() != cfg.lcores) {
    return bad(Show(cfg, "dataplane", "cpus"), " lists ", cfg.cpus.size(),
               cfg.cpus.size() == 1 ? " CPU" : " CPUs", " for ", Show(cfg, "dataplane", "lcores"),
               ": give one CPU per lcore, or none");
  }
  const transport::EngineConfig& e = cfg.engine;
  if (e.rto_min_ns > e.rto_initial_ns || e.rto_min_ns > e.rto_max_ns) {
    return bad(Show(cfg, "engine", "rto_min_us"), " must not exceed ",
               Show(cfg, "engine", "rto_initial_us"), " or ", Show(cfg, "engine", "rto_max_us"));
  }
  if (e.keepalive_ns >= e.conn_fail_after_ns) {
    return bad(Show(cfg, "engine", "keepalive_ms"), " must be below ",
               Show(cfg, "engine", "conn_fail_after_ms"),
               " (several keep-alives before a connection fails)");
  }
  if (e.msg_probe_min_ns > e.msg_probe_max_ns) {
    return bad(Show(cfg, "engine", "msg_probe_min_us"), " must not exceed ",
               Show(cfg, "engine", "msg_probe_max_us"));
  }
  return absl::OkStatus();
}

std::string FormatConfig(const DaemonConfig& cfg) {
  std::string out;
  absl::string_view section;
  for (const Key& k : Keys()) {
    if (k.section != section) {
      section = k.section;
      absl::StrAppend(&out, out.empty() ? "" : "\n", "[", section, "]\n");
    }
    const std::string v = absl::StrReplaceAll(k.get(k, cfg), {{";", "\\;"}});
    absl::StrAppend(&out, "; ", k.help, " (", k.allowed, ")\n", k.name, " =", v.empty() ? "" : " ",
                    v, "\n");
  }
  return out;
}

}  // namespace metaroce::daemon
