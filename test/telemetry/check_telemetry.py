#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
"""Reads a running process's /metaroce/ telemetry over DPDK's socket.

check_telemetry.py NODE
    Starts NODE (telemetry_node) three times: net_ring ports under an EAL with shared
    config, the same with --no-shconf, and kernel UDP sockets with telemetry::StartEal().
    Each time it talks to /var/run/dpdk/<prefix>/dpdk_telemetry.v2 as dpdk-telemetry.py
    does (SOCK_SEQPACKET, one JSON reply per command), checks the engines, stats,
    connections and per-path figures of both devices, the log lines, and (if installed)
    that dpdk-telemetry.py -f <prefix> reads the same. Removes the runtime directories.

check_telemetry.py NODE --dumpcap MR_DECODE
    Captures the node's net_ring traffic with dpdk-dumpcap and decodes it with mr-decode.
    A secondary process cannot attach to an EAL without hugepages, so this needs 128 MiB of
    free hugepages on a mounted hugetlbfs; without them (or without dpdk-dumpcap) it says
    what is missing and exits 77. Not a meson test (a skip counts as a failure there): run
    it by hand where hugepages exist.
"""

import glob
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

READY_TIMEOUT_S = 120
SKIP = 77


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def runtime_dir(prefix):
    """Where EAL puts /var/run/dpdk/<prefix> (the same rule as dpdk-telemetry.py)."""
    base = os.environ.get("RUNTIME_DIRECTORY")
    if not base:
        base = "/var/run" if os.getuid() == 0 else os.environ.get("XDG_RUNTIME_DIR", "/tmp")
    return os.path.join(base, "dpdk", prefix)


