#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Runs the checksum offload test inside a network namespace of its own, so
# its net_tap interfaces exist nowhere else; removes it afterwards.
#   tap_csum_test.sh TEST_DPDK_TAP_CSUM
set -euo pipefail
ns="mr_tapcsum_$$"
cleanup() { ip netns del "$ns" 2>/dev/null || true; rm -rf /var/run/dpdk/mr_tap_test; }
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" "$1"
