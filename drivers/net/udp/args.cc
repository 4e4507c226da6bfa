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
      if (!wire::IpAddr::Parse(value, &a.ip))
        return Bad(key, value, "an IPv4 or IPv6 address of this host");
      if (a.ip.IsUnspecified()) {
        return Bad(key, value, "a specific address of this host, not the wildcard");
      }
      have_ip = true;
    } else if (key == "port") {
      if (!port::ParseUintArg(value, 0, 65535, &v)) {
        return Bad(key, value, "a UDP port 1..65535, or 0 for one the kernel picks");
      }
      a.port = static_cast<uint16_t>(v);
    } else if (key == "source_ports") {
      if (!port::ParseUintArg(value, 1, kMaxSourcePorts, &v)) {
        return Bad(key, value, absl::StrCat("a count 1..", kMaxSourcePorts));
      }
      a.source_ports = static_cast<uint32_t>(v);
    } else if (key == "first_source_port") {
      if (!port::ParseUintArg(value, 1, 65535, &v)) return Bad(key, value, "a UDP port 1..65535");
      a.first_source_port = static_cast<uint16_t>(v);
    } else if (key == "busy_poll") {
      if (!port::ParseUintArg(value, 0, 1000000, &v)) {
        return Bad(key, value, "microseconds 0..1000000 (SO_BUSY_POLL)");
      }
      a.busy_poll_us = static_cast<uint32_t>(v);
    } else if (key == "rcvbuf" || key == "sndbuf") {
      if (!port::ParseUintArg(value, 4096, 1u << 30, &v)) {
        return Bad(key, value, "bytes 4096..1073741824");
      }
      (key == "rcvbuf" ? a.rcvbuf_bytes : a.sndbuf_bytes) = static_cast<uint32_t>(v);
    } else if (key == "queues") {
      if (!port::ParseUintArg(value, 1, 1, &v)) return Bad(key, value, "1 (one receive socket)");
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
