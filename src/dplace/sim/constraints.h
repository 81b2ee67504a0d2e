// The placement constraints every evaluator and placer shares: each op on an existing device of a
// kind it allows, co-location groups on one device. The memory limit is checked by each evaluator,
// since the two objectives account memory differently.
#pragma once

#include <string>

#include "dplace/base/status.h"
#include "dplace/sim/evaluation.h"

namespace dplace::sim {

// InvalidInput when the placement does not have one valid device id per op (a broken placement,
// not a constraint violation).
Status CheckShape(const Problem& problem, const Placement& placement);

// Empty when kinds and co-location are respected, else the first violation in words
// ("op 'x' may not run on cpu0 (kind cpu)", "co-location group 'g' is split over gpu0 and gpu1").
// Under the eager runtime (Problem::mapped_modules), also the first break of the module rule.
std::string FindViolation(const Problem& problem, const Placement& placement);

// Empty when `placement` runs as a device map (MappedModules): every module with ops of its own
// either on one device, or not a leaf and each of its own forward ops reading only tensors made on
// its device; else the first break in words.
std::string FindMapViolation(const Problem& problem, const Placement& placement);

// Empty when every device's peak memory fits its capacity, else the first overflow in words
// ("device d0: peak memory 50 B exceeds capacity 40 B by 10 B").
std::string FindMemoryViolation(const Problem& problem, const PerDevice<DeviceReport>& devices);

// Static memory footprint of an op: parameters + scratch + its outputs (the max-load model's op
// size).
double OpFootprintBytes(const graph::Graph& g, OpId op);

// Memory of an op that stays for the whole step: parameters (weights, gradients, optimiser state)
// and scratch.
double OpResidentBytes(const graph::Graph& g, OpId op);

// Per op, the bytes a pipeline stage holds for each micro-batch in flight because of it: the
// forward tensors it made (the base of a view) that a backward op keeps, each storage once. The
// stage's tensors sent and received are left out (they depend on the split): a stage holds these
// plus its boundary tensors (pipeline_sim.h's HeldPerMicrobatch).
PerOp<double> HeldBytesPerOp(const graph::Graph& g);

// The memory of each device under `placement` as Problem::stage_memory counts it: op sizes (each
// op's OpFootprintBytes), or under 1F1B each op's OpResidentBytes plus, per micro-batch in flight,
// what the pipeline simulator says a stage holds (pipeline_sim.h's HeldPerMicrobatch: what its
// backward keeps, what it sends and receives); the stages are the devices that hold ops in the
// order of their first forward op, InFlight(problem, s, S) micro-batches in flight on stage s.
// A device that recomputes (Problem::recompute) keeps per micro-batch in flight what it keeps
// recomputing (HeldWhenRecomputing, HeldSelectivePerMicrobatch) and holds one micro-batch in
// full while its backward runs; auto: the least of the three.
PerDevice<double> StageMemoryBytes(const Problem& problem, const Placement& placement,
                                   const PerOp<double>& footprint, const PerOp<double>& resident);

}  // namespace dplace::sim
