-- SPDX-License-Identifier: BSD-3-Clause
-- Copyright(c) 2026 The metaroce authors
--
-- Wireshark dissector for MetaRoCE wire format v1 (UDP, default port 4792).
--
-- Install (Wireshark/tshark 3.x or 4.x with Lua):
--   mkdir -p ~/.local/lib/wireshark/plugins
--   cp usertools/wireshark/metaroce.lua ~/.local/lib/wireshark/plugins/
-- or load it for one run only:
--   tshark -X lua_script:usertools/wireshark/metaroce.lua -r capture.pcap
--   wireshark -X lua_script:usertools/wireshark/metaroce.lua capture.pcap
-- When running as root, Lua plugins only load if init.lua sets
-- run_user_scripts_when_superuser = true.
--
-- The UDP port is a protocol preference (Edit > Preferences > Protocols >
-- MetaRoCE, or "-o metaroce.udp_port:N" on the command line).
--
-- Every field is big-endian. Layout after the UDP header:
--   common header (12 bytes): version u8, type u8, flags u16, conn_id u32,
--     path_id u16, payload_len u16
--   type header (fixed size per type, see TYPE_HDR_BYTES below)
--   payload_len bytes: payload, or for ACK the extension (optional 32-byte
--     SACK bitmap when flag 0x10 is set, then num_stream_acks entries of
--     stream_id u32 + msn_next u32)
--   CRC-32C (Castagnoli) u32 over everything from the common header through
--     the end of the payload.
-- Field names match the keys "mr-decode --json" prints.

local DEFAULT_PORT = 4792
local VERSION = 1
local COMMON_BYTES = 12
local CRC_BYTES = 4
local SACK_BYTES = 32
local STREAM_ACK_BYTES = 8
local MAX_STREAM_ACKS = 8
local MAX_MESSAGE_BYTES = 2147483648 -- 2^31 (kMaxMessageBytes)
local U32_MAX = 4294967295

local proto = Proto("metaroce", "MetaRoCE")

------------------------------------------------------------------------------
-- Names and per-type properties (lib/wire/mr_wire_defs.h, lib/wire/names.cc)

local TYPE_NAMES = {
    [0x01] = "WRITE",
    [0x02] = "WRITE_IMM",
    [0x03] = "SEND",
    [0x04] = "SEND_IMM",
    [0x05] = "READ_REQ",
    [0x06] = "READ_RESP",
    [0x07] = "ATOMIC_FA",
    [0x08] = "ATOMIC_CS",
    [0x09] = "ATOMIC_RESP",
    [0x10] = "ACK",
    [0x11] = "NAK",
    [0x20] = "PROBE",
    [0x21] = "PROBE_REPLY",
    [0x30] = "CONN_REQ",
    [0x31] = "CONN_ACCEPT",
    [0x32] = "CONN_REJECT",
    [0x33] = "CONN_CLOSE",
    [0x34] = "CONN_RETRY",
}

local NAK_CODE_NAMES = {
    [1] = "RNR",
    [2] = "REMOTE_ACCESS",
    [3] = "INVALID_REQUEST",
    [4] = "REMOTE_OPERATION",
    [5] = "RESEND",
}
local NAK_RNR, NAK_RESEND = 1, 5

local NAK_DETAIL_NAMES = {
    [0] = "NONE",
    [1] = "BAD_RKEY",
    [2] = "OUT_OF_BOUNDS",
    [3] = "NO_PERMISSION",
    [4] = "REGION_INVALIDATED",
    [5] = "RECEIVE_TOO_SMALL",
    [6] = "UNSUPPORTED_OP",
    [7] = "MISALIGNED_ATOMIC",
    [8] = "STREAM_IN_ERROR",
    [9] = "RESOURCE_EXHAUSTED",
    [10] = "NOT_PLACED",
}

local CONN_REASON_NAMES = {
    [0] = "NONE",
    [1] = "VERSION_UNSUPPORTED",
    [2] = "NO_RESOURCES",
    [3] = "BAD_PARAMETERS",
    [4] = "SHUTDOWN",
    [5] = "TIMEOUT",
    [6] = "PEER_ERROR",
}

local CLASS_DATA, CLASS_ACK, CLASS_NAK, CLASS_PROBE, CLASS_CONN = 1, 2, 3, 4, 5

local TYPE_CLASS = {
    [0x01] = CLASS_DATA, [0x02] = CLASS_DATA, [0x03] = CLASS_DATA,
    [0x04] = CLASS_DATA, [0x05] = CLASS_DATA, [0x06] = CLASS_DATA,
    [0x07] = CLASS_DATA, [0x08] = CLASS_DATA, [0x09] = CLASS_DATA,
    [0x10] = CLASS_ACK,
    [0x11] = CLASS_NAK,
    [0x20] = CLASS_PROBE, [0x21] = CLASS_PROBE,
    [0x30] = CLASS_CONN, [0x31] = CLASS_CONN, [0x32] = CLASS_CONN,
    [0x33] = CLASS_CONN, [0x34] = CLASS_CONN,
}

-- Bytes between the common header and the payload region.
local DATA_HDR_BYTES = 32
local NAK_BYTES = 24
local CONN_BYTES = 48
local PLANE_ADDR_BYTES = 16
local MAX_PLANES = 8
local CAP_PLANES = 0x00000001
local CAP_RATE_HINT = 0x00000002
local ACK_NO_ECHO = 0xFFFFFFFF  -- ack_delay of an ACK that echoes no timestamp (spec 4.2)
local TYPE_HDR_BYTES = {
    [0x01] = 44, [0x02] = 52, [0x03] = 36, [0x04] = 40, [0x05] = 44,
    [0x06] = 32, [0x07] = 60, [0x08] = 60, [0x09] = 40,
    [0x10] = 28,
    [0x11] = NAK_BYTES,
    [0x20] = 8, [0x21] = 8,
    [0x30] = CONN_BYTES, [0x31] = CONN_BYTES, [0x32] = CONN_BYTES, [0x33] = CONN_BYTES,
    [0x34] = CONN_BYTES,
}

