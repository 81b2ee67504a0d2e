// Placement units: a co-location group, or an op that belongs to none. Baseline placers assign
// units, not ops, so that co-location holds by construction. Units come in topological order of
// their first op; each knows the devices all its ops allow and its static memory footprint.
#pragma once

#include <vector>

#include "dplace/base/strong_id.h"
#include "dplace/sim/problem.h"

namespace dplace::place {

using UnitId = Id<struct UnitTag>;
using ScopeGroupId = Id<struct ScopeGroupTag>;

struct Unit {
  std::vector<sim::OpId> ops;
  std::vector<sim::DeviceId> devices;  // devices every op of the unit may run on; may be empty
  double footprint_bytes = 0;          // Σ op footprints (parameters + scratch + outputs)
};

using Units = IdVector<UnitId, Unit>;
// Per unit, a value of T (a device, a flag).
template <typename T>
using PerUnit = IdVector<UnitId, T>;

Units MakeUnits(const sim::Problem& problem);
// Units of the ops that share a label (any grouping of whole co-location groups: coarse units), in
// topological order of their first op.
Units MakeUnits(const sim::Problem& problem, const sim::PerOp<int32_t>& label);

// Groups of units by name scope, for moves of whole modules (the hierarchical planner's groups,
// read off the names instead of learnt). A unit is named by its first op; "/cells.0_11/Tanh" lies
// in the scope "cells.0_11" (the 12th call of the module) and in "cells.0" (every call of it: the
// "_N" suffixes PyTorch's exporter gives repeated calls are dropped), and so on at every depth of
// the path. Groups of fewer than two units, of every unit, and repeats of an earlier group are left
// out.
struct ScopeGroups {
  IdVector<ScopeGroupId, std::vector<UnitId>> members;  // per group: its units, in unit order
  PerUnit<std::vector<ScopeGroupId>> of_unit;           // per unit: the groups it belongs to
};
ScopeGroups MakeScopeGroups(const sim::Problem& problem, const Units& units);

// Assigns every op of `unit` to `d`.
inline void Assign(const Unit& unit, sim::DeviceId d, sim::Placement* placement) {
  for (sim::OpId op : unit.ops) (*placement)[op] = d;
}

// The devices `unit` may run on, fastest for it (its ops' summed time) first.
std::vector<sim::DeviceId> FastestFirst(const sim::Problem& problem, const Unit& unit);

// Device for `unit` among `candidates` (in order): the first with room for its footprint given
// `used` bytes per device; if none has room, the candidate with the most room left. `used` is
// updated. Falls back to any device when the unit allows none (the evaluation reports it).
sim::DeviceId FirstFit(const sim::Problem& problem, const Unit& unit,
                       const std::vector<sim::DeviceId>& candidates, sim::PerDevice<double>* used);

}  // namespace dplace::place
