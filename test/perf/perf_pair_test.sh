#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Two mr-perf processes move 256 MiB of mixed operations (WRITE_WITH_IMM,
# SEND, READ, FETCH_AND_ADD, CMP_AND_SWAP, sizes 1 B..64 KiB) and check every
# byte, over one transport, optionally with loss injected on both sides.
#   perf_pair_test.sh MR_PERF udp|memif|afpacket LOSS
# udp: kernel UDP sockets on 127.0.0.1. memif: DPDK net_memif between the
# two processes (no hugepages). afpacket: DPDK net_af_packet on a veth pair
# between two network namespaces this script creates and removes.
set -euo pipefail
bin=$1 transport=$2 loss=$3
work=$(mktemp -d)
tag="mrp$$"
server_pid=""
ns_a="" ns_b=""
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  [ -n "$ns_a" ] && ip netns del "$ns_a" 2>/dev/null || true
  [ -n "$ns_b" ] && ip netns del "$ns_b" 2>/dev/null || true
  rm -rf "$work" "/var/run/dpdk/${tag}_a" "/var/run/dpdk/${tag}_b"
}
trap cleanup EXIT

eal() {  # eal PREFIX VDEV
  echo "eal=--no-huge;-m;512;--no-pci;--no-shconf;--file-prefix=$1;--no-telemetry;--lcores=0@(0-1);--vdev=$2"
}
run_a=() run_b=()
host=127.0.0.1
case "$transport" in
  udp)
    port_a="udp:ip=127.0.0.1,port=0"
    port_b="udp:ip=127.0.0.1,port=0"
    ;;
  memif)
    sock="$work/memif.sock"
    port_a="dpdk:$(eal "${tag}_a" "net_memif0|role=server|socket=$sock|socket-abstract=no"),port=net_memif0,ip=10.251.0.1,mac=02:00:00:fb:00:01"
    port_b="dpdk:$(eal "${tag}_b" "net_memif0|role=client|socket=$sock|socket-abstract=no"),port=net_memif0,ip=10.251.0.2,mac=02:00:00:fb:00:02"
    ;;
  afpacket)
    ns_a="${tag}_a" ns_b="${tag}_b"
    ip netns add "$ns_a"
    ip netns add "$ns_b"
    ip link add "${tag}a" netns "$ns_a" type veth peer name "${tag}b" netns "$ns_b"
    ip -n "$ns_a" addr add 10.252.0.1/24 dev "${tag}a"
    ip -n "$ns_b" addr add 10.252.0.2/24 dev "${tag}b"
    ip -n "$ns_a" link set "${tag}a" up
    ip -n "$ns_b" link set "${tag}b" up
    ip -n "$ns_a" link set lo up
    ip -n "$ns_b" link set lo up
    port_a="dpdk:$(eal "${tag}_a" "net_af_packet0|iface=${tag}a"),port=net_af_packet0,ip=10.252.0.1"
    port_b="dpdk:$(eal "${tag}_b" "net_af_packet0|iface=${tag}b"),port=net_af_packet0,ip=10.252.0.2"
    run_a=(ip netns exec "$ns_a")
    run_b=(ip netns exec "$ns_b")
    host=10.252.0.1
    ;;
  *) echo "perf_pair_test: unknown transport '$transport'" >&2; exit 2 ;;
esac
faults_a=() faults_b=()
if [ "$loss" != "0" ]; then
  faults_a=(--faults "drop=$loss,seed=11")
  faults_b=(--faults "drop=$loss,seed=12")
fi
tcp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

"${run_a[@]}" "$bin" --port "$port_a" "${faults_a[@]}" --listen "$tcp" --json >"$work/server.log" 2>&1 &
server_pid=$!
if [ "$transport" = memif ]; then
  # The client's memif connects to the server's socket: wait until it is there.
  for _ in $(seq 300); do [ -S "$sock" ] && break; sleep 0.1; done
fi
status=0
start=$(date +%s)
timeout 300 "${run_b[@]}" "$bin" --port "$port_b" "${faults_b[@]}" --connect "$host:$tcp" \
  --mode mixed --size 64K --qps 4 --depth 32 --bytes 256M --verify --json >"$work/client.log" 2>&1 || status=$?
# A client that failed may have left the server waiting: give it 30 s at most.
for _ in $(seq 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then
  kill -9 "$server_pid"
  echo "perf_pair_test: the server did not finish" >&2
  status=1
fi
wait "$server_pid" || status=$?
server_pid=""
echo "--- server"; cat "$work/server.log"
echo "--- client"; cat "$work/client.log"
[ "$status" -eq 0 ] || { echo "perf_pair_test: a side failed (exit $status)" >&2; exit 1; }
python3 - "$work/client.log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"mode"')]
assert len(rows) == 1, f"expected one result, got {len(rows)}"
foot = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"engine"')]
assert len(foot) == 1, f"expected one engine footer, got {len(foot)}"
conn = foot[0]["conn"]
assert conn["cwnd_bytes"] > 0 and conn["srtt_us"] > 0, f"the connection's figures are missing: {conn}"
assert conn["pace_mbps"] == 0, f"paced with no hint and window pacing off: {conn}"
r = rows[0]
assert r["ok"] and r["verify_errors"] == 0, r
assert r["bytes"] >= 256 << 20, f"only {r['bytes']} bytes moved"
ops = r["ops"]
assert all(ops[k] > 0 for k in ops), f"an operation never ran: {ops}"
# Everything the client completed was checked: by the server (writes, sends) or here.
assert r["verified"] == r["messages"], f"{r['verified']} of {r['messages']} messages verified"
print(f"perf_pair_test: {r['bytes'] / 2**20:.0f} MiB in {r['messages']} operations {ops}, "
      f"all verified, {r['bw_mib_s']:.0f} MiB/s, {r['retransmits']} retransmissions")
PY
echo "perf_pair_test: $transport with loss $loss passed in $(( $(date +%s) - start )) s"
