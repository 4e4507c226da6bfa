#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Sets up like devtools/test.sh, then runs the most end-to-end path metaroce
# has today. No NIC and no configuration needed.
set -euo pipefail
cd "$(dirname "$0")/.."

devtools/install-deps.sh
[ -f build/build.ninja ] || meson setup build -Dwerror=true >/dev/null
ninja -C build >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat <<'TXT'
== metaroce demo ==
The wire format, the transport engine on a simulated leaf-spine fabric,
the mr-perf benchmark between two processes, and the embedding API. Nothing
below needs a NIC or hugepages, and nothing is sent beyond this host (the
DPDK driver runs the same way over memif or af_packet: doc/mr-perf.md).

== 1. wire format v1 ==
Every packet type, encoded into Ethernet/IPv4 and Ethernet/IPv6 frames,
written to a pcap capture, decoded by the parser the engine uses, then by
the Wireshark dissector.

TXT
build/app/mr-decode --sample "$work/sample.pcap"
echo
echo "-- mr-decode (metaroce's parser), first 12 packets and the summary --"
build/app/mr-decode "$work/sample.pcap" | sed -n 1,12p
build/app/mr-decode --summary "$work/sample.pcap"

echo
echo "-- a corrupted copy: one payload bit flipped in frame 7 --"
python3 - "$work/sample.pcap" "$work/corrupt.pcap" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
off = 24
for _ in range(6):  # skip to frame 7
    off += 16 + struct.unpack_from("<I", data, off + 8)[0]
data[off + 16 + 120] ^= 0x01  # a payload byte of the 4 KiB WRITE
open(sys.argv[2], "wb").write(data)
PY
build/app/mr-decode --summary "$work/corrupt.pcap"

if command -v tshark >/dev/null; then
  echo
  echo "-- tshark with usertools/wireshark/metaroce.lua --"
  tshark -X lua_script:usertools/wireshark/metaroce.lua -r "$work/sample.pcap" 2>/dev/null | sed -n 1,12p
fi

cat <<'TXT'

== 2. transport engine on the simulated fabric ==
Two hosts on a 2-leaf x 8-spine fabric, one connection sprayed over 8 paths,
RDMA WRITEs under random loss and with a spine link blackholed mid-run; then
the engine's cost per packet and its state per connection and path.
(The full run, with more seeds: build/test/transport/bench_transport;
figures and discussion: doc/transport-figures.md.)

TXT
build/test/transport/bench_transport --quick

cat <<'TXT'

== 3. mr-perf: two processes, 8 paths, 1 % of packets dropped ==
The benchmark (app/perf, doc/mr-perf.md) on its embedded default: the kernel
UDP driver on 127.0.0.1, no NIC, no configuration. The processes meet over
TCP, then run MetaRoCE over one connection sprayed on 8 paths; each side
drops 1 % of what it receives (--faults drop=0.01). Every byte is checked
(--verify). First bandwidth (RDMA WRITE, 64 KiB, 4 QPs), then latency
(64-byte WRITE ping-pong), each followed by the engine's per-path telemetry.

TXT
# run_pair NAME CLIENT-ARGS...: one server and one client; the client prints.
run_pair() {
  local name=$1; shift
  local tcp
  tcp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  build/app/mr-perf --paths 8 --faults drop=0.01,seed=1 --listen "$tcp" >"$work/$name-server.log" 2>&1 &
  local server=$!
  build/app/mr-perf --paths 8 --faults drop=0.01,seed=2 --connect "127.0.0.1:$tcp" "$@" || true
  wait "$server" || true
  echo "-- the server's side --"
  grep -v '^---' "$work/$name-server.log" | sed -n 1,3p
}
run_pair bw --mode write_bw --size 64K --qps 4 --depth 32 --iters 4000 --verify
echo
run_pair lat --mode write_lat --size 64 --iters 5000 --verify

cat <<'TXT'

== 4. the embedding API: mr-pingpong ==
examples/pingpong is the smallest complete program on lib/device: two
processes exchange addresses and QP numbers, ping-pong 1000 SENDs of 4 KiB
over 8 paths with 1 % loss, then one WRITEs 1 MiB the other checks.

TXT
# A free TCP port for the address exchange; the UDP ports are the kernel's
# choice (port=0) and travel in that exchange.
tcp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
build/examples/mr-pingpong --port "udp:ip=127.0.0.1,port=0" --faults drop=0.01 \
  --listen "$tcp" --iters 1000 --size 4096 >"$work/server.log" 2>&1 &
server=$!
build/examples/mr-pingpong --port "udp:ip=127.0.0.1,port=0" --faults drop=0.01 \
  --connect "127.0.0.1:$tcp" --iters 1000 --size 4096 || true
wait "$server" || true
cat "$work/server.log"

cat <<'TXT'

== 5. unmodified verbs programs: ib_write_bw over metaroced ==
The Debian perftest binary, untouched, runs over metaroce: mr-run puts
metaroce's libibverbs.so.1 (lib/verbs) in front of it, and the shim talks to
metaroced (doc/daemon.md, doc/verbs.md) through shared-memory rings. The
server makes no verbs call during the test: the daemon writes into its
registered memory by itself. Both ends are on one daemon here.

TXT
sock="$work/metaroced.sock"
build/app/metaroced/metaroced --socket "$sock" --port "udp:ip=127.0.0.1,port=0" >"$work/metaroced.log" 2>&1 &
daemon=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
tcp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
METAROCE_SOCKET=$sock build/app/mr-run ib_write_bw -p "$tcp" >"$work/ib-server.log" 2>&1 &
server=$!
for _ in $(seq 100); do ss -Hltn "sport = :$tcp" | grep -q . && break; sleep 0.05; done
METAROCE_SOCKET=$sock build/app/mr-run ib_write_bw -p "$tcp" 127.0.0.1 || true
wait "$server" || true
kill "$daemon" 2>/dev/null || true
wait "$daemon" 2>/dev/null || true
echo "-- metaroced's log --"
cat "$work/metaroced.log"
