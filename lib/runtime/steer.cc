/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Steering decisions: which shard a packet belongs to, which port spec each shard
// opens, and each shard's engine configuration.

#include "absl/strings/str_cat.h"
#include "runtime_private.h"

namespace metaroce::runtime {
namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86dd;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint8_t kProtoUdp = 17;
constexpr size_t kEthBytes = 14;
constexpr size_t kVlanBytes = 4;
constexpr size_t kIpv4MinBytes = 20;
constexpr size_t kIpv6Bytes = 40;
constexpr size_t kUdpBytes = 8;
// The driver whose ports have one queue each (doc/udp-driver.md).
constexpr const char* kUdpDriver = "udp";
// Source ports a udp port binds when source_ports= is not given.
constexpr uint64_t kUdpDefaultSourcePorts = 64;

uint16_t Be16(std::span<const uint8_t> d, size_t off) {
  return static_cast<uint16_t>((d[off] << 8) | d[off + 1]);
}

// Replaces the value of @p key in @p args (appends it if missing).
void Set(port::PortArgs* args, const std::string& key, const std::string& value) {
  for (auto& [k, v] : args->kv) {
    if (k == key) {
      v = value;
      return;
    }
  }
  args->kv.emplace_back(key, value);
}

absl::Status Bad(const std::string& key, const std::string& value, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("runtime: port argument ", key, "='", value, "': ", why));
}

}  // namespace

bool UdpDstPort(transport::Framing framing, const port::RxPacket& p, uint16_t* port) {
  if (framing == transport::Framing::kUdp) {
    *port = p.addr.dst_port;
    return true;
  }
  const std::span<const uint8_t> d = p.data;
  if (d.size() < kEthBytes) return false;
  uint16_t type = Be16(d, 12);
  size_t off = kEthBytes;
  if (type == kEtherVlan) {
    if (d.size() < off + kVlanBytes) return false;
    type = Be16(d, off + 2);
    off += kVlanBytes;
  }
  if (type == kEtherIpv4) {
    if (d.size() < off + kIpv4MinBytes || (d[off] >> 4) != 4 || d[off + 9] != kProtoUdp) {
      return false;
    }
    const size_t ihl = size_t{d[off] & 0x0fu} * 4;
    if (ihl < kIpv4MinBytes) return false;
    off += ihl;
  } else if (type == kEtherIpv6) {
    if (d.size() < off + kIpv6Bytes || (d[off] >> 4) != 6 || d[off + 6] != kProtoUdp) {
      return false;
    }
    off += kIpv6Bytes;
  } else {
    return false;
  }
  if (d.size() < off + kUdpBytes) return false;
  *port = Be16(d, off + 2);
  return true;
}

int ShardOf(transport::Framing framing, const port::RxPacket& p, uint16_t base,
            uint16_t num_shards) {
  uint16_t dst = 0;
  if (!UdpDstPort(framing, p, &dst) || dst < base) return -1;
  const uint32_t i = uint32_t{dst} - base;
  return i < num_shards ? static_cast<int>(i) : -1;
}

bool PortPerShard(const std::string& driver) { return driver == kUdpDriver; }

std::string JoinSpec(const port::PortArgs& args) {
  std::string s = args.driver;
  for (size_t i = 0; i < args.kv.size(); i++) {
    absl::StrAppend(&s, i == 0 ? ":" : ",", args.kv[i].first, "=", args.kv[i].second);
  }
  return s;
}

absl::StatusOr<std::string> ShardPortSpec(const port::PortArgs& args, uint16_t index) {
  port::PortArgs a = args;
  uint64_t v = 0;
  // Bad values are left for the driver to name; only what we shift must be a number.
  const std::string port = a.Get("port", std::to_string(wire::kDefaultUdpPort));
  if (port::ParseUintArg(port, 0, 65535, &v) && v != 0) {
    if (v + index > 65535) {
      return Bad("port", port,
                 absl::StrCat("shard ", index, " would receive on ", v + index, ", past 65535"));
    }
    Set(&a, "port", std::to_string(v + index));
  }
  if (a.Has("first_source_port")) {
    const std::string first = a.Get("first_source_port");
    uint64_t k = kUdpDefaultSourcePorts;
    if (a.Has("source_ports") && !port::ParseUintArg(a.Get("source_ports"), 1, 65535, &k)) {
      return JoinSpec(a);  // not a count: the driver names the bad value
    }
    if (port::ParseUintArg(first, 1, 65535, &v)) {
      const uint64_t shifted = v + uint64_t{index} * k;
      if (shifted + k - 1 > 65535) {
        return Bad("first_source_port", first,
                   absl::StrCat("shard ", index, " would bind source ports ", shifted, "..",
                                shifted + k - 1, ", past 65535"));
      }
      Set(&a, "first_source_port", std::to_string(shifted));
    }
  }
  return JoinSpec(a);
}

absl::StatusOr<std::string> SharedPortSpec(const port::PortArgs& args, uint16_t num_shards) {
  port::PortArgs a = args;
  if (a.Has("queues")) {
    const std::string q = a.Get("queues");
    uint64_t v = 0;
    if (!port::ParseUintArg(q, 1, 65535, &v) || v != num_shards) {
      return Bad("queues", q,
                 absl::StrCat("must equal lcores=", num_shards, " (each shard polls one queue)"));
    }
  } else if (num_shards > 1) {
    Set(&a, "queues", std::to_string(num_shards));
  }
  return JoinSpec(a);
}

uint64_t ShardCapacityMbps(uint64_t host_mbps, const ShardDemand& mine, const ShardDemand& all,
                           uint16_t num_shards) {
  using u128 = unsigned __int128;
  const uint64_t senders = uint64_t{all.wanting} + all.limited;
  const uint64_t my_senders = uint64_t{mine.wanting} + mine.limited;
  uint64_t part = 0;
  if (senders == 0) {
    part = host_mbps / std::max<uint16_t>(num_shards, 1);
  } else if (my_senders == 0) {
    part = host_mbps / (senders + 1);
  } else {
    const uint64_t spare = host_mbps - std::min(all.limited_mbps, host_mbps);
    const uint64_t mine_used = std::min(mine.limited_mbps, all.limited_mbps);
    part = all.wanting != 0
               ? mine_used + static_cast<uint64_t>(u128{spare} * mine.wanting / all.wanting)
               : mine_used + static_cast<uint64_t>(u128{spare} * my_senders / senders);
  }
  return std::clamp<uint64_t>(part, 1, host_mbps == 0 ? 1 : host_mbps);
}

absl::StatusOr<transport::EngineConfig> ShardEngineConfig(const transport::EngineConfig& base,
                                                          const port::PortInfo& info,
                                                          uint16_t udp_port, uint16_t index) {
  absl::StatusOr<transport::EngineConfig> ec = port::EngineConfigFor(base, info, udp_port);
  if (!ec.ok()) return ec.status();
  ec->seed = base.seed == 0 ? 0 : base.seed + index;  // 0: every shard keyed by the OS
  return ec;
}

}  // namespace metaroce::runtime
