#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
"""Writes the hand-made seeds of the engine_pair fuzz target (seed-* files) and the
reproductions of the engine bugs it found, fixed since (crash-* files).

Each seed is an operation program in the byte encoding fuzz_engine_pair.cc
reads (operands in the order it reads them; multi-byte values little-endian).
The encodings below assume what the seeds set up: the automatic handshake, so
the connection exists and packets are captured. Check a seed's decoding with
  MR_FUZZ_TRACE=1 build/test/fuzz/fuzz_engine_pair_replay DIR_WITH_THE_SEED
Usage: engine_pair_seeds.py [OUT_DIR]   (default: corpus/engine_pair next to it)
"""

import os
import random
import struct
import sys

OPS = ['Tick', 'PollTx', 'Deliver', 'Drop', 'Duplicate', 'DeliverAll', 'Settle', 'PostSend',
       'PostRecv', 'DestroyQp', 'ToggleMr', 'NewPair', 'ForgeAck', 'ForgeNak', 'ForgeProbe',
       'ForgeData', 'ForgeConn', 'Replay', 'Mutate']
OP = {name: i for i, name in enumerate(OPS)}
WRITE, WRITE_IMM, SEND, SEND_IMM, READ, FA, CS = range(7)
# Remote modes of PostSend: 0 valid, 8 region 1, 9 region 2, 10 bad key, 12-14 out of bounds.
# Local modes: 0 valid, 4 region 1, 5 region 2 (no local write), 6 bad key, 7 out of bounds.


def pick(ok):
    """The first byte value for which ok(value) holds: a selector that is reduced modulo the
    number of choices and also carries flag bits."""
    return next(v for v in range(256) if ok(v))


