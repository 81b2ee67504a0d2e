// The baseline placers of every paper dplace carries:
//   single       all ops on the one device that gives the best feasible result (ops that device
//                may not run go to their fastest allowed device);
//   round_robin  co-location units in topological order, dealt to devices in turn (first fit by
//                static memory);
//   random       each unit to a uniformly random allowed device with room (seeded);
//   expert       the plan given with --plan (a dplace plan or the paper's human-expert split);
//                without one, the RL papers' human-expert rule (expert.cc);
//   uniform, parameters, blocks  the pipeline frameworks' default splits of a model's layers.
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeSinglePlacer();
std::unique_ptr<Placer> MakeRoundRobinPlacer();
std::unique_ptr<Placer> MakeRandomPlacer();
std::unique_ptr<Placer> MakeExpertPlacer();
// The frameworks' default pipeline splits (framework_splits.cc): DeepSpeed's "uniform" and
// "parameters", torchtitan's and PiPPy's equal "blocks".
std::unique_ptr<Placer> MakeUniformSplitPlacer();
std::unique_ptr<Placer> MakeParametersSplitPlacer();
std::unique_ptr<Placer> MakeBlocksSplitPlacer();

}  // namespace dplace::place
