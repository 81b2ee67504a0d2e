#include "dplace/place/search/contiguous.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>

#include "dplace/place/budget.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The programs cut where the fewest bytes cross, under a static estimate of memory; their cuts are
// then refined by simulation, best first, moving each cut along the sequence (first to every
// (units / kCoarsePositions)-th position), in at most kRefinePasses passes per cut and
// kRefineEvaluations evaluations in all (fewer when the request limits evaluations: then only the
// cuts themselves are evaluated beyond the limit).
constexpr size_t kCoarsePositions = 32;
constexpr int kRefinePasses = 3;
constexpr int64_t kRefineEvaluations = 1000;

// Accelerators (devices not of kind "cpu"; every device when there are none), in a chain from the
// first that always steps to the unvisited one behind the fastest link.
std::vector<sim::DeviceId> AcceleratorChain(const sim::Problem& p) {
  std::vector<sim::DeviceId> left;
  for (sim::DeviceId d{0}; d < p.num_devices(); ++d) {
    if (p.c().device(d).kind != "cpu") left.push_back(d);
  }
  if (left.empty()) {
    for (sim::DeviceId d{0}; d < p.num_devices(); ++d) left.push_back(d);
  }
  std::vector<sim::DeviceId> chain = {left.front()};
  left.erase(left.begin());
  while (!left.empty()) {
    const sim::DeviceId from = chain.back();
    const auto next = std::min_element(left.begin(), left.end(), [&](auto a, auto b) {
      const hw::Link& la = p.c().LinkBetween(from, a);
      const hw::Link& lb = p.c().LinkBetween(from, b);
      if (la.bandwidth_bytes_per_s != lb.bandwidth_bytes_per_s)
        return la.bandwidth_bytes_per_s > lb.bandwidth_bytes_per_s;
      return la.latency_s < lb.latency_s;
    });
    chain.push_back(*next);
    left.erase(next);
  }
  return chain;
}

bool Allows(const Unit& u, sim::DeviceId d) {
  return std::find(u.devices.begin(), u.devices.end(), d) != u.devices.end();
}

// A cut of the sequence of units into runs: where runs 2, 3, ... start, and its simulated score.
struct Cut {
  std::vector<size_t> starts;
  Score score;
  bool scored = false;  // false: the budget ran out before it was simulated
};

// The cut program over the accelerator units `seq` (unit indices in topological order).
class CutProgram {
 public:
  CutProgram(const sim::Problem& p, const Units& units, const std::vector<UnitId>& seq,
             const std::vector<sim::DeviceId>& chain)
      : units_(units), seq_(seq), chain_(chain) {
    const size_t n = seq.size();
    // crossing_[a]: bytes of the tensors made before position a and read at or after it.
    PerUnit<int> position(units.size(), -1);
    for (size_t i = 0; i < n; ++i) position[seq[i]] = static_cast<int>(i);
    IdVector<sim::OpId, UnitId> unit_of_op(p.g().ops().size());
    for (UnitId u : units.ids()) {
      for (sim::OpId op : units[u].ops) unit_of_op[op] = u;
    }
    std::vector<double> diff(n + 1, 0);
    for (graph::TensorId id : p.g().tensor_ids()) {
      const graph::Tensor& t = p.g().tensor(id);
      const int from = position[unit_of_op[t.producer]];
      if (from < 0) continue;
      int last = from;
      for (sim::OpId c : p.g().Consumers(id)) last = std::max(last, position[unit_of_op[c]]);
      if (last > from) {
        diff[static_cast<size_t>(from) + 1] += t.bytes;
        diff[static_cast<size_t>(last) + 1] -= t.bytes;
      }
    }
    crossing_.assign(n + 1, 0);
    double running = 0;
    for (size_t a = 1; a < n; ++a) crossing_[a] = running += diff[a];
  }