local HAS_RDMA_TARGET = {
    [0x01] = true, [0x02] = true, [0x05] = true, [0x07] = true, [0x08] = true,
}
local CONSUMES_RECEIVE = { [0x02] = true, [0x03] = true, [0x04] = true }
local HAS_IMMEDIATE = { [0x02] = true, [0x04] = true }
local IS_ATOMIC_REQUEST = { [0x07] = true, [0x08] = true }
local CARRIES_PAYLOAD = {
    [0x01] = true, [0x02] = true, [0x03] = true, [0x04] = true, [0x06] = true,
}
-- Data types a requester sends (not READ/ATOMIC responses): may carry MSG_PROBE.
local IS_REQUEST = {
    [0x01] = true, [0x02] = true, [0x03] = true, [0x04] = true, [0x05] = true,
    [0x07] = true, [0x08] = true,
}

local FLAG_ACK_REQ = 0x0001
local FLAG_SOLICITED = 0x0002
local FLAG_RETRANSMIT = 0x0004
local FLAG_ECE = 0x0008
local FLAG_SACK = 0x0010
local FLAG_MSG_PROBE = 0x0020
local FLAG_IDLE = 0x0040

local function allowed_flags(ptype)
    local cls = TYPE_CLASS[ptype]
    if cls == CLASS_DATA then
        local f = FLAG_ACK_REQ + FLAG_RETRANSMIT + FLAG_IDLE
        if CONSUMES_RECEIVE[ptype] then
            f = f + FLAG_SOLICITED
        end
        if IS_REQUEST[ptype] then
            f = f + FLAG_MSG_PROBE
        end
        return f
    elseif cls == CLASS_ACK then
        return FLAG_ECE + FLAG_SACK
    end
    return 0
end

------------------------------------------------------------------------------
-- Fields

local f = {
    version = ProtoField.uint8("metaroce.version", "Version", base.DEC),
    ptype = ProtoField.uint8("metaroce.type", "Type", base.HEX, TYPE_NAMES),
    type_name = ProtoField.string("metaroce.type_name", "Type name"),
    flags = ProtoField.uint16("metaroce.flags", "Flags", base.HEX),
    flag_ack_req = ProtoField.bool("metaroce.flags.ack_req", "ACK request", 16, nil, FLAG_ACK_REQ),
    flag_solicited = ProtoField.bool("metaroce.flags.solicited", "Solicited event", 16, nil,
        FLAG_SOLICITED),
    flag_retransmit = ProtoField.bool("metaroce.flags.retransmit", "Retransmission", 16, nil,
        FLAG_RETRANSMIT),
    flag_ece = ProtoField.bool("metaroce.flags.ece", "ECN echo (ECE)", 16, nil, FLAG_ECE),
    flag_sack = ProtoField.bool("metaroce.flags.sack", "SACK bitmap present", 16, nil, FLAG_SACK),
    flag_msg_probe = ProtoField.bool("metaroce.flags.msg_probe", "Message probe", 16, nil,
        FLAG_MSG_PROBE),
    flag_idle = ProtoField.bool("metaroce.flags.idle", "Sender idle after this packet", 16, nil,
        FLAG_IDLE),
    flag_reserved = ProtoField.uint16("metaroce.flags.reserved", "Reserved flags", base.HEX, nil,
        0xff80),
    conn_id = ProtoField.uint32("metaroce.conn_id", "Destination connection ID", base.HEX),
    path_id = ProtoField.uint16("metaroce.path_id", "Path ID", base.DEC),
    payload_len = ProtoField.uint16("metaroce.payload_len", "Payload length", base.DEC),

    psn = ProtoField.uint32("metaroce.psn", "PSN", base.DEC),
    una_psn = ProtoField.uint32("metaroce.una_psn", "Oldest unacknowledged PSN", base.DEC),
    tx_ts = ProtoField.uint32("metaroce.tx_ts", "TX timestamp (ns)", base.DEC),
    stream_id = ProtoField.uint32("metaroce.stream_id", "Stream ID", base.HEX),
    msn = ProtoField.uint32("metaroce.msn", "MSN", base.DEC),
    msg_len = ProtoField.uint32("metaroce.msg_len", "Message length", base.DEC),
    msg_offset = ProtoField.uint32("metaroce.msg_offset", "Message offset", base.DEC),
    src_stream = ProtoField.uint32("metaroce.src_stream", "Source stream ID", base.HEX),
    rkey = ProtoField.uint32("metaroce.rkey", "Remote key", base.HEX),
    va = ProtoField.uint64("metaroce.va", "Virtual address", base.HEX),
    recv_seq = ProtoField.uint32("metaroce.recv_seq", "Receive sequence", base.DEC),
    imm = ProtoField.uint32("metaroce.imm", "Immediate data", base.HEX),
    operand0 = ProtoField.uint64("metaroce.operand0", "Operand 0 (add / compare)", base.HEX),
    operand1 = ProtoField.uint64("metaroce.operand1", "Operand 1 (swap)", base.HEX),
    orig = ProtoField.uint64("metaroce.orig", "Original value", base.HEX),

    ack_cum_psn = ProtoField.uint32("metaroce.ack.cum_psn", "Cumulative PSN", base.DEC),
    ack_echo_ts = ProtoField.uint32("metaroce.ack.echo_ts", "Echoed timestamp (ns)", base.DEC),
    ack_delay = ProtoField.uint32("metaroce.ack.ack_delay", "ACK delay (ns)", base.DEC),
    ack_rate_hint = ProtoField.uint32("metaroce.ack.rate_hint", "Rate hint (Mb/s)", base.DEC),
    ack_rx_pkts = ProtoField.uint32("metaroce.ack.rx_pkts", "Packets received", base.DEC),
    ack_ce_pkts = ProtoField.uint32("metaroce.ack.ce_pkts", "CE-marked packets", base.DEC),
    ack_num_stream_acks = ProtoField.uint8("metaroce.ack.num_stream_acks", "Stream ACKs",
        base.DEC),
    ack_sack = ProtoField.bytes("metaroce.ack.sack", "SACK bitmap"),
    ack_stream_id = ProtoField.uint32("metaroce.ack.stream_id", "Stream ID", base.HEX),
    ack_msn_next = ProtoField.uint32("metaroce.ack.msn_next", "Next expected MSN", base.DEC),

    nak_stream_id = ProtoField.uint32("metaroce.nak.stream_id", "Stream ID", base.HEX),
    nak_msn = ProtoField.uint32("metaroce.nak.msn", "MSN", base.DEC),
    nak_psn = ProtoField.uint32("metaroce.nak.psn", "PSN", base.DEC),
    nak_code = ProtoField.uint8("metaroce.nak.code", "Code", base.DEC, NAK_CODE_NAMES),
    nak_detail = ProtoField.uint8("metaroce.nak.detail", "Detail", base.DEC, NAK_DETAIL_NAMES),
    nak_rnr_delay = ProtoField.uint16("metaroce.nak.rnr_delay", "RNR delay (10 us units)",
        base.DEC),
    nak_first_chunk = ProtoField.uint32("metaroce.nak.first_chunk", "First chunk to resend",
        base.DEC),
    nak_num_chunks = ProtoField.uint32("metaroce.nak.num_chunks", "Chunks to resend", base.DEC),

    probe_seq = ProtoField.uint32("metaroce.probe.seq", "Probe sequence", base.DEC),
    probe_ts = ProtoField.uint32("metaroce.probe.ts", "Timestamp (ns)", base.DEC),

    conn_src_conn_id = ProtoField.uint32("metaroce.conn.src_conn_id", "Source connection ID",
        base.HEX),
    conn_nonce = ProtoField.uint32("metaroce.conn.nonce", "Nonce", base.HEX),
    conn_min_version = ProtoField.uint8("metaroce.conn.min_version", "Minimum version", base.DEC),
    conn_max_version = ProtoField.uint8("metaroce.conn.max_version", "Maximum version", base.DEC),
    conn_reason = ProtoField.uint8("metaroce.conn.reason", "Reason", base.DEC, CONN_REASON_NAMES),
    conn_num_paths = ProtoField.uint16("metaroce.conn.num_paths", "Paths", base.DEC),
    conn_max_payload = ProtoField.uint16("metaroce.conn.max_payload", "Maximum payload", base.DEC),
    conn_capabilities = ProtoField.uint32("metaroce.conn.capabilities", "Capabilities", base.HEX),
    conn_udp_port = ProtoField.uint16("metaroce.conn.udp_port", "Receive UDP port", base.DEC),
    conn_incarnation = ProtoField.uint64("metaroce.conn.incarnation", "Engine incarnation",
        base.HEX),
    conn_cookie = ProtoField.uint64("metaroce.conn.cookie", "Cookie", base.HEX),
    conn_stream_window = ProtoField.uint32("metaroce.conn.stream_window",
        "Stream window (messages)", base.DEC),
    conn_rate_hint = ProtoField.uint32("metaroce.conn.rate_hint", "Rate hint (Mbit/s)", base.DEC),
    conn_plane = ProtoField.bytes("metaroce.conn.plane", "Plane address"),

    reserved = ProtoField.bytes("metaroce.reserved", "Reserved"),
    payload = ProtoField.bytes("metaroce.payload", "Payload"),
    undecoded = ProtoField.bytes("metaroce.undecoded", "Undecoded bytes"),
    crc = ProtoField.uint32("metaroce.crc", "CRC-32C", base.HEX),
    crc_status = ProtoField.string("metaroce.crc.status", "CRC-32C status"),
}

