/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-sim's output: per experiment a CSV of every run, a JSON of the runs,
// the summary and the verdicts, a gnuplot script with its data and the PNG
// it draws; and one markdown summary of every experiment run.

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "sim.h"

extern char** environ;

namespace metaroce::mrsim {
namespace {

std::string Path(const Params& p, const std::string& file) { return p.out_dir + "/" + file; }

/** A number for CSV and JSON: integers as such, NaN as empty (CSV) or null (JSON). */
std::string Num(double v, const char* nan) {
  if (std::isnan(v)) return nan;
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.6g", v);
}

std::string JsonString(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += absl::StrFormat("\\u%04x", c);
    } else {
      o += c;
    }
  }
  return o + "\"";
}

absl::Status WriteFile(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream f(path, append ? std::ios::app : std::ios::trunc);
  f << text;
  f.close();
  if (!f)
    return absl::UnavailableError(absl::StrFormat("cannot write %s: %s", path, strerror(errno)));
  return absl::OkStatus();
}

std::vector<Proto> ProtosOf(const Table& t) {
  std::vector<Proto> out;
  for (const Table::Row& r : t.rows) {
    if (std::find(out.begin(), out.end(), r.proto) == out.end()) out.push_back(r.proto);
  }
  return out;
}

std::string Csv(const Table& t) {
  std::string o = absl::StrCat("protocol,seed,", t.x_name);
  for (const std::string& m : t.metrics) absl::StrAppend(&o, ",", m);
  o += "\n";
  for (const Table::Row& r : t.rows) {
    o += absl::StrFormat("%s,%u,%s", ProtoName(r.proto), r.seed, Num(r.x, ""));
    for (double v : r.v) absl::StrAppend(&o, ",", Num(v, ""));
    o += "\n";
  }
  return o;
}

std::string Json(const Params& p, const Experiment& e, const Result& r, const Speed& s) {
  const Table& t = r.table;
  std::string o = "{\n";
  o += absl::StrFormat("  \"experiment\": %s,\n  \"what\": %s,\n", JsonString(e.name),
                       JsonString(e.what));
  o += absl::StrFormat(
      "  \"fabric\": {\"leaves\": %u, \"spines\": %u, \"hosts_per_leaf\": %u, \"gbps\": %u, "
      "\"link_delay_ns\": %u},\n",
      p.leaves, p.spines, p.hosts_per_leaf, p.gbps, p.link_delay_ps / sim::kPsPerNs);
  o += absl::StrFormat(
      "  \"speed\": {\"runs\": %u, \"wall_s\": %.3f, \"events\": %u, \"events_per_s\": %.0f},\n",
      s.runs, s.wall_s, s.events, s.wall_s > 0 ? static_cast<double>(s.events) / s.wall_s : 0);
  o += "  \"rows\": [\n";
  for (size_t i = 0; i < t.rows.size(); i++) {
    const Table::Row& row = t.rows[i];
    o += absl::StrFormat("    {\"protocol\": \"%s\", \"seed\": %u, %s: %s", ProtoName(row.proto),
                         row.seed, JsonString(t.x_name), Num(row.x, "null"));
    for (size_t m = 0; m < t.metrics.size(); m++) {
      o += absl::StrFormat(", %s: %s", JsonString(t.metrics[m]), Num(row.v[m], "null"));
    }
    o += i + 1 < t.rows.size() ? "},\n" : "}\n";
  }
  o += "  ],\n  \"summary\": [\n";
  std::vector<std::string> sum;
  for (Proto proto : ProtosOf(t)) {
    for (double x : XsOf(t)) {
      for (size_t m = 0; m < t.metrics.size(); m++) {
        const Spread sp = SpreadOf(t, proto, x, m);
        if (sp.n == 0) continue;
        sum.push_back(absl::StrFormat(
            "    {\"protocol\": \"%s\", %s: %s, \"metric\": %s, \"median\": %s, \"min\": %s, "
            "\"max\": %s, \"runs\": %u}",
            ProtoName(proto), JsonString(t.x_name), Num(x, "null"), JsonString(t.metrics[m]),
            Num(sp.median, "null"), Num(sp.min, "null"), Num(sp.max, "null"), sp.n));
      }
    }
  }
  o += absl::StrJoin(sum, ",\n") + "\n  ],\n  \"verdicts\": [\n";
  for (size_t i = 0; i < r.verdicts.size(); i++) {
    const Verdict& v = r.verdicts[i];
    o += absl::StrFormat("    {\"claim\": %s, \"target\": %s, \"measured\": %s, \"met\": %s}%s\n",
                         JsonString(v.claim), JsonString(v.target), JsonString(v.measured),
                         v.met ? "true" : "false", i + 1 < r.verdicts.size() ? "," : "");
  }
  return o + "  ]\n}\n";
}

