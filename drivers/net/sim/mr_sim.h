/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 The metaroce authors
 */

/**
 * @file
 * The simulated fabric (drivers/net/sim): everything a test or the simulator
 * runner needs. doc/sim.md describes the model.
 */

#ifndef METAROCE_MR_SIM_H
#define METAROCE_MR_SIM_H

#include "mr_sim_config.h"
#include "mr_sim_endpoint.h"
#include "mr_sim_fabric.h"
#include "mr_sim_rng.h"
#include "mr_sim_stats.h"
#include "mr_sim_time.h"
#include "mr_sim_topology.h"
#include "mr_sim_trace.h"

#endif  // METAROCE_MR_SIM_H
