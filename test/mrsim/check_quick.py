#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
"""The claims mr-sim --quick must show on its small fabric (2 leaves x 4
hosts, 4 spines, 100 Gbit/s, seed 1), read from its JSON reports:
  - every experiment has a row per protocol and point, and a summary;
  - one flow reaches >= 95 % of the header-adjusted line rate (each protocol);
  - at 1 % loss metaroce keeps >= 90 % of its lossless goodput and is ahead
    of RoCEv2 (go-back-N), which keeps less than 70 %;
  - with the loss in bursts, metaroce keeps >= 0.5 of its lossless goodput
    at 10 % and is ahead of RoCEv2;
  - with 10 % loss on one spine's links (of 4) under a permutation,
    metaroce's slowest flow keeps >= 0.4 of its lossless goodput, more than
    either RoCEv2 keeps, and no metaroce QP fails;
  - under incast the baseline with PFC pauses and drops nothing, metaroce
    and the lossy baseline never pause; a victim beside 3 senders keeps
    >= 85 % of its link with metaroce;
  - an incast of every host over 4 QPs each: metaroce's QPs share their
    sender's connection, so it finishes within 5 % of its time with one QP,
    delivers everything and stays fair (Jain >= 0.95), fairer than both
    baselines;
  - in a permutation metaroce's slowest flow beats RoCEv2's (ECMP collides);
  - a ring all-reduce is held below line rate by its chain while a chunk is
    less than the bandwidth-delay product (every protocol), and metaroce's
    reaches >= 90 % of line rate once chunks are larger;
  - two planes carry >= 0.9 x twice one plane's throughput (metaroce);
  - a plane gone dark fails no metaroce QP, and metaroce gets back at least
    0.45 of its throughput; RoCEv2's QPs on that plane fail;
  - a spine gone dark (one of 4) fails no metaroce QP, and metaroce keeps
    >= 0.9 x 3/4 of its throughput while routes stay; RoCEv2's QPs through it
    fail then, and none fails when routes move it off after 0.1 ms;
  - one leaf-spine link gone dark fails no metaroce QP, and metaroce keeps
    >= 0.9 x what the fabric leaves it while routes stay; RoCEv2's QPs
    through it fail then;
  - behind 1 ms long links, flows of 2 ms round trips and of microseconds
    into one host share it evenly with metaroce (Jain >= 0.9, the long ones'
    mean at least 0.8 of the short ones'), no QP fails, and the link is
    >= 90 % used;
  - with 1 % loss on those links, no metaroce QP fails, no long flow stalls
    for more than 2 long round trips, and metaroce's long flows move more
    than both RoCEv2's.
  check_quick.py DIR"""
import json
import sys

PROTOS = ["metaroce", "rocev2-pfc", "rocev2"]
fails = []


def load(name):
    with open(f"{sys.argv[1]}/{name}.json") as f:
        return json.load(f)


def rows(report, proto, **where):
    out = [r for r in report["rows"] if r["protocol"] == proto]
    for k, v in where.items():
        out = [r for r in out if r[k] == v]
    return out


def one(report, proto, metric, **where):
    r = rows(report, proto, **where)
    if len(r) != 1:
        fails.append(f"{report['experiment']}: {len(r)} rows for {proto} {where}")
        return float("nan")
    return r[0][metric]


def expect(cond, what):
    if not cond:
        fails.append(what)


points = {"calibration": 1, "loss": 3, "bursty": 3, "gray": 2, "incast": 2, "incast-qps": 2, "permutation": 2, "alltoall": 1,
          "allreduce": 2, "planes": 2, "failure": 1, "spine": 2, "link": 2,
          "longhaul": 1, "longhaul-loss": 2}
reports = {}
for name, n in points.items():
    rep = load(name)
    reports[name] = rep
    expect(len(rep["rows"]) == n * len(PROTOS), f"{name}: {len(rep['rows'])} rows, want {n * len(PROTOS)}")
    expect(rep["summary"], f"{name}: no summary")
    expect(rep["speed"]["events"] > 0 and rep["speed"]["runs"] == n * len(PROTOS), f"{name}: speed {rep['speed']}")

