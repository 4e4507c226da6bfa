#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Kills one mr-pingpong process mid-run (SIGKILL: no goodbye): the survivor's
# work requests must fail with a transport error in bounded time, not hang.
# Kernel UDP driver on 127.0.0.1 only.
#   peer_killed_test.sh MR_PINGPONG
set -euo pipefail
bin=$1
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

tcp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" --port "udp:ip=127.0.0.1,port=0" --listen "$tcp" --iters 100000000 --size 1024 \
  >"$work/server.log" 2>&1 &
server=$!
pids+=("$server")
"$bin" --port "udp:ip=127.0.0.1,port=0" --connect "127.0.0.1:$tcp" --iters 100000000 --size 1024 \
  >"$work/client.log" 2>&1 &
client=$!
pids+=("$client")

sleep 1  # ping-pong under way
kill -0 "$client" 2>/dev/null || { cat "$work"/*.log; echo "peer_killed_test: client ended early" >&2; exit 1; }
kill -9 "$server"
killed=$(date +%s%N)
status=0
wait "$client" || status=$?
elapsed_ms=$(( ($(date +%s%N) - killed) / 1000000 ))
cat "$work/client.log"
if [ "$status" -eq 0 ]; then
  echo "peer_killed_test: the client claims success after its peer died" >&2
  exit 1
fi
# The failure must come from the transport (an error completion), well
# before the example's own 10 s wait limit.
grep -q "completion failed" "$work/client.log" || {
  echo "peer_killed_test: the client did not get an error completion" >&2
  exit 1
}
[ "$elapsed_ms" -lt 5000 ] || { echo "peer_killed_test: took ${elapsed_ms} ms" >&2; exit 1; }
echo "peer_killed_test: the survivor's work request failed ${elapsed_ms} ms after its peer was killed"
