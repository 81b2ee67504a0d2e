#include "dplace/place/search/local_search.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "dplace/base/rng.h"
#include "dplace/place/budget.h"
#include "dplace/place/search/move_scorer.h"
#include "dplace/place/search/moves.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

IdVector<sim::OpId, UnitId> UnitOfOp(const sim::Problem& p, const Units& units) {
  IdVector<sim::OpId, UnitId> unit_of_op(p.g().ops().size());
  for (UnitId u : units.ids()) {
    for (sim::OpId op : units[u].ops) unit_of_op[op] = u;
  }
  return unit_of_op;
}

// What a guided local search reads (LocalSearchOptions::guide): the units' features and a scorer.
// Not movable: the context refers to unit_of_op.
struct Guide {
  Guide(const sim::Problem& p, const Units& units, MoveScorer s)
      : unit_of_op(UnitOfOp(p, units)), context(p, units, unit_of_op), scorer(s) {}
  Guide(const Guide&) = delete;
  Guide& operator=(const Guide&) = delete;
  IdVector<sim::OpId, UnitId> unit_of_op;
  MoveContext context;
  MoveScorer scorer;
};

// Best-improvement passes: each co-location unit in turn (a new random order each pass, with a
// learned proposal the order of its wish to move them, with a guide the order of the best change
// it predicts) to the allowed device that improves the evaluation most; done after a pass without
// a move.
class UnitPasses {
 public:
  // `stop`: when the search's budget is spent (a learned proposal's scoring begun then is cut).
  UnitPasses(Rng& rng, LearnedProposal* learned, std::function<bool()> stop, Guide* guide)
      : rng_(rng), learned_(learned), stop_(std::move(stop)), guide_(guide) {}
  const Status& status() const { return status_; }

  // A target tried (BestImprovement::on_tried): a label for a learned guide, exact when its
  // simulation ran to the end, else censored at the value it had to beat.
  void Tried(const UnitMoves& state, const Proposal& p, sim::DeviceId to, const Score& s,
             double to_beat) {
    if (guide_ == nullptr || !guide_->context.ready()) return;
    const Score& current = state.score();
    if (!current.feasible || current.value <= 0) return;
    const auto device_of = [&state](UnitId v) { return state.device(v); };
    const MoveFeatures f = guide_->context.Features(p.units[0], to, device_of);
    if (s.feasible) {
      guide_->scorer.Learn(f, (s.value - current.value) / current.value, /*exact=*/true);
    } else if (std::isfinite(to_beat)) {
      guide_->scorer.Learn(f, (to_beat - current.value) / current.value, /*exact=*/false);
    }
  }

  bool Next(UnitMoves& state, Proposal* p) {
    const Units& units = state.units();
    if (at_ == order_.size()) {  // a pass ends: another only if this one moved something
      if (!order_.empty() && state.accepted() == accepted_) return false;
      accepted_ = state.accepted();
      order_.assign(units.ids().begin(), units.ids().end());
      for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng_.Below(i)]);
      at_ = 0;
      if (order_.empty()) return false;
      if (learned_ != nullptr) {
        status_ = learned_->Score(state.current(), &probabilities_, stop_);
        if (!status_.ok() || probabilities_.empty()) return false;  // an error, or cut
        const auto devices = static_cast<size_t>(state.problem().num_devices());
        auto wish = [&](UnitId u) {
          return 1 -
                 probabilities_[static_cast<size_t>(u.index()) * devices + state.device(u).index()];
        };
        std::stable_sort(order_.begin(), order_.end(),
                         [&](UnitId a, UnitId b) { return wish(a) > wish(b); });
      }
      if (guide_ != nullptr) Guided(state);
    }
    const UnitId u = order_[at_++];
    p->units.assign(1, u);
    p->targets.clear();
    for (sim::DeviceId to : units[u].devices) {
      if (to != state.device(u)) p->targets.push_back(to);
    }
    if (guide_ != nullptr && guide_->context.ready()) {
      const auto device_of = [&state](UnitId v) { return state.device(v); };
      auto predicted = [&](sim::DeviceId to) {
        return guide_->scorer.Predict(guide_->context.Features(u, to, device_of));
      };
      std::stable_sort(p->targets.begin(), p->targets.end(), [&](sim::DeviceId a, sim::DeviceId b) {
        return predicted(a) < predicted(b);
      });
    }
    return true;
  }

 private:
  // The pass's order by the guide: the timed simulation of the placement it begins from (one
  // evaluation), then each unit by the least change the scorer predicts for it, least first.
  void Guided(UnitMoves& state) {
    sim::Timing timing;
    const sim::Evaluation e = state.evaluator().EvaluateTimed(state.current(), &timing);
    if (!e.feasible) return;
    guide_->context.Refresh(e, timing.critical_path);
    const Units& units = state.units();
    const auto device_of = [&state](UnitId v) { return state.device(v); };
    PerUnit<double> best(units.size(), std::numeric_limits<double>::infinity());
    for (UnitId u : order_) {
      for (sim::DeviceId to : units[u].devices) {
        if (to == state.device(u)) continue;
        best[u] =
            std::min(best[u], guide_->scorer.Predict(guide_->context.Features(u, to, device_of)));
      }
    }
    std::stable_sort(order_.begin(), order_.end(),
                     [&](UnitId a, UnitId b) { return best[a] < best[b]; });
  }

  Rng& rng_;
  LearnedProposal* learned_;
  std::function<bool()> stop_;
  Guide* guide_;
  std::vector<double> probabilities_;
  Status status_;
  std::vector<UnitId> order_;
  size_t at_ = 0;
  int64_t accepted_ = 0;
};

