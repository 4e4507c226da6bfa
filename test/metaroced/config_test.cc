/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// metaroced's configuration (app/metaroced/config.h): defaults, the example file
// config/metaroced.conf, every kind of error, overrides and FormatConfig() read
// back. No EAL: rte_cfgfile works without it.

#include "config.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metaroce::daemon {
namespace {

using ::testing::HasSubstr;

// A file holding @p text, removed with the object.
class TempConf {
 public:
  explicit TempConf(const std::string& text) {
    static int n = 0;
    path_ = ::testing::TempDir() + "/metaroced_" + std::to_string(getpid()) + "_" +
            std::to_string(n++) + ".conf";
    std::ofstream(path_) << text;
  }
  ~TempConf() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Loads @p text over the defaults; the error message, or "" on success.
std::string LoadError(const std::string& text, DaemonConfig* cfg = nullptr) {
  DaemonConfig local;
  TempConf f(text);
  absl::Status st = LoadConfigFile(f.path(), cfg != nullptr ? cfg : &local);
  if (st.ok()) return "";
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  return std::string(st.message());
}

std::string ReadFile(const std::string& path) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

TEST(MetarocedConfig, DefaultsAreValidAndUseTheOsKeyedEngine) {
  const DaemonConfig cfg;
  EXPECT_TRUE(ValidateConfig(cfg).ok()) << ValidateConfig(cfg);
  EXPECT_EQ(cfg.engine.seed, 0u);
  EXPECT_EQ(cfg.engine.incarnation, 0u);
  const std::string text = FormatConfig(cfg);
  EXPECT_FALSE(absl::StrContains(text, "seed"));
  EXPECT_FALSE(absl::StrContains(text, "incarnation"));
  EXPECT_THAT(text, HasSubstr("[limits]\n"));
  EXPECT_THAT(text, HasSubstr("\nmax_mr_bytes = 16G\n"));
  EXPECT_THAT(text, HasSubstr("\nsocket_mode = 0666\n"));
  EXPECT_THAT(text, HasSubstr("\nrto_min_us = 100\n"));
}

TEST(MetarocedConfig, ExampleFileGivesTheDefaults) {
  DaemonConfig cfg;
  cfg.limits.max_qps = 1;  // overwritten if the file set it; it must not
  DaemonConfig expect = cfg;
  ASSERT_TRUE(LoadConfigFile(MR_EXAMPLE_CONF, &cfg).ok()) << LoadConfigFile(MR_EXAMPLE_CONF, &cfg);
  EXPECT_EQ(FormatConfig(cfg), FormatConfig(expect));
}

TEST(MetarocedConfig, ExampleFileDocumentsEveryKeyWithItsDefault) {
  const std::string example = ReadFile(MR_EXAMPLE_CONF);
  ASSERT_FALSE(example.empty());
  for (absl::string_view line : absl::StrSplit(example, '\n')) {
    const bool header = absl::StartsWith(line, "[") && absl::EndsWith(line, "]");
    EXPECT_TRUE(line.empty() || header || absl::StartsWith(line, ";")) << line;
  }
  std::string section;
  for (absl::string_view line : absl::StrSplit(FormatConfig(DaemonConfig{}), '\n')) {
    if (absl::StartsWith(line, "[")) {
      section = std::string(line);
      EXPECT_THAT(example, HasSubstr("\n" + section + "\n"));
    } else if (!line.empty() && line[0] != ';') {
      EXPECT_THAT(example, HasSubstr("\n;" + std::string(line) + "\n")) << "in " << section;
    }
  }
}

TEST(MetarocedConfig, FileSetsEveryKindOfValue) {
  DaemonConfig cfg;
  ASSERT_EQ(LoadError("[daemon]\n"
                      "socket = /tmp/m.sock   ; a comment\n"
                      "socket_mode = 0660\n"
                      "telemetry = No\n"
                      "log_level = debug\n"
                      "[dataplane]\n"
                      "port = udp:ip=10.0.0.1,port=4792\n"
                      "lcores = 2\n"
                      "cpus = 2, 3\n"
                      "pace = 10G\n"
                      "faults = drop=1\\;x\n"
                      "[engine]\n"
                      "rto_min_us = 250\n"
                      "keepalive_ms = 50\n"
                      "rx_msg_state_mib = 8\n"
                      "tail_loss_probe = false\n"
                      "[limits]\n"
                      "max_mr_bytes = 1t\n",
                      &cfg),
            "");
  EXPECT_EQ(cfg.socket_path, "/tmp/m.sock");
  EXPECT_EQ(cfg.socket_mode, 0660u);
  EXPECT_FALSE(cfg.telemetry);
  EXPECT_EQ(cfg.log_level, "debug");
  EXPECT_EQ(cfg.port, "udp:ip=10.0.0.1,port=4792");
  EXPECT_EQ(cfg.lcores, 2);
  EXPECT_EQ(cfg.cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(cfg.pace_bytes_per_sec, 10'000'000'000u);
  EXPECT_EQ(cfg.faults, "drop=1;x");
  EXPECT_EQ(cfg.engine.rto_min_ns, 250'000u);
  EXPECT_EQ(cfg.engine.keepalive_ns, 50'000'000u);
  EXPECT_EQ(cfg.engine.rx_msg_state_bytes, uint64_t{8} << 20);
  EXPECT_FALSE(cfg.engine.tail_loss_probe);
  EXPECT_EQ(cfg.limits.max_mr_bytes, uint64_t{1} << 40);
  EXPECT_EQ(cfg.name, "metaroced");  // untouched
  EXPECT_TRUE(ValidateConfig(cfg).ok()) << ValidateConfig(cfg);
}

TEST(MetarocedConfig, FormatConfigReadsBackToTheSameValues) {
  DaemonConfig cfg;
  for (const char* set :
       {"daemon.socket_mode=0600", "daemon.name=node-1", "dataplane.lcores=3",
        "dataplane.cpus=4,5,7", "dataplane.faults=drop=5;dup=1", "dataplane.pace=1500K",
        "engine.paths=64", "engine.dscp=0", "engine.ack_delay_us=0", "limits.max_mr_bytes=3M",
        "limits.max_qps=4096"}) {
    ASSERT_TRUE(ApplyOverride(set, &cfg).ok()) << ApplyOverride(set, &cfg);
  }
  const std::string text = FormatConfig(cfg);
  DaemonConfig back;
  ASSERT_EQ(LoadError(text, &back), "") << text;
  EXPECT_EQ(FormatConfig(back), text);
  EXPECT_EQ(back.faults, "drop=5;dup=1");
  EXPECT_EQ(back.cpus, (std::vector<int>{4, 5, 7}));
  EXPECT_EQ(back.pace_bytes_per_sec, 1'500'000u);
  EXPECT_THAT(text, HasSubstr("\npace = 1500K\n"));
  EXPECT_THAT(text, HasSubstr("\nmax_mr_bytes = 3M\n"));
  // Empty values read back too.
  DaemonConfig empty;
  ASSERT_EQ(LoadError(FormatConfig(DaemonConfig{}), &empty), "");
  EXPECT_TRUE(empty.faults.empty());
  EXPECT_TRUE(empty.cpus.empty());
}

TEST(MetarocedConfig, PlanesAreAListOfPortSpecs) {
  DaemonConfig cfg;
  ASSERT_EQ(LoadError("[dataplane]\nport = udp:ip=10.0.0.1,port=4792\n"
                      "planes = udp:ip=10.0.1.1,port=4792 | udp:ip=10.0.2.1,port=4792\n",
                      &cfg),
            "");
  EXPECT_EQ(cfg.planes,
            (std::vector<std::string>{"udp:ip=10.0.1.1,port=4792", "udp:ip=10.0.2.1,port=4792"}));
  DaemonConfig back;
  ASSERT_EQ(LoadError(FormatConfig(cfg), &back), "");
  EXPECT_EQ(back.planes, cfg.planes);
  EXPECT_THAT(LoadError("[dataplane]\nplanes = udp:ip=10.0.1.1||udp:ip=10.0.2.1\n"),
              HasSubstr("an empty plane between two '|'"));
  EXPECT_THAT(LoadError("[dataplane]\nplanes = a|b|c|d|e|f|g|h\n"),
              HasSubstr("8 planes besides port=; at most 7"));
}

TEST(MetarocedConfig, OutOfRangeNamesTheFileKeyValueAndRange) {
  TempConf f("[limits]\nmax_qps = 99999\n");
  DaemonConfig cfg;
  const absl::Status st = LoadConfigFile(f.path(), &cfg);
  EXPECT_EQ(st.message(), f.path() +
                              ": limits.max_qps = \"99999\": must be 1..4096 (QPs one "
                              "application may hold)");
  EXPECT_EQ(cfg.limits.max_qps, DaemonConfig{}.limits.max_qps);
  EXPECT_THAT(LoadError("[engine]\ndscp = 64\n"), HasSubstr("engine.dscp = \"64\": must be 0..63"));
  EXPECT_THAT(LoadError("[engine]\nrto_min_us = 0\n"), HasSubstr("must be 1..60000000 us"));
  EXPECT_THAT(LoadError("[engine]\npath_window = 256\n"), HasSubstr("must be 1..255 packets"));
  EXPECT_THAT(LoadError("[dataplane]\nlcores = 17\n"), HasSubstr("must be 1..16"));
  EXPECT_THAT(LoadError("[limits]\nmax_qp_wr = 32769\n"), HasSubstr("must be 1..32768"));
  EXPECT_THAT(LoadError("[limits]\nmax_mr_bytes = 2048T\n"), HasSubstr("must be 1..1024T bytes"));
  EXPECT_THAT(LoadError("[dataplane]\npace = 2000G\n"), HasSubstr("must be 0..1000G bytes/s"));
}

TEST(MetarocedConfig, BadNumbers) {
  EXPECT_THAT(LoadError("[daemon]\nmax_apps = 12x\n"),
              HasSubstr("daemon.max_apps = \"12x\": not a decimal number; must be 1..4096 "
                        "(applications attached at once)"));
  EXPECT_THAT(LoadError("[daemon]\nmax_apps = -1\n"), HasSubstr("\"-1\": negative; must be"));
  EXPECT_THAT(LoadError("[daemon]\nmax_apps = 0x10\n"), HasSubstr("not a decimal number"));
  EXPECT_THAT(LoadError("[daemon]\nmax_apps = 1 2\n"), HasSubstr("not a decimal number"));
  EXPECT_THAT(LoadError("[daemon]\nmax_apps =\n"), HasSubstr("\"\": no digits; must be"));
  EXPECT_THAT(LoadError("[daemon]\nmax_apps = 99999999999999999999999\n"),
              HasSubstr("too large; must be 1..4096"));
  EXPECT_THAT(LoadError("[limits]\nmax_mr_bytes = 99999999999T\n"), HasSubstr("too large"));
  EXPECT_THAT(LoadError("[limits]\nmax_qps = 4K\n"), HasSubstr("not a decimal number"));
  EXPECT_THAT(LoadError("[limits]\nmax_mr_bytes = 4P\n"), HasSubstr("not a decimal number"));
  EXPECT_THAT(LoadError("[limits]\nmax_mr_bytes = K\n"), HasSubstr("no digits"));
  EXPECT_THAT(LoadError("[daemon]\nsocket_mode = 0800\n"),
              HasSubstr("must be an octal mode 0000..0777"));
  EXPECT_THAT(LoadError("[daemon]\nsocket_mode = 1777\n"), HasSubstr("octal mode"));
}

TEST(MetarocedConfig, BadStringsAndBools) {
  EXPECT_THAT(LoadError("[daemon]\ntelemetry = maybe\n"),
              HasSubstr("daemon.telemetry = \"maybe\": must be yes, no, true, false, 1 or 0"));
  EXPECT_THAT(LoadError("[daemon]\nlog_level = verbose\n"),
              HasSubstr("must be error, warning, notice, info or debug"));
  EXPECT_THAT(LoadError("[daemon]\nname = a b\n"), HasSubstr("daemon.name = \"a b\""));
  EXPECT_THAT(LoadError("[daemon]\nsocket =\n"), HasSubstr("a path of 1..107 characters"));
  EXPECT_THAT(LoadError("[daemon]\nsocket = /" + std::string(110, 'x') + "\n"),
              HasSubstr("a path of 1..107"));
  EXPECT_THAT(LoadError("[dataplane]\nport =\n"), HasSubstr("dataplane.port = \"\": must be"));
}

TEST(MetarocedConfig, BadCpus) {
  EXPECT_THAT(
      LoadError("[dataplane]\ncpus = 1,-2\n"),
      HasSubstr("dataplane.cpus = \"1,-2\": CPU \"-2\": negative; must be a comma-separated "
                "list of distinct CPU numbers 0..1023"));
  EXPECT_THAT(LoadError("[dataplane]\ncpus = 1,1\n"), HasSubstr("CPU 1 is listed twice"));
  EXPECT_THAT(LoadError("[dataplane]\ncpus = 1,,2\n"), HasSubstr("CPU \"\": no digits"));
  EXPECT_THAT(LoadError("[dataplane]\ncpus = 5000\n"), HasSubstr("CPU \"5000\": out of range"));
}

TEST(MetarocedConfig, UnknownSectionListsTheSections) {
  EXPECT_THAT(LoadError("[dataplan]\nlcores = 2\n"),
              HasSubstr("unknown section [dataplan] (did you mean [dataplane]?); the sections are "
                        "[daemon], [dataplane], [engine], [limits]"));
  EXPECT_THAT(LoadError("[network]\n"),  // even without keys
              HasSubstr("unknown section [network]; the sections are"));
}

TEST(MetarocedConfig, UnknownKeyListsTheKeysAndSuggests) {
  const std::string e = LoadError("[limits]\nmax_qp = 3\n");
  EXPECT_THAT(
      e, HasSubstr(": unknown key limits.max_qp (did you mean max_qps?); [limits] has "
                   "max_pds, max_mrs, max_mr_bytes, max_cqs, max_qps, max_comp_channels, max_srqs, "
                   "max_qp_wr, max_cqe"));
  EXPECT_THAT(LoadError("[engine]\nrto_min_ns = 3\n"), HasSubstr("(did you mean rto_min_us?)"));
  EXPECT_THAT(LoadError("[daemon]\nlcores = 2\n"), HasSubstr("(did you mean dataplane.lcores?)"));
  const std::string far = LoadError("[engine]\nseed = 1\n");  // never configurable
  EXPECT_THAT(far, HasSubstr("unknown key engine.seed; [engine] has paths, max_payload"));
}

TEST(MetarocedConfig, DuplicateKeys) {
  // rte_cfgfile keeps both; the second would silently win.
  EXPECT_THAT(LoadError("[engine]\npaths = 4\npaths = 8\n"),
              HasSubstr(": engine.paths is given twice"));
  EXPECT_THAT(LoadError("[engine]\npaths = 4\n[limits]\n[engine]\npaths = 8\n"),
              HasSubstr("engine.paths is given twice"));
  EXPECT_EQ(LoadError("[engine]\npaths = 4\n[limits]\n[engine]\ndscp = 8\n"), "");
}

TEST(MetarocedConfig, SyntaxErrorsHaveTheLineNumber) {
  TempConf f("[daemon]\n\n; comment\nmax_apps 4\n");
  DaemonConfig cfg;
  EXPECT_EQ(LoadConfigFile(f.path(), &cfg).message(),
            f.path() + ":4: \"max_apps 4\" is neither [section] nor key = value");
  EXPECT_THAT(LoadError("max_apps = 4\n[daemon]\n"),
              HasSubstr(":1: key = value before the first [section]"));
  EXPECT_THAT(LoadError("[daemon\n"), HasSubstr(":1: no ']' after the section name"));
  EXPECT_THAT(LoadError("[daemon] max_apps = 4\n"), HasSubstr(":1: text after ']'"));
  EXPECT_THAT(LoadError("[daemon]\n = 4\n"), HasSubstr(":2: no key before '='"));
  EXPECT_THAT(LoadError("[dataplane]\nport = " + std::string(260, 'x') + "\n"),
              HasSubstr(":2: value longer than 255 characters"));
  EXPECT_THAT(LoadError("[dataplane]\nport = x" + std::string(400, ' ') + "\n"),
              HasSubstr(":2: longer than 322 characters"));
}

TEST(MetarocedConfig, MissingFile) {
  DaemonConfig cfg;
  const absl::Status st = LoadConfigFile("/nonexistent/metaroced.conf", &cfg);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent/metaroced.conf"));
}

TEST(MetarocedConfig, OverridesUseTheSameChecks) {
  DaemonConfig cfg;
  EXPECT_TRUE(ApplyOverride("limits.max_qps=512", &cfg).ok());
  EXPECT_EQ(cfg.limits.max_qps, 512u);
  EXPECT_TRUE(ApplyOverride(" engine.tail_loss_probe = no ", &cfg).ok());
  EXPECT_FALSE(cfg.engine.tail_loss_probe);
  EXPECT_TRUE(ApplyOverride("dataplane.faults=", &cfg).ok());
  EXPECT_EQ(ApplyOverride("limits.max_qps=99999", &cfg).message(),
            "--set: limits.max_qps = \"99999\": must be 1..4096 (QPs one application may hold)");
  EXPECT_EQ(cfg.limits.max_qps, 512u);
  EXPECT_THAT(ApplyOverride("limit.max_qps=1", &cfg).message(),
              HasSubstr("--set: unknown section [limit] (did you mean [limits]?)"));
  EXPECT_THAT(ApplyOverride("limits.max_qp=1", &cfg).message(),
              HasSubstr("--set: unknown key limits.max_qp (did you mean max_qps?)"));
  EXPECT_THAT(ApplyOverride("max_qps=1", &cfg).message(), HasSubstr("must be SECTION.KEY=VALUE"));
  EXPECT_THAT(ApplyOverride("limits.max_qps", &cfg).message(),
              HasSubstr("must be SECTION.KEY=VALUE"));
  EXPECT_THAT(ApplyOverride("daemon.name=a\nb", &cfg).message(), HasSubstr("\"a\\nb\""));
}

TEST(MetarocedConfig, ValidateChecksValuesTogether) {
  DaemonConfig cfg;
  ASSERT_TRUE(ApplyOverride("dataplane.lcores=2", &cfg).ok());
  ASSERT_TRUE(ApplyOverride("dataplane.cpus=3", &cfg).ok());
  EXPECT_EQ(ValidateConfig(cfg).message(),
            "dataplane.cpus = 3 lists 1 CPU for dataplane.lcores = 2: give one CPU per lcore, or "
            "none");
  ASSERT_TRUE(ApplyOverride("dataplane.cpus=3,4", &cfg).ok());
  EXPECT_TRUE(ValidateConfig(cfg).ok());
  ASSERT_TRUE(ApplyOverride("dataplane.cpus=", &cfg).ok());
  EXPECT_TRUE(ValidateConfig(cfg).ok());

  DaemonConfig rto;
  ASSERT_TRUE(ApplyOverride("engine.rto_min_us=2000", &rto).ok());
  EXPECT_THAT(ValidateConfig(rto).message(),
              HasSubstr("engine.rto_min_us = 2000 must not exceed engine.rto_initial_us = 1000"));
  DaemonConfig keepalive;
  ASSERT_TRUE(ApplyOverride("engine.keepalive_ms=500", &keepalive).ok());
  EXPECT_THAT(ValidateConfig(keepalive).message(),
              HasSubstr("engine.keepalive_ms = 500 must be below engine.conn_fail_after_ms = 500"));
  DaemonConfig probe;
  ASSERT_TRUE(ApplyOverride("engine.msg_probe_min_us=200000", &probe).ok());
  EXPECT_THAT(ValidateConfig(probe).message(), HasSubstr("engine.msg_probe_min_us = 200000"));

  DaemonConfig coded;  // built in code, out of range
  coded.lcores = 0;
  EXPECT_THAT(ValidateConfig(coded).message(),
              HasSubstr("dataplane.lcores = \"0\": must be 1..16"));
}

}  // namespace
}  // namespace metaroce::daemon
