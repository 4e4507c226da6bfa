/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Parsing and checking of the dpdk driver's arguments (no EAL needed).

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "mr_net_dpdk.h"

namespace metaroce::dpdk {
namespace {

constexpr const char* kKeys = "eal, port, ip, mac, udp_port, queues, mbufs, mtu, neigh, csum";

absl::Status Bad(const std::string& key, const std::string& value, const std::string& allowed) {
  return absl::InvalidArgumentError(
      absl::StrCat("dpdk: ", key, "='", value, "' is not allowed: ", allowed));
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "AA:BB:CC:DD:EE:FF" (or '-' between the octets); a unicast, non-zero address.
bool ParseMac(const std::string& text, wire::MacAddr* out) {
  if (text.size() != 17) return false;
  wire::MacAddr m;
  for (size_t i = 0; i < 6; i++) {
    const int hi = HexDigit(text[i * 3]);
    const int lo = HexDigit(text[i * 3 + 1]);
    if (hi < 0 || lo < 0) return false;
    if (i < 5 && text[i * 3 + 2] != ':' && text[i * 3 + 2] != '-') return false;
    m.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  if ((m.bytes[0] & 1) != 0 || m == wire::MacAddr{}) return false;
  *out = m;
  return true;
}

// A device name DPDK accepts: printable, no separators.
bool ValidPortName(const std::string& text) {
  if (text.empty() || text.size() >= 64) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return c > ' ' && c < 127 && c != ',' && c != ';' && c != '|'; });
}

// "IP@MAC;IP@MAC": static neighbours; an empty string when they are fine, else what is wrong.
std::string ParseNeigh(const std::string& value, std::vector<StaticNeigh>* out) {
  for (absl::string_view item : absl::StrSplit(value, ';', absl::SkipEmpty())) {
    const size_t at = item.rfind('@');
    StaticNeigh n;
    if (at == absl::string_view::npos ||
        !wire::IpAddr::Parse(std::string(item.substr(0, at)), &n.ip) || n.ip.IsUnspecified() ||
        !ParseMac(std::string(item.substr(at + 1)), &n.mac)) {
      return absl::StrCat("'", item, "' is not IP@MAC");
    }
    for (const StaticNeigh& o : *out) {
      if (o.ip == n.ip) return absl::StrCat(n.ip.ToString(), " is given twice");
    }
    if (out->size() == kMaxStaticNeigh) {
      return absl::StrCat("more than ", kMaxStaticNeigh, " entries");
    }
    out->push_back(n);
  }
  return out->empty() ? "no entries" : "";
}

}  // namespace

absl::StatusOr<DpdkArgs> ParseDpdkArgs(const port::PortArgs& args) {
  DpdkArgs a;
  std::set<std::string> seen;
  bool have_ip = false;
  for (const auto& [key, value] : args.kv) {
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("dpdk: ", key, " is given twice"));
    }
    uint64_t v = 0;
    if (key == "eal") {
      std::string text = value;
      std::replace(text.begin(), text.end(), '|', ',');
      for (absl::string_view w : absl::StrSplit(text, absl::ByAnyChar(" ;"), absl::SkipEmpty())) {
        a.eal.emplace_back(w);
      }
      if (a.eal.empty()) {
        return Bad(key, value, "EAL arguments separated by spaces or ';' ('|' for ',')");
      }
    } else if (key == "port") {
      if (port::ParseUintArg(value, 0, 65535, &v)) {
        a.port = std::to_string(v);
      } else if (!value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
        return Bad(key, value, "an ethdev port id 0..65535 or a device name");
      } else if (!ValidPortName(value)) {
        return Bad(key, value, "an ethdev port id 0..65535 or a device name (e.g. net_ring0)");
      } else {
        a.port = value;
      }
    } else if (key == "ip") {
      if (!wire::IpAddr::Parse(value, &a.ip)) return Bad(key, value, "an IPv4 or IPv6 address");
      if (a.ip.IsUnspecified()) return Bad(key, value, "a specific address, not the wildcard");
      have_ip = true;
    } else if (key == "mac") {
      if (value == "auto") {
        a.mac_auto = true;
      } else if (ParseMac(value, &a.mac)) {
        a.mac_auto = false;
      } else {
        return Bad(key, value, "auto, or a unicast non-zero address AA:BB:CC:DD:EE:FF");
      }
    } else if (key == "udp_port") {
      if (!port::ParseUintArg(value, 1, 65535, &v)) return Bad(key, value, "a UDP port 1..65535");
      a.udp_port = static_cast<uint16_t>(v);
    } else if (key == "queues") {
      if (!port::ParseUintArg(value, 1, kMaxQueues, &v)) {
        return Bad(key, value, absl::StrCat("a count 1..", kMaxQueues));
      }
      a.queues = static_cast<uint16_t>(v);
    } else if (key == "mbufs") {
      if (!port::ParseUintArg(value, kMinMbufs, kMaxMbufs, &v)) {
        return Bad(key, value, absl::StrCat("a count ", kMinMbufs, "..", kMaxMbufs));
      }
      a.mbufs = static_cast<uint32_t>(v);
    } else if (key == "mtu") {
      if (!port::ParseUintArg(value, kMinMtu, kMaxMtu, &v)) {
        return Bad(key, value, absl::StrCat("bytes ", kMinMtu, "..", kMaxMtu));
      }
      a.mtu = static_cast<uint32_t>(v);
    } else if (key == "csum") {
      if (value != "auto" && value != "off") return Bad(key, value, "auto or off");
      a.csum_offload = value == "auto";
    } else if (key == "neigh") {
      if (std::string why = ParseNeigh(value, &a.neigh); !why.empty()) {
        return Bad(key, value,
                   absl::StrCat("IP@MAC entries separated by ';' (e.g. 10.0.0.2@02:00:00:00:00:02;"
                                "[2001:db8::2]@02:00:00:00:00:03), each a specific address once "
                                "with a unicast non-zero MAC, at most ",
                                kMaxStaticNeigh, "; ", why));
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("dpdk: unknown argument '", key, "'; allowed: ", kKeys));
    }
  }
  if (!have_ip) {
    return absl::InvalidArgumentError(
        "dpdk: ip= is required (this port's address, e.g. dpdk:port=0,ip=192.0.2.1)");
  }
  // Every queue keeps its receive ring full and has a transmit ring in flight.
  const uint64_t need = uint64_t{a.queues} * (kRxDescriptors + kTxDescriptors) + 1024;
  if (a.mbufs < need) {
    return Bad("mbufs", std::to_string(a.mbufs),
               absl::StrCat("at least ", need, " for queues=", a.queues, " (", kRxDescriptors,
                            " receive + ", kTxDescriptors,
                            " transmit descriptors per queue + 1024 in flight)"));
  }
  return a;
}

}  // namespace metaroce::dpdk
