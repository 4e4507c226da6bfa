#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# mr-sim refuses bad command lines with exit code 2 and a message that says
# what to fix, before running anything.
#   mr_sim_args_test.sh MR_SIM
set -uo pipefail
bin=$1
fails=0
out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT
expect() {  # expect "message part" args...
  local want=$1; shift
  local out rc
  out=$("$bin" --out "$out_dir/x" "$@" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL: mr-sim $* -> exit $rc, output: $out (wanted exit 2 and '$want')"
    fails=$((fails + 1))
  fi
}
expect "--gbps 0: want an integer in 1..1600" --gbps 0
expect "--seeds 1001: want an integer in 1..1000" --seeds 1001
expect "--leaves 300: want an integer in 1..256" --leaves 300
expect "--hosts-per-leaf 0: want an integer in 1..254" --hosts-per-leaf 0
expect "--link-delay-ns x: want an integer" --link-delay-ns x
expect "--protocols metaroce,roce: no protocol 'roce': want metaroce, rocev2-pfc or rocev2" --protocols metaroce,roce
expect "--x 1,a: want numbers >= 0" --x 1,a
expect "no experiment incest (mr-sim --help lists them)" incest
expect "unknown option --fast" --fast
expect "--seeds needs a value" --seeds
expect "at least 2 hosts" --leaves 1 --hosts-per-leaf 1
expect "--planes 9: want an integer in 1..8" --planes 9
[ ! -e "$out_dir/x" ] || { echo "FAIL: a refused command line created its output directory"; fails=$((fails + 1)); }
help=$("$bin" --help)
for e in calibration loss bursty gray incast incast-qps permutation alltoall allreduce planes failure spine link; do
  grep -q "^  $e " <<<"$help" || { echo "FAIL: --help does not list $e"; fails=$((fails + 1)); }
done
# An output directory that cannot be made is an error naming it, exit 1.
out=$("$bin" --quick --no-plots --out /proc/mr-sim-test calibration 2>&1); rc=$?
if [ "$rc" -ne 1 ] || ! grep -qF "cannot create /proc/mr-sim-test" <<<"$out"; then
  echo "FAIL: unwritable --out -> exit $rc: $out"; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo "mr-sim command line: all checks passed"
exit $((fails > 0))
