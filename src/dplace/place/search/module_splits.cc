#include "dplace/place/search/module_splits.h"

#include <algorithm>
#include <map>
#include <string>

#include "dplace/graph/modules.h"
#include "dplace/place/budget.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

constexpr int64_t kDefaultEvaluations = 3000;
constexpr int kPasses = 2;

// `module` cut to its first `depth` segments.
std::string Cut(const std::string& module, int depth) {
  size_t at = 0;
  for (int d = 0; d < depth; ++d) {
    at = module.find('.', at);
    if (at == std::string::npos) return module;
    if (d + 1 < depth) ++at;
  }
  return module.substr(0, at);
}

int Depth(const std::string& module) {
  return module.empty() ? 0 : static_cast<int>(std::count(module.begin(), module.end(), '.')) + 1;
}

class ModuleSplitsPlacer : public Placer {
 public:
  std::string_view name() const override { return "modules"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& request) override {
    const graph::Graph& g = p.g();
    const Units units = MakeUnits(p);
    const std::vector<std::string> op_module = graph::OpModules(g);
    // Each unit's module: that of its first forward op (backward and update ops follow it).
    std::vector<std::string> module(units.size());
    int max_depth = 1;
    for (UnitId u : units.ids()) {
      sim::OpId first = units[u].ops.front();
      for (sim::OpId op : units[u].ops) {
        if (g.op(op).kind == graph::OpKind::kForward) {
          first = op;
          break;
        }
      }
      module[static_cast<size_t>(u.index())] = op_module[static_cast<size_t>(first.index())];
      max_depth = std::max(max_depth, Depth(module[static_cast<size_t>(u.index())]));
    }
    devices_.clear();
    for (bool cpu : {false, true}) {
      for (sim::DeviceId d : p.c().device_ids()) {
        if ((p.c().device(d).kind == "cpu") == cpu) devices_.push_back(d);
      }
    }
    Budget budget(request.limits, *request.evaluator, kDefaultEvaluations);
    best_ = {};
    best_placement_.clear();
    std::vector<std::vector<UnitId>> seen;  // block sequences tried, by their first units
    // Depth max_depth + 1: every unit a block of its own (a graph without module names).
    for (int depth = 1; depth <= max_depth + 1 && !budget.Out(); ++depth) {
      blocks_ = depth <= max_depth ? Blocks(units, module, depth) : EachUnit(units);
      std::vector<UnitId> firsts;
      for (const auto& b : blocks_) firsts.push_back(b.front());
      if (std::find(seen.begin(), seen.end(), firsts) != seen.end()) continue;
      seen.push_back(firsts);
      block_time_.assign(blocks_.size(), 0);
      for (size_t i = 0; i < blocks_.size(); ++i) {
        for (UnitId u : blocks_[i]) {
          for (sim::OpId op : units[u].ops) block_time_[i] += p.costs.OpTime(op, devices_.front());
        }
      }
      const size_t max_runs = std::min(devices_.size(), blocks_.size());
      for (size_t k = 1; k <= max_runs && !budget.Out(); ++k) {
        Search(p, units, request, budget, k);
      }
    }
    if (best_placement_.empty()) {  // no evaluation allowed: everything on the first device
      best_placement_.assign(g.ops().size(), devices_.front());
      for (UnitId u : units.ids()) Put(p, units[u], devices_.front(), &best_placement_);
    }
    return PlaceResult{.placement = std::move(best_placement_)};
  }

