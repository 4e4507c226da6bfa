#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Two mr-pingpong processes over the dpdk driver on net_af_packet, one in each of two
# network namespaces joined by a veth pair, 1 % of received packets dropped on both
# sides, each connecting with the peer's MAC left zero (--no-mac): the drivers must
# find each other by ARP (IPv4), then by NS/NA (IPv6). The kernel's addresses on the
# veths (10.198.N.0/24) carry only the TCP address exchange; the dpdk ports' addresses
# (10.199.N.0/24, fd00:199:N::/64) are not the kernel's, so only the drivers answer
# for them. Needs root; sends only inside the namespaces it creates, and always
# removes them.
#   af_packet_netns_test.sh MR_PINGPONG
set -euo pipefail
bin=$1
ns_a="mr_afp_$$_a"
ns_b="mr_afp_$$_b"
veth_a="afa$$"
veth_b="afb$$"
net=$(( $$ % 250 + 1 ))  # any subnet: the namespaces see nothing else
work=$(mktemp -d)
cleanup() {
  # Whatever still runs in our namespaces is ours (a pingpong left by a failure).
  local ns p
  for ns in "$ns_a" "$ns_b"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  done
  wait 2>/dev/null || true
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # runs cleanup too

ip netns add "$ns_a"
ip netns add "$ns_b"
ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b"
ip -n "$ns_a" addr add "10.198.$net.1/24" dev "$veth_a"
ip -n "$ns_b" addr add "10.198.$net.2/24" dev "$veth_b"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$veth_a" up
ip -n "$ns_b" link set "$veth_b" up

# EAL without hugepages, a prefix per side, the main thread free to run on either vCPU.
eal() {
  echo "--no-huge;-m;256;--no-pci;--no-shconf;--file-prefix=mr_afp_$1;--no-telemetry;--lcores=0@(0-1);--vdev=net_af_packet0|iface=$2"
}

# run NAME IP_A IP_B: one pingpong between the namespaces; checks its output.
run() {
  local name=$1 ip_a=$2 ip_b=$3
  local tcp=18515
  # Both in the background, so that a signal to this script is handled at once.
  timeout 120 ip netns exec "$ns_a" "$bin" \
    --port "dpdk:eal=$(eal a "$veth_a"),port=net_af_packet0,ip=$ip_a" \
    --faults "drop=0.01,seed=1" --no-mac \
    --listen "10.198.$net.1:$tcp" --iters 300 --size 4096 >"$work/$name.server.log" 2>&1 &
  local server=$!
  timeout 120 ip netns exec "$ns_b" "$bin" \
    --port "dpdk:eal=$(eal b "$veth_b"),port=net_af_packet0,ip=$ip_b" \
    --faults "drop=0.01,seed=2" --no-mac \
    --connect "10.198.$net.1:$tcp" --iters 300 --size 4096 >"$work/$name.client.log" 2>&1 &
  local client=$! status=0
  wait "$client" || status=$?
  # A client that never connected leaves the server in accept(): stop it.
  [ "$status" -eq 0 ] || kill "$server" 2>/dev/null || true
  wait "$server" || status=$?
  echo "== $name: server (ns $ns_a, $ip_a)"
  cat "$work/$name.server.log"
  echo "== $name: client (ns $ns_b, $ip_b)"
  cat "$work/$name.client.log"
  fail() { echo "af_packet_netns_test: $name: $*" >&2; exit 1; }
  [ "$status" -eq 0 ] || fail "a side failed (exit $status)"
  grep -q "1 MiB WRITE verified" "$work/$name.server.log" || fail "server did not verify the WRITE"
  grep -q "300 round trips" "$work/$name.client.log" || fail "client did not finish"
  # "neighbours: requests sent S, answered A; replies learnt R, requests learnt L; ..."
  local sent=0 answered=0 learnt=0 side
  for side in server client; do
    local line
    line=$(grep "neighbours:" "$work/$name.$side.log") || fail "$side printed no neighbour counters"
    read -r s a r l < <(echo "$line" |
      sed -E 's/.*requests sent ([0-9]+), answered ([0-9]+); replies learnt ([0-9]+), requests learnt ([0-9]+).*/\1 \2 \3 \4/')
    [ $((r + l)) -ge 1 ] || fail "$side learnt its peer from no ARP/ND message"
    sent=$((sent + s))
    answered=$((answered + a))
    learnt=$((learnt + r + l))
  done
  [ "$sent" -ge 1 ] || fail "no request was sent"
  [ "$answered" -ge 1 ] || fail "no request was answered"
  echo "af_packet_netns_test: $name: 300 round trips and a verified 1 MiB WRITE with 1 % loss;" \
    "$sent requests sent, $answered answered, $learnt neighbours learnt"
}

run ipv4 "10.199.$net.1" "10.199.$net.2"
run ipv6 "[fd00:199:$net::1]" "[fd00:199:$net::2]"
