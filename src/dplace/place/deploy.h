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

// An op does work when its fastest time is above 1e-5 of the graph's total (shape arithmetic,
// Identity, Reshape, a weight's pass-through do not).
// `placement` with every unit (co-location group or lone op) whose ops do no work (parameters they
// hold move with them) moved to the device of the nearest op that does work among its producers
// (looking through ops that do not), else among its consumers, where the unit may run there.
sim::Placement FollowNeighbours(const sim::Problem& problem, const sim::Placement& placement);

// Devices that run at least one op that does work.
int DevicesUsed(const sim::Problem& problem, const sim::Placement& placement);

// Bytes sent between devices in one step (each tensor once per destination device).
double BytesCrossing(const sim::Problem& problem, const sim::Placement& placement);

}  // namespace dplace::place
