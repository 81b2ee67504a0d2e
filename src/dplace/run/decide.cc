#include "dplace/run/decide.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <sstream>
#include <tuple>

#include "dplace/base/interrupt.h"
#include "dplace/base/units.h"
#include "dplace/place/deploy.h"
#include "dplace/sim/evaluator.h"

namespace dplace::run {

StatusOr<std::vector<std::string>> PlacerNames(const std::string& spec, sim::Objective objective,
                                               const std::string& flag) {
  std::vector<std::string> names;
  if (spec == "all") {
    for (const place::PlacerEntry& e : place::Placers()) {
      if (e.traits.family == place::Family::kMeta || !e.traits.Supports(objective)) continue;
      names.emplace_back(e.name);
    }
    return names;
  }
  std::stringstream ss(spec);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    bool family = false;  // a family's name: its placers that support the objective
    for (const place::PlacerEntry& e : place::Placers()) {
      if (place::FamilyName(e.traits.family) != name) continue;
      family = true;
      if (e.traits.Supports(objective)) names.emplace_back(e.name);
    }
    if (family) continue;
    DPLACE_RETURN_IF_ERROR(place::FindPlacer(name).status().WithContext(flag));
    names.push_back(name);
  }
  if (names.empty()) return InvalidInput(flag + ": no placer named");
  return names;
}

place::Score RankScore(const PlacerResult& r) {
  if (!r.robust_optimised || !r.robust) return place::ScoreOf(r.evaluation);
  return {r.evaluation.feasible && r.robust->feasible, r.robust->value};
}

int BestIndex(const std::vector<PlacerResult>& results) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(results.size()); ++i) {
    if (RankScore(results[static_cast<size_t>(i)]) <
        RankScore(results[static_cast<size_t>(best)])) {
      best = i;
    }
  }
  return best;
}

int DeployIndex(const std::shared_ptr<const sim::Problem>& shared, double tolerance,
                std::vector<PlacerResult>* results, std::vector<std::string>* lines) {
  const int best = BestIndex(*results);
  const sim::Evaluation& top = (*results)[static_cast<size_t>(best)].evaluation;
  if (!top.feasible || (*results)[static_cast<size_t>(best)].robust_optimised) return best;
  const double limit = top.value * (1 + tolerance);
  const sim::Problem& problem = *shared;
  const std::unique_ptr<sim::Evaluator> evaluator = sim::MakeEvaluator(shared);
  auto percent = [&](double value) {
    return dplace::FormatPercent(top.value > 0 ? value / top.value - 1 : 0);
  };
  // One device of each kind, where every op may run there.
  std::set<std::string> kinds_seen;
  for (sim::DeviceId d{0}; d < problem.num_devices(); ++d) {
    const std::string& kind = problem.c().device(d).kind;
    if (!kinds_seen.insert(kind).second) continue;
    sim::Placement one(problem.g().ops().size(), d);
    sim::Evaluation e = evaluator->Evaluate(one);
    if (!e.feasible || e.value > limit) continue;
    if (place::DevicesUsed(problem, (*results)[static_cast<size_t>(best)].placement) <= 1) break;
    lines->push_back("one device is within " + percent(e.value) + " of the best: use one " + kind);
    break;
  }
  int chosen = best;
  auto rank = [&](const PlacerResult& r) {
    return std::make_tuple(place::DevicesUsed(problem, r.placement),
                           place::BytesCrossing(problem, r.placement), r.evaluation.value);
  };
  for (size_t i = 0; i < results->size(); ++i) {
    PlacerResult& r = (*results)[i];
    if (!r.evaluation.feasible || r.evaluation.value > limit) continue;
    sim::Placement tidy = place::FollowNeighbours(problem, r.placement);
    if (tidy != r.placement) {
      sim::Evaluation e = evaluator->Evaluate(tidy);
      if (e.feasible && e.value <= limit && rank({.placement = tidy, .evaluation = e}) < rank(r)) {
        r.placement = std::move(tidy);
        r.evaluation = std::move(e);
        r.note +=
            std::string(r.note.empty() ? "" : "; ") + "ops without work follow their neighbours";
      }
    }
    if (rank(r) < rank((*results)[static_cast<size_t>(chosen)])) chosen = static_cast<int>(i);
  }
  if (chosen != best) {
    const PlacerResult& c = (*results)[static_cast<size_t>(chosen)];
    lines->push_back("written: " + c.placer + ", on " +
                     std::to_string(place::DevicesUsed(problem, c.placement)) + " devices, " +
                     percent(c.evaluation.value) + " from the best (tolerance " +
                     dplace::FormatPercent(tolerance) + ")");
  }
  return chosen;
}

StatusOr<std::vector<PlacerResult>> RunAll(const std::shared_ptr<const sim::Problem>& problem,
                                           ValidRequest valid, double prepared_s) {
  const RunRequest& request = valid.request();
  const std::vector<std::string>& placers = valid.placers();
  const double total_time_limit_s = valid.total_time_limit_s();
  std::vector<PlacerResult> results;
  const auto started = std::chrono::steady_clock::now();
  const auto n = static_cast<double>(placers.size());
  // Each placer's own limit, less its part of the preparation.
  const double own = request.limits.seconds > 0
                         ? std::max(kLeastPlacerSeconds, request.limits.seconds - prepared_s / n)
                         : 0;
  for (size_t i = 0; i < placers.size(); ++i) {
    // A stop asked for (base/interrupt.h) ends the run: the front end that heard it says so.
    if (Interrupted()) return InvalidInput("interrupted");
    RunRequest share = request;
    share.placer = placers[i];
    share.limits.seconds = own;
    if (total_time_limit_s > 0) {
      const double spent =
          prepared_s +
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const double fair =
          std::max(kLeastPlacerSeconds,
                   (total_time_limit_s - spent) / static_cast<double>(placers.size() - i));
      share.limits.seconds = own > 0 ? std::min(own, fair) : fair;
    }
    DPLACE_ASSIGN_OR_RETURN(PlacerResult r, Run(problem, share, valid.Take(i)));
    results.push_back(std::move(r));
  }
  if (Interrupted()) return InvalidInput("interrupted");
  return results;
}

StatusOr<std::pair<sim::RobustOptions, bool>> RobustFromSpec(const RobustSpec& spec) {
  if (spec.variants < 0 || spec.variants > 64) {
    return InvalidInput("robust: must be between 0 and 64 variants, got " +
                        std::to_string(spec.variants));
  }
  if (!(spec.spread >= 0 && spec.spread <= 2)) {
    return InvalidInput("robust_spread: must be between 0 and 2");
  }
  sim::RobustOptions options{.count = spec.variants, .seed = spec.seed, .spread = spec.spread};
  if (spec.objective.empty()) return std::make_pair(options, false);
  if (spec.objective == "worst") {
    options.quantile = 1;
  } else if (spec.objective == "median") {
    options.quantile = 0.5;
  } else {
    const std::string& o = spec.objective;
    char* end = nullptr;
    const double q = o.size() > 1 && o[0] == 'q' ? std::strtod(o.c_str() + 1, &end) : 0;
    if (end == nullptr || *end != '\0' || !(q > 0 && q <= 1)) {
      return InvalidInput("robust_objective: '" + o +
                          "' is not worst, median or qQ with 0 < Q <= 1 (e.g. q0.9)");
    }
    options.quantile = q;
  }
  if (spec.variants == 0) {
    return InvalidInput("robust_objective: needs robust K, the number of variants");
  }
  return std::make_pair(options, true);
}

}  // namespace dplace::run
