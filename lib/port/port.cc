/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "mr_port.h"
#include "mr_wire.h"

namespace metaroce::port {
namespace {

std::vector<const PortDriver*>& Registry() {
  static std::vector<const PortDriver*> drivers;
  return drivers;
}

}  // namespace

absl::StatusOr<PortArgs> PortArgs::Parse(const std::string& text) {
  PortArgs a;
  const size_t colon = text.find(':');
  a.driver = text.substr(0, colon);
  if (a.driver.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("port '", text, "': give a driver name first, e.g. udp:ip=127.0.0.1"));
  }
  if (colon == std::string::npos || colon + 1 == text.size()) return a;
  for (absl::string_view item : absl::StrSplit(text.substr(colon + 1), ',')) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("port '", text, "': '", item, "' is not key=value"));
    }
    a.kv.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
  }
  return a;
}

std::string PortArgs::Get(const std::string& key, const std::string& fallback) const {
  for (const auto& [k, v] : kv) {
    if (k == key) return v;
  }
  return fallback;
}

bool PortArgs::Has(const std::string& key) const {
  return std::any_of(kv.begin(), kv.end(), [&](const auto& p) { return p.first == key; });
}

bool ParseUintArg(const std::string& text, uint64_t lo, uint64_t hi, uint64_t* out) {
  if (text.empty() || text.size() > 20 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

void RegisterDriver(const PortDriver* driver) { Registry().push_back(driver); }

std::vector<const PortDriver*> Drivers() { return Registry(); }

absl::StatusOr<std::unique_ptr<Port>> OpenPort(const std::string& spec) {
  auto args = PortArgs::Parse(spec);
  if (!args.ok()) return args.status();
  std::vector<std::string> names;
  for (const PortDriver* d : Registry()) {
    if (args->driver == d->name) return d->create(*args);
    names.push_back(d->name);
  }
  return absl::NotFoundError(absl::StrCat("no port driver '", args->driver,
                                          "'; drivers built in: ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<transport::EngineConfig> EngineConfigFor(const transport::EngineConfig& base,
                                                        const PortInfo& info, uint16_t udp_port) {
  transport::EngineConfig ec = base;
  ec.local_ip = info.ip;
  ec.local_mac = info.mac;
  ec.framing = info.framing;
  ec.udp_port = udp_port;
  ec.source_ports = info.source_ports;
  if (info.max_frame_bytes == 0) return ec;  // the port takes any size
  const size_t encap = info.framing == transport::Framing::kEthernet
                           ? wire::kEthHeaderBytes +
                                 (info.ip.v6 ? wire::kIpv6HeaderBytes : wire::kIpv4HeaderBytes) +
                                 wire::kUdpHeaderBytes
                           : 0;
  const size_t overhead =
      encap + wire::PayloadOffset(wire::PacketType::kWriteImm) + wire::kCrcBytes;
  if (info.max_frame_bytes < overhead + wire::kMinConnPayloadBytes) {
    return absl::InvalidArgumentError(absl::StrCat(info.driver, " port frames of ",
                                                   info.max_frame_bytes,
                                                   " bytes are too small for MetaRoCE packets"));
  }
  ec.max_payload =
      static_cast<uint16_t>(std::min<size_t>(ec.max_payload, info.max_frame_bytes - overhead));
  return ec;
}

absl::Status AddPlanes(std::span<const PortInfo* const> planes, transport::EngineConfig* ec) {
  const PortInfo& first = *planes[0];
  ec->extra_planes.clear();
  for (size_t k = 1; k < planes.size(); k++) {
    const PortInfo& info = *planes[k];
    auto bad = [&](auto... why) {
      return absl::InvalidArgumentError(absl::StrCat("plane ", k, " (", info.driver, " port ",
                                                     info.ip.ToString(), "): ", why...));
    };
    if (info.framing != first.framing) return bad("its driver frames packets unlike plane 0's");
    if (info.ip.v6 != first.ip.v6) {
      return bad("its address must be ", first.ip.v6 ? "IPv6" : "IPv4", " like plane 0's");
    }
    if (info.udp_port != first.udp_port) {
      return bad("it receives on UDP port ", info.udp_port, ", plane 0 on ", first.udp_port,
                 ": a peer sends every plane's packets to one port number");
    }
    if (info.source_ports != first.source_ports) {
      return bad("its source ports differ from plane 0's: give every plane the same ",
                 "first_source_port and source_ports");
    }
    auto plane_ec = EngineConfigFor(*ec, info, ec->udp_port);
    if (!plane_ec.ok()) return plane_ec.status();
    ec->max_payload = std::min(ec->max_payload, plane_ec->max_payload);
    ec->extra_planes.push_back(transport::PlaneAddr{info.ip, info.mac});
  }
  return absl::OkStatus();
}

}  // namespace metaroce::port
