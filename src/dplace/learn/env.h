// The one reinforcement-learning environment of dplace: episodes that place a problem's
// co-location units one at a time (Placeto's MDP), observed through the graph, the cost table and
// the timing of the evaluator's run (sim::Timing: the simulator's start times and critical path),
// rewarded by that same evaluator, the request's (a robust one counts and judges as for a search).
// No torch here: observations are plain arrays that the policies (policy.h) turn into tensors.
//
// An episode starts from a placement and visits every unit once, in topological order; each step
// re-places the current unit on a device it may run on. When the placement changed since the last
// evaluation and `refresh_every` steps have passed since it (or the episode ends), the placement is
// evaluated (one evaluation of the problem's evaluator, counted like a search's) and the
// observation's timeline features are refreshed; a placement that did not change costs nothing. The
// cost of a placement is scale-free: value / lower bound, times 1 + 4 × the share of memory
// overflowed, plus 1 when infeasible (so an infeasible placement is always worse than the same one
// within memory, and the penalty grows with the overflow). The reward of a step is the drop of the
// cost since the last evaluation (0 on steps that evaluate nothing), so an episode's return is the
// start's cost minus the end's.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "dplace/place/coarsen.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/problem.h"

namespace dplace::learn {

// The units as a DAG for message passing: edge u -> v when an op of u feeds an op of v and u comes
// first in topological order (a co-location group can close a cycle among units; such back edges
// are left out). Plain indices: unit u is node u.index().
struct UnitDag {
  int num_nodes = 0;
  std::vector<int32_t> pred_offsets, preds;  // CSR, ascending
  std::vector<int32_t> succ_offsets, succs;
  std::vector<double> edge_bytes;  // per preds entry: bytes u sends v
  // Per unit: the op type of its op of most flops (its first on a tie), hashed (FNV-1a) into
  // [0, kOpTypes). The type embeddings of colocrl, hdp and gdp read it.
  std::vector<int32_t> type;
};
inline constexpr int kOpTypes = 32;
UnitDag MakeUnitDag(const sim::Problem& problem, const place::Units& units);

// Features of one node (unit) and of one device for the current unit; see env.cc for each column.
inline constexpr int kNodeFeatures = 12;
inline constexpr int kDeviceFeatures = 8;

struct Observation {
  int32_t current = 0;           // the unit to place now
  std::vector<float> nodes;      // num_nodes × kNodeFeatures, row-major
  std::vector<float> devices;    // num_devices × kDeviceFeatures
  std::vector<uint8_t> allowed;  // per device: may the current unit run there
  // Units the current one depends on / that depend on it, and the units neither way whose
  // simulated start is nearest its own (at most EnvOptions::parallel_nodes).
  std::vector<int32_t> ancestors, descendants, parallel;
};

struct EnvOptions {
  int refresh_every = 1;   // steps between evaluations at the latest (1: every step, Placeto's)
  int parallel_nodes = 8;  // how many parallel units the observation names
  // Episodes that begin where the last one began reuse its evaluation instead of making another
  // (whole-episode policies begin every episode from the same placement).
  bool reuse_start = false;
};

class PlacementEnv {
 public:
  // `evaluator` judges `problem` and counts every evaluation the environment makes.
  PlacementEnv(const sim::Problem& problem, sim::Evaluator& evaluator, EnvOptions options = {});
  // Episodes over `units` (whole co-location groups: PolicyUnits) instead of the co-location units.
  PlacementEnv(const sim::Problem& problem, sim::Evaluator& evaluator, place::Units units,
               EnvOptions options = {});

  const sim::Problem& problem() const { return problem_; }
  const place::Units& units() const { return units_; }
  const UnitDag& dag() const { return dag_; }
  int num_devices() const { return problem_.num_devices(); }

  // Starts an episode from `start` (one device per op, kept as it is) and evaluates it. A unit
  // whose ops `start` puts on several devices counts as on the device most of them are on; a step
  // that leaves it there keeps its ops where they are, one that moves it moves them all.
  void Reset(const sim::Placement& start);
  bool Done() const { return step_ >= units_.size(); }
  place::UnitId Current() const { return place::UnitId(static_cast<int32_t>(step_)); }
  // The observation of the current step (Done() must be false). kAll: every field; kDevices: only
  // `current`, `devices` and `allowed` (the rest left empty), O(devices + the current unit's
  // edges): what a whole-episode policy reads after its first step (its encoder reads the graph
  // once, policy.h Begin).
  enum class View { kAll, kDevices };
  void Observe(Observation* out, View view = View::kAll) const;
  // Puts the current unit on `d` (one it may run on), moves on; returns the step's reward.
  double Step(sim::DeviceId d);

  // The placement now, its last evaluation and cost (as of the last evaluation).
  const sim::Placement& placement() const { return placement_; }
  const sim::Evaluation& evaluation() const { return evaluation_; }
  double cost() const { return cost_; }
  // The best placement any evaluation of this environment saw (feasible first, then smaller).
  const sim::Placement& best() const { return best_; }
  const place::Score& best_score() const { return best_score_; }

  // The scale-free cost of an evaluation (see the file comment).
  double CostOf(const sim::Evaluation& e) const;

 private:
  void Evaluate();
  // Per unit its start and end and whether on the critical path, from the evaluator's Timing
  // (objective step); zeros otherwise.
  void ReadTiming(const sim::Timing& timing);

  const sim::Problem& problem_;
  sim::Evaluator& evaluator_;
  EnvOptions options_;
  place::Units units_;
  UnitDag dag_;
  place::PerUnit<double> fastest_s_, out_bytes_;
  double max_fastest_s_ = 0, max_out_bytes_ = 0, max_footprint_ = 0;

  sim::Placement placement_;
  place::PerUnit<sim::DeviceId> device_;
  // Per device: the footprint bytes and the number of the units on it (device_), kept as units
  // move, so that a device row costs O(1).
  sim::PerDevice<double> unit_bytes_on_, units_on_;
  size_t step_ = 0;
  int since_refresh_ = 0;
  bool changed_ = false;
  sim::Evaluation evaluation_;
  double cost_ = 0;
  // From the last evaluation: per unit its start and end, whether on the critical path.
  place::PerUnit<double> start_s_, end_s_;
  place::PerUnit<char> critical_;
  double makespan_ = 0;
  sim::Placement best_;
  place::Score best_score_;
  // reuse_start: the last episode's start and what Evaluate found for it.
  struct Saved {
    sim::Placement placement;
    sim::Evaluation evaluation;
    double cost = 0, makespan = 0;
    place::PerUnit<double> start_s, end_s;
    place::PerUnit<char> critical;
  } start_;
};

// The units a policy places `problem` by: its co-location units, or, when it has more than
// `max_units`, the units of its coarsened graph (place/coarsen.h) as groups of its own ops, so that
// episodes still evaluate, and keep, placements of every op.
// `coarsened` (when given) says which of the two it is.
StatusOr<place::Units> PolicyUnits(const sim::Problem& problem, int max_units,
                                   bool* coarsened = nullptr);

// Each unit on the first device it may run on, fastest first, that has room (place::FirstFit):
// where episodes start.
sim::Placement FastestStart(const sim::Problem& problem, const place::Units& units);

}  // namespace dplace::learn
