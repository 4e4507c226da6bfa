#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 The metaroce authors
#
# Stages `meson install` of BUILDDIR into a temporary root, then builds and
# runs a separate meson project that finds it with dependency('metaroce').
#   check_install.sh BUILDDIR CONSUMER_SOURCE_DIR
set -euo pipefail
builddir=$1
consumer=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

meson install -C "$builddir" --no-rebuild --destdir "$stage" --quiet
pc=$(find "$stage" -name metaroce.pc | head -n 1)
[ -n "$pc" ] || { echo "check_install: no metaroce.pc was installed" >&2; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
for h in mr_wire.h mr_wire_codec.h mr_config.h mr_device.h mr_port.h mr_engine.h; do
  [ -n "$(find "$stage" -path "*/include/metaroce/$h")" ] || { echo "check_install: $h not installed" >&2; exit 1; }
done
ls "$libdir"/libmetaroce_wire.so* >/dev/null

export PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_SYSROOT_DIR=$stage
meson setup "$stage/consumer-build" "$consumer" >/dev/null
ninja -C "$stage/consumer-build" >/dev/null
LD_LIBRARY_PATH=$libdir "$stage/consumer-build/consumer"
