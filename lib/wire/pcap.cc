/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mr_pcap.h"

namespace metaroce::wire {
namespace {

constexpr uint32_t kMagicUs = 0xa1b2c3d4;
constexpr uint32_t kMagicNs = 0xa1b23c4d;
constexpr uint32_t kLinkTypeEthernet = 1;
constexpr uint32_t kMaxRecordBytes = 256 * 1024;  // larger than any jumbo frame

struct FileHeader {
  uint32_t magic;
  uint16_t version_major;
  uint16_t version_minor;
  int32_t thiszone;
  uint32_t sigfigs;
  uint32_t snaplen;
  uint32_t linktype;
};
static_assert(sizeof(FileHeader) == 24);

struct RecordHeader {
  uint32_t ts_sec;
  uint32_t ts_frac;
  uint32_t incl_len;
  uint32_t orig_len;
};
static_assert(sizeof(RecordHeader) == 16);

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<PcapWriter> PcapWriter::Open(const std::string& path, uint32_t snaplen) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Errno(absl::StrCat("cannot create ", path));
  const FileHeader h{kMagicNs, 2, 4, 0, 0, snaplen, kLinkTypeEthernet};
  if (std::fwrite(&h, sizeof(h), 1, f) != 1) {
    std::fclose(f);
    return Errno(absl::StrCat("cannot write ", path));
  }
  return PcapWriter(f, snaplen);
}

PcapWriter::PcapWriter(PcapWriter&& o) noexcept
    : f_(std::exchange(o.f_, nullptr)), snaplen_(o.snaplen_) {}

PcapWriter& PcapWriter::operator=(PcapWriter&& o) noexcept {
  if (this != &o) {
    if (f_ != nullptr) std::fclose(f_);
    f_ = std::exchange(o.f_, nullptr);
    snaplen_ = o.snaplen_;
  }
  return *this;
}

PcapWriter::~PcapWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

absl::Status PcapWriter::Write(uint64_t ts_ns, std::span<const uint8_t> frame) {
  if (f_ == nullptr) return absl::FailedPreconditionError("pcap writer is closed");
  const auto incl = static_cast<uint32_t>(std::min<size_t>(frame.size(), snaplen_));
  const RecordHeader r{static_cast<uint32_t>(ts_ns / 1000000000u),
                       static_cast<uint32_t>(ts_ns % 1000000000u), incl,
                       static_cast<uint32_t>(frame.size())};
  if (std::fwrite(&r, sizeof(r), 1, f_) != 1 ||
      (incl > 0 && std::fwrite(frame.data(), incl, 1, f_) != 1)) {
    return Errno("cannot write pcap record");
  }
  return absl::OkStatus();
}

absl::Status PcapWriter::Close() {
  if (f_ == nullptr) return absl::OkStatus();
  const int rc = std::fclose(std::exchange(f_, nullptr));
  return rc == 0 ? absl::OkStatus() : Errno("cannot close pcap file");
}

absl::StatusOr<std::vector<PcapRecord>> ReadPcap(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Errno(absl::StrCat("cannot open ", path));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{f};

  FileHeader h;
  if (std::fread(&h, sizeof(h), 1, f) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": too short for a pcap file header"));
  }
  bool swap = false;
  bool ns = false;
  switch (h.magic) {
    case kMagicUs: break;
    case kMagicNs: ns = true; break;
    case __builtin_bswap32(kMagicUs): swap = true; break;
    case __builtin_bswap32(kMagicNs):
      swap = true;
      ns = true;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          path,
          ": not a classic pcap file (pcapng is not supported; convert with editcap -F pcap)"));
  }
  auto fix = [swap](uint32_t v) { return swap ? __builtin_bswap32(v) : v; };
  if (fix(h.linktype) != kLinkTypeEthernet) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": link type ", fix(h.linktype), " is not Ethernet (1)"));
  }
  std::vector<PcapRecord> out;
  for (;;) {
    RecordHeader r;
    const size_t n = std::fread(&r, 1, sizeof(r), f);
    if (n == 0) break;
    if (n != sizeof(r)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": record ", out.size() + 1, " has a truncated header"));
    }
    const uint32_t incl = fix(r.incl_len);
    if (incl > kMaxRecordBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": record ", out.size() + 1, " claims ", incl, " bytes"));
    }
    PcapRecord rec;
    rec.ts_ns = uint64_t{fix(r.ts_sec)} * 1000000000u + uint64_t{fix(r.ts_frac)} * (ns ? 1 : 1000);
    rec.orig_len = fix(r.orig_len);
    rec.data.resize(incl);
    if (incl > 0 && std::fread(rec.data.data(), incl, 1, f) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": record ", out.size() + 1, " is truncated"));
    }
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace metaroce::wire
