// Chrome trace (JSON Trace Event Format) of one simulated step, for Perfetto or chrome://tracing:
// a process per device, a "compute" track and one track per outgoing link, a memory counter per
// device, and a flow arrow from each transfer to the device that receives it.
#pragma once

#include <string>

#include "dplace/base/json_node.h"
#include "dplace/sim/evaluation.h"
#include "dplace/sim/pipeline_sim.h"

namespace dplace::report {

Json ChromeTrace(const sim::Problem& problem, const sim::Timeline& timeline);

// The tasks of a pipeline schedule: a process per stage device, one slice per forward ("F3") or
// backward ("B3") task.
Json PipelineTrace(const sim::Problem& problem, const sim::PipelineResult& result);

}  // namespace dplace::report
