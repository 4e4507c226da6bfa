#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# mr-sim --quick, as CI runs it: every experiment writes its CSV, JSON, plot
# and summary; the same seed gives the same figures; and the small fabric
# shows the claims check_quick.py lists.
#   mr_sim_quick_test.sh MR_SIM CHECK_QUICK_PY
set -uo pipefail
bin=$1
check=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
if ! "$bin" --quick --out "$dir/a" >"$dir/a.log" 2>&1; then
  echo "FAIL: mr-sim --quick exited non-zero:"; cat "$dir/a.log"; exit 1
fi
echo "mr-sim --quick: $(( $(date +%s) - start )) s"
cat "$dir/a/summary.md"
fails=0
for e in calibration loss bursty gray incast incast-qps permutation alltoall allreduce planes failure spine link \
  longhaul longhaul-loss; do
  for ext in csv json dat gp png; do
    [ -s "$dir/a/$e.$ext" ] || { echo "FAIL: no $e.$ext"; fails=$((fails + 1)); }
  done
  grep -q "^## $e" "$dir/a/summary.md" || { echo "FAIL: summary.md has no $e"; fails=$((fails + 1)); }
done
# Deterministic per seed: a second run writes the same figures.
"$bin" --quick --no-plots --quiet --out "$dir/b" loss incast >/dev/null 2>&1 || { echo "FAIL: second run"; fails=$((fails + 1)); }
for e in loss incast; do
  cmp -s "$dir/a/$e.csv" "$dir/b/$e.csv" || { echo "FAIL: $e.csv differs between two runs of one seed"; diff "$dir/a/$e.csv" "$dir/b/$e.csv"; fails=$((fails + 1)); }
done
python3 "$check" "$dir/a" || fails=$((fails + 1))
[ "$fails" -eq 0 ] && echo "mr-sim --quick: all checks passed"
exit $((fails > 0))
