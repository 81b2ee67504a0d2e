// Collectives as NCCL runs them: all-reduce, all-gather, reduce-scatter and point-to-point, over
// one or several levels of a machine (hw/machine.h). Every collective time in dplace comes from
// here (the op-level fit report, the pipeline simulation's replicas, dp's stage loads, the job
// planner).
//
// One level of n ranks: a ring of latency + share / bandwidth steps, where nccl-tests' bus
// bandwidth is the link rate: all-reduce 2(n-1) steps of bytes/n, all-gather and reduce-scatter
// n-1 steps of bytes/n. Across nodes NCCL may run a tree instead (2 log2 n latencies, the same
// bandwidth term); the faster of the two counts there. A group spanning levels runs
// hierarchically: reduce-scatter inside the node, the collective across nodes on a node-th of the
// bytes, all-gather inside the node. Bytes are the full buffer: the all-reduced tensor, the
// gathered output, the reduce-scattered input.
#pragma once

#include <span>

#include "dplace/hw/cluster.h"
#include "dplace/hw/machine.h"

namespace dplace::cost {

enum class Collective { kAllReduce, kAllGather, kReduceScatter };

// Seconds a ring all-reduce of `bytes` takes over `ranks` ranks joined by `link` (each step: the
// link's latency plus bytes / ranks over its bandwidth). 0 for fewer than 2 ranks.
double RingAllReduceTime(double bytes, int ranks, const hw::Link& link);

// Seconds `kind` of `bytes` takes on a group spread over `m`'s levels as `span` says (members per
// level, innermost first: hw::GroupSpan). 0 for a group of one.
double CollectiveTime(Collective kind, double bytes, std::span<const int> span,
                      const hw::Machine& m);

// Seconds to send `bytes` from one rank to another over level `level` of `m` (0: inside a node).
double SendTime(double bytes, int level, const hw::Machine& m);

}  // namespace dplace::cost
