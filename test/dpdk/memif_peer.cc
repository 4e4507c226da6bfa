/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// The client process of the memif test (memif_test.cc starts it):
//   memif_peer SOCKET MTU   writes "qpn addr rkey" on stdout, reads the server's on stdin (sent
// once the server has connected its QP to ours), WRITEs 4 MiB into the server's buffer and SENDs
// 100 000 bytes, writes "done" when both completed, and exits after the server answers "bye" (the
// server stops first). Exit 0: success.

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "memif_common.h"

using namespace metaroce;
using namespace metaroce::testing::memif;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: memif_peer SOCKET MTU\n");
    return 2;
  }
  // stdout is the pipe to the server: keep it for the exchange, and send everything
  // else written there (EAL's console log goes to stdout after rte_eal_init) to stderr.
  const int out = dup(1);
  dup2(2, 1);
  Host h;
  absl::Status s = h.Open(/*server=*/false, argv[1], static_cast<uint32_t>(std::atoi(argv[2])));
  if (!s.ok()) {
    std::fprintf(stderr, "memif_peer: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  WriteLine(out, absl::StrCat(h.qpn, " ", h.Addr(0), " ", h.mr.rkey));
  std::string partial, line;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!TryReadLine(0, &partial, &line)) {
    if (std::chrono::steady_clock::now() > end) return 3;
    h.Poll();
  }
  uint32_t qpn = 0, rkey = 0;
  uint64_t addr = 0;
  if (std::sscanf(line.c_str(), "%" SCNu32 " %" SCNu64 " %" SCNu32, &qpn, &addr, &rkey) != 3) {
    return 4;
  }
  transport::Engine& e = h.dev->engine();
  if (!e.ConnectQp(h.qpn, PeerOf(false), qpn).ok()) return 5;

  for (size_t i = 0; i < kWriteBytes; i++) h.buf[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  for (uint32_t i = 0; i < kSendBytes; i++) {
    h.buf[kWriteBytes + i] = static_cast<uint8_t>(255 - i % 251);
  }
  if (!h.PostWrite(1, 0, kWriteBytes, addr + 4096, rkey).ok()) return 6;
  transport::SendWr sw;
  sw.wr_id = 2;
  sw.opcode = transport::Opcode::kSend;
  sw.sg.push_back({h.Addr(kWriteBytes), kSendBytes, h.mr.lkey});
  if (!e.PostSend(h.dev->Now(), h.qpn, sw).ok()) return 7;
  while (h.done.size() < 2) {
    if (std::chrono::steady_clock::now() > end) {
      std::fprintf(stderr, "memif_peer: %zu of 2 completions\n", h.done.size());
      return 8;
    }
    h.Poll();
  }
  for (const transport::Completion& c : h.done) {
    if (c.status != transport::WcStatus::kSuccess) {
      std::fprintf(stderr, "memif_peer: wr %" PRIu64 ": %s\n", c.wr_id,
                   transport::WcStatusName(c.status));
      return 9;
    }
  }
  WriteLine(out, "done");
  // Keep acknowledging until the server has stopped.
  while (!TryReadLine(0, &partial, &line)) {
    if (std::chrono::steady_clock::now() > end) return 10;
    h.Poll();
  }
  return 0;
}