class Node:
    """telemetry_node running with a file prefix; its stderr goes to a file."""

    def __init__(self, exe, prefix, args):
        self.prefix = prefix
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([exe, "--prefix", prefix] + args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.info = json.loads(self.read_line("the ready line"))

    def read_line(self, what):
        ready, _, _ = select.select([self.proc.stdout], [], [], READY_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            self.proc.wait()
            fail("node gave no %s; stderr:\n%s" % (what, self.stderr()))
        return line

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(runtime_dir(self.prefix), ignore_errors=True)
        for mnt in hugetlbfs_mounts():
            for f in glob.glob(os.path.join(mnt, self.prefix + "map_*")):
                os.unlink(f)
        return self.proc.returncode


class Telemetry:
    """A client of DPDK's v2 telemetry socket, as usertools/dpdk-telemetry.py."""

    def __init__(self, prefix):
        path = os.path.join(runtime_dir(prefix), "dpdk_telemetry.v2")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(30)
        self.sock.connect(path)
        hello = json.loads(self.sock.recv(1024).decode())
        self.max_len = hello["max_output_len"]

    def query(self, cmd):
        self.sock.send(cmd.encode())
        reply = json.loads(self.sock.recv(self.max_len).decode())
        key = cmd.split(",")[0]
        if key not in reply:
            fail("reply to %s has no %s: %s" % (cmd, key, reply))
        return reply[key]

    def close(self):
        self.sock.close()


def positive(d, keys, where):
    for k in keys:
        if not isinstance(d.get(k), int) or d[k] <= 0:
            fail("%s: %s is %r, expected > 0 in %s" % (where, k, d.get(k), json.dumps(d)))


def check_figures(tel, info, lossy):
    """Both devices' engines, stats, connections and paths."""
    cmds = tel.query("/")
    for c in ("/metaroce/engines", "/metaroce/stats", "/metaroce/conns", "/metaroce/paths"):
        if c not in cmds:
            fail("%s is not registered: %s" % (c, cmds))
    help_text = tel.query("/help,/metaroce/paths")
    if "engine,conn" not in help_text.get("/metaroce/paths", ""):
        fail("help of /metaroce/paths: %s" % help_text)
    engines = tel.query("/metaroce/engines")
    for name, idx in info["engines"].items():
        if engines.get(str(idx)) != name:
            fail("/metaroce/engines has no %s at %d: %s" % (name, idx, engines))
    for name, idx in info["engines"].items():
        where = "%s (engine %d)" % (name, idx)
        st = tel.query("/metaroce/stats,%d" % idx)
        if st["name"] != name or st["connections_up"] != 1:
            fail("%s stats: %s" % (where, st))
        positive(st, ["snapshot_seq", "rx_packets", "rx_bytes", "tx_packets", "tx_bytes"], where)
        if "bad_crc" not in st["rx_drops"] or "unknown_conn" not in st["rx_drops"]:
            fail("%s stats: rx_drops lacks reasons: %s" % (where, st["rx_drops"]))
        if st["snapshot_age_ns"] > 5_000_000_000:
            fail("%s: snapshot is %d ns old while the node polls" % (where, st["snapshot_age_ns"]))
        positive(st["port"], ["rx_packets", "tx_packets"], where + " port")

        conn_id = info["conns"][name]
        conns = tel.query("/metaroce/conns,%d" % idx)
        if conns["total"] != 1 or conns["next"] != 1:
            fail("%s conns: %s" % (where, conns))
        c = conns["conns"].get(str(conn_id))
        if c is None or c["state"] != "up" or c["paths"] != 8 or c["paths_active"] != 8:
            fail("%s conn %d: %s" % (where, conn_id, conns))
        positive(c, ["tx_pkts", "tx_bytes", "rx_pkts", "rx_bytes", "window_pkts", "chunk_bytes",
                     "qps", "remote_conn_id"], where)
        # A sent the data: its paths have RTT samples and packets; B only acknowledged.
        sender = name == "node_a"
        path_keys = ["src_port", "active", "rto_ns", "window_pkts"]
        if sender:
            positive(c, ["srtt_ns", "srtt_min_ns"], where)
            path_keys += ["srtt_ns", "tx_pkts"]

        paths = tel.query("/metaroce/paths,%d,%d" % (idx, conn_id))
        if paths["conn"] != conn_id or paths["total"] != 8 or len(paths["paths"]) != 8:
            fail("%s paths: %s" % (where, paths))
        retx = 0
        for pid, p in paths["paths"].items():
            positive(p, path_keys, "%s path %s" % (where, pid))
            retx += p["retx_pkts"]
        if sender:
            if c["tx_bytes"] < 4 << 20:
                fail("%s sent %d bytes for a 4 MiB WRITE" % (where, c["tx_bytes"]))
            # B drops 1 % of what it receives: A retransmits.
            if lossy and retx == 0:
                fail("%s: no retransmission despite 1 %% loss: %s" % (where, paths))
            if retx != c["retx_pkts"]:
                fail("%s: paths retransmitted %d, the connection says %d" % (where, retx,
                                                                             c["retx_pkts"]))
    # Bad requests are answered with null, as DPDK's own commands do.
    for bad in ("/metaroce/stats", "/metaroce/stats,99999", "/metaroce/paths,0,1,2,3",
                "/metaroce/conns,x"):
        if tel.query(bad) is not None:
            fail("%s should be null" % bad)


def check_dpdk_telemetry_py(prefix, info):
    """dpdk-telemetry.py (package dpdk-dev) reads commands from a pipe, one reply per line."""
    tool = shutil.which("dpdk-telemetry.py")
    if tool is None:
        print("  dpdk-telemetry.py not installed (Debian package dpdk-dev): not run")
        return
    idx = info["engines"]["node_a"]
    out = subprocess.run([tool, "-f", prefix], input="/metaroce/engines\n/metaroce/paths,%d,%d\n"
                         % (idx, info["conns"]["node_a"]), capture_output=True, text=True,
                         timeout=60)
    replies = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    if len(replies) != 2 or replies[0]["/metaroce/engines"].get(str(idx)) != "node_a" or \
            len(replies[1]["/metaroce/paths"]["paths"]) != 8:
        fail("dpdk-telemetry.py -f %s said:\n%s%s" % (prefix, out.stdout, out.stderr))
    print("  dpdk-telemetry.py -f %s: engines and paths read" % prefix)


def expect_log(node, texts):
    err = node.stderr()
    for t in texts:
        if t not in err:
            fail("node stderr lacks %r:\n%s" % (t, err))


def hugetlbfs_mounts():
    with open("/proc/mounts") as f:
        return [l.split()[1] for l in f if l.split()[2] == "hugetlbfs"]


def free_hugepage_bytes():
    info = {}
    with open("/proc/meminfo") as f:
        for l in f:
            k, v = l.split(":", 1)
            info[k] = int(v.split()[0])
    return info.get("HugePages_Free", 0) * info.get("Hugepagesize", 0) * 1024


def telemetry_cases(exe):
    cases = [
        ("ring_shconf", ["--mode", "ring", "--shconf"],
         ["METAROCE: pdump: initialised, but EAL runs without hugepages (--no-huge)"]),
        ("ring_noshconf", ["--mode", "ring"],
         ["METAROCE: pdump: unavailable: EAL runs without multi-process"]),
        ("udp", ["--mode", "udp"], []),
    ]
    for label, args, logs in cases:
        prefix = "mr_tel_%d_%s" % (os.getpid(), label)
        print("%s: %s" % (label, " ".join(args)))
        node = Node(exe, prefix, args)
        try:
            tel = Telemetry(prefix)
            check_figures(tel, node.info, lossy=True)
            tel.close()
            check_dpdk_telemetry_py(prefix, node.info)
            expect_log(node, logs + [
                "METAROCE: device node_a: ",
                "METAROCE: device node_a: connection %d to " % node.info["conns"]["node_a"],
            ])
        finally:
            rc = node.stop()
        if rc != 0:
            fail("node exited %s; stderr:\n%s" % (rc, node.stderr()))
        if os.path.exists(runtime_dir(prefix)):
            fail("%s was not removed" % runtime_dir(prefix))
        print("  ok")


def dumpcap_case(exe, decode):
    dumpcap = shutil.which("dpdk-dumpcap")
    need = 128 << 20
    if dumpcap is None:
        print("SKIP: dpdk-dumpcap is not installed (Debian package dpdk-dev)")
        sys.exit(SKIP)
    if not hugetlbfs_mounts() or free_hugepage_bytes() < need:
        print("SKIP: dpdk-dumpcap attaches as a secondary process, which needs the primary's "
              "memory in hugepages: this machine has %d MiB of free hugepages (need %d) on %s"
              % (free_hugepage_bytes() >> 20, need >> 20,
                 hugetlbfs_mounts() or "no hugetlbfs mount"))
        sys.exit(SKIP)
    prefix = "mr_tel_%d_dumpcap" % os.getpid()
    node = Node(exe, prefix, ["--mode", "ring", "--shconf", "--huge"])
    tmp = tempfile.mkdtemp()
    cap = None
    try:
        expect_log(node, ["METAROCE: pdump: ready: dpdk-dumpcap --file-prefix=%s" % prefix])
        pcap = os.path.join(tmp, "cap.pcap")
        # dumpcap writes "Packets captured: 0" to stderr once the primary copies packets to it.
        cap = subprocess.Popen([dumpcap, "--file-prefix=" + prefix, "-i", "net_ring_mra", "-P",
                                "-c", "1000", "-w", pcap], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
        out = b""
        deadline = time.time() + 60
        while b"Packets captured:" not in out and time.time() < deadline:
            ready, _, _ = select.select([cap.stderr], [], [], 1)
            if ready:
                data = os.read(cap.stderr.fileno(), 4096)
                if not data:
                    break
                out += data
        if b"Packets captured:" not in out:
            fail("dpdk-dumpcap did not start capturing:\n" + out.decode(errors="replace"))
        node.send("write")
        if not json.loads(node.read_line("write answer")).get("written"):
            fail("the second WRITE failed")
        try:
            out += cap.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            cap.kill()
            fail("dpdk-dumpcap did not stop after 1000 packets:\n" + out.decode(errors="replace"))
        if cap.returncode != 0:
            fail("dpdk-dumpcap exited %d:\n%s" % (cap.returncode, out.decode(errors="replace")))
        dec = subprocess.run([decode, "--summary", pcap], capture_output=True, text=True,
                             timeout=60)
        counts = {}
        for line in dec.stdout.splitlines():
            words = line.split()
            if len(words) == 2 and words[1].isdigit():
                counts[words[0]] = int(words[1])
        if dec.returncode != 0 or counts.get("WRITE", 0) == 0 or counts.get("ACK", 0) == 0 or \
                " 0 dropped" not in dec.stdout:
            fail("mr-decode --summary of the capture:\n%s%s" % (dec.stdout, dec.stderr))
        print(dec.stdout)
    finally:
        if cap is not None and cap.poll() is None:
            cap.kill()
        shutil.rmtree(tmp, ignore_errors=True)
        rc = node.stop()
    if rc != 0:
        fail("node exited %s; stderr:\n%s" % (rc, node.stderr()))
    print("dumpcap: ok")


def main():
    if len(sys.argv) == 2:
        telemetry_cases(sys.argv[1])
    elif len(sys.argv) == 4 and sys.argv[2] == "--dumpcap":
        dumpcap_case(sys.argv[1], sys.argv[3])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