  // The units grouped by their module cut to `depth`, in program order of their first unit; the
  // root's own units join the block before them (the first block, before any).
  static std::vector<std::vector<UnitId>> Blocks(const Units& units,
                                                 const std::vector<std::string>& module,
                                                 int depth) {
    std::vector<std::vector<UnitId>> blocks;
    std::map<std::string, size_t> index;
    std::vector<UnitId> leading;  // root units before any block
    for (UnitId u : units.ids()) {
      const std::string& m = module[static_cast<size_t>(u.index())];
      if (m.empty()) {
        (blocks.empty() ? leading : blocks.back()).push_back(u);
        continue;
      }
      auto [it, added] = index.try_emplace(Cut(m, depth), blocks.size());
      if (added) blocks.emplace_back();
      blocks[it->second].push_back(u);
    }
    if (blocks.empty()) blocks.emplace_back();
    blocks.front().insert(blocks.front().begin(), leading.begin(), leading.end());
    return blocks;
  }

  static std::vector<std::vector<UnitId>> EachUnit(const Units& units) {
    std::vector<std::vector<UnitId>> blocks;
    for (UnitId u : units.ids()) blocks.push_back({u});
    return blocks;
  }

  static void Put(const sim::Problem& p, const Unit& unit, sim::DeviceId d,
                  sim::Placement* placement) {
    const bool allowed =
        std::find(unit.devices.begin(), unit.devices.end(), d) != unit.devices.end();
    Assign(unit, allowed ? d : FastestFirst(p, unit).front(), placement);
  }

  // Scores the runs starting at `starts` (starts[0] = 0), keeping the best placement seen.
  Score Try(const sim::Problem& p, const Units& units, const PlaceRequest& request,
            const std::vector<size_t>& starts) {
    sim::Placement placement(p.g().ops().size(), devices_.front());
    for (size_t run = 0; run < starts.size(); ++run) {
      const size_t end = run + 1 < starts.size() ? starts[run + 1] : blocks_.size();
      for (size_t b = starts[run]; b < end; ++b) {
        for (UnitId u : blocks_[b]) Put(p, units[u], devices_[run], &placement);
      }
    }
    const Score score = ScoreOf(request.evaluator->Evaluate(placement));
    if (best_placement_.empty() || score < best_) {
      best_ = score;
      best_placement_ = std::move(placement);
    }
    return score;
  }

  // k runs: equal compute time first, then each cut moved to the best of its free positions.
  void Search(const sim::Problem& p, const Units& units, const PlaceRequest& request,
              const Budget& budget, size_t k) {
    double total = 0;
    for (double t : block_time_) total += t;
    std::vector<size_t> starts = {0};
    double sum = 0;
    for (size_t b = 0; b < blocks_.size() && starts.size() < k; ++b) {
      const size_t left = blocks_.size() - b;  // blocks from b on
      if (b > starts.back() &&
          (sum >= total * static_cast<double>(starts.size()) / static_cast<double>(k) ||
           left == k - starts.size())) {
        starts.push_back(b);
      }
      sum += block_time_[b];
    }
    if (starts.size() < k) return;
    Score here = Try(p, units, request, starts);
    for (int pass = 0; pass < kPasses && k > 1; ++pass) {
      bool moved = false;
      for (size_t j = 1; j < k; ++j) {
        const size_t lo = starts[j - 1] + 1;
        const size_t hi = j + 1 < k ? starts[j + 1] : blocks_.size();
        size_t best_pos = starts[j];
        for (size_t pos = lo; pos < hi && !budget.Out(); ++pos) {
          if (pos == best_pos) continue;
          const size_t kept = starts[j];
          starts[j] = pos;
          const Score s = Try(p, units, request, starts);
          if (s < here) {
            here = s;
            best_pos = pos;
            moved = true;
          }
          starts[j] = kept;
        }
        starts[j] = best_pos;
        if (budget.Out()) return;
      }
      if (!moved) return;
    }
  }

  std::vector<sim::DeviceId> devices_;  // accelerators in cluster order, then the CPUs
  std::vector<std::vector<UnitId>> blocks_;
  std::vector<double> block_time_;
  Score best_;
  sim::Placement best_placement_;
};

}  // namespace

std::unique_ptr<Placer> MakeModuleSplitsPlacer() { return std::make_unique<ModuleSplitsPlacer>(); }

}  // namespace dplace::place
