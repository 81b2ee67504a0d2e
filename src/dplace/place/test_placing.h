// For the place/ tests: a placer's placement of a problem, made with a fresh evaluator and judged
// by another (so that the placer's own counting or caching cannot colour the judgement).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "dplace/place/placer.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place::testing {

struct Judged {
  sim::Placement placement;
  sim::Evaluation evaluation;
  std::string note;
};

// `request`'s evaluator is replaced; seed 7 unless it sets one.
inline Judged PlaceWith(Placer& placer, const sim::Problem& p, PlaceRequest request = {}) {
  const auto evaluator = sim::testing::EvaluatorOf(p);
  request.evaluator = evaluator.get();
  if (request.seed == PlaceRequest{}.seed) request.seed = 7;
  auto placed = placer.Place(p, request);
  EXPECT_TRUE(placed.ok()) << placer.name() << ": " << placed.status().message();
  if (!placed.ok()) return {};
  return {placed->placement, sim::testing::EvaluatorOf(p)->Evaluate(placed->placement),
          placed->note};
}

}  // namespace dplace::place::testing
