#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# The server of a running mr-perf test is SIGKILLed mid-transfer: the client
# must fail with an error naming the failed work request, in bounded time,
# over the kernel UDP driver on 127.0.0.1.
#   perf_peer_killed_test.sh MR_PERF
set -euo pipefail
bin=$1
work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
tcp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" --listen "$tcp" >"$work/server.log" 2>&1 &
server_pid=$!
"$bin" --connect "127.0.0.1:$tcp" --mode write_bw --size 64K --qps 2 --duration 60 \
  >"$work/client.log" 2>&1 &
client_pid=$!
sleep 2
kill -0 "$client_pid" || { cat "$work/client.log"; echo "perf_peer_killed_test: client ended early" >&2; exit 1; }
kill -9 "$server_pid"
server_pid=""
killed_at=$(date +%s%N)
status=0
# The client must give up on its own; 20 s is far beyond what it needs.
for _ in $(seq 200); do kill -0 "$client_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$client_pid" 2>/dev/null; then
  kill -9 "$client_pid"
  echo "perf_peer_killed_test: the client hangs after its peer died" >&2
  exit 1
fi
wait "$client_pid" || status=$?
took_ms=$(( ($(date +%s%N) - killed_at) / 1000000 ))
cat "$work/client.log"
[ "$status" -ne 0 ] || { echo "perf_peer_killed_test: the client reported success" >&2; exit 1; }
grep -q "failed: transport retry counter exceeded\|work request on QP .* failed" "$work/client.log" || {
  echo "perf_peer_killed_test: the client did not name the failed work request" >&2; exit 1; }
echo "perf_peer_killed_test: the client failed with an error ${took_ms} ms after its peer was killed"
