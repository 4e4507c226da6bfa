/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

#include "describe.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace metaroce::decode {
namespace {

using wire::PacketClass;
using wire::PacketType;

const char* EcnName(wire::Ecn e) {
  switch (e) {
    case wire::Ecn::kNotEct: return "Not-ECT";
    case wire::Ecn::kEct1: return "ECT(1)";
    case wire::Ecn::kEct0: return "ECT(0)";
    case wire::Ecn::kCe: return "CE";
  }
  return "?";
}

std::string Hex(std::span<const uint8_t> b) {
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t c : b) absl::StrAppendFormat(&s, "%02x", c);
  return s;
}

std::string SackHex(const wire::AckBody& a) {
  std::string s;
  for (uint64_t w : a.sack) absl::StrAppendFormat(&s, "%016x", w);
  return s;
}

// (key, value) pairs of the metaroce.* fields, shared by text and JSON output.
// Values are numbers unless quoted is set.
struct Field {
  std::string key;
  std::string value;
  bool quoted = false;
  std::string text;  ///< how the text form shows it, where that differs (an address)
};

std::vector<Field> Fields(const wire::Packet& p) {
  std::vector<Field> v;
  auto num = [&v](const char* k, uint64_t x) { v.push_back({k, absl::StrCat(x), false}); };
  num("metaroce.version", wire::kVersion);
  num("metaroce.type", static_cast<uint8_t>(p.type));
  num("metaroce.flags", p.flags);
  num("metaroce.conn_id", p.dst_conn_id);
  num("metaroce.path_id", p.path_id);
  num("metaroce.payload_len", wire::PayloadFieldBytes(p));
  switch (wire::ClassOf(p.type)) {
    case PacketClass::kData: {
      const auto& d = p.data;
      num("metaroce.psn", d.psn);
      num("metaroce.una_psn", d.una_psn);
      num("metaroce.tx_ts", d.tx_ts_ns);
      num("metaroce.stream_id", d.stream_id);
      num("metaroce.msn", d.msn);
      num("metaroce.msg_len", d.msg_len);
      num("metaroce.msg_offset", d.msg_offset);
      num("metaroce.src_stream", d.src_stream);
      if (wire::HasRdmaTarget(p.type)) {
        num("metaroce.rkey", d.rkey);
        num("metaroce.va", d.va);
      }
      if (wire::ConsumesReceive(p.type)) num("metaroce.recv_seq", d.recv_seq);
      if (wire::HasImmediate(p.type)) num("metaroce.imm", d.imm);
      if (wire::IsAtomicRequest(p.type)) {
        num("metaroce.operand0", d.operand0);
        num("metaroce.operand1", d.operand1);
      }
      if (p.type == PacketType::kAtomicResp) num("metaroce.orig", d.orig);
      break;
    }
    case PacketClass::kAck: {
      const auto& a = p.ack;
      num("metaroce.ack.cum_psn", a.cum_psn);
      num("metaroce.ack.echo_ts", a.echo_ts_ns);
      num("metaroce.ack.ack_delay", a.ack_delay_ns);
      num("metaroce.ack.rate_hint", a.rate_hint_mbps);
      num("metaroce.ack.rx_pkts", a.rx_pkts);
      num("metaroce.ack.ce_pkts", a.ce_pkts);
      num("metaroce.ack.num_stream_acks", a.num_stream_acks);
      if (a.has_sack) v.push_back({"metaroce.ack.sack", SackHex(a), true});
      for (size_t i = 0; i < a.num_stream_acks; i++) {
        num("metaroce.ack.stream_id", a.stream_acks[i].stream_id);
        num("metaroce.ack.msn_next", a.stream_acks[i].msn_next);
      }
      break;
    }
    case PacketClass::kNak:
      num("metaroce.nak.stream_id", p.nak.stream_id);
      num("metaroce.nak.msn", p.nak.msn);
      num("metaroce.nak.psn", p.nak.psn);
      num("metaroce.nak.code", static_cast<uint8_t>(p.nak.code));
      num("metaroce.nak.detail", p.nak.detail);
      num("metaroce.nak.rnr_delay", p.nak.rnr_delay_10us);
      num("metaroce.nak.first_chunk", p.nak.first_chunk);
      num("metaroce.nak.num_chunks", p.nak.num_chunks);
      break;
    case PacketClass::kProbe:
      num("metaroce.probe.seq", p.probe.probe_seq);
      num("metaroce.probe.ts", p.probe.ts_ns);
      break;
    case PacketClass::kConn: {
      const auto& c = p.conn;
      num("metaroce.conn.src_conn_id", c.src_conn_id);
      num("metaroce.conn.nonce", c.nonce);
      num("metaroce.conn.min_version", c.min_version);
      num("metaroce.conn.max_version", c.max_version);
      num("metaroce.conn.reason", static_cast<uint8_t>(c.reason));
      num("metaroce.conn.num_paths", c.num_paths);
      num("metaroce.conn.max_payload", c.max_payload);
      num("metaroce.conn.capabilities", c.capabilities);
      num("metaroce.conn.udp_port", c.udp_port);
      num("metaroce.conn.incarnation", c.incarnation);
      num("metaroce.conn.cookie", c.cookie);
      num("metaroce.conn.stream_window", c.stream_window);
      num("metaroce.conn.rate_hint", c.rate_hint_mbps);
      for (size_t i = 0; i < c.num_planes && i < c.plane_bytes.size(); i++) {
        v.push_back(
            {"metaroce.conn.plane", Hex(c.plane_bytes[i]), true, wire::ConnPlane(c, i).ToString()});
      }
      break;
    }
    case PacketClass::kInvalid: break;
  }
  if (!p.payload.empty()) v.push_back({"metaroce.payload", Hex(p.payload), true});
  return v;
}

