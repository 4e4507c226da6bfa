/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The MetaRoCE transport engine: everything an embedding program needs.
 * See doc/transport.md.
 */

#ifndef METAROCE_MR_TRANSPORT_H
#define METAROCE_MR_TRANSPORT_H

#include "mr_engine.h"
#include "mr_memory.h"
#include "mr_transport_types.h"

#endif  // METAROCE_MR_TRANSPORT_H
