#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Unmodified Debian verbs programs (ibverbs-utils, perftest) over metaroce,
# server and client as separate processes:
#   local   one metaroced on this host (kernel UDP on 127.0.0.1), both ends on it;
#           also ib_write_bw and ibv_rc_pingpong with polls that sleep (METAROCE_POLL_SPIN_US)
#   loss    the same with 1 % of the daemon's packets dropped
#   netns       two daemons in two network namespaces joined by a veth pair
#               (DPDK af_packet), each end on its own daemon
#   netns_loss  the same with 1 % loss on both
#   planes  two daemons on this host, each with two planes (127.0.0.x, 127.0.1.x):
#           the connection is up on both
#   shards  two daemons on this host (127.0.0.1, 127.0.0.2) with two shards each:
#           applications on both shards of one share its one connection to the other
# plus: an application killed mid-test leaves the daemon serving the others
# and has its objects reclaimed (local), and its peer on another daemon fails
# instead of hanging (netns).
#
# usage: verbs_programs_test.sh METAROCED MR_RUN [SCENARIO...]
set -uo pipefail
daemon_bin=$1
run_bin=$2
shift 2
scenarios=("$@")
[ ${#scenarios[@]} -ne 0 ] || scenarios=(local loss netns netns_loss planes shards)

work=$(mktemp -d)
ns_a="mr_vp_$$_a"
ns_b="mr_vp_$$_b"
veth_a="vpa$$"
veth_b="vpb$$"
net=$(($$ % 250 + 1))
pids=()
tel_prefix="mr_vp_$$_local"  # the local daemon's name: its DPDK telemetry file prefix
passed=0
failed=0

cleanup() {
  local p ns
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for ns in "$ns_a" "$ns_b"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "/var/run/dpdk/$tel_prefix" /var/run/dpdk/mr_vp_$$_*
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

note() { echo "verbs_programs_test: $*"; }
ok() {
  passed=$((passed + 1))
  note "PASS $1"
}
bad() {
  failed=$((failed + 1))
  note "FAIL $1: $2"
  shift 2
  local f
  for f in "$@"; do
    [ -f "$f" ] || continue
    echo "---- $f"
    tail -n 30 "$f"
  done
}

# in_ns NS CMD...: runs CMD in namespace NS ("" = this one).
in_ns() {
  local ns=$1
  shift
  if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

# bg_ns NS CMD... &: the same in the background, so that $! is CMD itself.
bg_ns() {
  local ns=$1
  shift
  if [ -n "$ns" ]; then exec ip netns exec "$ns" "$@"; else exec "$@"; fi
}

# start_daemon NAME NS SOCKET ARGS...: starts metaroced and waits for its socket.
start_daemon() {
  local name=$1 ns=$2 sock=$3
  shift 3
  bg_ns "$ns" "$daemon_bin" --socket "$sock" "$@" >"$work/$name.daemon.log" 2>&1 &
  pids+=($!)
  local i
  for i in $(seq 100); do
    if grep -q "serving" "$work/$name.daemon.log"; then return 0; fi
    if ! kill -0 "${pids[-1]}" 2>/dev/null; then break; fi
    sleep 0.1
  done
  cat "$work/$name.daemon.log"
  note "metaroced $name did not start"
  exit 1
}

# wait_listen NS PORT: until something listens on TCP PORT in NS (10 s).
wait_listen() {
  local i
  for i in $(seq 200); do
    if in_ns "$1" ss -Hltn "sport = :$2" | grep -q .; then return 0; fi
    sleep 0.05
  done
  return 1
}

tcp_port=19000
# pair NAME CHECK SERVER_NS SERVER_SOCK CLIENT_NS CLIENT_SOCK SERVER_ADDR PROGRAM ARGS...:
# runs PROGRAM as server and as client (client gets SERVER_ADDR), both under
# mr-run; passes if both exit 0 and the client's output matches CHECK.
pair() {
  local name=$1 check=$2 sns=$3 ssock=$4 cns=$5 csock=$6 addr=$7 prog=$8
  shift 8
  tcp_port=$((tcp_port + 1))
  local port_opt=(-p "$tcp_port")
  local file=${name//\//_}
  local slog="$work/$file.server.log" clog="$work/$file.client.log"
  METAROCE_SOCKET=$ssock bg_ns "$sns" timeout 120 "$run_bin" "$prog" "${port_opt[@]}" "$@" \
    >"$slog" 2>&1 &
  local server=$!
  if ! wait_listen "$sns" "$tcp_port"; then
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    bad "$name" "the server never listened" "$slog"
    return
  fi
  local cs=0 ss=0
  METAROCE_SOCKET=$csock in_ns "$cns" timeout 120 "$run_bin" "$prog" "${port_opt[@]}" "$@" \
    "$addr" >"$clog" 2>&1 || cs=$?
  [ "$cs" -eq 0 ] || kill "$server" 2>/dev/null
  wait "$server" || ss=$?
  if [ "$cs" -ne 0 ] || [ "$ss" -ne 0 ]; then
    if [ -z "${calibration_retry:-}" ] && grep -qs "Correlation coefficient r^2" "$slog" "$clog"; then
      # perftest fits its cycle counter against the clock before it reports
      # and gives up when a loaded machine spoils the fit: the machine's
      # doing, not the transport's. Once more, the same way.
      note "$name: perftest could not calibrate its clock (a loaded machine): once more"
      calibration_retry=1 pair "$name" "$check" "$sns" "$ssock" "$cns" "$csock" "$addr" "$prog" "$@"
      return
    fi
    bad "$name" "client exit $cs, server exit $ss" "$clog" "$slog"
  elif ! grep -Eq "$check" "$clog"; then
    bad "$name" "the client's report lacks /$check/" "$clog"
  else
    ok "$name: $(grep -E "$check" "$clog" | head -n 1 | tr -s ' \t' ' ')"
  fi
}

bw_line='^ *65536 +[0-9]+ +[0-9.]+ +[0-9.]+'
lat_line='^ *2 +1000 +[0-9.]+'
pp_line='[0-9]+ iters in [0-9.]+ seconds'

# programs TAG SNS SSOCK CNS CSOCK ADDR: the acceptance list between two ends.
programs() {
  local tag=$1 sns=$2 ssock=$3 cns=$4 csock=$5 addr=$6
  pair "$tag/ibv_rc_pingpong" "$pp_line" "$sns" "$ssock" "$cns" "$csock" "$addr" ibv_rc_pingpong
  pair "$tag/ibv_rc_pingpong-s65536-n1000" "1000 iters in" "$sns" "$ssock" "$cns" "$csock" \
    "$addr" ibv_rc_pingpong -s 65536 -n 1000
  pair "$tag/ibv_rc_pingpong-e" "$pp_line" "$sns" "$ssock" "$cns" "$csock" "$addr" \
    ibv_rc_pingpong -e
  pair "$tag/ibv_srq_pingpong" "$pp_line" "$sns" "$ssock" "$cns" "$csock" "$addr" ibv_srq_pingpong
  pair "$tag/ibv_srq_pingpong-e" "$pp_line" "$sns" "$ssock" "$cns" "$csock" "$addr" \
    ibv_srq_pingpong -e
  local t
  for t in ib_write_bw ib_read_bw ib_send_bw; do
    pair "$tag/$t" "$bw_line" "$sns" "$ssock" "$cns" "$csock" "$addr" "$t"
  done
  # -C: latencies in TSC cycles. In microseconds perftest divides by the
  # CPU MHz it calibrates at exit, and on a loaded machine the calibration's
  # fit fails ("Correlation coefficient r^2 < 0.9"): it answers 0 MHz and
  # every latency prints as inf, whatever the transport did.
  for t in ib_write_lat ib_read_lat ib_send_lat; do
    pair "$tag/$t" "$lat_line" "$sns" "$ssock" "$cns" "$csock" "$addr" "$t" -C
  done
}

# device_tools TAG NS SOCK
device_tools() {
  local tag=$1 ns=$2 sock=$3 log="$work/$1.devices.log"
  if METAROCE_SOCKET=$sock in_ns "$ns" "$run_bin" ibv_devices >"$log" 2>&1 &&
    grep -Eq "metaroce0[[:space:]]+[0-9a-f]{16}" "$log"; then
    ok "$tag/ibv_devices"
  else
    bad "$tag/ibv_devices" "no metaroce0 with a GUID" "$log"
  fi
  log="$work/$tag.devinfo.log"
  if METAROCE_SOCKET=$sock in_ns "$ns" "$run_bin" ibv_devinfo -v >"$log" 2>&1 &&
    grep -q "hca_id:.*metaroce0" "$log" && grep -q "PORT_ACTIVE" "$log" &&
    grep -q "link_layer:.*Ethernet" "$log" && grep -Eq "GID\[ *0\]:" "$log"; then
    ok "$tag/ibv_devinfo"
  else
    bad "$tag/ibv_devinfo" "not an active Ethernet port with a GID" "$log"
  fi
}

# long_write NS SOCK NAME [CLIENT_SOCK SERVER_ADDR]: starts a 30 s ib_write_bw pair in
# the background (the client on CLIENT_SOCK, SOCK unless given) and returns once it is
# writing; sets $server and $client (the programs).
long_write() {
  local ns=$1 sock=$2 name=$3 csock=${4:-$2} addr=${5:-127.0.0.1}
  tcp_port=$((tcp_port + 1))
  METAROCE_SOCKET=$sock bg_ns "$ns" timeout 60 "$run_bin" ib_write_bw -p "$tcp_port" -D 30 \
    >"$work/$name-server.log" 2>&1 &
  server=$!
  wait_listen "$ns" "$tcp_port" || true
  METAROCE_SOCKET=$csock bg_ns "$ns" timeout 60 "$run_bin" ib_write_bw -p "$tcp_port" -D 30 \
    "$addr" >"$work/$name-client.log" 2>&1 &
  client=$!
  sleep 3  # connected and writing
}

# telemetry_value PREFIX COMMAND: the JSON value COMMAND's reply holds, from the DPDK
# telemetry socket of the daemon with that file prefix.
telemetry_value() {
  python3 - "/var/run/dpdk/$1/dpdk_telemetry.v2" "$2" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(4096)
s.send(sys.argv[2].encode())
print(json.dumps(json.loads(s.recv(65536).decode())[sys.argv[2].split(",")[0]]))
EOF
}

# apps_telemetry TAG PREFIX: /metaroced/apps lists two applications with a QP each, one
# of them posting.
apps_telemetry() {
  local tag=$1 reply
  reply=$(telemetry_value "$2" /metaroced/apps | python3 -c '
import json, sys
apps = json.load(sys.stdin)
busy = [a for a in apps.values() if a["qps"] >= 1 and a["mrs"] >= 1]
posting = [a for a in busy if a["wrs_posted"] > 0 and a["completions"] > 0]
print(f"{len(busy)} applications with QPs, {len(posting)} posting" if len(busy) == 2 and posting
      else f"unexpected: {apps}")') || reply="no telemetry reply"
  if [[ "$reply" == "2 applications with QPs, "* ]]; then
    ok "$tag/telemetry: /metaroced/apps: $reply"
  else
    bad "$tag/telemetry" "/metaroced/apps: $reply"
  fi
}

# planes_telemetry TAG PREFIX: shard 0 has a connection up on two planes, both carrying
# data (/metaroce/conns).
planes_telemetry() {
  local tag=$1 reply
  reply=$(telemetry_value "$2" /metaroce/conns,0 | python3 -c '
import json, sys
conns = json.load(sys.stdin)["conns"]
two = [c for c in conns.values() if c["planes"] == 2 and c["planes_up"] == 2]
print(f"{len(two)} connection(s) up on 2 planes" if two else f"unexpected: {conns}")') ||
    reply="no telemetry reply"
  if [[ "$reply" == *" up on 2 planes" ]]; then
    ok "$tag/telemetry: /metaroce/conns: $reply"
  else
    bad "$tag/telemetry" "/metaroce/conns: $reply"
  fi
}

# shards_telemetry TAG PREFIX PEER: on the two-shard daemon with that prefix, the two
# applications writing to PEER attached to different shards (/metaroced/apps), and both
# their QPs run on one connection to PEER, on one shard (/metaroce/conns of each shard).
shards_telemetry() {
  local tag=$1 prefix=$2 peer=$3 apps conns0 conns1 reply
  apps=$(telemetry_value "$prefix" /metaroced/apps) &&
    conns0=$(telemetry_value "$prefix" /metaroce/conns,0) &&
    conns1=$(telemetry_value "$prefix" /metaroce/conns,1) &&
    reply=$(python3 -c '
import json, sys
apps, peer = json.loads(sys.argv[1]), sys.argv[4]
homes = sorted({a["shard"] for a in apps.values() if a["qps"] >= 1})
# Connections that earlier tests left idle (no QP) do not count.
conns = [(i, c) for i, arg in enumerate(sys.argv[2:4])
         for c in json.loads(arg)["conns"].values() if c["peer_ip"] == peer and c["qps"] > 0]
if homes == [0, 1] and len(conns) == 1 and conns[0][1]["qps"] == 2:
    print(f"applications on shards {homes}: 1 connection to {peer}, shard {conns[0][0]}, 2 QPs")
else:
    print(f"unexpected: applications on shards {homes}, connections to {peer}: {conns}")
' "$apps" "$conns0" "$conns1" "$peer") || reply="no telemetry reply"
  if [[ "$reply" == "applications on shards [0, 1]: 1 connection"* ]]; then
    ok "$tag/telemetry: $reply"
  else
    bad "$tag/telemetry" "$reply"
  fi
}

# killed TAG NS SOCK DAEMON_LOG PREFIX: kill -9 a client mid-test; the daemon reclaims it and
# serves on (and, while the pair runs, its telemetry lists both).
killed() {
  local tag=$1 ns=$2 sock=$3 dlog=$4 prefix=$5 server client
  long_write "$ns" "$sock" "$tag.victim"
  apps_telemetry "$tag" "$prefix"
  # The program itself, not the shell that started it.
  pkill -9 -f "ib_write_bw -p $tcp_port -D 30 127.0.0.1"
  wait "$client" 2>/dev/null
  pkill -f "ib_write_bw -p $tcp_port -D 30"
  wait "$server" 2>/dev/null
  sleep 0.5
  if ! grep -Eq "detached: [1-9][0-9]* QPs" "$dlog"; then
    bad "$tag/kill-9" "the daemon reclaimed no QPs of the killed application" "$dlog"
    return
  fi
  ok "$tag/kill-9: $(grep -E "detached: [1-9][0-9]* QPs" "$dlog" | tail -n 1 | sed 's/.*metaroced: //')"
  pair "$tag/after-kill-9/ibv_rc_pingpong" "$pp_line" "$ns" "$sock" "$ns" "$sock" 127.0.0.1 \
    ibv_rc_pingpong
}

# peer_killed TAG SNS SSOCK CNS CSOCK ADDR CLIENT_DAEMON_LOG: an ibv_rc_pingpong
# client on another daemon is killed with kill -9 mid-run; its daemon reclaims
# its QP and the server's QP fails: the server ends with a failed work request
# (the stream goes unanswered: retries, or the idle connection closes) instead
# of hanging or reporting success.
peer_killed() {
  local tag=$1 sns=$2 ssock=$3 cns=$4 csock=$5 addr=$6 dlog=$7
  tcp_port=$((tcp_port + 1))
  local slog="$work/$tag.peer-server.log" iters=100000000
  METAROCE_SOCKET=$ssock bg_ns "$sns" timeout 60 "$run_bin" ibv_rc_pingpong -p "$tcp_port" \
    -n "$iters" >"$slog" 2>&1 &
  local server=$!
  wait_listen "$sns" "$tcp_port" || true
  METAROCE_SOCKET=$csock bg_ns "$cns" timeout 60 "$run_bin" ibv_rc_pingpong -p "$tcp_port" \
    -n "$iters" "$addr" >"$work/$tag.peer-client.log" 2>&1 &
  local client=$!
  sleep 2  # connected and ping-ponging
  pkill -9 -f "ibv_rc_pingpong -p $tcp_port -n $iters $addr"
  wait "$client" 2>/dev/null
  local start=$SECONDS ss=0
  wait "$server" || ss=$?
  local took=$((SECONDS - start))
  if [ "$ss" -eq 124 ]; then
    bad "$tag/peer-killed" "the server's QP never failed after its peer was killed" "$slog"
  elif [ "$ss" -eq 0 ] || ! grep -q "Failed status" "$slog"; then
    bad "$tag/peer-killed" "the server did not end with a failed work request (exit $ss)" "$slog"
  elif ! grep -Eq "detached: [1-9][0-9]* QPs" "$dlog"; then
    bad "$tag/peer-killed" "the client's daemon reclaimed no QP" "$dlog"
  else
    ok "$tag/peer-killed: the server's QP failed in ${took} s: $(grep -m1 "Failed status" "$slog")"
  fi
}

# daemon_gone TAG SOCK: metaroced killed under a running test: both programs
# end (with an error) instead of hanging.
daemon_gone() {
  local tag=$1 sock=$2 daemon=$3 server client
  long_write "" "$sock" "$tag.orphan"
  kill -9 "$daemon"
  local start=$SECONDS cs=0 ss=0
  wait "$client" || cs=$?
  wait "$server" || ss=$?
  local took=$((SECONDS - start))
  if [ "$cs" -eq 124 ] || [ "$ss" -eq 124 ] || [ "$took" -gt 20 ]; then
    bad "$tag/daemon-killed" "a program hung after the daemon died (client $cs, server $ss, ${took} s)" \
      "$work/$tag.orphan-client.log"
  elif [ "$cs" -eq 0 ]; then
    bad "$tag/daemon-killed" "the client reported success without a daemon" "$work/$tag.orphan-client.log"
  else
    ok "$tag/daemon-killed: both programs ended in ${took} s (client exit $cs, server exit $ss)"
  fi
}

for s in "${scenarios[@]}"; do
  case "$s" in
    local)
      sock="$work/local.sock"
      # Its own UDP port: other tests may run a daemon at the same time.
      start_daemon local "" "$sock" --port "udp:ip=127.0.0.1,port=$((40000 + $$ % 10000))" \
        --set "daemon.name=$tel_prefix"
      device_tools local "" "$sock"
      programs local "" "$sock" "" "$sock" 127.0.0.1
      # Polls that sleep until the daemon wakes them (doc/verbs.md), from the first empty one.
      METAROCE_POLL_SPIN_US=0 pair "local/ib_write_bw-sleeping-polls" "$bw_line" "" "$sock" "" \
        "$sock" 127.0.0.1 ib_write_bw
      METAROCE_POLL_SPIN_US=0 pair "local/ibv_rc_pingpong-sleeping-polls" "$pp_line" "" "$sock" \
        "" "$sock" 127.0.0.1 ibv_rc_pingpong
      killed local "" "$sock" "$work/local.daemon.log" "$tel_prefix"
      daemon_gone local "$sock" "${pids[-1]}"
      ;;
    loss)
      sock="$work/loss.sock"
      start_daemon loss "" "$sock" --port "udp:ip=127.0.0.1,port=$((50000 + $$ % 10000))" \
        --set "dataplane.faults=drop=0.01,seed=7" --set "daemon.name=mr_vp_$$_loss"
      programs loss "" "$sock" "" "$sock" 127.0.0.1
      ;;
    netns | netns_loss)
      # netns_loss: each daemon drops 1 % of what it receives.
      fault_a=() fault_b=()
      if [ "$s" = netns_loss ]; then
        fault_a=(--set "dataplane.faults=drop=0.01,seed=11")
        fault_b=(--set "dataplane.faults=drop=0.01,seed=12")
      fi
      ip netns add "$ns_a" && ip netns add "$ns_b" &&
        ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b" || {
        note "cannot create network namespaces (root needed)"
        exit 1
      }
      ip -n "$ns_a" addr add "10.196.$net.1/24" dev "$veth_a"
      ip -n "$ns_b" addr add "10.196.$net.2/24" dev "$veth_b"
      for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
      ip -n "$ns_a" link set "$veth_a" up
      ip -n "$ns_b" link set "$veth_b" up
      eal() {
        echo "--no-huge;-m;256;--no-pci;--no-shconf;--file-prefix=mr_vp_$$_$1;--no-telemetry;--vdev=net_af_packet0|iface=$2"
      }
      start_daemon netns-a "$ns_a" "$work/a.sock" --set \
        "dataplane.port=dpdk:eal=$(eal a "$veth_a"),port=net_af_packet0,ip=10.197.$net.1" \
        "${fault_a[@]}"
      start_daemon netns-b "$ns_b" "$work/b.sock" --set \
        "dataplane.port=dpdk:eal=$(eal b "$veth_b"),port=net_af_packet0,ip=10.197.$net.2" \
        "${fault_b[@]}"
      device_tools "$s" "$ns_a" "$work/a.sock"
      programs "$s" "$ns_a" "$work/a.sock" "$ns_b" "$work/b.sock" "10.196.$net.1"
      if [ "$s" = netns ]; then
        peer_killed "$s" "$ns_a" "$work/a.sock" "$ns_b" "$work/b.sock" "10.196.$net.1" \
          "$work/netns-b.daemon.log"
      fi
      ;;
    planes)
      # Two daemons on this host, each with two planes: 127.0.0.x and 127.0.1.x,
      # the same UDP and source ports on both (doc/transport.md, "Planes").
      p=$((30000 + $$ % 10000))
      spec() { echo "udp:ip=127.0.$1.$2,port=$p,first_source_port=$((p + 100)),source_ports=64"; }
      start_daemon planes-a "" "$work/pa.sock" --port "$(spec 0 1)" \
        --set "dataplane.planes=$(spec 1 1)" --set "daemon.name=${tel_prefix}_pa"
      start_daemon planes-b "" "$work/pb.sock" --port "$(spec 0 2)" \
        --set "dataplane.planes=$(spec 1 2)" --set "daemon.name=${tel_prefix}_pb"
      pair "planes/ibv_rc_pingpong-s65536-n1000" "1000 iters in" "" "$work/pa.sock" "" \
        "$work/pb.sock" 127.0.0.1 ibv_rc_pingpong -s 65536 -n 1000
      pair "planes/ib_write_bw" "$bw_line" "" "$work/pa.sock" "" "$work/pb.sock" 127.0.0.1 \
        ib_write_bw
      planes_telemetry planes "${tel_prefix}_pa"
      ;;
    shards)
      # Two daemons on this host with two shards each, the same base port (the
      # next one is each daemon's second shard's).
      p=$((20000 + $$ % 10000 * 2))
      start_daemon shards-a "" "$work/sa.sock" --port "udp:ip=127.0.0.1,port=$p" \
        --set dataplane.lcores=2 --set "daemon.name=${tel_prefix}_sa"
      start_daemon shards-b "" "$work/sb.sock" --port "udp:ip=127.0.0.2,port=$p" \
        --set dataplane.lcores=2 --set "daemon.name=${tel_prefix}_sb"
      pair "shards/ibv_rc_pingpong-s65536-n1000" "1000 iters in" "" "$work/sa.sock" "" \
        "$work/sb.sock" 127.0.0.1 ibv_rc_pingpong -s 65536 -n 1000
      pair "shards/ibv_srq_pingpong" "$pp_line" "" "$work/sa.sock" "" "$work/sb.sock" 127.0.0.1 \
        ibv_srq_pingpong
      # Two writers from B to A at once: A spreads its applications over its
      # shards as they attach; an ibv_devices between them moves the second
      # server to the other shard.
      long_write "" "$work/sa.sock" shards.w1 "$work/sb.sock" 127.0.0.1
      w1=("$server" "$client")
      METAROCE_SOCKET=$work/sa.sock "$run_bin" ibv_devices >/dev/null 2>&1
      long_write "" "$work/sa.sock" shards.w2 "$work/sb.sock" 127.0.0.1
      shards_telemetry shards "${tel_prefix}_sa" 127.0.0.2
      kill "${w1[@]}" "$server" "$client" 2>/dev/null
      wait "${w1[@]}" "$server" "$client" 2>/dev/null
      ;;
    *)
      note "unknown scenario $s (local, loss, netns, netns_loss, planes, shards)"
      exit 2
      ;;
  esac
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
