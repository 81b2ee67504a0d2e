// A pipeline stage's data-parallel replicas: `--replicas` groups the devices (ReplicaGroups,
// sim::GroupedProblem: a group is one device of the plan); under `auto` PlanReplicas lets dp
// choose the groups with the split (Piper's DP over stages and degrees) before the placers run.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/place/placer.h"
#include "dplace/sim/problem.h"

namespace dplace::run {

// The degrees "N" or "N1,N2,..." names (each from 1 to 4096). InvalidInput "replicas: ..."
// otherwise.
StatusOr<std::vector<int>> ParseReplicaDegrees(std::string_view spec);

// The groups of `problem`'s devices that `--replicas` names: "N" (each run of N devices in order;
// their count must be a multiple of N) or "N1,N2,..." (runs of those sizes in order, covering
// every device). InvalidInput "replicas: ..." otherwise.
StatusOr<std::vector<std::vector<sim::DeviceId>>> ReplicaGroups(const hw::Cluster& cluster,
                                                                std::string_view spec);

// `--replicas auto` (Problem::replicas_auto), decided as the problem loads (load.h
// WithReplicas), before any placer runs: dp's split chooses each stage's replicas (Piper's DP
// over stages and degrees, place/exact/exact.h MakeDpPlacer), and the problem every placer then
// places is the problem so grouped (sim::GroupedProblem) where that split runs faster than dp's
// split of one replica a stage (each in half of `limits`, each judged by the simulation); `note`
// says what was chosen. Otherwise, or where dp cannot split the problem (its reason in `note`), the
// problem with replicas_auto off. Without replicas_auto, the problem itself.
StatusOr<std::shared_ptr<const sim::Problem>> PlanReplicas(
    const std::shared_ptr<const sim::Problem>& problem, const place::Limits& limits,
    std::string* note);

}  // namespace dplace::run
