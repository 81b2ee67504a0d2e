// The dplace plan format, "dplace-plan/1": a placement by op and device name, with the objective
// and value it was evaluated at (docs/formats.md).
#pragma once

#include <string>

#include "dplace/base/json_node.h"
#include "dplace/graph/graph.h"
#include "dplace/hw/cluster.h"
#include "dplace/sim/evaluation.h"

namespace dplace::io {

bool IsDplacePlan(const Json& j);

// Reads "placement": {op: device}. Unknown op or device names are errors; ops the plan omits take
// the device of their co-location group (else an error naming the op).
StatusOr<sim::Placement> ReadPlan(const JsonNode& root, const graph::Graph& g,
                                  const hw::Cluster& c);

struct PlanInfo {
  std::string placer;  // who made it; empty if unknown
  double search_time_s = 0;
  std::vector<std::string> options;  // the placer options it ran with, "placer.key=value"
  double lower_bound = 0;            // the bound its value is judged against (run::LowerBound)
};

Json WritePlan(const graph::Graph& g, const hw::Cluster& c, const sim::Placement& placement,
               const sim::Evaluation& evaluation, const PlanInfo& info);

}  // namespace dplace::io