  // For runs j = 1..chain size: the fewest crossing bytes that cut the whole sequence into j runs
  // on the first j accelerators of the chain, each within memory (footprints × `scale`); infinite
  // when no such cut exists. Then Cuts(j) gives where its runs start.
  void Solve(const sim::Problem& p, double scale) {
    const size_t n = seq_.size(), k = chain_.size();
    std::vector<double> prefix(n + 1, 0);
    for (size_t i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + scale * units_[seq_[i]].footprint_bytes;
    cost_.assign(k + 1, std::vector<double>(n + 1, kInf));
    start_.assign(k + 1, std::vector<int>(n + 1, -1));
    cost_[0][0] = 0;
    for (size_t j = 1; j <= k; ++j) {
      const sim::DeviceId d = chain_[j - 1];
      const double capacity = p.c().device(d).memory_bytes;
      std::deque<size_t> window;  // run starts a, by increasing a and increasing value
      const auto value = [&](size_t a) { return cost_[j - 1][a] + crossing_[a]; };
      size_t lo = 0, next = 0;
      for (size_t b = 1; b <= n; ++b) {
        // The run [a, b) must fit the device's memory and hold only units it may run.
        if (!Allows(units_[seq_[b - 1]], d)) lo = b;
        while (lo < b && prefix[b] - prefix[lo] > capacity) ++lo;
        for (; next < b; ++next) {
          if (cost_[j - 1][next] == kInf) continue;
          while (!window.empty() && value(window.back()) >= value(next)) window.pop_back();
          window.push_back(next);
        }
        while (!window.empty() && window.front() < lo) window.pop_front();
        if (window.empty()) continue;
        cost_[j][b] = value(window.front());
        start_[j][b] = static_cast<int>(window.front());
      }
    }
  }

  bool Possible(size_t runs) const { return cost_[runs][seq_.size()] < kInf; }

  // The cut of the whole sequence into `runs` runs: the starts of runs 2, 3, ...
  std::vector<size_t> Cuts(size_t runs) const {
    std::vector<size_t> cuts(runs - 1);
    size_t b = seq_.size();
    for (size_t j = runs; j >= 2; --j) b = cuts[j - 2] = static_cast<size_t>(start_[j][b]);
    return cuts;
  }

  // Places run j (the units from cuts[j - 2] to the next cut) on the chain's j-th accelerator.
  void Place(const std::vector<size_t>& cuts, sim::Placement* placement) const {
    size_t run = 0;
    for (size_t i = 0; i < seq_.size(); ++i) {
      while (run < cuts.size() && i >= cuts[run]) ++run;
      Assign(units_[seq_[i]], chain_[run], placement);
    }
  }

 private:
  const Units& units_;
  const std::vector<UnitId>& seq_;
  const std::vector<sim::DeviceId>& chain_;
  std::vector<double> crossing_;
  std::vector<std::vector<double>> cost_;
  std::vector<std::vector<int>> start_;
};

// Moves each cut of `cut` in turn to where the simulated step is shortest (every `stride`-th
// position between its neighbours, then every position around the best of those), in passes until
// none moves or `evaluator` has made `until` evaluations; `candidate` ends as the placement of the
// refined cut.
// `out` says when the evaluations or the time for refining are spent.
void Refine(const CutProgram& program, size_t units, sim::Evaluator* evaluator,
            const std::function<bool()>& out, Cut* cut, sim::Placement* candidate) {
  std::vector<size_t>& starts = cut->starts;
  const size_t stride = std::max<size_t>(1, units / kCoarsePositions);
  for (int pass = 0; pass < kRefinePasses; ++pass) {
    bool moved = false;
    for (size_t c = 0; c < starts.size() && !out(); ++c) {
      const size_t lo = c == 0 ? 1 : starts[c - 1] + 1;
      const size_t hi = c + 1 == starts.size() ? units - 1 : starts[c + 1] - 1;
      program.Place(starts, candidate);
      sim::IncrementalEvaluator* incremental = evaluator->Incremental();
      if (incremental != nullptr) incremental->SetBase(*candidate);
      const size_t from = starts[c];
      size_t best_at = from;
      auto try_at = [&](size_t at) {
        if (at == from || at < lo || at > hi || out()) return;
        starts[c] = at;
        program.Place(starts, candidate);
        const Score s = ScoreOf(incremental != nullptr
                                    ? incremental->EvaluateNear(*candidate, ToBeat(cut->score))
                                    : evaluator->Evaluate(*candidate));
        if (s < cut->score) {
          cut->score = s;
          best_at = at;
        }
      };
      for (size_t at = lo; at <= hi; at += stride) try_at(at);
      const size_t centre = best_at;
      for (size_t at = centre - std::min(centre, stride); at <= centre + stride; ++at) try_at(at);
      starts[c] = best_at;
      moved |= best_at != from;
    }
    if (!moved) break;
  }
  program.Place(starts, candidate);
}

class ContiguousPlacer : public Placer {
 public:
  std::string_view name() const override { return "contiguous"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    std::string note;
    const int64_t first = req.evaluator->evaluations();
    const Budget budget(req.limits, *req.evaluator);  // the request's time and evaluations
    const Units units = MakeUnits(p);
    const std::vector<sim::DeviceId> chain = AcceleratorChain(p);
    sim::Placement placement(p.g().ops().size(), chain.front());
    std::vector<UnitId> seq;
    sim::PerDevice<double> used(p.c().devices().size(), 0);
    double footprint = 0;
    for (UnitId u : units.ids()) {
      const bool accelerated = std::any_of(chain.begin(), chain.end(),
                                           [&](sim::DeviceId d) { return Allows(units[u], d); });
      if (accelerated) {
        seq.push_back(u);
        footprint += units[u].footprint_bytes;
      } else {
        Assign(units[u], FirstFit(p, units[u], FastestFirst(p, units[u]), &used), &placement);
      }
    }
    if (seq.empty()) {
      note = "no unit may run on an accelerator";
      return PlaceResult{std::move(placement), note};
    }
    // The static footprint counts every tensor for the whole step; the simulation frees them. The
    // second program scales footprints by what one device's simulated peak makes of them.
    const sim::Evaluation one = req.evaluator->Evaluate(placement);
    const double peak = one.devices[chain.front()].peak_memory_bytes;
    std::vector<double> scales = {1};
    if (footprint > 0 && peak > 0 && peak < footprint) scales.push_back(peak / footprint);

    CutProgram program(p, units, seq, chain);
    sim::Placement best = placement;
    Score best_score = ScoreOf(one);
    size_t best_runs = 1;
    // Every cut the programs find (and an even cut where they find none), scored by simulation.
    std::vector<Cut> cuts;
    for (double scale : scales) {
      program.Solve(p, scale);
      for (size_t runs = 2; runs <= chain.size(); ++runs) {
        if (program.Possible(runs)) cuts.push_back({program.Cuts(runs)});
      }
    }
    for (size_t runs = 2; runs <= chain.size() && runs <= seq.size(); ++runs) {
      const bool found = std::any_of(cuts.begin(), cuts.end(),
                                     [&](const Cut& c) { return c.starts.size() + 1 == runs; });
      if (found) continue;
      Cut even;
      for (size_t r = 1; r < runs; ++r) even.starts.push_back(r * seq.size() / runs);
      cuts.push_back(std::move(even));
    }
    sim::Placement candidate = placement;
    for (Cut& c : cuts) {  // unscored past the budget: they keep the worst score
      if (budget.Out()) break;
      program.Place(c.starts, &candidate);
      c.score = ScoreOf(req.evaluator->Evaluate(candidate));
      c.scored = true;
    }
    std::stable_sort(cuts.begin(), cuts.end(),
                     [](const Cut& a, const Cut& b) { return a.score < b.score; });
    // At most kRefineEvaluations, and within the request's evaluation limit when it sets one.
    int64_t refine = kRefineEvaluations;
    if (req.limits.evaluations > 0) {
      refine = std::clamp<int64_t>(req.limits.evaluations - (req.evaluator->evaluations() - first),
                                   0, refine);
    }
    const int64_t until = req.evaluator->evaluations() + refine;
    const auto out = [&] { return req.evaluator->evaluations() >= until || budget.Out(); };
    for (Cut& c : cuts) {
      if (!c.scored) continue;
      Refine(program, seq.size(), req.evaluator, out, &c, &candidate);
      if (c.score < best_score) {
        best_score = c.score;
        best = candidate;
        best_runs = c.starts.size() + 1;
      }
    }
    note = std::to_string(best_runs) + (best_runs == 1 ? " run" : " contiguous runs");
    return PlaceResult{std::move(best), note};
  }
};

}  // namespace

std::unique_ptr<Placer> MakeContiguousPlacer() { return std::make_unique<ContiguousPlacer>(); }

}  // namespace dplace::place
