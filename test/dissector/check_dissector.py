#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
"""Checks the Wireshark dissector (usertools/wireshark/metaroce.lua) against mr-decode.

usage: check_dissector.py MR_DECODE TSHARK METAROCE_LUA

mr-decode decodes with the dataplane's own parser, so its JSON output is the
reference. The checks, each printing one summary line:
  sample      mr-decode --sample writes a capture with every packet type
  reference   mr-decode --json decodes every frame of it
  fields      tshark with the dissector shows every metaroce.* key mr-decode
              printed, with the same value (repeated keys as lists), in every frame
  extra       the dissector shows no metaroce.* field mr-decode does not print
              (besides flag bits, reserved bytes and metaroce.crc.status)
  crc         metaroce.crc.status is "good" and there is no expert info
  info        the Info column starts with the type name and shows the path
  v1          the sample has every v1 feature (CONN_RETRY with a cookie, NAK RESEND,
              MSG_PROBE) and every frame shows its type's v1 fields; the flag bits
              match metaroce.flags
  rules       datagrams breaking one v1 field rule each (CRC resealed) get the
              expert info for that rule, and show the offending value
  port        the dissector follows the metaroce.udp_port preference
  bad_crc     one flipped payload byte makes metaroce.crc.status "bad", with expert info
  malformed   truncated and malformed datagrams are marked malformed, without a Lua error
  snaplen     frames cut short by the capture are dissected without a Lua error

Exits 0 if all pass, 1 with a message naming the frame and field otherwise.
tshark runs with HOME pointing at a temporary directory, so personal
preferences and personally installed plugins do not affect the result.
"""

import collections
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

PCAP_MAGICS = (0xA1B2C3D4, 0xA1B23C4D)  # microsecond, nanosecond timestamps
LINKTYPE_ETHERNET = 1
DEFAULT_PORT = 4792
OTHER_PORT = 4793

# Hex-string keys of mr-decode whose tshark values are FT_BYTES ("aa:bb:...").
BYTES_KEYS = {"metaroce.ack.sack", "metaroce.payload", "metaroce.conn.plane"}
# Fields the dissector may show that mr-decode does not print.
EXTRA_OK = {"metaroce.crc.status", "metaroce.reserved"}
EXTRA_OK_PREFIXES = ("metaroce.flags.",)
# Fields wire v1 added, by the class of packet that carries them (doc/spec.md 4).
V1_FIELDS = {
    "data": ("metaroce.src_stream",),
    "nak": ("metaroce.nak.first_chunk", "metaroce.nak.num_chunks"),
    "conn": ("metaroce.conn.incarnation", "metaroce.conn.cookie", "metaroce.conn.stream_window"),
}
DATA_TYPES = {"WRITE", "WRITE_IMM", "SEND", "SEND_IMM", "READ_REQ", "READ_RESP", "ATOMIC_FA",
              "ATOMIC_CS", "ATOMIC_RESP"}
REQUEST_TYPES = DATA_TYPES - {"READ_RESP", "ATOMIC_RESP"}
# Flag bits: (tshark field, mask).
FLAG_BITS = (("metaroce.flags.ack_req", 0x01), ("metaroce.flags.solicited", 0x02),
             ("metaroce.flags.retransmit", 0x04), ("metaroce.flags.ece", 0x08),
             ("metaroce.flags.sack", 0x10), ("metaroce.flags.msg_probe", 0x20),
             ("metaroce.flags.idle", 0x40))
FLAG_MSG_PROBE = 0x20
NAK_RESEND = 5
MAX_MESSAGE_BYTES = 1 << 31
# Offsets in the MetaRoCE datagram (common header 12 bytes, then the type header).
BODY = 12
# Expert infos that mark a MetaRoCE packet as malformed.
MALFORMED_EXPERTS = {
    "metaroce.expert.truncated",
    "metaroce.expert.bad_length",
    "metaroce.expert.bad_version",
    "metaroce.expert.bad_type",
    "metaroce.expert.bad_ack_ext",
}

Record = collections.namedtuple("Record", "ts_sec ts_frac data orig_len")


class CheckFailed(Exception):
    pass


def fail(msg):
    raise CheckFailed(msg)


def report(name, msg):
    print(f"PASS {name:<10} {msg}", flush=True)