std::string Markdown(const Experiment& e, const Result& r, const Speed& s) {
  const Table& t = r.table;
  std::string o = absl::StrFormat("## %s\n\n%s\n\n", e.name, e.what);
  o += "| protocol | " + t.x_name + " | " + absl::StrJoin(t.metrics, " | ") + " |\n";
  o += "|---|---:|";
  for (size_t m = 0; m < t.metrics.size(); m++) o += "---:|";
  o += "\n";
  for (double x : XsOf(t)) {
    for (Proto proto : ProtosOf(t)) {
      std::string line = absl::StrFormat("| %s | %s |", ProtoName(proto), Num(x, "-"));
      bool any = false;
      for (size_t m = 0; m < t.metrics.size(); m++) {
        const Spread sp = SpreadOf(t, proto, x, m);
        any |= sp.n > 0;
        if (sp.n == 0) {
          line += " - |";
        } else if (sp.n > 1 && sp.min != sp.max) {
          line += absl::StrFormat(" %.4g [%.4g, %.4g] |", sp.median, sp.min, sp.max);
        } else {
          line += absl::StrFormat(" %.4g |", sp.median);
        }
      }
      if (any) o += line + "\n";
    }
  }
  o += "\nMedians over the seeds, [min, max] where they differ.\n\n";
  if (!r.verdicts.empty()) {
    o += "| claim | target | measured | met |\n|---|---|---|---|\n";
    for (const Verdict& v : r.verdicts) {
      o += absl::StrFormat("| %s | %s | %s | %s |\n", v.claim, v.target, v.measured,
                           v.met ? "met" : "**not met**");
    }
    o += "\n";
  }
  if (!r.notes.empty()) o += r.notes + "\n\n";
  o += absl::StrFormat(
      "Simulator: %u runs, %.1f s wall, %u events, %.2f M events/s.\n\n![%s](%s.png)\n\n", s.runs,
      s.wall_s, s.events, s.wall_s > 0 ? static_cast<double>(s.events) / s.wall_s / 1e6 : 0, e.name,
      e.name);
  return o;
}

/** The plot's data: one gnuplot block per protocol, x median min max. */
std::string PlotData(const Table& t) {
  std::string o;
  for (Proto proto : ProtosOf(t)) {
    o += absl::StrFormat("# %s\n", ProtoName(proto));
    for (double x : XsOf(t)) {
      const Spread sp = SpreadOf(t, proto, x, t.plot_metric);
      if (sp.n == 0 || std::isnan(sp.median)) continue;
      o += absl::StrFormat("%.9g %.9g %.9g %.9g\n", x, sp.median, sp.min, sp.max);
    }
    o += "\n\n";
  }
  return o;
}

// gnuplot's single-quoted strings take a quote as two.
std::string GnuplotQuoted(const std::string& s) { return absl::StrReplaceAll(s, {{"'", "''"}}); }

