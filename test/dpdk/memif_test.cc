/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Two processes over net_memif, EAL without hugepages in each: this process is the memif
// server, memif_peer the client (socket-abstract=no, a socket in a temporary directory).
// Both open their ports through "dpdk:eal=..." (the vdev's commas written '|'). The
// client WRITEs 4 MiB and SENDs 100 000 bytes; the server checks both byte for byte.

#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <cinttypes>
#include <filesystem>

#include "gtest/gtest.h"
#include "memif_common.h"

extern char** environ;

namespace metaroce::testing::memif {
namespace {

// The whole exchange over frames of @p mtu; @p ps gets the server port's counters.
void RunPair(uint32_t mtu, port::PortStats* ps) {
  signal(SIGPIPE, SIG_IGN);  // a client that died early must not take this process with it
  const char* peer = getenv("MR_MEMIF_PEER");
  ASSERT_NE(peer, nullptr) << "MR_MEMIF_PEER (the memif_peer program) is not set";
  char tmpl[] = "/tmp/mr_memif_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string sock = dir + "/memif.sock";

  Host h;
  absl::Status s = h.Open(/*server=*/true, sock, mtu);
  ASSERT_TRUE(s.ok()) << s;
  transport::Engine& e = h.dev->engine();
  transport::RecvWr r;
  r.wr_id = 7;
  r.sg.push_back({h.Addr(kWriteBytes + 8192), kSendBytes, h.mr.lkey});
  ASSERT_TRUE(e.PostRecv(h.qpn, r).ok());

  int to_child[2], from_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(from_child), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
  posix_spawn_file_actions_addclose(&fa, to_child[1]);
  posix_spawn_file_actions_addclose(&fa, from_child[0]);
  std::string arg0 = peer, arg1 = sock, arg2 = std::to_string(mtu);
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, peer, &fa, nullptr, argv, environ), 0) << peer;
  posix_spawn_file_actions_destroy(&fa);
  close(to_child[0]);
  close(from_child[1]);

  std::string partial, line;
  bool connected = false, client_done = false;
  int status = 0;
  bool exited = false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((!client_done || h.done.empty()) && std::chrono::steady_clock::now() < end) {
    h.Poll();
    if (!TryReadLine(from_child[0], &partial, &line)) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;  // the client gave up (its stderr says why)
        break;
      }
      continue;
    }
    if (!connected) {
      uint32_t qpn = 0, rkey = 0;
      uint64_t addr = 0;
      ASSERT_EQ(std::sscanf(line.c_str(), "%" SCNu32 " %" SCNu64 " %" SCNu32, &qpn, &addr, &rkey),
                3)
          << line;
      ASSERT_TRUE(e.ConnectQp(h.qpn, PeerOf(true), qpn).ok());
      // Only now the client may send: nothing of it is dropped for an unknown QP.
      ASSERT_TRUE(WriteLine(to_child[1], absl::StrCat(h.qpn, " ", h.Addr(0), " ", h.mr.rkey)));
      connected = true;
    } else {
      EXPECT_EQ(line, "done");
      client_done = true;
    }
  }
  // The server stops its traffic before the client disconnects.
  WriteLine(to_child[1], "bye");
  for (int i = 0; i < 1000 && !exited; i++) {
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) usleep(10000);
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  close(to_child[1]);
  close(from_child[0]);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);

  EXPECT_TRUE(connected);
  EXPECT_TRUE(client_done) << "the client did not complete its WRITE and SEND";
  EXPECT_TRUE(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "memif_peer status " << status;
  ASSERT_EQ(h.done.size(), 1u);
  EXPECT_EQ(h.done[0].wr_id, 7u);
  EXPECT_EQ(h.done[0].status, transport::WcStatus::kSuccess)
      << transport::WcStatusName(h.done[0].status);
  EXPECT_EQ(h.done[0].byte_len, kSendBytes);
  bool write_ok = true, send_ok = true;
  for (size_t i = 0; i < kWriteBytes; i++) {
    write_ok &= h.buf[4096 + i] == static_cast<uint8_t>(i * 131 + (i >> 12));
  }
  for (uint32_t i = 0; i < kSendBytes; i++) {
    send_ok &= h.buf[kWriteBytes + 8192 + i] == static_cast<uint8_t>(255 - i % 251);
  }
  EXPECT_TRUE(write_ok);
  EXPECT_TRUE(send_ok);
  *ps = h.dev->port_stats();
  std::printf("server (mtu %u): rx %llu tx %llu tx_errors %llu rx_errors %llu\n", mtu,
              static_cast<unsigned long long>(ps->rx_packets),
              static_cast<unsigned long long>(ps->tx_packets),
              static_cast<unsigned long long>(ps->tx_errors),
              static_cast<unsigned long long>(ps->rx_errors));
}

TEST(DpdkMemif, WriteAndSendBetweenTwoProcesses) {
  port::PortStats ps;
  RunPair(1500, &ps);
}

// net_memif says 1500 but chains descriptors: 9000-byte frames carry 4 KiB
// payloads, a quarter of the packets 1 KiB payloads take.
TEST(DpdkMemif, JumboFramesCrossAsChainsOfMemifBuffers) {
  port::PortStats ps;
  ASSERT_NO_FATAL_FAILURE(RunPair(9000, &ps));
  constexpr uint64_t kDataPackets = (kWriteBytes + kSendBytes + 4095) / 4096;
  EXPECT_GE(ps.rx_packets, kDataPackets);
  EXPECT_LT(ps.rx_packets, kDataPackets + kDataPackets / 2);  // 1 KiB payloads: 4x
  EXPECT_EQ(ps.rx_errors, 0u);
}

}  // namespace
}  // namespace metaroce::testing::memif