class Prog:
    # 2 + 2 paths, 256-byte chunks, 9-packet path windows, 3 timeouts fail a path, 4-message
    # stream windows, RNR retry 6, 4 message probes.
    def __init__(self, c0=0x09, c1=0x3f, c2=0x97, c3=0x1b, c4=0):
        self.b = bytearray([c0, c1, c2, c3, c4])

    def u8(self, *v):
        for x in v:
            self.b += struct.pack('<B', x & 0xff)
        return self

    def u16(self, v):
        self.b += struct.pack('<H', v & 0xffff)
        return self

    def u32(self, v):
        self.b += struct.pack('<I', v & 0xffffffff)
        return self

    def u64(self, v):
        self.b += struct.pack('<Q', v & 0xffffffffffffffff)
        return self

    def op(self, name):
        return self.u8(OP[name])

    # ---- time and wire ----
    def tick(self, base=0, shift=10):  # (base + 1) << shift ns
        return self.op('Tick').u8(base, shift)

    def poll_tx(self, side, nslots=1, small_cap=None):
        m = (nslots - 1) | (0x80 if small_cap is not None else 0)
        self.op('PollTx').u8(side, m)
        return self.u8(small_cap) if small_cap is not None else self

    def deliver(self, to, index=0, ce=0, kind='Deliver'):
        return self.op(kind).u8(to).u16(index).u8(ce)

    def deliver_all(self, which=2):  # 0: to A, 1: to B, 2: both
        return self.op('DeliverAll').u8(which)

    def settle(self, base=255, shift=6):  # (base + 1) << (6 + shift) ns
        return self.op('Settle').u8(base, shift)

    # ---- verbs ----
    def post_send(self, side, opcode, len_sel, pair=0, sg=0, flags=1, lmode=0, lhint=0, rmode=0,
                  rhint=0, extra=0, keys=()):
        self.op('PostSend').u8(side, pair, opcode, len_sel, sg, flags, lmode).u16(lhint)
        self.u8(rmode).u16(rhint).u8(extra)
        for k in keys:  # guessed keys (key mode 2) and the zero-length SGE, in read order
            self.u32(k) if k < (1 << 32) else self.u64(k)
        return self

    def post_recv(self, side, len_sel, pair=0, mode=0, hint=0, sg=0):
        return self.op('PostRecv').u8(side, pair, len_sel, mode).u16(hint).u8(sg)

    def destroy_qp(self, side, pair=0):
        return self.op('DestroyQp').u8(side, pair)

    def toggle_mr(self, side, slot):
        return self.op('ToggleMr').u8(side, slot)

    def new_pair(self):
        return self.op('NewPair')

    # ---- hostile packets (the connection exists; conn id mode 0 = real, 3 = guessed) ----
    def _from(self, src):  # src: 0 the peer (spoofed), 2 off-path, 3 the receiver itself
        return self.u8(src, 7)

    def _conn_id(self, mode, guess=0x12345679):
        self.u8(mode)
        return self.u32(guess) if mode == 3 else self

    def forge_ack(self, to, src=0, conn=0, path=0, base=0, delta=0, sack=None, streams=()):
        """base bit 0: relative to una (else next_psn); bits 1-2: sack kind; bit 3: echo now."""
        self.op('ForgeAck').u8(to)
        self._from(src)._conn_id(conn)
        base |= (len(streams) << 5)
        if sack is not None:
            base |= 2 << 1
        self.u8(path, base, delta)
        if sack is not None:
            self.u8(sack)
        self.u16(100) if base & 8 else self.u32(0x1234)
        self.u16(0).u32(7).u16(0)
        for qp_sel, rel_next, d in streams:  # qp_sel < 224: pair index; rel_next 1: next_msn
            self.u8(qp_sel, rel_next, d)
        return self

    def forge_nak(self, to, code, src=0, conn=0, path=0, qp_sel=0, rel=0, detail=0, rnr=None,
                  resend=None):
        flags = rel
        if rnr is not None and rnr > 3:
            flags |= 0x10
        if resend is not None and resend[0] > 9:
            flags |= 0x20
        if resend is not None and resend[1] > 10:
            flags |= 0x40
        m = pick(lambda v: v & 0x71 == flags and 1 + (v >> 1) % 5 == code)
        self.op('ForgeNak').u8(to)
        self._from(src)._conn_id(conn)
        self.u8(path, qp_sel, m).u32(0).u8(0).u8(0).u8(detail)
        if code == 1:
            self.u16(rnr) if m & 0x10 else self.u8(rnr or 0)
        if code == 5:
            first, num = resend
            self.u32(first) if m & 0x20 else self.u8(first)
            self.u32(num) if m & 0x40 else self.u8(num - 1)
        return self

    def forge_probe(self, to, reply, src=0, conn=0, path=0, padding=0):
        m = (0 if reply else 1) | 2 | (padding << 2)
        self.op('ForgeProbe').u8(to)
        self._from(src)
        return self.u8(m)._conn_id(conn).u8(path, 0).u32(99)

    def forge_data(self, to, ptype, src=0, conn=0, path=0, psn_mode=0, src_stream=0, msn_beyond=0,
                   flags=0, qp_sel=0, qp_known=True):
        """ptype 0..8 = WRITE, WRITE_IMM, SEND, SEND_IMM, READ_REQ, READ_RESP, ATOMIC_FA,
        ATOMIC_CS, ATOMIC_RESP; psn_mode 0 next, 1 duplicate, 2 beyond the window; src_stream 0
        the real peer stream, 3 a wrong one; qp_known: the stream is one of the receiver's QPs."""
        moves_cum = psn_mode == 0  # una_psn = psn; else una_psn <= the cumulative PSN
        m0 = pick(lambda v: v % 9 == ptype and (v >> 4) & 3 == psn_mode and
                  bool(v & 0x40) == moves_cum)
        m1 = src_stream | (4 if msn_beyond else 0) | (2 << 3)  # msg_len = chunk * (1 + x)
        self.op('ForgeData').u8(to)
        self._from(src)
        self.u8(m0, m1, 0, flags)._conn_id(conn).u8(path)
        self.u8(0)  # psn offset (modes 0-2)
        if not moves_cum:
            self.u8(0)  # una_psn = the cumulative PSN
        self.u32(0xabc)  # tx_ts
        self.u8(qp_sel)
        if src_stream == 3 or not qp_known:
            self.u32(0x777)
        self.u8(0) if qp_known else self.u32(0)  # msn delta, or any MSN
        payload = ptype in (0, 1, 2, 3, 5)
        if payload:
            self.u8(0).u8(0)  # length selector, offset chunk 0
        elif ptype not in (6, 7, 8):
            self.u16(300)  # READ length
        if ptype in (0, 1, 4, 6, 7):
            self.u16(64)  # va offset in the receiver's region 0 (real rkey)
        if ptype in (1, 2, 3):
            self.u8(0) if qp_known else self.u32(0)  # recv_seq
        if ptype in (1, 3):
            self.u32(0x1111)
        if ptype in (6, 7):
            self.u64(5)
        if ptype == 7:
            self.u64(6)
        if ptype == 8:
            self.u64(0x42)
        return self

    def forge_conn(self, to, kind, src=2, conn=3, f=0, reason=2, come_back=False):
        """kind 0 REQ, 1 RETRY, 2 ACCEPT, 3 REJECT, 4 CLOSE; f as in the harness (bit 0 real
        src_conn_id, 1 real nonce, 4 + 8 odd versions, 0x40 real incarnation)."""
        m = pick(lambda v: v % 5 == kind and (v >= 0x80) == come_back)
        self.op('ForgeConn').u8(to, m)
        self._from(src)
        if come_back:
            return self
        if kind != 0:
            self._conn_id(conn)
        self.u8(f)
        if not f & 1:
            self.u32(0xc0ffee01)
        if not f & 2:
            self.u32(0x5eed)
        if f & 0x0c == 0x0c:
            self.u8(0, 1)
        if kind in (3, 4):
            self.u8(reason)
        self.u8(0).u16(0)  # num_paths 1, max_payload 256
        if not f & 0x40:
            self.u64(0xbadc0de)
        self.u8(3)  # stream window 4
        if kind == 0 and f & 8 and not f & 4:
            self.u64(0xdeadbeef00)
        if kind == 1:
            self.u64(0xc00c1e)
        return self

    def replay(self, index, to_other=False, off_path=False, ce=False):
        m = (3 if to_other else 0) | (0x10 if off_path else 0) | (0x20 if ce else 0)
        return self.op('Replay').u16(index).u8(m)

    def mutate(self, index, edits, length=None, reseal=True):
        """edits: (pos, bit) flips; length: 0 truncate, 1 extend."""
        m = ((len(edits) - 1) << 1) | ((7 if length is None else length) << 3)
        m &= 0x3f
        if not reseal:
            m |= 0xc0
        self.op('Mutate').u16(index).u8(m)
        for pos, bit in edits:
            self.u16(pos).u8(1 | (bit << 1))
        if length is not None:
            self.u8(3)
        return self


