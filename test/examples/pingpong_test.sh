#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Two mr-pingpong processes over the kernel UDP driver on 127.0.0.1, with 1 %
# of received packets dropped on both sides: every round trip completes and
# the final 1 MiB WRITE arrives byte for byte. Loopback only.
#   pingpong_test.sh MR_PINGPONG
set -euo pipefail
bin=$1
work=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A free TCP port for the address exchange; the UDP ports are the kernel's
# choice (port=0) and travel in that exchange.
tcp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

"$bin" --port "udp:ip=127.0.0.1,port=0" --faults "drop=0.01,seed=1" \
  --listen "$tcp" --iters 300 --size 4096 >"$work/server.log" 2>&1 &
server_pid=$!
status=0
timeout 120 "$bin" --port "udp:ip=127.0.0.1,port=0" --faults "drop=0.01,seed=2" \
  --connect "127.0.0.1:$tcp" --iters 300 --size 4096 >"$work/client.log" 2>&1 || status=$?
wait "$server_pid" || status=$?
server_pid=""
cat "$work/server.log" "$work/client.log"
[ "$status" -eq 0 ] || { echo "pingpong_test: a side failed (exit $status)" >&2; exit 1; }
grep -q "1 MiB WRITE verified" "$work/server.log" || { echo "pingpong_test: server did not verify the WRITE" >&2; exit 1; }
grep -q "300 round trips" "$work/client.log" || { echo "pingpong_test: client did not finish" >&2; exit 1; }
echo "pingpong_test: 300 round trips and a verified 1 MiB WRITE with 1 % loss on both sides"