cal = reports["calibration"]
for p in PROTOS:
    v = one(cal, p, "header_adjusted_pct")
    expect(v >= 95, f"calibration: {p} at {v} % of the header-adjusted line rate, want >= 95")

loss = reports["loss"]
mr = one(loss, "metaroce", "vs_lossless", loss_pct=1)
gbn = one(loss, "rocev2", "vs_lossless", loss_pct=1)
expect(mr >= 0.9, f"loss: metaroce keeps {mr} of lossless at 1 %, want >= 0.9")
expect(gbn < 0.7, f"loss: go-back-N keeps {gbn} of lossless at 1 %, want < 0.7")
expect(mr > gbn, f"loss: metaroce {mr} not ahead of go-back-N {gbn} at 1 %")

bursty = reports["bursty"]
mb = one(bursty, "metaroce", "vs_lossless", loss_pct=10)
gb = one(bursty, "rocev2", "vs_lossless", loss_pct=10)
expect(mb >= 0.5, f"bursty: metaroce keeps {mb} of lossless at 10 % in bursts, want >= 0.5")
expect(mb > gb, f"bursty: metaroce {mb} not ahead of go-back-N {gb} at 10 %")

gray = reports["gray"]
mg = one(gray, "metaroce", "vs_lossless", loss_pct=10)
expect(mg >= 0.4, f"gray: metaroce's slowest flow keeps {mg} of lossless at 10 % on one spine, want >= 0.4")
expect(one(gray, "metaroce", "qp_errors", loss_pct=10) == 0, "gray: a metaroce QP failed")
for p in ["rocev2-pfc", "rocev2"]:
    o = one(gray, p, "vs_lossless", loss_pct=10)
    expect(mg > o, f"gray: metaroce's slowest flow keeps {mg} of lossless, {p}'s {o}")

inc = reports["incast"]
expect(one(inc, "rocev2-pfc", "pfc_pauses", senders=7) > 0, "incast: the baseline with PFC never paused")
expect(one(inc, "rocev2-pfc", "drops", senders=7) == 0, "incast: the baseline with PFC dropped frames")
for p in ["metaroce", "rocev2"]:
    expect(one(inc, p, "pfc_pauses", senders=7) == 0, f"incast: {p} paused without PFC")
for n in [3, 7]:
    expect(one(inc, "metaroce", "qp_errors", senders=n) == 0, f"incast: a metaroce QP failed ({n} senders)")
# The victim (3 senders: a host of theirs is free) is measured by its
# completions, 64 KiB at a time over some 70 us: coarse, hence 85 and not 90.
v = one(inc, "metaroce", "victim_pct", senders=3)
expect(v >= 85, f"incast: metaroce's victim kept {v} % of its link beside 3 senders, want >= 85")
for p in PROTOS:
    v = one(inc, p, "victim_pct", senders=7)
    expect(v is None or v != v, f"incast: {p} has a victim with every other host sending ({v})")

iq = reports["incast-qps"]
one_qp = one(iq, "metaroce", "finish_us", qps_per_sender=1)
four = one(iq, "metaroce", "finish_us", qps_per_sender=4)
expect(abs(four - one_qp) <= 0.05 * one_qp,
       f"incast-qps: metaroce took {four} us over 4 QPs per sender, {one_qp} us over one")
expect(one(iq, "metaroce", "qp_errors", qps_per_sender=4) == 0, "incast-qps: a metaroce QP failed")
expect(one(iq, "metaroce", "delivered_pct", qps_per_sender=4) == 100,
       "incast-qps: metaroce did not deliver everything")
jain = one(iq, "metaroce", "jain", qps_per_sender=4)
expect(jain >= 0.95, f"incast-qps: metaroce's senders at Jain {jain} over 4 QPs each, want >= 0.95")
for p in ["rocev2-pfc", "rocev2"]:
    o = one(iq, p, "jain", qps_per_sender=4)
    expect(jain > o, f"incast-qps: metaroce's Jain {jain} not above {p}'s {o}")

perm = reports["permutation"]
for size in [1, 4]:
    m = one(perm, "metaroce", "fct_max_us", size_mib=size)
    for p in ["rocev2-pfc", "rocev2"]:
        o = one(perm, p, "fct_max_us", size_mib=size)
        expect(m < o, f"permutation {size} MiB: metaroce's slowest flow {m} us, {p}'s {o} us")

