// Problems of generated graphs (graph/families.h) on preset clusters, for the learning tests.
#pragma once

#include <memory>
#include <string>

#include "dplace/graph/families.h"
#include "dplace/io/load.h"
#include "dplace/sim/problem.h"

namespace dplace::learn::testing {

// Graph `index` of `family` for `seed` on `cluster`, step objective, roofline costs.
inline std::shared_ptr<const sim::Problem> Generated(const std::string& family,
                                                     const std::string& cluster, uint64_t seed,
                                                     int index = 0) {
  auto g = std::make_shared<const graph::Graph>(graph::GenerateGraph(family, seed, index).value());
  return std::make_shared<const sim::Problem>(sim::MakeProblem(g, io::LoadCluster(cluster).value(),
                                                               sim::Objective::kStep,
                                                               cost::RooflineCostModel())
                                                  .value());
}

}  // namespace dplace::learn::testing
