/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * Classic libpcap files (Ethernet link type): writing captures from tools and
 * tests, and reading captures (ours, tcpdump's, dpdk-dumpcap's pcap output)
 * for decoding. pcapng is not read.
 */

#ifndef METAROCE_MR_PCAP_H
#define METAROCE_MR_PCAP_H

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace metaroce::wire {

/** One captured frame. */
struct PcapRecord {
  uint64_t ts_ns = 0;         ///< capture time, ns since the epoch
  uint32_t orig_len = 0;      ///< length on the wire
  std::vector<uint8_t> data;  ///< captured bytes (may be shorter than orig_len)
};

/** Writes a nanosecond-resolution pcap file, link type Ethernet. */
class PcapWriter {
 public:
  /** Creates (truncates) @p path and writes the file header. */
  static absl::StatusOr<PcapWriter> Open(const std::string& path, uint32_t snaplen = 65535);
  PcapWriter(PcapWriter&& o) noexcept;
  PcapWriter& operator=(PcapWriter&& o) noexcept;
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;
  ~PcapWriter();

  /** Appends one frame captured at @p ts_ns. */
  absl::Status Write(uint64_t ts_ns, std::span<const uint8_t> frame);
  /** Flushes and closes; further writes fail. */
  absl::Status Close();

 private:
  PcapWriter(std::FILE* f, uint32_t snaplen) : f_(f), snaplen_(snaplen) {}
  std::FILE* f_ = nullptr;
  uint32_t snaplen_ = 0;
};

/**
 * Reads a whole pcap file (either byte order, microsecond or nanosecond
 * resolution). Fails with a message naming the problem for anything else.
 */
absl::StatusOr<std::vector<PcapRecord>> ReadPcap(const std::string& path);

}  // namespace metaroce::wire

#endif  // METAROCE_MR_PCAP_H
