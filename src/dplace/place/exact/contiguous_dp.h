// The DP of Tarnawski et al., NeurIPS 2020, for contiguous max-load, made fast:
//   dp[I][c][f] = least max-load placing ideal I on c CPUs and f accelerators
//               = min over sub-ideals I' of max(dp[I'][c][f-1], accelerator load of I \ I'),
//                                           max(dp[I'][c-1][f], CPU time of I \ I').
// Instead of storing every pair of ideals (what made the paper's program need 18 GB on
// Inception-v3), each ideal I' pushes to its supersets J, enumerated once each by a depth-first
// search that keeps the load of J \ I' incrementally (UnitSetLoad) and prunes every superset whose
// load is bounded below by the best solution known: compute time, memory, and the communication of
// tensors from I' only grow. Exact: a pruned set cannot improve on a solution already found.
#pragma once

#include <chrono>
#include <vector>

#include "dplace/place/exact/contiguous_model.h"
#include "dplace/place/exact/ideal_lattice.h"

namespace dplace::place {

struct ContiguousSolution {
  double max_load = 0;           // as the DP computed it (the evaluator's value is authoritative)
  std::vector<int> unit_device;  // per unit: index into model.accelerators, or -1 - index into cpus
  // Choosing replicas: per accelerator, how many (from it on) run the stage it leads as replicas,
  // 0 for those that replicate one before it; empty when every stage has one.
  std::vector<int> accel_span;
  bool found = false;          // false when nothing better than `upper_bound` exists
  int64_t sets_evaluated = 0;  // (I', J) pairs the search looked at
  bool complete = true;        // false when the deadline stopped the search: not proven optimal
};

using Deadline = std::chrono::steady_clock::time_point;

// The deadline of a `--time-limit` of `limit_s` seconds from now; 0 (no limit given) means 300 s.
Deadline DeadlineAfter(double limit_s);

// The most ideals whose lattice (a bitset each) and DP tables (13 bytes per ideal, CPUs used and
// accelerators used) fit in 1 GiB, the exact placers' memory budget.
int64_t MaxIdealsInMemory(const ContiguousModel& model);

// Solves over the ideals of `lattice`. Solutions of value >= upper_bound are not looked for. Past
// `deadline` the search stops and returns the best solution it has (complete = false); a lattice
// of more than MaxIdealsInMemory ideals is not attempted (complete = false, nothing found).
ContiguousSolution SolveContiguous(const ContiguousModel& model, const IdealLattice& lattice,
                                   double upper_bound, Deadline deadline = Deadline::max());

// A quick split of the topological order for an upper bound: the least cap (by bisection) under
// which filling the devices in turn, each with the longest run of units that keeps its load within
// the cap, places every unit. O(units · log) per pass; not optimal (a run's communication is not
// monotone in its length). found = false when some unit fits no device.
ContiguousSolution SolveChainGreedy(const ContiguousModel& model, Deadline deadline);

// The optimal split of the topological order (PipeDream's linear DP): the DP over the chain of
// prefixes, bounded from the start by SolveChainGreedy. complete = false when the deadline stopped
// it (the best split found, at worst the greedy one).
ContiguousSolution SolveLinear(const ContiguousModel& model, Deadline deadline);

// A heuristic split for single-sample latency: the topological order of the units cut into runs,
// each run one accelerator call (its max-load term) or CPU-pool work (its critical path with CPU
// times), minimising the sum over the runs (which bounds the latency the runs give) by a DP over
// (prefix, accelerators used). `max_load` holds that sum. O(units² · accelerators); nothing found
// when the deadline passes first.
ContiguousSolution SolveLinearLatency(const ContiguousModel& model, Deadline deadline);

// The placement of every op for a solution.
sim::Placement ToPlacement(const ContiguousModel& model, const ContiguousSolution& solution,
                           int num_ops);

// What the contiguous placers return when no split fits: every op on the first accelerator (or
// CPU), which the evaluation reports as infeasible with its reason.
sim::Placement NoSplitFits(const ContiguousModel& model, int num_ops);

}  // namespace dplace::place
