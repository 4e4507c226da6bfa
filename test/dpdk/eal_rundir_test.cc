/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The EAL runtime directory (/var/run/dpdk/<prefix>) of a process that
// started EAL through metaroce is gone after it exits, unless something is
// still in it (mr_eal_rundir.h). Each case starts EAL in a child process
// (EAL is once per process), which reports the directory and exits.

#include <fcntl.h>
#include <rte_eal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "mr_net_dpdk.h"
#include "mr_telemetry.h"

namespace metaroce {
namespace {

std::string Prefix(const char* what) { return absl::StrCat("mr_rundir_", what, "_", getpid()); }

std::vector<std::string> EalArgs(const std::string& prefix) {
  return {"--no-huge",       "-m", "64", "--no-pci", "--no-shconf", "--file-prefix=" + prefix,
          "--lcores=0@(0-1)"};
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Runs @p start in a child that then writes EAL's runtime directory to a
// pipe, leaves a file named @p leave in it if not empty, and exit()s.
// Returns the directory ("" if the child failed).
std::string RunChild(const std::function<absl::Status()>& start, const std::string& leave) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const absl::Status s = start();
    if (!s.ok()) {
      fprintf(stderr, "child: %s\n", s.ToString().c_str());
      _exit(2);
    }
    const std::string dir = rte_eal_get_runtime_dir();
    if (!leave.empty()) close(open((dir + "/" + leave).c_str(), O_CREAT | O_WRONLY, 0600));
    if (write(fds[1], dir.data(), dir.size()) != static_cast<ssize_t>(dir.size())) _exit(3);
    exit(0);  // not _exit: the exit handlers are what is tested
  }
  close(fds[1]);
  std::string dir;
  char buf[256];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) dir.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  return dir;
}

// A child that starts EAL under a prefix named after @p what, with @p start, leaves no directory.
void ExpectNoDirectoryLeft(const char* what,
                           const std::function<absl::Status(const std::string&)>& start) {
  const std::string prefix = Prefix(what);
  const std::string dir = RunChild([&] { return start(prefix); }, "");
  ASSERT_NE(dir, "");
  EXPECT_NE(dir.find(prefix), std::string::npos) << dir;
  EXPECT_FALSE(Exists(dir)) << dir << " is still there";
  rmdir(dir.c_str());
}

TEST(EalRuntimeDir, TheDriversEalLeavesNoDirectoryBehind) {
  ExpectNoDirectoryLeft("driver", [](const std::string& p) { return dpdk::InitEal(EalArgs(p)); });
}

TEST(EalRuntimeDir, TelemetrysEalLeavesNoDirectoryBehind) {
  // With telemetry: its socket is removed at exit before the directory is.
  ExpectNoDirectoryLeft("telemetry", [](const std::string& p) { return telemetry::StartEal(p); });
}

TEST(EalRuntimeDir, ADirectoryThatHoldsAnythingStays) {
  const std::string prefix = Prefix("kept");
  const std::string dir = RunChild([&] { return dpdk::InitEal(EalArgs(prefix)); }, "kept");
  ASSERT_NE(dir, "");
  EXPECT_TRUE(Exists(dir + "/kept")) << dir;
  unlink((dir + "/kept").c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace metaroce