# ---------------------------------------------------------------------------
# pcap files: 24-byte file header, then per record a 16-byte header
# (ts_sec, ts_frac, incl_len, orig_len) and incl_len bytes.


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        fail(f"{path}: {len(data)} bytes is too short for a pcap file header")
    if struct.unpack("<I", data[:4])[0] in PCAP_MAGICS:
        endian = "<"
    elif struct.unpack(">I", data[:4])[0] in PCAP_MAGICS:
        endian = ">"
    else:
        fail(f"{path}: not a classic pcap file (magic {data[:4].hex()})")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != LINKTYPE_ETHERNET:
        fail(f"{path}: link type {linktype}, expected Ethernet ({LINKTYPE_ETHERNET})")
    records = []
    off = 24
    while off < len(data):
        if off + 16 > len(data):
            fail(f"{path}: truncated record header at byte {off}")
        ts_sec, ts_frac, incl, orig = struct.unpack(endian + "IIII", data[off:off + 16])
        body = data[off + 16:off + 16 + incl]
        if len(body) != incl:
            fail(f"{path}: record {len(records) + 1} truncated")
        records.append(Record(ts_sec, ts_frac, body, orig))
        off += 16 + incl
    return data[:24], endian, records


def write_pcap(path, file_header, endian, records):
    with open(path, "wb") as f:
        f.write(file_header)
        for r in records:
            f.write(struct.pack(endian + "IIII", r.ts_sec, r.ts_frac, len(r.data), r.orig_len))
            f.write(r.data)


# ---------------------------------------------------------------------------
# Ethernet / 802.1Q / IPv4 / IPv6 / UDP


def udp_header_offset(frame):
    """Offset of the UDP header in an Ethernet frame, and the IP version."""
    if len(frame) < 14:
        fail(f"frame of {len(frame)} bytes has no Ethernet header")
    off = 12
    ether_type = struct.unpack(">H", frame[off:off + 2])[0]
    off += 2
    if ether_type == 0x8100:
        ether_type = struct.unpack(">H", frame[off + 2:off + 4])[0]
        off += 4
    if ether_type == 0x0800:
        ihl = (frame[off] & 0x0F) * 4
        proto, version, udp = frame[off + 9], 4, off + ihl
    elif ether_type == 0x86DD:
        proto, version, udp = frame[off + 6], 6, off + 40
    else:
        fail(f"frame with EtherType 0x{ether_type:04x} is not IP")
    if proto != 17:
        fail(f"frame carries IP protocol {proto}, not UDP")
    return udp, version


def udp_datagram(frame):
    """(offset of the UDP payload, the UDP payload) of an Ethernet frame."""
    udp, _ = udp_header_offset(frame)
    udp_len = struct.unpack(">H", frame[udp + 4:udp + 6])[0]
    return udp + 8, frame[udp + 8:udp + udp_len]


