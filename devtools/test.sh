#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Installs what is missing, builds and runs the whole test suite:
#   1. release build (-Dwerror=true), every suite (fast, sim, integration, fuzz)
#   2. ASan+UBSan build, suite fast (timeouts x4: sanitized code is slower)
#   3. release build with -Dengine_checks, the simulated end-to-end tests
# Ends with one line "N passed, M failed"; exits non-zero on any failure.
#   devtools/test.sh [--no-sanitize] [--suite NAME]...
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=1
suites=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-sanitize) sanitize=0 ;;
    --suite) [ $# -ge 2 ] || { echo "test.sh: --suite needs a name (fast, sim, integration, fuzz)" >&2; exit 2; }
             suites+=(--suite "$2"); shift ;;
    -h|--help) sed -n '4,10p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

devtools/install-deps.sh

jobs=$(nproc)
setup() {  # builddir, meson options...
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

status=0
builds=(build)
start=$(date +%s)
setup build -Dwerror=true
ninja -C build
rm -rf build/test-results
meson test -C build --no-rebuild --print-errorlogs --num-processes "$jobs" "${suites[@]}" || status=1
echo "release build and tests: $(( $(date +%s) - start )) s"

if [ "$sanitize" = 1 ]; then
  start=$(date +%s)
  setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Dengine_checks=true
  ninja -C build-asan
  rm -rf build-asan/test-results
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --no-rebuild --print-errorlogs --num-processes "$jobs" --suite fast \
    --timeout-multiplier 4 \
    || status=1
  builds+=(build-asan)
  echo "sanitizer build and fast suite: $(( $(date +%s) - start )) s"
fi

if [ "$sanitize" = 1 ]; then
  # The engine's invariants (-Dengine_checks: work lists, timers, counts kept
  # with path state) over the simulated end-to-end tests, which the sanitizer
  # build runs too slowly: a release build of that one test.
  start=$(date +%s)
  setup build-checks -Dwerror=true -Dengine_checks=true
  ninja -C build-checks test/transport/test_transport_e2e
  rm -rf build-checks/test-results
  meson test -C build-checks --no-rebuild --print-errorlogs --num-processes "$jobs" transport_e2e \
    || status=1
  builds+=(build-checks)
  echo "engine-checks build and transport_e2e: $(( $(date +%s) - start )) s"
fi

python3 devtools/test-summary.py "${builds[@]}" || status=1
exit $status
