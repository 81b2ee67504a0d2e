#include "dplace/place/search/local_search.h"

#include <algorithm>
#include <functional>

#include "dplace/base/rng.h"
#include "dplace/place/budget.h"
#include "dplace/place/search/moves.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// Best-improvement passes: each co-location unit in turn (a new random order each pass, or with a
// learned proposal the order of its wish to move them) to the allowed device that improves the
// evaluation most; done after a pass without a move.
class UnitPasses {
 public:
  // `stop`: when the search's budget is spent (a learned proposal's scoring begun then is cut).
  UnitPasses(Rng& rng, LearnedProposal* learned, std::function<bool()> stop)
      : rng_(rng), learned_(learned), stop_(std::move(stop)) {}
  const Status& status() const { return status_; }

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
    }
    const UnitId u = order_[at_++];
    p->units.assign(1, u);
    p->targets.clear();
    for (sim::DeviceId to : units[u].devices) {
      if (to != state.device(u)) p->targets.push_back(to);
    }
    return true;
  }

 private:
  Rng& rng_;
  LearnedProposal* learned_;
  std::function<bool()> stop_;
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
      UnitPasses passes(rng, learned.get(), [&] { return budget.Out(); });
      BestImprovement accept([&] { return budget.Out(); });
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
}

std::unique_ptr<Placer> MakeLocalSearchPlacer(LocalSearchOptions options,
                                              std::shared_ptr<StartFinder> start,
                                              LearnedProposalFactory learned) {
  return std::make_unique<LocalSearchPlacer>(std::move(options), std::move(start),
                                             std::move(learned));
}

}  // namespace dplace::place
