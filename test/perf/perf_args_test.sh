#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# mr-perf refuses bad command lines with exit code 2 and a message that says
# what to fix, before opening any port.
#   perf_args_test.sh MR_PERF
set -uo pipefail
bin=$1
fails=0
expect() {  # expect "message part" args...
  local want=$1; shift
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL: mr-perf $* -> exit $rc, output: $out (wanted exit 2 and '$want')"
    fails=$((fails + 1))
  fi
}
expect "exactly one of --listen and --connect"
expect "exactly one of --listen and --connect" --listen 1 --connect 127.0.0.1:1
expect "unknown --mode" --connect 127.0.0.1:1 --mode write_bandwidth
expect "--size takes 1..8M" --connect 127.0.0.1:1 --size 0
expect "--size takes 1..8M" --connect 127.0.0.1:1 --size 9M
expect "--qps takes 1..256" --connect 127.0.0.1:1 --qps 1000
expect "--depth takes 1..4096" --connect 127.0.0.1:1 --depth 0
expect "--duration takes seconds" --connect 127.0.0.1:1 --duration -1
expect "--paths takes 1..1024" --connect 127.0.0.1:1 --paths 0
expect "--pace takes Gbit/s" --connect 127.0.0.1:1 --pace 0
expect "latency modes run one QP" --connect 127.0.0.1:1 --mode send_lat --qps 2
expect "atomic_lat moves 8 bytes" --connect 127.0.0.1:1 --mode atomic_lat --size 64
expect "the server takes no test options" --listen 9999 --mode read_bw
expect "--listen takes a TCP port" --listen 70000
expect "unexpected argument" --connect 127.0.0.1:1 extra
# A bad port spec is the driver's message, exit 1.
out=$("$bin" --port "udp:ip=not-an-ip" --listen 9999 2>&1); rc=$?
if [ "$rc" -ne 1 ] || ! grep -q "ip" <<<"$out"; then
  echo "FAIL: bad --port -> exit $rc: $out"; fails=$((fails + 1))
fi
"$bin" --help | grep -q "write_bw" || { echo "FAIL: --help lists no modes"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "perf_args_test: every bad command line refused with its reason"
exit "$fails"
