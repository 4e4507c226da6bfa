/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"
#include "mr_pcap.h"

namespace metaroce::wire {
namespace {

std::string TempPath(const char* tag) {
  return ::testing::TempDir() + "/mr_pcap_" + tag + "_" + std::to_string(getpid()) + ".pcap";
}

void WriteBytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

TEST(Pcap, WriteThenReadKeepsFramesAndNanoseconds) {
  const std::string path = TempPath("rt");
  auto w = PcapWriter::Open(path, 100);
  ASSERT_TRUE(w.ok()) << w.status();
  std::vector<uint8_t> a(60, 0x11), b(150, 0x22);
  ASSERT_TRUE(w->Write(1'000'000'123, a).ok());
  ASSERT_TRUE(w->Write(2'500'000'000, b).ok());  // longer than snaplen: cut to 100
  ASSERT_TRUE(w->Close().ok());
  EXPECT_FALSE(w->Write(0, a).ok());
  auto r = ReadPcap(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].ts_ns, 1'000'000'123u);
  EXPECT_EQ((*r)[0].data, a);
  EXPECT_EQ((*r)[1].orig_len, 150u);
  EXPECT_EQ((*r)[1].data.size(), 100u);
  std::remove(path.c_str());
}

TEST(Pcap, ReadsMicrosecondBigEndianFiles) {
  // Hand-made: big-endian magic, microsecond timestamps, one 4-byte record.
  const std::vector<uint8_t> file = {
      0xa1, 0xb2, 0xc3, 0xd4, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0,    0,
      0,    1,    0,    0,    0, 3, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 4, 0xca, 0xfe, 0xba, 0xbe};
  const std::string path = TempPath("be");
  WriteBytes(path, file);
  auto r = ReadPcap(path);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].ts_ns, 3'000'007'000u);
  EXPECT_EQ((*r)[0].data, (std::vector<uint8_t>{0xca, 0xfe, 0xba, 0xbe}));
  std::remove(path.c_str());
}

TEST(Pcap, BadFilesFailWithAReason) {
  const std::string path = TempPath("bad");
  std::vector<uint8_t> ng = {0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 28, 0x1a, 0x2b, 0x3c, 0x4d};
  ng.resize(28);  // a pcapng section header block
  WriteBytes(path, ng);
  auto r = ReadPcap(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("pcapng"), std::string_view::npos);

  std::vector<uint8_t> hdr = {0xd4, 0xc3, 0xb2, 0xa1, 2,    0,    4, 0, 0,   0, 0, 0,
                              0,    0,    0,    0,    0xff, 0xff, 0, 0, 105, 0, 0, 0};  // 802.11
  WriteBytes(path, hdr);
  r = ReadPcap(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not Ethernet"), std::string_view::npos);

  hdr[20] = 1;
  auto trunc = hdr;
  trunc.insert(trunc.end(), {0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 10, 0, 0, 0, 1, 2});
  WriteBytes(path, trunc);
  r = ReadPcap(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated"), std::string_view::npos);

  EXPECT_FALSE(ReadPcap(path + ".missing").ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace metaroce::wire