std::string PlotScript(const Experiment& e, const Table& t) {
  std::string o = absl::StrFormat(
      "set terminal pngcairo size 900,560 noenhanced\nset output '%s.png'\n"
      "set title '%s: %s'\nset xlabel '%s'\nset ylabel '%s'\nset key outside right top\n"
      "set grid\n",
      e.name, e.name, GnuplotQuoted(e.what), t.x_name, t.metrics[t.plot_metric]);
  if (t.log_x) o += "set logscale x\n";
  if (const std::vector<double> xs = XsOf(t); xs.size() == 1) {
    o += absl::StrFormat("set xrange [%.9g:%.9g]\n", xs[0] * 0.5, xs[0] * 1.5 + 1);
  }
  std::vector<std::string> plots;
  const std::vector<Proto> protos = ProtosOf(t);
  for (size_t i = 0; i < protos.size(); i++) {
    plots.push_back(
        absl::StrFormat("'%s.dat' index %u using 1:2:3:4 with yerrorlines linewidth 2 title '%s'",
                        e.name, i, ProtoName(protos[i])));
  }
  return o + "plot " + absl::StrJoin(plots, ", \\\n     ") + "\n";
}

absl::Status RunGnuplot(const Params& p, const std::string& script) {
  pid_t pid;
  std::string dir = p.out_dir, file = script;
  const char* argv[] = {"gnuplot", file.c_str(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());
  const int rc = posix_spawnp(&pid, "gnuplot", &fa, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot run gnuplot (%s): install it (devtools/install-deps.sh installs gnuplot-nox) or "
        "pass --no-plots",
        strerror(rc)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrFormat("gnuplot failed on %s/%s (status %d)", dir, file, status));
  }
  return absl::OkStatus();
}

}  // namespace

size_t Table::Metric(const std::string& name) const {
  for (size_t i = 0; i < metrics.size(); i++) {
    if (metrics[i] == name) return i;
  }
  std::fprintf(stderr, "mr-sim: no metric %s\n", name.c_str());
  std::abort();
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[rank == 0 ? 0 : rank - 1];
}

Spread SpreadOf(const Table& t, Proto p, double x, size_t metric) {
  std::vector<double> v;
  for (const Table::Row& r : t.rows) {
    if (r.proto == p && r.x == x && !std::isnan(r.v[metric])) v.push_back(r.v[metric]);
  }
  Spread s;
  if (v.empty()) return s;
  s.n = static_cast<uint32_t>(v.size());
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.median = Median(std::move(v));
  return s;
}

std::vector<double> XsOf(const Table& t) {
  std::vector<double> out;
  for (const Table::Row& r : t.rows) {
    if (std::find(out.begin(), out.end(), r.x) == out.end()) out.push_back(r.x);
  }
  return out;
}

absl::Status StartSummary(const Params& p) {
  return WriteFile(
      Path(p, "summary.md"),
      absl::StrFormat("# mr-sim results\n\nFabric: %u leaves x %u hosts, %u spines, %u Gbit/s "
                      "links, %u ns per link; %u seed(s) from %u%s.\n\n",
                      p.leaves, p.hosts_per_leaf, p.spines, p.gbps, p.link_delay_ps / sim::kPsPerNs,
                      p.quick ? 1 : p.seeds, p.first_seed, p.quick ? " (--quick)" : ""));
}

absl::Status WriteReport(const Params& p, const Experiment& e, const Result& r, const Speed& s) {
  const std::string name = e.name;
  if (auto st = WriteFile(Path(p, name + ".csv"), Csv(r.table)); !st.ok()) return st;
  if (auto st = WriteFile(Path(p, name + ".json"), Json(p, e, r, s)); !st.ok()) return st;
  if (auto st = WriteFile(Path(p, "summary.md"), Markdown(e, r, s), true); !st.ok()) return st;
  if (auto st = WriteFile(Path(p, name + ".dat"), PlotData(r.table)); !st.ok()) return st;
  if (auto st = WriteFile(Path(p, name + ".gp"), PlotScript(e, r.table)); !st.ok()) return st;
  return p.plots ? RunGnuplot(p, name + ".gp") : absl::OkStatus();
}

}  // namespace metaroce::mrsim