def seeds():
    s = {}
    p = Prog()
    p.post_send(0, WRITE, 100).settle().post_send(0, WRITE, 0x80 | 44, sg=0x80 | 2 | (30 << 2))
    p.post_send(1, WRITE, 0x80 | 20, lhint=300, rhint=900).settle()
    s['write'] = p
    p = Prog()
    p.post_recv(1, 0x80 | 40, sg=1 | (20 << 2)).post_recv(1, 64)
    p.post_send(0, SEND, 0x80 | 35, sg=2).post_send(0, SEND_IMM, 50).settle()
    p.post_recv(0, 200).post_send(1, WRITE_IMM, 0x80 | 20).settle()
    s['send-recv'] = p
    p = Prog()
    p.post_send(0, READ, 0x80 | 56, sg=1).post_send(1, READ, 200, lhint=1000).settle()
    p.post_send(0, READ, 0x80 | 10, rmode=9).settle()  # from the read-only region
    s['read'] = p
    p = Prog()
    p.post_send(0, FA, 0, rhint=0, extra=0x14).post_send(0, CS, 0, rhint=1, extra=2)
    p.post_send(0, CS, 0, rhint=2, extra=0).post_send(1, FA, 0, rhint=3, extra=4).settle()
    p.post_send(0, FA, 0, rhint=0, extra=8).settle()
    s['atomic'] = p
    p = Prog()
    p.post_send(0, WRITE, 0).post_send(0, READ, 0).post_send(0, WRITE, 0, sg=1, extra=1,
                                                               keys=(1 << 40, 0x999))
    p.post_recv(1, 0).post_send(0, SEND, 0).post_recv(1, 0, sg=1).post_send(0, WRITE_IMM, 0)
    p.settle()
    s['zero-length'] = p
    p = Prog()
    p.post_send(0, WRITE, 100, rmode=10 | (1 << 4), keys=(0x13370001,)).settle()
    s['bad-rkey'] = p
    p = Prog()
    p.post_send(0, READ, 100, rmode=8).settle()  # no remote read on region 1
    p.post_send(1, WRITE, 100, rmode=9).settle()  # no remote write on region 2
    s['no-permission'] = p
    p = Prog()
    p.post_send(0, WRITE, 0x80 | 10, rmode=13).settle()  # past the region's end
    p.post_send(0, READ, 0x80 | 20, rmode=12).settle()  # across the region's end
    s['out-of-bounds'] = p
    p = Prog()
    p.post_send(0, FA, 0, rmode=10, rhint=3).settle()  # misaligned
    p.post_send(1, CS, 0, rmode=11).settle()  # region without atomic access
    p.post_send(0, FA, 0, rmode=14).settle()  # across the end
    s['bad-atomic'] = p
    p = Prog()
    p.post_send(0, WRITE, 100, lmode=6 | (1 << 3), keys=(0xdead,)).settle()  # bad lkey
    p.post_send(0, WRITE, 100).post_send(0, READ, 100, lmode=5).settle()  # no local write
    s['bad-local'] = p
    p = Prog()
    for i in range(5):
        p.post_send(0, WRITE, 60 + i, flags=0, lhint=i * 97, rhint=i * 131)
    p.post_send(0, WRITE, 30).settle()
    for i in range(3):
        p.post_send(1, WRITE, 60 + i, flags=0)
    p.settle()
    s['unsignaled'] = p
    p = Prog()
    p.post_send(0, WRITE, 0x80 | 40, sg=2).post_send(0, WRITE, 0x80 | 20).tick(0, 12)
    p.deliver(1, 2).deliver(1, 0, kind='Drop').deliver(1, 0, kind='Duplicate').deliver(1, 1, ce=1)
    p.tick(0, 8).deliver_all(0).tick(0, 14).deliver_all(2).tick(0, 14).deliver_all(2).settle()
    s['wire-reorder-drop'] = p
    p = Prog()
    p.post_send(0, WRITE, 0x80 | 40).post_send(0, READ, 0x80 | 20).tick(0, 12)
    p.destroy_qp(0).settle().post_send(1, WRITE, 100).settle()
    p.destroy_qp(1).settle()
    s['destroy-qp'] = p
    p = Prog()
    p.toggle_mr(1, 0).post_send(0, WRITE, 100).settle().toggle_mr(1, 0)
    p.post_send(0, WRITE, 100).post_send(0, READ, 100, rmode=10 | (0 << 4)).settle()
    p.post_recv(1, 100).toggle_mr(1, 0).post_send(0, SEND, 50).settle().toggle_mr(1, 0)
    p.post_send(0, READ, 0x80 | 40).tick(0, 12).toggle_mr(1, 0).settle()
    s['dereg'] = p
    p = Prog()
    p.new_pair().post_send(0, WRITE, 100, pair=1).post_send(1, READ, 100, pair=1).new_pair()
    p.post_send(0, WRITE, 100, pair=2).destroy_qp(1, pair=1).tick(0, 12)
    p.forge_data(1, 0, qp_sel=1, qp_known=False, flags=0x21)  # to the destroyed QP, a probe
    p.settle()
    s['new-pair'] = p
    p = Prog()
    p.post_send(0, WRITE, 0x80 | 30).tick(0, 12)
    p.forge_ack(0, delta=40)  # PSNs never sent
    p.forge_ack(0, base=1, delta=0xf0, sack=200)  # stale cum, SACK bits
    p.forge_ack(0, src=2, delta=1)  # the real ids from an off-path host
    p.forge_ack(0, conn=3, delta=1)  # a guessed connection id
    p.forge_ack(0, streams=((0, 1, 0x81),))  # a stream ACK for MSNs never posted
    p.settle()
    s['forge-ack'] = p
    p = Prog()
    p.post_send(0, WRITE, 0x80 | 30).tick(0, 12)
    p.forge_nak(0, 1, rnr=0xffff).forge_nak(0, 5, resend=(0, 3)).forge_nak(0, 5, resend=(7, 200))
    p.forge_nak(0, 5, resend=(0xfffffff0, 0x7fffffff)).forge_nak(0, 2, conn=3)
    p.forge_nak(0, 3, src=2).forge_nak(0, 4, detail=8).settle()
    p.post_send(0, WRITE, 0x80 | 30).tick(0, 12).forge_nak(0, 2, qp_sel=0).settle()
    s['forge-nak'] = p
    p = Prog()
    p.post_send(0, WRITE, 100).tick(0, 12)
    p.forge_probe(0, False, padding=20).forge_probe(0, True).forge_probe(1, True, src=2)
    p.forge_probe(0, True, conn=3).tick(0, 12).settle()
    s['forge-probe'] = p
    p = Prog()
    p.post_send(0, WRITE, 100).tick(0, 12)
    p.forge_data(1, 0, psn_mode=2)  # beyond the PSN window
    p.forge_data(1, 0, src_stream=3)  # another stream's
    p.forge_data(1, 4, msn_beyond=1)  # past the stream window
    p.forge_data(1, 0, conn=3).forge_data(1, 2, src=2)
    p.forge_data(0, 5, src_stream=3).forge_data(0, 8, src_stream=3).forge_data(1, 7, psn_mode=2)
    p.forge_data(1, 0, psn_mode=1, src_stream=3, flags=0x20).settle()
    s['forge-data'] = p
    p = Prog()
    p.post_send(0, WRITE, 100).post_send(1, READ, 100).tick(0, 10)
    p.forge_data(1, 0).forge_data(0, 5).forge_data(1, 4).settle()  # accepted: taints
    s['forge-data-valid'] = p
    p = Prog()
    p.forge_conn(1, 0).tick(0, 10).forge_conn(1, 0, come_back=True).tick(0, 10)  # off-path open
    p.forge_conn(0, 0, src=0).tick(0, 10).forge_conn(0, 0, come_back=True)  # spoofed: no cookie
    p.forge_conn(1, 1).forge_conn(0, 2, conn=0).forge_conn(1, 3, conn=0)
    p.forge_conn(0, 4, src=0, conn=0, f=1).forge_conn(1, 0, f=0x0c)
    p.forge_conn(1, 0, f=0x08).post_send(0, WRITE, 100).settle()
    s['forge-conn'] = p
    p = Prog(c0=0x40)  # the program runs the handshake
    p.post_send(0, WRITE, 100).poll_tx(0).poll_tx(1).deliver(1).deliver(0).poll_tx(0).poll_tx(1)
    p.forge_conn(0, 3, src=0, conn=0, f=2).forge_conn(1, 1, src=0, conn=0, f=2)
    p.deliver_all(2).tick(0, 12).deliver_all(2).tick(0, 12).settle()
    s['manual-handshake'] = p
    p = Prog()
    for i in range(6):
        p.post_send(0, WRITE, 50, lhint=i * 200, rhint=i * 300).tick(0, 11).deliver_all(1)
        p.replay(i * 7).replay(i * 5 + 3, to_other=True).replay(i, off_path=True, ce=True)
    p.settle()
    s['replay'] = p
    p = Prog()
    p.post_send(0, WRITE, 100).post_send(1, READ, 50).tick(0, 12)
    for i in range(8):
        p.mutate(i * 3, [(i * 5 + 1, i % 8), (i * 11, 3)], length=(i % 3 if i % 3 < 2 else None),
                 reseal=i != 5)
    p.settle()
    s['mutate'] = p
    p = Prog(c0=0x80 | 0x09)  # PSNs near 2^32
    for i in range(12):
        p.post_send(i & 1, WRITE, 0x80 | 20, lhint=i * 160, rhint=i * 170).tick(0, 10)
    p.settle()
    s['psn-wrap'] = p
    p = Prog(c4=2)  # 4-entry CQs
    for i in range(8):
        p.post_send(0, WRITE, 20, lhint=i * 40, rhint=i * 40)
    p.settle()
    s['cq-overflow'] = p
    p = Prog(c4=1)  # 4-entry send queues
    for i in range(7):
        p.post_send(0, WRITE, 20, lhint=i * 40, rhint=i * 40)
    p.settle()
    s['sq-full'] = p
    p = Prog(c3=0x1a)
    p.post_send(0, SEND, 100).settle().post_recv(1, 200).settle()  # RNR, then a receive
    p.post_recv(1, 10).post_send(0, SEND, 100).settle()  # receive too small
    s['rnr-and-short-receive'] = p
    p = Prog(c2=0x17)  # one message per stream window
    for i in range(5):
        p.post_send(0, WRITE, 0x80 | 17, lhint=i * 300, rhint=i * 300)
    p.settle()
    s['stream-window'] = p
    p = Prog()
    p.post_send(0, WRITE, 0x80 | 60).poll_tx(0, 1).poll_tx(0, 2, small_cap=10)
    p.poll_tx(0, 16).deliver_all(1).poll_tx(1, 1).settle()
    s['small-slots'] = p
    p = Prog(c2=0x20 | 0x97)  # 64 bytes of receive state: long forged messages are refused
    p.post_send(0, WRITE, 100).tick(0, 10)
    p.settle()
    s['rx-state-bound'] = p
    # A few random mixes of valid operations and hostile packets.
    rng = random.Random(4792)
    for n in range(6):
        p = Prog(c0=rng.randrange(256) & 0x3f, c1=rng.randrange(256), c2=rng.randrange(256),
                 c3=rng.randrange(256) | 0x18, c4=rng.randrange(256) & 0xec)
        for _ in range(40):
            k = rng.randrange(12)
            side = rng.randrange(2)
            if k < 4:
                p.post_send(side, rng.randrange(7), rng.randrange(256), sg=rng.randrange(128),
                            flags=rng.choice((1, 1, 1, 0, 5)), lhint=rng.randrange(4096),
                            rhint=rng.randrange(4096))
            elif k == 4:
                p.post_recv(side, rng.randrange(256), hint=rng.randrange(4096),
                            sg=rng.randrange(128))
            elif k == 5:
                p.tick(rng.randrange(256), rng.randrange(14))
            elif k == 6:
                p.deliver(side, rng.randrange(16), kind=rng.choice(('Deliver', 'Drop',
                                                                    'Duplicate')))
            elif k == 7:
                p.deliver_all(rng.randrange(3))
            elif k == 8:
                p.forge_ack(side, delta=rng.randrange(256), sack=rng.randrange(256))
            elif k == 9:
                p.forge_nak(side, rng.randrange(1, 6), rnr=rng.randrange(4),
                            resend=(rng.randrange(10), rng.randrange(1, 10)))
            elif k == 10:
                p.replay(rng.randrange(256), to_other=rng.random() < 0.3)
            else:
                p.settle(rng.randrange(256), rng.randrange(4))
        s['mix-%d' % n] = p
    return s


