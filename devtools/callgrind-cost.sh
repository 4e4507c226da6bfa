#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Instructions per data packet of bench_transport's engine-cost rows, counted
# by callgrind: the figure that does not move with the machine's load.
# Each row runs a fixed number of rounds (--rounds); only those rounds are
# counted (the row's set-up, warm-up and the peers are not).
#
#   devtools/callgrind-cost.sh [--rounds N] [BUILD_DIR]    (default 2000, build)
#
# Takes a few minutes: the 4096-connection row sets up 8190 idle connections
# under valgrind.
set -euo pipefail

rounds=2000
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
    -h|--help) sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "callgrind-cost.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
bench=$build/test/transport/bench_transport
if [ ! -x "$bench" ]; then
  echo "callgrind-cost.sh: no $bench: build first (meson setup $build && ninja -C $build)" >&2
  exit 2
fi
command -v valgrind >/dev/null || { echo "callgrind-cost.sh: valgrind is not installed" >&2; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
valgrind --tool=callgrind --toggle-collect='*MeasuredRounds*' --dump-after='void metaroce::bench::(anonymous namespace)::MeasuredRounds*' \
  --callgrind-out-file="$dir/cg.out" "$bench" --only cost --rounds "$rounds" --json \
  >"$dir/bench.json" 2>"$dir/valgrind.log" || { cat "$dir/valgrind.log" >&2; exit 1; }

python3 - "$dir" "$rounds" <<'PY'
import glob, json, re, sys
d, rounds = sys.argv[1], sys.argv[2]
res = json.load(open(d + '/bench.json'))['cost']
rows = [(r['workload'], r['data_pkts']) for r in res['rows']]
rows += [('64 B WRITEs, 1 of %d conns' % r['connections'], r['data_pkts'])
         for r in res['idle_scaling']]
rows += [('64 B WRITEs, %d paths' % r['paths'], r['data_pkts']) for r in res['path_scaling']]
def part(f):
    m = re.search(r'\.(\d+)$', f)
    return int(m.group(1)) if m else 0
dumps = sorted((f for f in glob.glob(d + '/cg.out*') if part(f) > 0), key=part)
irs = []
for f in dumps:
    for line in open(f):
        if line.startswith('totals:') or line.startswith('summary:'):
            irs.append(int(line.split()[1]))
            break
if len(irs) != len(rows):
    sys.exit('callgrind-cost.sh: %d dumps for %d rows' % (len(irs), len(rows)))
print('# callgrind instructions per data packet, both engines, %s rounds per row' % rounds)
print('%-32s | %10s %14s %10s' % ('workload', 'data pkts', 'instructions', 'Ir/pkt'))
for (name, pkts), ir in zip(rows, irs):
    print('%-32s | %10d %14d %10.0f' % (name, pkts, ir, ir / pkts if pkts else 0))
PY
