/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * MetaRoCE wire format v1: everything needed to parse and build packets.
 * See doc/spec.md for the normative layouts and receiver rules.
 */

#ifndef METAROCE_MR_WIRE_H
#define METAROCE_MR_WIRE_H

#include "mr_crc32c.h"
#include "mr_wire_codec.h"
#include "mr_wire_defs.h"
#include "mr_wire_frame.h"
#include "mr_wire_packet.h"
#include "mr_wire_psn.h"

#endif  // METAROCE_MR_WIRE_H
