#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# A paced client (--pace) never sends faster than its rate: 64 KiB WRITEs
# over kernel UDP on 127.0.0.1 paced to 0.5 Gbit/s must not beat it (an
# upper bound only: a slow machine can only be slower).
#   perf_pace_test.sh MR_PERF
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
timeout 120 "$bin" --connect "127.0.0.1:$tcp" --mode write_bw --size 64K --iters 600 --pace 0.5 \
  --json >"$work/client.log" 2>&1
wait "$server_pid"
server_pid=""
cat "$work/client.log"
python3 - "$work/client.log" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"mode"')][0]
assert r["ok"], r
limit = 0.5e9 / 8 / 2**20  # 0.5 Gbit/s in MiB/s
# The first burst (64 KiB) comes free; over 600 x 64 KiB that is 0.2 %.
assert r["bw_mib_s"] <= limit * 1.03, f"{r['bw_mib_s']:.1f} MiB/s beats the pace of {limit:.1f}"
assert r["bw_mib_s"] > 0
print(f"perf_pace_test: {r['bw_mib_s']:.1f} MiB/s paced to {limit:.1f} MiB/s")
PY
