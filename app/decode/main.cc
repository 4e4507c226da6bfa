/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// mr-decode: decodes MetaRoCE packets in a pcap file with the same parser the
// dataplane uses, counting malformed frames by reason; or writes a sample
// capture with every packet type (--sample).

#include <getopt.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "describe.h"
#include "mr_config.h"
#include "mr_pcap.h"
#include "mr_wire.h"
#include "mr_wire_sample.h"

namespace {

using namespace metaroce;

struct Options {
  std::string input;
  std::string sample_out;
  bool json = false;
  bool summary_only = false;
  wire::ParseOptions parse;
};

void Usage(FILE* to) {
  std::fprintf(to,
               "usage: mr-decode [options] CAPTURE.pcap\n"
               "       mr-decode --sample OUT.pcap\n"
               "Decodes MetaRoCE wire format v%u packets in a classic pcap file (Ethernet).\n"
               "  -p, --port N      UDP destination port of MetaRoCE traffic (default %u)\n"
               "  -j, --json        one JSON object per MetaRoCE packet (JSON Lines)\n"
               "  -s, --summary     print only the counts by packet type and drop reason\n"
               "      --no-crc      do not verify the CRC-32C trailer\n"
               "      --sample OUT  write a sample conversation with every packet type over\n"
               "                    IPv4 and IPv6 (documentation addresses) to OUT and exit\n"
               "  -h, --help        this text\n",
               wire::kVersion, wire::kDefaultUdpPort);
}

int ParseArgs(int argc, char** argv, Options* o) {
  enum { kNoCrc = 256, kSample };
  static const option kLong[] = {{"port", required_argument, nullptr, 'p'},
                                 {"json", no_argument, nullptr, 'j'},
                                 {"summary", no_argument, nullptr, 's'},
                                 {"no-crc", no_argument, nullptr, kNoCrc},
                                 {"sample", required_argument, nullptr, kSample},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "p:jsh", kLong, nullptr)) != -1) {
    switch (c) {
      case 'p': {
        uint32_t port;
        if (!absl::SimpleAtoi(optarg, &port) || port == 0 || port > 65535) {
          std::fprintf(stderr, "mr-decode: --port takes a UDP port 1-65535, not '%s'\n", optarg);
          return 2;
        }
        o->parse.udp_port = static_cast<uint16_t>(port);
        break;
      }
      case 'j': o->json = true; break;
      case 's': o->summary_only = true; break;
      case kNoCrc: o->parse.verify_crc = false; break;
      case kSample: o->sample_out = optarg; break;
      case 'h': Usage(stdout); std::exit(0);
      default: Usage(stderr); return 2;
    }
  }
  if (!o->sample_out.empty()) {
    if (optind != argc) {
      std::fprintf(stderr, "mr-decode: --sample takes no capture file\n");
      return 2;
    }
    return 0;
  }
  if (optind + 1 != argc) {
    std::fprintf(stderr, "mr-decode: give exactly one capture file (see --help)\n");
    return 2;
  }
  o->input = argv[optind];
  return 0;
}

int WriteSample(const std::string& path) {
  auto w = wire::PcapWriter::Open(path);
  if (!w.ok()) {
    std::fprintf(stderr, "mr-decode: %s\n", std::string(w.status().message()).c_str());
    return 1;
  }
  std::array<uint8_t, config::kMaxFrameBytes> buf;
  uint64_t ts = 1'700'000'000'000'000'000ull;
  size_t n = 0;
  for (const auto& s : wire::SampleConversation()) {
    auto len = wire::EncodeFrame(s.frame, s.Get(), buf);
    if (!len.ok()) {
      std::fprintf(stderr, "mr-decode: sample %s: %s\n", s.name.c_str(),
                   std::string(len.status().message()).c_str());
      return 1;
    }
    if (auto st = w->Write(ts, {buf.data(), *len}); !st.ok()) {
      std::fprintf(stderr, "mr-decode: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    ts += 1000;
    n++;
  }
  if (auto st = w->Close(); !st.ok()) {
    std::fprintf(stderr, "mr-decode: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  std::printf("wrote %zu MetaRoCE frames to %s\n", n, path.c_str());
  return 0;
}

int Decode(const Options& o) {
  auto records = wire::ReadPcap(o.input);
  if (!records.ok()) {
    std::fprintf(stderr, "mr-decode: %s\n", std::string(records.status().message()).c_str());
    return 1;
  }
  std::array<uint64_t, 256> by_type{};
  std::array<uint64_t, static_cast<size_t>(wire::ParseError::kCount)> by_error{};
  uint64_t ok = 0;
  size_t frame_no = 0;
  for (const auto& r : *records) {
    frame_no++;
    wire::FrameInfo info;
    wire::Packet p;
    const wire::ParseError e = wire::ParseFrame(r.data, o.parse, &info, &p);
    if (e != wire::ParseError::kOk) {
      by_error[static_cast<size_t>(e)]++;
      if (!o.summary_only && !o.json) {
        std::printf("#%zu dropped: %s\n", frame_no, wire::ParseErrorName(e));
      }
      continue;
    }
    ok++;
    by_type[static_cast<uint8_t>(p.type)]++;
    if (o.summary_only) continue;
    if (o.json) {
      const size_t end = wire::EncapBytes(info) + wire::EncodedBytes(p);
      const uint8_t* c = r.data.data() + end - wire::kCrcBytes;
      const uint32_t crc = uint32_t{c[0]} << 24 | uint32_t{c[1]} << 16 | uint32_t{c[2]} << 8 | c[3];
      std::printf("%s\n", decode::DescribeJson(frame_no, info, p, crc).c_str());
    } else {
      std::printf("#%zu %s\n", frame_no, decode::DescribeText(info, p).c_str());
    }
  }
  if (o.json) return 0;
  std::printf("%zu frames: %llu MetaRoCE packets, %zu dropped\n", records->size(),
              static_cast<unsigned long long>(ok), records->size() - static_cast<size_t>(ok));
  for (size_t t = 0; t < by_type.size(); t++) {
    if (by_type[t] != 0) {
      std::printf("  %-12s %llu\n", wire::PacketTypeName(static_cast<uint8_t>(t)),
                  static_cast<unsigned long long>(by_type[t]));
    }
  }
  for (size_t e = 1; e < by_error.size(); e++) {
    if (by_error[e] != 0) {
      std::printf("  dropped %-24s %llu\n", wire::ParseErrorName(static_cast<wire::ParseError>(e)),
                  static_cast<unsigned long long>(by_error[e]));
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = ParseArgs(argc, argv, &o); rc != 0) return rc;
  if (!o.sample_out.empty()) return WriteSample(o.sample_out);
  return Decode(o);
}
