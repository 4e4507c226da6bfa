#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Installs the Debian 12 packages metaroce builds and tests with. Idempotent
# and silent when everything is present; needs root (or sudo) otherwise.
set -euo pipefail

packages=(
  build-essential pkg-config meson ninja-build python3
  libdpdk-dev dpdk dpdk-dev   # DPDK 22.11: ethdev, memif/af_packet/ring/null PMDs, telemetry;
                              # dpdk-dev: dpdk-telemetry.py and dpdk-dumpcap (doc/observability.md)
  libibverbs-dev ibverbs-utils rdma-core  # rdma-core 44: verbs headers and tools
  perftest                    # ib_write_bw & co., run unmodified over the verbs shim (test/metaroced)
  libabsl-dev                 # Abseil 20220623
  libsodium-dev               # ChaCha20 CSPRNG and SipHash cookies of the engine (lib/transport)
  libisal-dev                 # ISA-L crc32_iscsi: CRC-32C of packets of 256 B and more (lib/wire)
  libgtest-dev libgmock-dev googletest
  clang libfuzzer-14-dev libclang-rt-14-dev  # libFuzzer targets (-Dfuzz=true)
  tshark                      # Wireshark dissector test
  iproute2                    # network namespaces for integration tests
  gnuplot-nox                 # mr-sim's plots (doc/mr-sim.md)
  ucx-utils iperf3 linux-perf # peers and profiler for devtools/peer-compare.sh
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