ar = reports["allreduce"]
for p in PROTOS:
    v = one(ar, p, "line_pct", size_mib=0.25)
    expect(v < 60, f"allreduce 0.25 MiB: {p} at {v} % of line rate with 32 KiB chunks, want < 60 (the chain)")
    expect(one(ar, p, "qp_errors", size_mib=4) == 0, f"allreduce: a {p} QP failed")
v = one(ar, "metaroce", "line_pct", size_mib=4)
expect(v >= 90, f"allreduce 4 MiB: metaroce at {v} % of line rate, want >= 90")

v = one(reports["planes"], "metaroce", "vs_one_plane", planes=2)
expect(v >= 0.9, f"planes: metaroce on two planes at {v} of twice one plane, want >= 0.9")

fail = reports["failure"]
expect(one(fail, "metaroce", "qp_errors") == 0, "failure: a metaroce QP failed when a plane went dark")
v = one(fail, "metaroce", "after_ratio")
expect(v >= 0.45, f"failure: metaroce kept {v} of its throughput after a plane went dark, want >= 0.45")
for p in ["rocev2-pfc", "rocev2"]:
    expect(one(fail, p, "qp_errors") > 0, f"failure: no {p} QP failed on the dark plane")

sp = reports["spine"]
for ms in [0.1, 10]:
    expect(one(sp, "metaroce", "qp_errors", reconverge_ms=ms) == 0,
           f"spine: a metaroce QP failed with routes back after {ms} ms")
v = one(sp, "metaroce", "after_ratio", reconverge_ms=10)
expect(v >= 0.9 * 0.75, f"spine: metaroce kept {v} of its throughput with a spine of 4 dark, want >= 0.675")
for p in ["rocev2-pfc", "rocev2"]:
    expect(one(sp, p, "qp_errors", reconverge_ms=10) > 0, f"spine: no {p} QP failed through the dark spine")
    expect(one(sp, p, "qp_errors", reconverge_ms=0.1) == 0,
           f"spine: a {p} QP failed although routes moved off the spine after 0.1 ms")

ln = reports["link"]
for ms in [0.1, 10]:
    expect(one(ln, "metaroce", "qp_errors", reconverge_ms=ms) == 0,
           f"link: a metaroce QP failed with routes back after {ms} ms")
after = [x for x in ln["verdicts"] if x["claim"].endswith("routes after 10 ms: throughput after")]
expect(len(after) == 1 and after[0]["met"],
       f"link: metaroce's throughput with a link dark and routes unchanged: {after}")
for p in ["rocev2-pfc", "rocev2"]:
    expect(one(ln, p, "qp_errors", reconverge_ms=10) > 0, f"link: no {p} QP failed through the dark link")

lh = reports["longhaul"]
j, ratio = one(lh, "metaroce", "jain", one_way_ms=1), one(lh, "metaroce", "long_vs_short", one_way_ms=1)
expect(j >= 0.9 and ratio >= 0.8,
       f"longhaul: metaroce's Jain {j}, long flows at {ratio} of the short ones, want >= 0.9 and >= 0.8")
expect(one(lh, "metaroce", "qp_errors", one_way_ms=1) == 0, "longhaul: a metaroce QP failed")
v = one(lh, "metaroce", "total_pct", one_way_ms=1)
expect(v >= 90, f"longhaul: metaroce's flows used {v} % of the receiver's link, want >= 90")

ll = reports["longhaul-loss"]
expect(one(ll, "metaroce", "qp_errors", loss_pct=1) == 0, "longhaul-loss: a metaroce QP failed")
v = one(ll, "metaroce", "max_stall_rtts", loss_pct=1)
expect(v <= 2, f"longhaul-loss: a metaroce long flow stalled for {v} long RTTs, want <= 2")
m = one(ll, "metaroce", "long_gbps", loss_pct=1)
for p in ["rocev2-pfc", "rocev2"]:
    v = one(ll, p, "long_gbps", loss_pct=1)
    expect(m > v, f"longhaul-loss: metaroce's long flows {m} Gbit/s at 1 % loss, {p}'s {v}")

for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