local field_list = {}
for _, v in pairs(f) do
    field_list[#field_list + 1] = v
end
proto.fields = field_list

local ef = {
    bad_crc = ProtoExpert.new("metaroce.expert.bad_crc", "Bad CRC-32C",
        expert.group.CHECKSUM, expert.severity.ERROR),
    bad_version = ProtoExpert.new("metaroce.expert.bad_version", "Unknown MetaRoCE version",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_type = ProtoExpert.new("metaroce.expert.bad_type", "Unknown MetaRoCE packet type",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_length = ProtoExpert.new("metaroce.expert.bad_length",
        "Datagram length does not match payload_len",
        expert.group.MALFORMED, expert.severity.ERROR),
    truncated = ProtoExpert.new("metaroce.expert.truncated", "Truncated MetaRoCE packet",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_ack_ext = ProtoExpert.new("metaroce.expert.bad_ack_ext",
        "ACK extension length does not match flags and num_stream_acks",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_flags = ProtoExpert.new("metaroce.expert.bad_flags", "Flag not allowed for this type",
        expert.group.PROTOCOL, expert.severity.WARN),
    reserved = ProtoExpert.new("metaroce.expert.reserved", "Reserved field is not zero",
        expert.group.PROTOCOL, expert.severity.WARN),
    bad_value = ProtoExpert.new("metaroce.expert.bad_value", "Field value not allowed",
        expert.group.PROTOCOL, expert.severity.WARN),
    payload_not_allowed = ProtoExpert.new("metaroce.expert.payload_not_allowed",
        "Payload not allowed for this type", expert.group.PROTOCOL, expert.severity.WARN),
    message_too_long = ProtoExpert.new("metaroce.expert.message_too_long",
        "Message longer than 2 GiB", expert.group.PROTOCOL, expert.severity.WARN),
    bad_resend_range = ProtoExpert.new("metaroce.expert.bad_resend_range",
        "NAK RESEND chunk range is empty or wraps", expert.group.PROTOCOL, expert.severity.WARN),
    unverified_crc = ProtoExpert.new("metaroce.expert.unverified_crc",
        "CRC-32C not verified: packet not fully captured",
        expert.group.CHECKSUM, expert.severity.NOTE),
    internal = ProtoExpert.new("metaroce.expert.internal", "Dissector error",
        expert.group.MALFORMED, expert.severity.ERROR),
}

local expert_list = {}
for _, v in pairs(ef) do
    expert_list[#expert_list + 1] = v
end
proto.experts = expert_list

proto.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT,
    "UDP port of MetaRoCE traffic (default " .. DEFAULT_PORT .. ")")

------------------------------------------------------------------------------
-- CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, init and xorout
-- 0xFFFFFFFF. Table-driven, one byte at a time.

local CRC32C_TABLE = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if bit32.band(c, 1) ~= 0 then
            c = bit32.bxor(bit32.rshift(c, 1), 0x82F63B78)
        else
            c = bit32.rshift(c, 1)
        end
    end
    CRC32C_TABLE[i] = c
end

local function crc32c(s)
    local band, bxor, rshift, byte = bit32.band, bit32.bxor, bit32.rshift, string.byte
    local tbl = CRC32C_TABLE
    local crc = 0xFFFFFFFF
    for i = 1, #s do
        crc = bxor(rshift(crc, 8), tbl[band(bxor(crc, byte(s, i)), 0xFF)])
    end
    return bxor(crc, 0xFFFFFFFF)
end

------------------------------------------------------------------------------
-- Bounded reader: adds fields while they fit in [off, lim) and remembers
-- whether anything did not fit, so truncated input never raises a Lua error.

local Reader = {}
Reader.__index = Reader

local function new_reader(tvb, off, lim)
    if lim > tvb:len() then
        lim = tvb:len()
    end
    return setmetatable({ tvb = tvb, off = off, lim = lim, short = false }, Reader)
end

-- The next len bytes as a TvbRange, or nil (and short set) if they do not fit.
function Reader:take(len)
    if self.short or self.off + len > self.lim then
        self.short = true
        return nil
    end
    local r = self.tvb(self.off, len)
    self.off = self.off + len
    return r
end

-- Adds a field of len bytes to tree; returns the item and the range, or nil.
function Reader:add(tree, field, len)
    local r = self:take(len)
    if r == nil then
        return nil, nil
    end
    return tree:add(field, r), r
end

-- Adds a big-endian unsigned field of 1, 2 or 4 bytes; returns item and value.
function Reader:uint(tree, field, len)
    local item, r = self:add(tree, field, len)
    if item == nil then
        return nil, nil
    end
    return item, r:uint()
end

-- Adds a 64-bit field; returns item and UInt64 value.
function Reader:uint64(tree, field)
    local item, r = self:add(tree, field, 8)
    if item == nil then
        return nil, nil
    end
    return item, r:uint64()
end

-- Reserved bytes: shown, and flagged if not zero.
function Reader:reserved(tree, len)
    local item, r = self:add(tree, f.reserved, len)
    if item == nil then
        return
    end
    local s = r:raw()
    for i = 1, #s do
        if s:byte(i) ~= 0 then
            item:add_proto_expert_info(ef.reserved)
            return
        end
    end
end

-- A text subtree over [off, off + len), clipped to the captured bytes.
local function subtree(parent, tvb, off, len, label)
    local avail = tvb:len() - off
    if avail <= 0 then
        return parent
    end
    if len > avail then
        len = avail
    end
    if len <= 0 then
        return parent
    end
    return parent:add(tvb(off, len), label)
end

local function hex32(v)
    return string.format("0x%x", v)
end

------------------------------------------------------------------------------
-- Type bodies. Each takes (reader, tvb, tree, ctx) and appends to ctx.info.

local function dissect_data(rd, tvb, tree, ctx)
    local ptype = ctx.ptype
    local info = ctx.info
    local t = subtree(tree, tvb, rd.off, DATA_HDR_BYTES, "Data header")
    local _, psn = rd:uint(t, f.psn, 4)
    local _, una = rd:uint(t, f.una_psn, 4)
    rd:uint(t, f.tx_ts, 4)
    local _, stream = rd:uint(t, f.stream_id, 4)
    local _, msn = rd:uint(t, f.msn, 4)
    local msg_len_item, msg_len = rd:uint(t, f.msg_len, 4)
    local _, msg_offset = rd:uint(t, f.msg_offset, 4)
    local src_item, src_stream = rd:uint(t, f.src_stream, 4)
    if psn ~= nil then
        info[#info + 1] = "psn=" .. psn
    end
    if stream ~= nil then
        info[#info + 1] = "stream=" .. hex32(stream)
    end
    if msn ~= nil then
        info[#info + 1] = "msn=" .. msn
    end
    if CARRIES_PAYLOAD[ptype] and msg_offset ~= nil and msg_len ~= nil then
        info[#info + 1] = string.format("off=%u/%u", msg_offset, msg_len)
    elseif msg_len ~= nil then
        info[#info + 1] = "len=" .. msg_len
    end
    if HAS_RDMA_TARGET[ptype] then
        local rt = subtree(tree, tvb, rd.off, 12, "RDMA target")
        local _, va = rd:uint64(rt, f.va)
        local _, rkey = rd:uint(rt, f.rkey, 4)
        if rkey ~= nil and va ~= nil then
            info[#info + 1] = string.format("rkey=0x%08x va=0x%s", rkey, va:tohex())
        end
    end
    if CONSUMES_RECEIVE[ptype] then
        local _, rs = rd:uint(tree, f.recv_seq, 4)
        if rs ~= nil then
            info[#info + 1] = "recv_seq=" .. rs
        end
    end
    if HAS_IMMEDIATE[ptype] then
        local _, imm = rd:uint(tree, f.imm, 4)
        if imm ~= nil then
            info[#info + 1] = string.format("imm=0x%08x", imm)
        end
    end
    if IS_ATOMIC_REQUEST[ptype] then
        local at = subtree(tree, tvb, rd.off, 16, "Atomic operands")
        local _, op0 = rd:uint64(at, f.operand0)
        local _, op1 = rd:uint64(at, f.operand1)
        if op0 ~= nil then
            info[#info + 1] = "op0=0x" .. op0:tohex()
        end
        if op1 ~= nil and ptype == 0x08 then
            info[#info + 1] = "op1=0x" .. op1:tohex()
        end
    end
    if ptype == 0x09 then
        local _, orig = rd:uint64(tree, f.orig)
        if orig ~= nil then
            info[#info + 1] = "orig=0x" .. orig:tohex()
        end
    end
    if stream == 0 then
        tree:add_proto_expert_info(ef.bad_value, "stream_id must not be 0")
    end
    if src_stream == 0 then
        src_item:add_proto_expert_info(ef.bad_value, "src_stream must not be 0")
    end
    if msg_len ~= nil and msg_len > MAX_MESSAGE_BYTES then
        msg_len_item:add_proto_expert_info(ef.message_too_long,
            string.format("msg_len %u is beyond %u bytes", msg_len, MAX_MESSAGE_BYTES))
    end
    -- una_psn must not come after psn (serial order modulo 2^32).
    if psn ~= nil and una ~= nil and (una - psn) % 4294967296 ~= 0
        and (una - psn) % 4294967296 < 2147483648 then
        tree:add_proto_expert_info(ef.bad_value, "una_psn is after psn")
    end
end

-- PSNs acknowledged by the SACK bitmap: bit i (word i / 64, bit i % 64 of a
-- big-endian 64-bit word) is PSN cum_psn + 1 + i.
local function sack_psns(bitmap, cum_psn)
    local psns = {}
    for word = 0, 3 do
        for byte_in_word = 0, 7 do
            local b = bitmap:byte(word * 8 + byte_in_word + 1)
            if b ~= 0 then
                for bit = 0, 7 do
                    if bit32.band(b, bit32.lshift(1, bit)) ~= 0 then
                        local i = word * 64 + (7 - byte_in_word) * 8 + bit
                        psns[#psns + 1] = i
                    end
                end
            end
        end
    end
    table.sort(psns)
    for k = 1, #psns do
        psns[k] = (cum_psn + 1 + psns[k]) % 4294967296
    end
    return psns
end

local function dissect_ack(rd, tvb, tree, ctx)
    local info = ctx.info
    local t = subtree(tree, tvb, rd.off, 28, "ACK header")
    local _, cum_psn = rd:uint(t, f.ack_cum_psn, 4)
    rd:uint(t, f.ack_echo_ts, 4)
    local delay_item, delay = rd:uint(t, f.ack_delay, 4)
    if delay == ACK_NO_ECHO then
        delay_item:append_text(" (no echo: the path received nothing yet; no RTT sample)")
    end
    rd:uint(t, f.ack_rate_hint, 4)
    rd:uint(t, f.ack_rx_pkts, 4)
    rd:uint(t, f.ack_ce_pkts, 4)
    local nsa_item, nsa = rd:uint(t, f.ack_num_stream_acks, 1)
    rd:reserved(t, 3)
    if cum_psn ~= nil then
        info[#info + 1] = "cum_psn=" .. cum_psn
    end
    if rd.short or not ctx.have_crc then
        return
    end
    if nsa > MAX_STREAM_ACKS then
        nsa_item:add_proto_expert_info(ef.bad_value,
            string.format("at most %d stream ACKs are allowed", MAX_STREAM_ACKS))
    end

    -- Extension: the payload region of an ACK.
    local has_sack = bit32.band(ctx.flags, FLAG_SACK) ~= 0
    local want = (has_sack and SACK_BYTES or 0) + nsa * STREAM_ACK_BYTES
    local region = ctx.region
    if want ~= region then
        tree:add_proto_expert_info(ef.bad_ack_ext,
            string.format("flags and num_stream_acks=%d imply a %d-byte extension, "
                .. "but payload region is %d bytes", nsa, want, region))
        ctx.malformed = true
    end
    local ext = new_reader(tvb, rd.off, rd.off + region)
    if has_sack then
        local item, r = ext:add(tree, f.ack_sack, SACK_BYTES)
        if item ~= nil and cum_psn ~= nil then
            local psns = sack_psns(r:raw(), cum_psn)
            local shown = {}
            for k = 1, math.min(#psns, 8) do
                shown[k] = tostring(psns[k])
            end
            local more = (#psns > 8) and ", ..." or ""
            item:append_text(string.format(" (%d PSNs: %s%s)", #psns, table.concat(shown, ", "),
                more))
            if #psns == 0 then
                item:add_proto_expert_info(ef.bad_value, "SACK flag set but bitmap is empty")
            end
            info[#info + 1] = "sack=" .. #psns
        end
    end
    local n = math.min(nsa, MAX_STREAM_ACKS)
    local streams = {}
    for i = 1, n do
        local st = subtree(tree, tvb, ext.off, STREAM_ACK_BYTES, "Stream ACK " .. i)
        local sid_item, sid = ext:uint(st, f.ack_stream_id, 4)
        local _, msn_next = ext:uint(st, f.ack_msn_next, 4)
        if sid == nil or msn_next == nil then
            break
        end
        st:append_text(string.format(": stream %s, msn_next %u", hex32(sid), msn_next))
        streams[#streams + 1] = string.format("%s:%u", hex32(sid), msn_next)
        if sid == 0 then
            sid_item:add_proto_expert_info(ef.bad_value, "stream_id must not be 0")
        end
    end
    if #streams > 0 then
        info[#info + 1] = "streams=" .. table.concat(streams, ",")
    end
    if bit32.band(ctx.flags, FLAG_ECE) ~= 0 then
        info[#info + 1] = "ECE"
    end
    -- Bytes of the region the flags and count do not explain.
    local extra = rd.off + region - ext.off
    if extra > 0 and not ext.short then
        ext:add(tree, f.undecoded, extra)
    end
end

local function dissect_nak(rd, tvb, tree, ctx)
    local info = ctx.info
    local t = subtree(tree, tvb, rd.off, NAK_BYTES, "NAK header")
    local _, stream = rd:uint(t, f.nak_stream_id, 4)
    local _, msn = rd:uint(t, f.nak_msn, 4)
    local _, psn = rd:uint(t, f.nak_psn, 4)
    local code_item, code = rd:uint(t, f.nak_code, 1)
    local _, detail = rd:uint(t, f.nak_detail, 1)
    local rnr_item, rnr = rd:uint(t, f.nak_rnr_delay, 2)
    local first_item, first = rd:uint(t, f.nak_first_chunk, 4)
    local num_item, num = rd:uint(t, f.nak_num_chunks, 4)
    if stream ~= nil then
        info[#info + 1] = "stream=" .. hex32(stream)
    end
    if msn ~= nil then
        info[#info + 1] = "msn=" .. msn
    end
    if psn ~= nil then
        info[#info + 1] = "psn=" .. psn
    end
    if code ~= nil then
        local s = NAK_CODE_NAMES[code] or string.format("code=%u", code)
        if detail ~= nil then
            s = s .. "/" .. (NAK_DETAIL_NAMES[detail] or tostring(detail))
        end
        info[#info + 1] = s
        if NAK_CODE_NAMES[code] == nil then
            code_item:add_proto_expert_info(ef.bad_value, "unknown NAK code")
        end
    end
    if rnr ~= nil and code == NAK_RNR then
        info[#info + 1] = string.format("rnr_delay=%uus", rnr * 10)
    elseif rnr ~= nil and rnr ~= 0 and code ~= nil then
        rnr_item:add_proto_expert_info(ef.reserved, "rnr_delay is reserved except for RNR")
    end
    if code == NAK_RESEND and first ~= nil and num ~= nil then
        info[#info + 1] = string.format("chunks=%u+%u", first, num)
        if num == 0 then
            num_item:add_proto_expert_info(ef.bad_resend_range, "num_chunks must be at least 1")
        elseif first + num > U32_MAX then
            num_item:add_proto_expert_info(ef.bad_resend_range, string.format(
                "first_chunk %u + num_chunks %u overflows 32 bits", first, num))
        end
    elseif code ~= nil then
        if first ~= nil and first ~= 0 then
            first_item:add_proto_expert_info(ef.reserved,
                "first_chunk is reserved except for RESEND")
        end
        if num ~= nil and num ~= 0 then
            num_item:add_proto_expert_info(ef.reserved, "num_chunks is reserved except for RESEND")
        end
    end
end

local function dissect_probe(rd, tvb, tree, ctx)
    local info = ctx.info
    local t = subtree(tree, tvb, rd.off, 8, "Probe header")
    local _, seq = rd:uint(t, f.probe_seq, 4)
    local _, ts = rd:uint(t, f.probe_ts, 4)
    if seq ~= nil then
        info[#info + 1] = "seq=" .. seq
    end
    if ts ~= nil then
        info[#info + 1] = "ts=" .. ts
    end
end

local PT_CONN_REQ, PT_CONN_ACCEPT, PT_CONN_RETRY = 0x30, 0x31, 0x34

local function dissect_conn(rd, tvb, tree, ctx)
    local info = ctx.info
    local ptype = ctx.ptype
    local t = subtree(tree, tvb, rd.off, CONN_BYTES, "Connection header")
    local _, src = rd:uint(t, f.conn_src_conn_id, 4)
    local _, nonce = rd:uint(t, f.conn_nonce, 4)
    local _, vmin = rd:uint(t, f.conn_min_version, 1)
    local _, vmax = rd:uint(t, f.conn_max_version, 1)
    local reason_item, reason = rd:uint(t, f.conn_reason, 1)
    rd:reserved(t, 1)
    local _, paths = rd:uint(t, f.conn_num_paths, 2)
    local _, max_payload = rd:uint(t, f.conn_max_payload, 2)
    local caps_item, caps = rd:uint(t, f.conn_capabilities, 4)
    rd:uint(t, f.conn_udp_port, 2)
    rd:reserved(t, 2)
    local inc_item, incarnation = rd:uint64(t, f.conn_incarnation)
    local cookie_item, cookie = rd:uint64(t, f.conn_cookie)
    local window_item, window = rd:uint(t, f.conn_stream_window, 4)
    local hint_item, hint = rd:uint(t, f.conn_rate_hint, 4)
    if src ~= nil then
        info[#info + 1] = "src_conn=" .. hex32(src)
    end
    if nonce ~= nil then
        info[#info + 1] = "nonce=" .. hex32(nonce)
    end
    if vmin ~= nil and vmax ~= nil then
        info[#info + 1] = string.format("versions=%u-%u", vmin, vmax)
    end
    local opening = ptype == PT_CONN_REQ or ptype == PT_CONN_ACCEPT
    if opening then
        if paths ~= nil and max_payload ~= nil then
            info[#info + 1] = string.format("paths=%u max_payload=%u", paths, max_payload)
        end
        if window ~= nil then
            info[#info + 1] = "stream_window=" .. window
            if window == 0 then
                window_item:add_proto_expert_info(ef.bad_value, "stream_window must be at least 1")
            end
        end
    elseif ptype ~= PT_CONN_RETRY and reason ~= nil then
        info[#info + 1] = "reason=" .. (CONN_REASON_NAMES[reason] or tostring(reason))
        if CONN_REASON_NAMES[reason] == nil then
            reason_item:add_proto_expert_info(ef.bad_value, "unknown reason")
        end
    end
    if (opening or ptype == PT_CONN_RETRY) and reason ~= nil and reason ~= 0 then
        reason_item:add_proto_expert_info(ef.bad_value,
            string.format("reason must be 0 in %s", TYPE_NAMES[ptype]))
    end
    if hint ~= nil and hint ~= 0 then
        if opening and caps ~= nil and bit32.band(caps, CAP_RATE_HINT) ~= 0 then
            info[#info + 1] = "rate_hint=" .. hint
        else
            hint_item:add_proto_expert_info(ef.reserved,
                "rate_hint is reserved without the RATE_HINT capability bit, and outside REQ/ACCEPT")
        end
    end
    if incarnation ~= nil and incarnation:tonumber() == 0 then
        inc_item:add_proto_expert_info(ef.bad_value, "incarnation must not be 0")
    end
    -- Extension of CONN_REQ / CONN_ACCEPT: the sender's planes 1..P-1 (IPv6 or IPv4-mapped).
    local region = ctx.region
    if opening and caps ~= nil and region > 0 then
        ctx.extension_shown = true
        local listed = bit32.band(caps, CAP_PLANES) ~= 0
        if not listed then
            caps_item:add_proto_expert_info(ef.bad_value,
                "a plane list needs the PLANES capability bit")
        end
        if region % PLANE_ADDR_BYTES ~= 0 or region > (MAX_PLANES - 1) * PLANE_ADDR_BYTES then
            tree:add_proto_expert_info(ef.bad_value, string.format(
                "a plane list is 16 bytes per plane, at most %d planes: %d bytes", MAX_PLANES - 1,
                region))
        end
        local ext = new_reader(tvb, rd.off, rd.off + region)
        local shown = {}
        for i = 1, math.floor(region / PLANE_ADDR_BYTES) do
            local item, r = ext:add(tree, f.conn_plane, PLANE_ADDR_BYTES)
            if item == nil then
                break
            end
            local text
            if r(0, 10):bytes():tohex() == "00000000000000000000" and r(10, 2):uint() == 0xffff then
                text = tostring(r(12, 4):ipv4())
            else
                text = tostring(r:ipv6())
            end
            item:append_text(string.format(" (plane %d: %s)", i, text))
            shown[#shown + 1] = text
        end
        info[#info + 1] = "planes=" .. table.concat(shown, ",")
    elseif opening and caps ~= nil and bit32.band(caps, CAP_PLANES) ~= 0 then
        caps_item:add_proto_expert_info(ef.bad_value, "the PLANES capability bit needs a plane list")
    end
    if cookie ~= nil then
        local zero = cookie:tonumber() == 0
        if not zero and (ptype == PT_CONN_REQ or ptype == PT_CONN_RETRY) then
            info[#info + 1] = "cookie=0x" .. cookie:tohex()
        end
        if ptype == PT_CONN_RETRY and zero then
            cookie_item:add_proto_expert_info(ef.bad_value, "CONN_RETRY must carry a cookie")
        elseif ptype ~= PT_CONN_REQ and ptype ~= PT_CONN_RETRY and not zero then
            cookie_item:add_proto_expert_info(ef.reserved,
                string.format("cookie is reserved in %s", TYPE_NAMES[ptype]))
        end
    end
end

local BODY = {
    [CLASS_DATA] = dissect_data,
    [CLASS_ACK] = dissect_ack,
    [CLASS_NAK] = dissect_nak,
    [CLASS_PROBE] = dissect_probe,
    [CLASS_CONN] = dissect_conn,
}

------------------------------------------------------------------------------
-- Main dissector

local function dissect(tvb, pinfo, root)
    local cap = tvb:len()           -- bytes present in the capture
    local total = tvb:reported_len() -- bytes of the UDP payload on the wire
    local ctx = { info = {}, malformed = false }
    local info = ctx.info

    local rd = new_reader(tvb, 0, COMMON_BYTES)
    local ch = subtree(root, tvb, 0, COMMON_BYTES, "Common header")
    local version_item, version = rd:uint(ch, f.version, 1)
    local type_item, ptype = rd:uint(ch, f.ptype, 1)
    local flags_item, flags = rd:uint(ch, f.flags, 2)
    if flags_item ~= nil then
        local r = tvb(2, 2)
        flags_item:add(f.flag_ack_req, r)
        flags_item:add(f.flag_solicited, r)
        flags_item:add(f.flag_retransmit, r)
        flags_item:add(f.flag_ece, r)
        flags_item:add(f.flag_sack, r)
        flags_item:add(f.flag_msg_probe, r)
        flags_item:add(f.flag_idle, r)
        flags_item:add(f.flag_reserved, r)
    end
    local conn_item, conn_id = rd:uint(ch, f.conn_id, 4)
    local _, path_id = rd:uint(ch, f.path_id, 2)
    local plen_item, payload_len = rd:uint(ch, f.payload_len, 2)

    local name = (ptype ~= nil) and TYPE_NAMES[ptype] or nil
    if ptype ~= nil then
        local label = name or string.format("UNKNOWN(0x%02x)", ptype)
        ch:add(f.type_name, tvb(1, 1), label):set_generated()
        info[#info + 1] = label
    end
    if path_id ~= nil then
        info[#info + 1] = "path=" .. path_id
    end
    if conn_id ~= nil then
        info[#info + 1] = "conn=" .. hex32(conn_id)
    end

    if rd.short then
        if total < COMMON_BYTES then
            root:add_proto_expert_info(ef.truncated, string.format(
                "%d-byte datagram cannot hold the %d-byte common header", total, COMMON_BYTES))
        else
            root:add_proto_expert_info(ef.truncated, string.format(
                "common header not fully captured (%d of %d bytes)", cap, COMMON_BYTES))
        end
        ctx.malformed = true
        return ctx
    end
    if version ~= VERSION then
        version_item:add_proto_expert_info(ef.bad_version,
            string.format("version %u is not supported (this dissector knows v%u)", version,
                VERSION))
        if cap > COMMON_BYTES then
            root:add(f.undecoded, tvb(COMMON_BYTES, cap - COMMON_BYTES))
        end
        ctx.malformed = true
        return ctx
    end
    if name == nil then
        type_item:add_proto_expert_info(ef.bad_type, string.format("type 0x%02x", ptype))
        if cap > COMMON_BYTES then
            root:add(f.undecoded, tvb(COMMON_BYTES, cap - COMMON_BYTES))
        end
        ctx.malformed = true
        return ctx
    end
    ctx.ptype = ptype
    ctx.flags = flags

    if ptype == PT_CONN_REQ and conn_id ~= 0 then
        conn_item:add_proto_expert_info(ef.bad_value, "CONN_REQ must carry conn_id 0")
    elseif ptype ~= PT_CONN_REQ and conn_id == 0 then
        conn_item:add_proto_expert_info(ef.bad_value, "conn_id 0 is only valid on CONN_REQ")
    end
    local bad_flags = bit32.band(flags, bit32.bnot(allowed_flags(ptype)))
    if bad_flags ~= 0 then
        flags_item:add_proto_expert_info(ef.bad_flags,
            string.format("flags 0x%04x are not allowed on %s", bad_flags, name))
    end
    local fl = {}
    if bit32.band(flags, FLAG_ACK_REQ) ~= 0 then fl[#fl + 1] = "ACKREQ" end
    if bit32.band(flags, FLAG_SOLICITED) ~= 0 then fl[#fl + 1] = "SE" end
    if bit32.band(flags, FLAG_RETRANSMIT) ~= 0 then fl[#fl + 1] = "RETX" end
    if bit32.band(flags, FLAG_ECE) ~= 0 then fl[#fl + 1] = "ECE" end
    if bit32.band(flags, FLAG_SACK) ~= 0 then fl[#fl + 1] = "SACK" end
    if bit32.band(flags, FLAG_MSG_PROBE) ~= 0 then fl[#fl + 1] = "MSGPROBE" end
    if bit32.band(flags, FLAG_IDLE) ~= 0 then fl[#fl + 1] = "IDLE" end
    if #fl > 0 then
        flags_item:append_text(" (" .. table.concat(fl, ", ") .. ")")
    end

    local fixed = COMMON_BYTES + TYPE_HDR_BYTES[ptype]
    local have_crc = total >= fixed + CRC_BYTES
    ctx.have_crc = have_crc
    if have_crc then
        -- The CRC is the last 4 bytes of the datagram; payload_len must
        -- account for everything between the type header and the CRC.
        ctx.region = total - fixed - CRC_BYTES
        if ctx.region ~= payload_len then
            plen_item:add_proto_expert_info(ef.bad_length, string.format(
                "payload_len is %u but the datagram carries %d bytes between the %s header "
                    .. "and the CRC (%d-byte datagram)", payload_len, ctx.region, name, total))
            ctx.malformed = true
        end
    else
        ctx.region = 0
        root:add_proto_expert_info(ef.truncated, string.format(
            "%d-byte datagram is shorter than the %d bytes of a %s header and CRC "
                .. "(payload_len %u)", total, fixed + CRC_BYTES, name, payload_len))
        ctx.malformed = true
    end

    rd = new_reader(tvb, COMMON_BYTES, fixed)
    BODY[TYPE_CLASS[ptype]](rd, tvb, root, ctx)
    if rd.short then
        if have_crc then
            -- Header present on the wire but not in the capture (snaplen).
            root:add_proto_expert_info(ef.truncated, "header not fully captured")
        end
        ctx.malformed = true
    end

    -- The ACK extension is the payload region of an ACK (dissect_ack shows it).
    if have_crc and TYPE_CLASS[ptype] ~= CLASS_ACK and not ctx.extension_shown and ctx.region > 0
        and cap > fixed then
        local avail = math.min(ctx.region, cap - fixed)
        local item = root:add(f.payload, tvb(fixed, avail))
        local cls = TYPE_CLASS[ptype]
        local allowed = CARRIES_PAYLOAD[ptype] or ptype == 0x20
        if not allowed then
            item:add_proto_expert_info(ef.payload_not_allowed,
                string.format("%s carries no payload", name))
        end
        if cls == CLASS_DATA or ptype == 0x20 then
            info[#info + 1] = "payload=" .. ctx.region
        end
    end

    if have_crc then
        local crc_off = total - CRC_BYTES
        if cap >= total then
            local stored = tvb(crc_off, CRC_BYTES):uint()
            local computed = crc32c(tvb:raw(0, crc_off))
            local item = root:add(f.crc, tvb(crc_off, CRC_BYTES))
            if stored == computed then
                item:append_text(" [correct]")
                root:add(f.crc_status, tvb(crc_off, CRC_BYTES), "good"):set_generated()
            else
                item:append_text(string.format(" [incorrect, should be 0x%08x]", computed))
                root:add(f.crc_status, tvb(crc_off, CRC_BYTES), "bad"):set_generated()
                item:add_proto_expert_info(ef.bad_crc, string.format(
                    "CRC-32C is 0x%08x, computed 0x%08x", stored, computed))
                info[#info + 1] = "[BAD CRC]"
            end
        else
            local st = root:add(f.crc_status, tvb(0, math.min(cap, COMMON_BYTES)), "unverified")
            st:set_generated()
            st:add_proto_expert_info(ef.unverified_crc)
        end
    end
    return ctx
end

function proto.dissector(tvb, pinfo, tree)
    local cap = tvb:len()
    if cap == 0 then
        return 0
    end
    pinfo.cols.protocol:set("MetaRoCE")
    local root = tree:add(proto, tvb(0, cap))
    local ok, ctx = pcall(dissect, tvb, pinfo, root)
    if not ok then
        -- A bug here must not hide the packet: report it on the packet.
        root:add_proto_expert_info(ef.internal, tostring(ctx))
        pinfo.cols.info:set("MetaRoCE [dissector error]")
        return cap
    end
    local info = ctx.info
    if ctx.malformed then
        info[#info + 1] = "[Malformed]"
    end
    local text = table.concat(info, " ")
    pinfo.cols.info:set(text)
    root:append_text(", " .. text)
    return cap
end

------------------------------------------------------------------------------
-- Registration on the UDP port from the preference.

local registered_port = 0

local function register_port(port)
    local udp = DissectorTable.get("udp.port")
    if registered_port ~= 0 then
        udp:remove(registered_port, proto)
    end
    if port ~= 0 then
        udp:add(port, proto)
    end
    registered_port = port
end

function proto.prefs_changed()
    if proto.prefs.udp_port ~= registered_port then
        register_port(proto.prefs.udp_port)
    end
end

register_port(DEFAULT_PORT)
