// What makes one of several near-equal placements the one to deploy: fewer devices, fewer bytes
// crossing between them, and no device chosen by ops without work.
//
// A placer's best value may come from scattering ops that do no arithmetic (Identity, Shape,
// Reshape, ...) over idle devices for a few microseconds. These functions let the caller tidy
// such a placement and rank plans by what they cost to run, not only by their simulated value.
// They judge nothing: the caller re-evaluates a tidied placement and keeps it only if it is
// still within its tolerance.
#pragma once

#include "dplace/sim/problem.h"

namespace dplace::place {

// `placement` with every unit (co-location group or lone op) whose ops do no arithmetic (FLOPs 0;
// parameters they hold move with them) moved, in topological order, to the device of the producer of its first input
// (for a unit with no input, the device of its first consumer), where the unit may run there.
sim::Placement FollowNeighbours(const sim::Problem& problem, const sim::Placement& placement);

// Devices that run at least one op with arithmetic.
int DevicesUsed(const sim::Problem& problem, const sim::Placement& placement);

// Bytes sent between devices in one step (each tensor once per destination device).
double BytesCrossing(const sim::Problem& problem, const sim::Placement& placement);

}  // namespace dplace::place
