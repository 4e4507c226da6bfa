/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

// Parsing and checking of the udp driver's arguments.

#include <arpa/inet.h>

#include <cstring>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "mr_net_udp.h"

namespace metaroce::udp {
namespace {

constexpr const char* kKeys =
    "ip, port, source_ports, first_source_port, busy_poll, rcvbuf, "
    "sndbuf, queues";

absl::Status Bad(const std::string& key, const std::string& value, const std::string& allowed) {
  return absl::InvalidArgumentError(
      absl::StrCat("udp: ", key, "='", value, "' is not allowed: ", allowed));
}

// An unsigned decimal in [lo, hi].
bool ParseUint(const std::string& text, uint64_t lo, uint64_t hi, uint64_t* out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  uint64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ParseIp(std::string text, wire::IpAddr* out) {
  if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  in_addr a4;
  if (inet_pton(AF_INET, text.c_str(), &a4) == 1) {
    const auto* b = reinterpret_cast<const uint8_t*>(&a4.s_addr);
    *out = wire::IpAddr::V4(b[0], b[1], b[2], b[3]);
    return true;
  }
  in6_addr a6;
  if (inet_pton(AF_INET6, text.c_str(), &a6) == 1) {
    std::array<uint8_t, 16> b;
    std::memcpy(b.data(), a6.s6_addr, 16);
    *out = wire::IpAddr::V6(b);
    return true;
  }
  return false;
}

bool IsWildcard(const wire::IpAddr& ip) {
  return ip == (ip.v6 ? wire::IpAddr::V6({}) : wire::IpAddr::V4(0, 0, 0, 0));
}

}  // namespace

absl::StatusOr<UdpArgs> ParseUdpArgs(const port::PortArgs& args) {
  UdpArgs a;
  std::set<std::string> seen;
  bool have_ip = false;
  for (const auto& [key, value] : args.kv) {
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("udp: ", key, " is given twice"));
    }
    uint64_t v = 0;
    if (key == "ip") {
      if (!ParseIp(value, &a.ip)) return Bad(key, value, "an IPv4 or IPv6 address of this host");
      if (IsWildcard(a.ip)) {
        return Bad(key, value, "a specific address of this host, not the wildcard");
      }
      have_ip = true;
    } else if (key == "port") {
      if (!ParseUint(value, 0, 65535, &v)) {
        return Bad(key, value, "a UDP port 1..65535, or 0 for one the kernel picks");
      }
      a.port = static_cast<uint16_t>(v);
    } else if (key == "source_ports") {
      if (!ParseUint(value, 1, kMaxSourcePorts, &v)) {
        return Bad(key, value, absl::StrCat("a count 1..", kMaxSourcePorts));
      }
      a.source_ports = static_cast<uint32_t>(v);
    } else if (key == "first_source_port") {
      if (!ParseUint(value, 1, 65535, &v)) return Bad(key, value, "a UDP port 1..65535");
      a.first_source_port = static_cast<uint16_t>(v);
    } else if (key == "busy_poll") {
      if (!ParseUint(value, 0, 1000000, &v)) {
        return Bad(key, value, "microseconds 0..1000000 (SO_BUSY_POLL)");
      }
      a.busy_poll_us = static_cast<uint32_t>(v);
    } else if (key == "rcvbuf" || key == "sndbuf") {
      if (!ParseUint(value, 4096, 1u << 30, &v)) {
        return Bad(key, value, "bytes 4096..1073741824");
      }
      (key == "rcvbuf" ? a.rcvbuf_bytes : a.sndbuf_bytes) = static_cast<uint32_t>(v);
    } else if (key == "queues") {
      if (!ParseUint(value, 1, 1, &v)) return Bad(key, value, "1 (one receive socket)");
      a.queues = 1;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("udp: unknown argument '", key, "'; allowed: ", kKeys));
    }
  }
  if (!have_ip) {
    return absl::InvalidArgumentError(
        "udp: ip= is required (the address to bind, e.g. udp:ip=127.0.0.1)");
  }
  if (a.first_source_port != 0) {
    const uint32_t last = uint32_t{a.first_source_port} + a.source_ports - 1;
    if (last > 65535) {
      return Bad(
          "first_source_port", std::to_string(a.first_source_port),
          absl::StrCat("first_source_port + source_ports - 1 <= 65535 (last would be ", last, ")"));
    }
    if (a.port != 0 && a.port >= a.first_source_port && a.port <= last) {
      return Bad("first_source_port", std::to_string(a.first_source_port),
                 absl::StrCat("a range ", a.first_source_port, "..", last,
                              " that does not contain port=", a.port));
    }
  }
  return a;
}

}  // namespace metaroce::udp
