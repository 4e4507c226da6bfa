#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Bounded libFuzzer run of one fuzz target with ASan+UBSan (clang).
#   devtools/fuzz.sh [--merge] [TARGET] [SECONDS]
# TARGET (a test/fuzz/fuzz_TARGET.cc) defaults to wire_parse, SECONDS to 60.
# New inputs go to a scratch corpus under build-fuzz/; --merge adds to the
# checked-in corpus in test/fuzz/corpus/TARGET (replayed by the `fuzz` suite)
# a smallest set of them that reaches every new edge (hit counts aside, which
# would add thousands of inputs): the checked-in corpus stays small.
set -euo pipefail
cd "$(dirname "$0")/.."

merge=0
if [ "${1:-}" = "--merge" ]; then merge=1; shift; fi
target=${1:-wire_parse}
seconds=${2:-60}
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2;; esac
seeds=test/fuzz/corpus/$target
if [ ! -d "$seeds" ]; then
  echo "fuzz.sh: no corpus directory $seeds (unknown target '$target'; targets: $(ls test/fuzz/corpus | tr '\n' ' '))" >&2
  exit 2
fi

devtools/install-deps.sh
builddir=build-fuzz
if [ ! -f "$builddir/build.ninja" ]; then
  CXX=clang++ meson setup "$builddir" -Dfuzz=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null
fi
ninja -C "$builddir" "test/fuzz/fuzz_$target" >/dev/null

scratch=$builddir/corpus-$target
mkdir -p "$scratch"
log=$builddir/fuzz-$target.log
set +e
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$builddir/test/fuzz/fuzz_$target" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$builddir/crash-$target-" "$scratch" "$seeds" 2>"$log"
rc=$?
set -e
grep -E "^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|^#[0-9]+.*DONE" "$log" || true
echo "corpus: $(ls "$scratch" | wc -l) inputs in $scratch"
if [ "$rc" -ne 0 ]; then
  echo "fuzz.sh: the fuzzer found a failure (exit $rc); see $log and $builddir/crash-$target-*" >&2
  exit "$rc"
fi
if [ "$merge" = 1 ]; then
  before=$(ls "$seeds" | wc -l)
  "$builddir/test/fuzz/fuzz_$target" -set_cover_merge=1 -use_counters=0 "$seeds" "$scratch" 2>>"$log"
  echo "merged: $before -> $(ls "$seeds" | wc -l) inputs in $seeds"
fi