def crc32c(data):
    """CRC-32C (Castagnoli), as the MetaRoCE trailer."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def edited(datagram, off, fmt, value):
    """The datagram with one big-endian field replaced and the CRC resealed."""
    b = bytearray(datagram)
    struct.pack_into(">" + fmt, b, off, value)
    b[-4:] = struct.pack(">I", crc32c(bytes(b[:-4])))
    return bytes(b)


def ipv4_checksum(header):
    s = 0
    for i in range(0, len(header), 2):
        s += (header[i] << 8) | header[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def with_datagram(frame, datagram):
    """The untagged IPv4 frame with its UDP payload replaced (lengths fixed, no UDP checksum)."""
    udp, version = udp_header_offset(frame)
    if version != 4 or udp != 34:
        fail("with_datagram needs an untagged IPv4 frame without IP options")
    ip = bytearray(frame[14:34])
    ip[2:4] = struct.pack(">H", 20 + 8 + len(datagram))
    ip[10:12] = b"\0\0"
    ip[10:12] = struct.pack(">H", ipv4_checksum(ip))
    udp_hdr = frame[34:38] + struct.pack(">HH", 8 + len(datagram), 0)
    out = frame[:14] + bytes(ip) + udp_hdr + datagram
    return out + bytes(max(0, 60 - len(out)))  # Ethernet minimum frame


def with_dst_port(frame, port):
    udp, _ = udp_header_offset(frame)
    return frame[:udp + 2] + struct.pack(">H", port) + frame[udp + 4:]


# ---------------------------------------------------------------------------
# Running the tools


def run(cmd, env=None):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    except OSError as e:
        fail(f"cannot run {cmd[0]}: {e}")
    if proc.returncode != 0:
        fail(f"{' '.join(cmd)} exited with {proc.returncode}:\n{proc.stderr.strip()}")
    return proc


class Tshark:
    def __init__(self, tshark, lua, tmp):
        self.tshark = tshark
        self.lua = lua
        home = os.path.join(tmp, "home")
        os.makedirs(home, exist_ok=True)
        self.env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"))

    def _run(self, pcap, args):
        cmd = [self.tshark, "-n", "-X", "lua_script:" + self.lua, *args, "-r", pcap]
        proc = run(cmd, env=self.env)
        if "Lua: Error" in proc.stderr or "lua_script" in proc.stderr:
            fail(f"tshark could not load {self.lua}:\n{proc.stderr.strip()}")
        return proc

    def frames(self, pcap, prefs=()):
        """Frame number -> Decoded, for every frame of the capture."""
        args = []
        for p in prefs:
            args += ["-o", p]
        proc = self._run(pcap, args + ["-T", "json", "--no-duplicate-keys"])
        try:
            packets = json.loads(proc.stdout)
        except json.JSONDecodeError as e:
            fail(f"tshark -T json output is not JSON: {e}")
        out = {}
        for pkt in packets:
            layers = pkt["_source"]["layers"]
            number = int(layers["frame"]["frame.number"])
            out[number] = Decoded(layers)
        return out

    def info_column(self, pcap):
        proc = self._run(pcap, ["-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info",
                                "-E", "separator=/t"])
        out = {}
        for line in proc.stdout.splitlines():
            number, _, info = line.partition("\t")
            out[int(number)] = info
        return out


def collect(key, value, into):
    """Every (key, string value) of a tshark JSON tree, in document order."""
    if isinstance(value, dict):
        for k, v in value.items():
            collect(k, v, into)
    elif isinstance(value, list):
        for v in value:
            collect(key, v, into)
    elif isinstance(value, str):
        into.setdefault(key, []).append(value)


class Decoded:
    """The MetaRoCE part of one frame as tshark showed it."""

    def __init__(self, layers):
        everything = {}
        collect("", layers, everything)
        self.lua_errors = [m for m in everything.get("_ws.expert.message", [])
                           if m.startswith("Lua Error")]
        if "_ws.lua.error" in everything and not self.lua_errors:
            self.lua_errors = ["Lua Error (no message)"]
        self.malformed = "_ws.malformed" in everything
        self.present = "metaroce" in layers
        mine = {}
        if self.present:
            collect("metaroce", layers["metaroce"], mine)
        self.fields = {k: v for k, v in mine.items()
                       if k.startswith("metaroce.") and not k.startswith("metaroce.expert.")}
        self.experts = sorted(k for k in mine if k.startswith("metaroce.expert."))
        self.expert_messages = mine.get("_ws.expert.message", [])

    def status(self):
        s = self.fields.get("metaroce.crc.status")
        return s[0] if s else None


def tshark_int(text):
    """An integer as tshark -T json prints it: decimal, or 0x-prefixed hex."""
    t = text.strip()
    if t.lower().startswith("0x"):
        return int(t[2:], 16)
    return int(t, 10)


def tshark_bool(text):
    """A boolean (flag bit) as tshark -T json prints it: 1/0 or True/False."""
    t = text.strip().lower()
    if t in ("true", "1"):
        return 1
    if t in ("false", "0"):
        return 0
    return tshark_int(t)


def same_value(key, want, got):
    if isinstance(want, bool):
        return False
    if isinstance(want, int):
        try:
            return tshark_int(got) == want
        except ValueError:
            return False
    if isinstance(want, str):
        if key in BYTES_KEYS:
            return got.replace(":", "").lower() == want.lower()
        return got == want
    return False


def show(value, limit=80):
    s = json.dumps(value) if not isinstance(value, str) else value
    return s if len(s) <= limit else s[:limit] + f"...({len(s)} chars)"


# ---------------------------------------------------------------------------
# Checks


def check_fields(ref, decoded):
    """ref: list of mr-decode JSON objects; decoded: frame number -> Decoded."""
    errors = []
    compared = 0
    for rec in ref:
        n = rec["frame"]
        d = decoded.get(n)
        where = f"frame {n} ({rec.get('metaroce.type_name', '?')})"
        if d is None:
            errors.append(f"{where}: missing from tshark output")
            continue
        if d.lua_errors:
            errors.append(f"{where}: {d.lua_errors[0]}")
        if not d.present:
            errors.append(f"{where}: tshark did not dissect it as MetaRoCE")
            continue
        for key, want in rec.items():
            if not key.startswith("metaroce."):
                continue
            wants = want if isinstance(want, list) else [want]
            got = d.fields.get(key)
            if got is None:
                errors.append(f"{where}: {key} missing (mr-decode: {show(want)})")
                continue
            if len(got) != len(wants):
                errors.append(f"{where}: {key} occurs {len(got)} times in tshark "
                              f"({show(got)}), mr-decode has {len(wants)} ({show(want)})")
                continue
            for i, (w, g) in enumerate(zip(wants, got)):
                compared += 1
                if not same_value(key, w, g):
                    idx = f"[{i}]" if isinstance(want, list) else ""
                    errors.append(f"{where}: {key}{idx} is {show(g)} in tshark, "
                                  f"{show(w)} in mr-decode")
    return errors, compared


def check_extra(ref, decoded):
    errors = []
    for rec in ref:
        n = rec["frame"]
        d = decoded.get(n)
        if d is None or not d.present:
            continue
        for key in d.fields:
            if key in rec or key in EXTRA_OK or key.startswith(EXTRA_OK_PREFIXES):
                continue
            errors.append(f"frame {n} ({rec['metaroce.type_name']}): tshark shows {key}="
                          f"{show(d.fields[key])}, which mr-decode does not print")
    return errors


def check_crc_good(ref, decoded):
    errors = []
    for rec in ref:
        n = rec["frame"]
        d = decoded.get(n)
        if d is None or not d.present:
            continue
        where = f"frame {n} ({rec['metaroce.type_name']})"
        if d.status() != "good":
            errors.append(f"{where}: metaroce.crc.status is {d.status()!r}, expected 'good'")
        if d.experts:
            errors.append(f"{where}: unexpected expert info {d.experts}: {d.expert_messages}")
        if d.malformed:
            errors.append(f"{where}: marked malformed")
    return errors


def check_info(ref, info):
    errors = []
    for rec in ref:
        n = rec["frame"]
        text = info.get(n, "")
        words = text.split()
        name = rec["metaroce.type_name"]
        wanted = [f"path={rec['metaroce.path_id']}"]
        if "metaroce.psn" in rec:
            wanted.append(f"psn={rec['metaroce.psn']}")
            wanted.append(f"msn={rec['metaroce.msn']}")
        if "metaroce.ack.cum_psn" in rec:
            wanted.append(f"cum_psn={rec['metaroce.ack.cum_psn']}")
        if not words or words[0] != name:
            errors.append(f"frame {n}: Info column {text!r} does not start with {name}")
            continue
        for w in wanted:
            if w not in words:
                errors.append(f"frame {n}: Info column {text!r} lacks {w!r}")
    return errors


def malformed_variants(records, ref):
    """(description, datagram, expected experts) built from the untagged IPv4 sample frames."""
    variants = []
    for rec in ref:
        if rec["ip.version"] != 4:
            continue
        frame = records[rec["frame"] - 1].data
        if udp_header_offset(frame)[0] != 34:
            continue
        _, dg = udp_datagram(frame)
        name = f"frame {rec['frame']} ({rec['metaroce.type_name']})"
        cut = {"metaroce.expert.truncated", "metaroce.expert.bad_length"}
        lengths = set(range(1, min(len(dg), 96))) | {len(dg) - k for k in (1, 3, 4, 5)}
        for k in sorted(x for x in lengths if 0 < x < len(dg)):
            variants.append((f"{name} cut to {k} of {len(dg)} bytes", dg[:k], cut))
        variants.append((f"{name} + 1 byte", dg + b"\0", {"metaroce.expert.bad_length"}))
        variants.append((f"{name} version 0", b"\x00" + dg[1:], {"metaroce.expert.bad_version"}))
        variants.append((f"{name} version 2", b"\x02" + dg[1:], {"metaroce.expert.bad_version"}))
        variants.append((f"{name} type 0x7f", dg[:1] + b"\x7f" + dg[2:],
                         {"metaroce.expert.bad_type"}))
        plen = struct.unpack(">H", dg[10:12])[0]
        for delta in (1, -1):
            v = dg[:10] + struct.pack(">H", (plen + delta) & 0xFFFF) + dg[12:]
            variants.append((f"{name} payload_len {plen}{delta:+d}", v,
                             {"metaroce.expert.bad_length"}))
        if rec["metaroce.type_name"] == "ACK":
            v = dg[:12 + 24] + b"\x09" + dg[12 + 25:]
            variants.append((f"{name} num_stream_acks 9", v, {"metaroce.expert.bad_ack_ext"}))
            flags = struct.unpack(">H", dg[2:4])[0] ^ 0x10
            v = dg[:2] + struct.pack(">H", flags) + dg[4:]
            variants.append((f"{name} SACK flag toggled", v, {"metaroce.expert.bad_ack_ext"}))
    return variants


def frame_class(rec):
    name = rec["metaroce.type_name"]
    if name in DATA_TYPES:
        return "data"
    if name == "NAK":
        return "nak"
    if name.startswith("CONN_"):
        return "conn"
    return None


def check_v1(ref, decoded):
    """The sample exercises every v1 addition and the dissector shows each of them."""
    errors = []
    names = {r["metaroce.type_name"] for r in ref}
    if "CONN_RETRY" not in names:
        errors.append("the sample has no CONN_RETRY")
    retries = [r for r in ref if r["metaroce.type_name"] == "CONN_RETRY"]
    cookies = {r["metaroce.conn.cookie"] for r in retries}
    if any(c == 0 for c in cookies):
        errors.append("a sample CONN_RETRY has cookie 0")
    echoed = [r for r in ref if r["metaroce.type_name"] == "CONN_REQ"
              and r["metaroce.conn.cookie"] in cookies]
    if not echoed:
        errors.append("no sample CONN_REQ repeats the cookie of a CONN_RETRY")
    if not any(r.get("metaroce.nak.code") == NAK_RESEND for r in ref):
        errors.append("the sample has no NAK RESEND")
    if not any(r["metaroce.flags"] & FLAG_MSG_PROBE for r in ref):
        errors.append("the sample has no data packet with MSG_PROBE")
    for rec in ref:
        n = rec["frame"]
        where = f"frame {n} ({rec['metaroce.type_name']})"
        cls = frame_class(rec)
        for key in V1_FIELDS.get(cls, ()):
            if key not in rec:
                errors.append(f"{where}: mr-decode does not print {key}")
        if rec["metaroce.version"] != 1:
            errors.append(f"{where}: version {rec['metaroce.version']}, expected 1")
        d = decoded.get(n)
        if d is None or not d.present:
            continue
        flags = rec["metaroce.flags"]
        for key, mask in FLAG_BITS:
            got = d.fields.get(key)
            if got is None:
                errors.append(f"{where}: tshark shows no {key}")
            elif tshark_bool(got[0]) != (1 if flags & mask else 0):
                errors.append(f"{where}: {key} is {got[0]}, flags are 0x{flags:04x}")
    return errors


def rule_variants(records, ref):
    """(description, datagram, expert, (field, value)) breaking one v1 rule each."""
    by_name = {}
    for rec in ref:
        if rec["ip.version"] != 4:
            continue
        frame = records[rec["frame"] - 1].data
        if udp_header_offset(frame)[0] != 34:
            continue
        _, dg = udp_datagram(frame)
        key = rec["metaroce.type_name"]
        if key == "NAK":
            key = f"NAK/{rec['metaroce.nak.code']}"
        if key in DATA_TYPES and rec["metaroce.flags"] & FLAG_MSG_PROBE:
            key += "/probe"
        by_name.setdefault(key, dg)
    want = ["WRITE", "READ_RESP", "ATOMIC_FA", "NAK/1", f"NAK/{NAK_RESEND}", "CONN_REQ",
            "CONN_ACCEPT", "CONN_REJECT", "CONN_CLOSE", "CONN_RETRY"]
    missing = [k for k in want if k not in by_name]
    if missing:
        fail(f"the untagged IPv4 sample frames lack {missing}")
    bad_value, reserved = "metaroce.expert.bad_value", "metaroce.expert.reserved"
    too_long, bad_range = "metaroce.expert.message_too_long", "metaroce.expert.bad_resend_range"
    out = []
    for t in ("WRITE", "READ_RESP", "ATOMIC_FA"):
        dg = by_name[t]
        out.append((f"{t} msg_len 2^31+1", edited(dg, BODY + 20, "I", MAX_MESSAGE_BYTES + 1),
                    too_long, ("metaroce.msg_len", MAX_MESSAGE_BYTES + 1)))
        out.append((f"{t} src_stream 0", edited(dg, BODY + 28, "I", 0), bad_value,
                    ("metaroce.src_stream", 0)))
    dg = by_name["READ_RESP"]
    flags = struct.unpack(">H", dg[2:4])[0] | FLAG_MSG_PROBE
    out.append(("READ_RESP with MSG_PROBE", edited(dg, 2, "H", flags), "metaroce.expert.bad_flags",
                ("metaroce.flags.msg_probe", 1)))
    dg = by_name[f"NAK/{NAK_RESEND}"]
    out.append(("NAK RESEND num_chunks 0", edited(dg, BODY + 20, "I", 0), bad_range,
                ("metaroce.nak.num_chunks", 0)))
    out.append(("NAK RESEND first_chunk 2^32-1", edited(dg, BODY + 16, "I", 0xFFFFFFFF),
                bad_range, ("metaroce.nak.first_chunk", 0xFFFFFFFF)))
    out.append(("NAK RESEND rnr_delay 1", edited(dg, BODY + 14, "H", 1), reserved,
                ("metaroce.nak.rnr_delay", 1)))
    dg = by_name["NAK/1"]
    out.append(("NAK RNR first_chunk 3", edited(dg, BODY + 16, "I", 3), reserved,
                ("metaroce.nak.first_chunk", 3)))
    out.append(("NAK RNR num_chunks 3", edited(dg, BODY + 20, "I", 3), reserved,
                ("metaroce.nak.num_chunks", 3)))
    for t in ("CONN_REQ", "CONN_ACCEPT", "CONN_REJECT", "CONN_CLOSE", "CONN_RETRY"):
        out.append((f"{t} incarnation 0", edited(by_name[t], BODY + 24, "Q", 0), bad_value,
                    ("metaroce.conn.incarnation", 0)))
    for t in ("CONN_REJECT", "CONN_CLOSE", "CONN_RETRY"):
        out.append((f"{t} rate_hint 1", edited(by_name[t], BODY + 44, "I", 1), reserved,
                    ("metaroce.conn.rate_hint", 1)))
    for t in ("CONN_REQ", "CONN_ACCEPT"):
        no_caps = edited(by_name[t], BODY + 16, "I", 0)
        out.append((f"{t} rate_hint without the RATE_HINT bit", edited(no_caps, BODY + 44, "I", 1),
                    reserved, ("metaroce.conn.rate_hint", 1)))
    for t in ("CONN_REQ", "CONN_ACCEPT"):
        out.append((f"{t} stream_window 0", edited(by_name[t], BODY + 40, "I", 0), bad_value,
                    ("metaroce.conn.stream_window", 0)))
    for t in ("CONN_ACCEPT", "CONN_REJECT", "CONN_CLOSE"):
        out.append((f"{t} with a cookie", edited(by_name[t], BODY + 32, "Q", 0x1234), reserved,
                    ("metaroce.conn.cookie", 0x1234)))
    out.append(("CONN_RETRY cookie 0", edited(by_name["CONN_RETRY"], BODY + 32, "Q", 0),
                bad_value, ("metaroce.conn.cookie", 0)))
    out.append(("CONN_RETRY reason 2", edited(by_name["CONN_RETRY"], BODY + 10, "B", 2),
                bad_value, ("metaroce.conn.reason", 2)))
    return out


def main(argv):
    if len(argv) != 4:
        print("usage: check_dissector.py MR_DECODE TSHARK METAROCE_LUA", file=sys.stderr)
        return 2
    mr_decode, tshark, lua = argv[1:]
    tshark_path = tshark if os.path.isfile(tshark) and os.access(tshark, os.X_OK) \
        else shutil.which(tshark)
    if tshark_path is None:
        fail(f"tshark not found ('{tshark}'): install it with devtools/install-deps.sh "
             "(Debian package tshark), then run 'meson setup --reconfigure build'")
    version = run([tshark_path, "--version"]).stdout
    if "without Lua" in version:
        fail(f"{tshark_path} was built without Lua; install Debian's tshark with "
             "devtools/install-deps.sh")
    if not os.path.isfile(lua):
        fail(f"dissector {lua} does not exist")
    lua = os.path.abspath(lua)

    with tempfile.TemporaryDirectory(prefix="mr-dissector-") as tmp:
        ts = Tshark(tshark_path, lua, tmp)

        sample = os.path.join(tmp, "sample.pcap")
        run([mr_decode, "--sample", sample])
        file_header, endian, records = read_pcap(sample)
        if not records:
            fail("mr-decode --sample wrote no frames")
        report("sample", f"mr-decode --sample wrote {len(records)} frames")

        out = run([mr_decode, "--json", sample]).stdout
        ref = [json.loads(line) for line in out.splitlines() if line.strip()]
        if len(ref) != len(records):
            fail(f"mr-decode --json decoded {len(ref)} of {len(records)} sample frames")
        types = sorted({r["metaroce.type_name"] for r in ref})
        report("reference", f"mr-decode --json decoded {len(ref)} frames, {len(types)} types")

        decoded = ts.frames(sample)
        if not any(d.present for d in decoded.values()):
            fail("tshark dissected no frame as MetaRoCE: the dissector did not load (as root, "
                 "init.lua must set run_user_scripts_when_superuser = true)")
        errors, compared = check_fields(ref, decoded)
        extra_frames = [n for n, d in decoded.items()
                        if d.present and n not in {r["frame"] for r in ref}]
        errors += [f"frame {n}: dissected as MetaRoCE but mr-decode dropped it"
                   for n in extra_frames]
        if errors:
            fail("fields differ between tshark and mr-decode:\n  " + "\n  ".join(errors))
        report("fields", f"{compared} values in {len(ref)} frames match mr-decode")

        errors = check_extra(ref, decoded)
        if errors:
            fail("unexpected fields:\n  " + "\n  ".join(errors))
        report("extra", "no metaroce.* field beyond what mr-decode prints")

        errors = check_crc_good(ref, decoded)
        if errors:
            fail("CRC or expert info wrong on valid frames:\n  " + "\n  ".join(errors))
        report("crc", f"metaroce.crc.status good in all {len(ref)} frames, no expert info")

        errors = check_info(ref, ts.info_column(sample))
        if errors:
            fail("Info column:\n  " + "\n  ".join(errors))
        report("info", f"Info column names type and path in all {len(ref)} frames")

        errors = check_v1(ref, decoded)
        if errors:
            fail("wire v1 fields:\n  " + "\n  ".join(errors))
        report("v1", "CONN_RETRY, NAK RESEND and MSG_PROBE in the sample; src_stream, "
                     "first_chunk/num_chunks, incarnation/cookie/stream_window and "
                     "flags.msg_probe shown")

        rules = rule_variants(records, ref)
        rrecords = []
        for _, dg, _, _ in rules:
            data = with_datagram(records[ref[0]["frame"] - 1].data, dg)
            rrecords.append(records[0]._replace(data=data, orig_len=len(data)))
        rpcap = os.path.join(tmp, "rules.pcap")
        write_pcap(rpcap, file_header, endian, rrecords)
        got = ts.frames(rpcap)
        errors = []
        for i, (desc, _, expert, shown) in enumerate(rules, start=1):
            d = got.get(i)
            if d is None or not d.present:
                errors.append(f"{desc}: not dissected as MetaRoCE")
            elif d.lua_errors:
                errors.append(f"{desc}: {d.lua_errors[0]}")
            elif d.status() != "good":
                errors.append(f"{desc}: crc.status {d.status()!r}, expected 'good'")
            elif expert not in d.experts:
                errors.append(f"{desc}: no {expert} (got {d.experts} {d.expert_messages})")
            elif d.malformed:
                errors.append(f"{desc}: marked malformed; a field rule is not a framing error")
            elif shown is not None:
                key, value = shown
                vals = d.fields.get(key)
                conv = tshark_bool if key.startswith("metaroce.flags.") else tshark_int
                if not vals or conv(vals[0]) != value:
                    errors.append(f"{desc}: {key} shows {vals}, expected {value}")
        if errors:
            fail(f"{len(errors)} of {len(rules)} rule violations mishandled:\n  "
                 + "\n  ".join(errors))
        report("rules", f"{len(rules)} datagrams breaking one v1 rule each get that rule's "
                        "expert info")

        moved = os.path.join(tmp, "port.pcap")
        write_pcap(moved, file_header, endian,
                   [r._replace(data=with_dst_port(r.data, OTHER_PORT)) for r in records])
        default = ts.frames(moved)
        n_default = sum(d.present for d in default.values())
        if n_default != 0:
            fail(f"{n_default} frames to UDP port {OTHER_PORT} dissected as MetaRoCE by default")
        pref = f"metaroce.udp_port:{OTHER_PORT}"
        on_pref = ts.frames(moved, prefs=[pref])
        good = sum(d.present and d.status() == "good" for d in on_pref.values())
        if good != len(records):
            fail(f"with -o {pref}, {good} of {len(records)} frames decode with a good CRC")
        off_pref = ts.frames(sample, prefs=[pref])
        n_old = sum(d.present for d in off_pref.values())
        if n_old != 0:
            fail(f"with -o {pref}, {n_old} frames to port {DEFAULT_PORT} still dissected")
        report("port", f"-o {pref} moves the dissector from {DEFAULT_PORT} to {OTHER_PORT}")

        victim = next((r for r in ref if "metaroce.payload" in r), None)
        if victim is None:
            fail("the sample has no frame with a payload to corrupt")
        n = victim["frame"]
        frame = bytearray(records[n - 1].data)
        payload = bytes.fromhex(victim["metaroce.payload"])
        start, dg = udp_datagram(bytes(frame))
        pos = start + len(dg) - 4 - len(payload) + len(payload) // 2
        frame[pos] ^= 0x01
        corrupted = os.path.join(tmp, "bad_crc.pcap")
        write_pcap(corrupted, file_header, endian,
                   [r._replace(data=bytes(frame)) if i == n - 1 else r
                    for i, r in enumerate(records)])
        bad = ts.frames(corrupted)
        d = bad.get(n)
        where = f"frame {n} ({victim['metaroce.type_name']}) with byte {pos} flipped"
        if d is None or not d.present:
            fail(f"{where}: not dissected as MetaRoCE")
        if d.lua_errors:
            fail(f"{where}: {d.lua_errors[0]}")
        if d.status() != "bad":
            fail(f"{where}: metaroce.crc.status is {d.status()!r}, expected 'bad'")
        if "metaroce.expert.bad_crc" not in d.experts:
            fail(f"{where}: no metaroce.expert.bad_crc expert info (got {d.experts})")
        others = [m for m, o in bad.items() if m != n and o.status() != "good"]
        if others:
            fail(f"{where}: other frames lost their good CRC: {others}")
        report("bad_crc", f"{where}: crc.status bad, expert info added, "
                          f"{len(bad) - 1} other frames good")

        variants = malformed_variants(records, ref)
        base = records[0]
        vrecords = []
        for _, dg, _ in variants:
            data = with_datagram(records[ref[0]["frame"] - 1].data, dg)
            vrecords.append(base._replace(data=data, orig_len=len(data)))
        mal = os.path.join(tmp, "malformed.pcap")
        write_pcap(mal, file_header, endian, vrecords)
        got = ts.frames(mal)
        errors = []
        for i, (desc, _, want) in enumerate(variants, start=1):
            d = got.get(i)
            if d is None or not d.present:
                errors.append(f"{desc}: not dissected as MetaRoCE")
            elif d.lua_errors:
                errors.append(f"{desc}: {d.lua_errors[0]}")
            elif "metaroce.expert.internal" in d.experts:
                errors.append(f"{desc}: dissector error {d.expert_messages}")
            elif not want & set(d.experts) or not d.malformed:
                errors.append(f"{desc}: expected one of {sorted(want)} and a malformed mark, "
                              f"got {d.experts} {d.expert_messages}")
            elif d.status() == "good":
                errors.append(f"{desc}: malformed datagram has a good CRC status")
        if errors:
            fail(f"{len(errors)} of {len(variants)} malformed datagrams mishandled:\n  "
                 + "\n  ".join(errors[:30]))
        report("malformed", f"{len(variants)} truncated/malformed datagrams marked malformed, "
                            "no Lua error")

        cuts = []
        for rec in ref:
            if rec["metaroce.type_name"] not in ("WRITE", "ACK", "NAK", "CONN_REQ", "CONN_RETRY"):
                continue
            full = records[rec["frame"] - 1].data
            start, dg = udp_datagram(full)
            for k in (1, 2, 5, 11, 12, 13, 20, 36, 40, 43, 44, 47, 48, 56, 59, 60, 64,
                      len(dg) - 4, len(dg) - 1):
                if 0 < k < len(dg):
                    cuts.append((f"frame {rec['frame']} ({rec['metaroce.type_name']}, "
                                 f"ip v{rec['ip.version']}) captured to {k} of {len(dg)} bytes",
                                 records[rec["frame"] - 1]._replace(data=full[:start + k])))
        snap = os.path.join(tmp, "snaplen.pcap")
        write_pcap(snap, file_header, endian, [r for _, r in cuts])
        got = ts.frames(snap)
        errors = []
        for i, (desc, _) in enumerate(cuts, start=1):
            d = got.get(i)
            if d is None or not d.present:
                errors.append(f"{desc}: not dissected as MetaRoCE")
            elif d.lua_errors:
                errors.append(f"{desc}: {d.lua_errors[0]}")
            elif "metaroce.expert.internal" in d.experts:
                errors.append(f"{desc}: dissector error {d.expert_messages}")
            elif d.status() not in (None, "unverified"):
                errors.append(f"{desc}: crc.status {d.status()!r} for a partly captured frame")
            elif d.status() is None and "metaroce.expert.truncated" not in d.experts:
                errors.append(f"{desc}: neither CRC status 'unverified' nor truncated expert")
        if errors:
            fail(f"{len(errors)} of {len(cuts)} partly captured frames mishandled:\n  "
                 + "\n  ".join(errors[:30]))
        report("snaplen", f"{len(cuts)} partly captured frames dissected without a Lua error")

    print(f"all dissector checks passed ({tshark_path}, {lua})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except CheckFailed as e:
        print(f"FAIL {e}", file=sys.stderr)
        sys.exit(1)