def crashes():
    """Inputs that failed before the engine was fixed; each must pass from now on."""
    s = {}
    # A WRITE's gather list deregistered before it went out: the engine read unregistered memory.
    p = Prog()
    p.post_send(0, WRITE, 100).toggle_mr(0, 0).settle()
    s['gather-after-dereg'] = p
    # A WRITE from one byte before region 0: its second chunk, inside the region, was placed.
    p = Prog()
    p.post_send(0, WRITE, 0x80 | 40, rmode=14).tick(0, 12).deliver(1, 1)
    s['write-across-region-start'] = p
    # A stream ACK for MSNs A never posted: A released nothing after it (and completed what
    # was outstanding).
    p = Prog()
    p.forge_ack(0, streams=((0, 1, 0x81),)).post_send(0, WRITE, 100).settle()
    s['stream-ack-beyond-posted'] = p
    # Stream window 1: the stream ACK past B's READ is lost, the READ completes by its response,
    # and the WRITE behind it was never released.
    p = Prog(c2=0x17)
    p.post_send(1, READ, 50).tick(0, 12).deliver(0, 0).tick(0, 0).deliver(1, 0, kind='Drop')
    p.post_send(1, WRITE, 20)
    s['lost-stream-ack-after-read'] = p
    # B holds A's SEND (MSN 1, recv_seq 0) while MSN 0 is missing; a WRITE_IMM with the real ids,
    # MSN 0 and recv_seq 0 took the receive, and the SEND popped an empty receive queue.
    p = Prog()
    p.post_recv(1, 64).post_send(0, WRITE, 0).post_send(0, SEND, 6).tick(0, 12)
    p.deliver(1, 0, kind='Drop').deliver(1, 0).forge_data(1, 1)
    s['two-messages-one-receive'] = p
    return s


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus',
                                                             'engine_pair')
    os.makedirs(out, exist_ok=True)
    for prefix, progs in (('seed-', seeds()), ('crash-', crashes())):
        for name, prog in progs.items():
            with open(os.path.join(out, prefix + name), 'wb') as f:
                f.write(bytes(prog.b))


if __name__ == '__main__':
    main()
