// Lower bounds on the best value any placement can reach, so that every result can state its gap.
// They ignore memory; each is cheap (about linear in the graph).
//
// Step:       max(critical path with every op at its fastest allowed time, where an op with several
//                 producers waits for the cheapest transfers of the ones on other devices or runs
//                 after the ones on its own device, one at a time, each with the chain of ops that
//                 leads into it unless a crossing inside that chain delays it, and a branch sent
//                 from a device that also holds its fork crosses twice; forks alike on the path
//                 read backwards (docs/semantics.md),
//                 the work bound: the load of the most loaded device is at least any weighted mean
//                 of the loads, so at least sum over ops of min over devices of weight × time
//                 (equal weights: total fastest work / number of devices; better weights count a
//                 slow device as a fraction of one),
//                 the heaviest co-location group on its best single device,
//                 the two first together: no window of time can hold more than its length of the
//                 work that the path's earliest starts and least remaining times force into it,
//                 weighed as in the work bound (energetic reasoning)).
// Latency:    the critical path with every op at its fastest allowed time (CPU ops run in
//             parallel, so total work is no bound).
// Throughput: max(the work bound, the slowest single op at its best,
//                 the heaviest co-location group on its best single device,
//                 the two first together: no window of time can hold more than its length of the
//                 work that the path's earliest starts and least remaining times force into it,
//                 weighed as in the work bound (energetic reasoning)).
#pragma once

#include <algorithm>

#include "dplace/sim/problem.h"

namespace dplace::sim {

double StepLowerBound(const Problem& problem);

// The step bound's parts, each a bound by itself (bench/bound_gaps reports them per workload).
struct StepBoundParts {
  double path = 0;    // the charged critical path
  double work = 0;    // the weighted work bound
  double group = 0;   // the heaviest co-location group
  double energy = 0;  // path and work together, at least the largest of the three
  double value() const { return std::max({path, work, group, energy}); }
};
StepBoundParts StepLowerBoundParts(const Problem& problem);
double ThroughputLowerBound(const Problem& problem);
double LatencyLowerBound(const Problem& problem);

}  // namespace dplace::sim
