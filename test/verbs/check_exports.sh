#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# check_exports.sh SHIM_DIR SOURCE_ROOT: the verbs shim in SHIM_DIR is a drop-in
# libibverbs.so.1: same SONAME, every default-versioned symbol of rdma-core's
# library at the same version, the committed map up to date, and the installed
# verbs programs (and the providers perftest loads) resolve against it.
set -u

dir=$1
src=$2
lib=$dir/libibverbs.so.1
real=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}

[ -e "$lib" ] || { echo "FAIL: no $lib"; exit 1; }
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = "libibverbs.so.1" ] || bad "SONAME is '$soname'"

defaults() {
    objdump -T "$1" | awk '$2 == "g" && $0 !~ /\*UND\*/ && $0 !~ /\*ABS\*/ && NF >= 7 &&
        $(NF - 1) !~ /^\(/ { print $(NF - 1), $NF }' | sort
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
defaults "$real" >"$tmp/real"
defaults "$lib" >"$tmp/shim"
missing=$(comm -23 "$tmp/real" "$tmp/shim")
extra=$(comm -13 "$tmp/real" "$tmp/shim")
[ -z "$missing" ] || bad "not exported (version symbol): $missing"
[ -z "$extra" ] || bad "exported but not by rdma-core: $extra"
echo "$(wc -l <"$tmp/real") default-versioned symbols compared"
if objdump -p "$lib" | grep -q 'NEEDED.*\(dpdk\|rte_\|absl\|libibverbs\)'; then
    bad "the shim depends on DPDK, Abseil or rdma-core's libibverbs"
fi

"$src/devtools/gen-verbs-map.sh" --check "$real" >/dev/null || bad "lib/verbs/libibverbs.map is stale"

for p in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_bw ib_read_lat ib_send_bw; do
    bin=/usr/bin/$p
    [ -x "$bin" ] || { bad "no $bin (devtools/install-deps.sh installs ibverbs-utils and perftest)"; continue; }
    LD_LIBRARY_PATH=$dir ldd "$bin" | grep -q "libibverbs.so.1 => $dir/libibverbs.so.1" ||
        bad "$p does not load the shim"
    LD_BIND_NOW=1 LD_LIBRARY_PATH=$dir METAROCE_SOCKET=/nonexistent/metaroce.sock \
        "$bin" --help >"$tmp/out" 2>&1
    rc=$?
    if [ $rc -eq 127 ] || grep -q "symbol lookup error\|undefined symbol" "$tmp/out"; then
        bad "$p: $(grep -m1 'symbol' "$tmp/out")"
    else
        echo "ok: $p binds (BIND_NOW) against the shim"
    fi
done
# doc/verbs.md lists every export with its status.
while read -r _ sym; do
    grep -q "^| \`$sym\` |" "$src/doc/verbs.md" || bad "doc/verbs.md does not list $sym"
done <"$tmp/real"
[ $fail -eq 0 ] && echo "all checks passed"
exit $fail
