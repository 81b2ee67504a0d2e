// Lower bounds on the best value any placement can reach, so that every result can state its gap.
// They ignore memory and treat communication as free; each is cheap (linear in the graph).
//
// Step:       max(critical path with every op at its fastest allowed time,
//                 total fastest work / number of devices,
//                 the heaviest co-location group on its best single device).
// Latency:    the critical path with every op at its fastest allowed time (CPU ops run in
//             parallel, so total work is no bound).
// Throughput: max(total fastest work / number of devices, the slowest single op at its best,
//                 the heaviest co-location group on its best single device).
#pragma once

#include "dplace/sim/problem.h"

namespace dplace::sim {

double StepLowerBound(const Problem& problem);
double ThroughputLowerBound(const Problem& problem);
double LatencyLowerBound(const Problem& problem);

}  // namespace dplace::sim