std::string Endpoint(const wire::IpAddr& a, uint16_t port) {
  return a.v6 ? absl::StrCat("[", a.ToString(), "]:", port) : absl::StrCat(a.ToString(), ":", port);
}

}  // namespace

std::string DescribeText(const wire::FrameInfo& f, const wire::Packet& p) {
  std::string s =
      absl::StrCat(Endpoint(f.src, f.src_port), " > ", Endpoint(f.dst, f.dst_port), " ",
                   EcnName(f.ecn), " ", wire::PacketTypeName(static_cast<uint8_t>(p.type)));
  for (const Field& fld : Fields(p)) {
    if (fld.key == "metaroce.version" || fld.key == "metaroce.type") continue;
    std::string_view k = fld.key;
    k.remove_prefix(sizeof("metaroce.") - 1);
    std::string val = fld.text.empty() ? fld.value : fld.text;
    if (fld.quoted && val.size() > 32) val = absl::StrCat(val.substr(0, 32), "...");
    absl::StrAppend(&s, " ", std::string(k), "=", val);
  }
  if (p.type == PacketType::kNak) {
    absl::StrAppend(&s, " (", wire::NakCodeName(static_cast<uint8_t>(p.nak.code)), ")");
  }
  return s;
}

std::string DescribeJson(size_t frame_no, const wire::FrameInfo& f, const wire::Packet& p,
                         uint32_t crc) {
  std::vector<std::string> kv;
  kv.push_back(absl::StrCat("\"frame\":", frame_no));
  kv.push_back(absl::StrCat("\"ip.version\":", f.src.v6 ? 6 : 4));
  kv.push_back(absl::StrCat("\"ip.src\":\"", f.src.ToString(), "\""));
  kv.push_back(absl::StrCat("\"ip.dst\":\"", f.dst.ToString(), "\""));
  kv.push_back(absl::StrCat("\"ip.ecn\":", static_cast<int>(f.ecn)));
  kv.push_back(absl::StrCat("\"udp.srcport\":", f.src_port));
  kv.push_back(absl::StrCat("\"udp.dstport\":", f.dst_port));
  kv.push_back(absl::StrCat("\"metaroce.type_name\":\"",
                            wire::PacketTypeName(static_cast<uint8_t>(p.type)), "\""));
  // Repeated keys (ACK stream entries) become arrays, as tshark -T json
  // --no-duplicate-keys prints them.
  std::vector<std::pair<std::string, std::vector<std::string>>> grouped;
  for (const Field& fld : Fields(p)) {
    std::string val = fld.quoted ? absl::StrCat("\"", fld.value, "\"") : fld.value;
    auto it = std::find_if(grouped.begin(), grouped.end(),
                           [&](const auto& g) { return g.first == fld.key; });
    if (it == grouped.end()) {
      grouped.push_back({fld.key, {val}});
    } else {
      it->second.push_back(val);
    }
  }
  for (const auto& [k, vals] : grouped) {
    const bool repeated = k == "metaroce.ack.stream_id" || k == "metaroce.ack.msn_next";
    kv.push_back(repeated ? absl::StrCat("\"", k, "\":[", absl::StrJoin(vals, ","), "]")
                          : absl::StrCat("\"", k, "\":", vals[0]));
  }
  kv.push_back(absl::StrCat("\"metaroce.crc\":", crc));
  return absl::StrCat("{", absl::StrJoin(kv, ","), "}");
}

}  // namespace metaroce::decode