class LocalSearchPlacer : public Placer {
 public:
  LocalSearchPlacer(LocalSearchOptions options, std::shared_ptr<StartFinder> start,
                    LearnedProposalFactory learned)
      : options_(std::move(options)), start_(std::move(start)), learned_(std::move(learned)) {}
  std::string_view name() const override { return "local_search"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    const Budget budget(req.limits, *req.evaluator);
    sim::Evaluator& evaluator = *req.evaluator;
    Rng rng(req.seed);
    const Units units = MakeUnits(p);
    std::unique_ptr<LearnedProposal> learned;
    if (!options_.proposal.empty()) {
      DPLACE_ASSIGN_OR_RETURN(learned, learned_(p, units, evaluator));
    }
    std::optional<Guide> guide;
    if (options_.guide != "none") {
      StatusOr<MoveScorer> scorer = MoveScorer::ForGuide(options_.guide, options_.guide_model);
      if (!scorer.ok()) return scorer.status().WithContext("local_search.guide_model");
      guide.emplace(p, units, *scorer);
    }
    sim::Placement best_placement;
    Score best;
    for (int restart = 0; restart < options_.restarts && !budget.Out() && !AtLowerBound(p, best);
         ++restart) {
      sim::Placement placement(p.g().ops().size(), sim::DeviceId(0));
      PerUnit<sim::DeviceId> unit_device(units.size(), sim::DeviceId(0));
      for (UnitId u : units.ids()) {
        const auto& allowed = units[u].devices;
        unit_device[u] = allowed.empty() ? sim::DeviceId(0) : allowed[rng.Below(allowed.size())];
      }
      if (restart == 0 && (StartOf(p, req) != nullptr || start_ != nullptr)) {
        const Start start =
            start_ != nullptr ? start_->Find(p, req) : Start{.placement = *StartOf(p, req)};
        if (!start.placement.empty()) {
          for (UnitId u : units.ids()) unit_device[u] = start.placement[units[u].ops.front()];
        }
      }
      for (UnitId u : units.ids()) Assign(units[u], unit_device[u], &placement);
      UnitMoves state(p, units, evaluator);
      state.Restart(placement, ScoreOf(evaluator.Evaluate(placement)));
      UnitPasses passes(
          rng, learned.get(), [&] { return budget.Out(); }, guide ? &*guide : nullptr);
      BestImprovement accept([&] { return budget.Out(); });
      if (guide && options_.guide == "learned") {
        accept.on_tried = [&](const Proposal& proposal, sim::DeviceId to, const Score& s,
                              double to_beat) { passes.Tried(state, proposal, to, s, to_beat); };
      }
      RunMoves(state, passes, accept, [&] { return budget.Out(); });
      DPLACE_RETURN_IF_ERROR(passes.status());
      if (best_placement.empty() || state.score() < best) {
        best = state.score();
        best_placement = state.current();
      }
    }
    if (best_placement.empty()) {  // no time for even one restart: a valid start all the same
      best_placement.assign(p.g().ops().size(), sim::DeviceId(0));
      for (const Unit& u : units)
        Assign(u, u.devices.empty() ? sim::DeviceId(0) : u.devices[0], &best_placement);
    }
    return PlaceResult{.placement = std::move(best_placement)};
  }

  LocalSearchOptions options_;
  std::shared_ptr<StartFinder> start_;
  LearnedProposalFactory learned_;
};

}  // namespace

void ReadOptions(OptionReader& r, LocalSearchOptions* o) {
  r.Read("restarts", &o->restarts, 1, 1 << 20,
         "restarts (the first from the start, the others at random)");
  r.Read("proposal", &o->proposal,
         "a learned proposal ordering each pass's units (as mcmc.proposal); empty: none");
  r.ReadChoice("guide", &o->guide, {"none", "hand", "learned"},
               "a move scorer ordering each pass's units and each unit's devices by the change it "
               "predicts: none, hand (hand-set weights) or learned (guide_model's, refined on "
               "every move tried)");
  ReadGuideModel(r, &o->guide_model);
}

std::unique_ptr<Placer> MakeLocalSearchPlacer(LocalSearchOptions options,
                                              std::shared_ptr<StartFinder> start,
                                              LearnedProposalFactory learned) {
  return std::make_unique<LocalSearchPlacer>(std::move(options), std::move(start),
                                             std::move(learned));
}

}  // namespace dplace::place
