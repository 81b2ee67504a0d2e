#include "dplace/place/search/contiguous.h"

#include <algorithm>
#include <deque>
#include <limits>

#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Accelerators (devices not of kind "cpu"; every device when there are none), in a chain from the
// first that always steps to the unvisited one behind the fastest link.
std::vector<sim::DeviceId> AcceleratorChain(const sim::Problem& p) {
  std::vector<sim::DeviceId> left;
  for (sim::DeviceId d = 0; d < p.num_devices(); ++d) {
    if (p.c().device(d).kind != "cpu") left.push_back(d);
  }
  if (left.empty()) {
    for (sim::DeviceId d = 0; d < p.num_devices(); ++d) left.push_back(d);
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

// The cut program over the accelerator units `seq` (unit indices in topological order).
class CutProgram {
 public:
  CutProgram(const sim::Problem& p, const std::vector<Unit>& units, const std::vector<int>& seq,
             const std::vector<sim::DeviceId>& chain)
      : units_(units), seq_(seq), chain_(chain) {
    const size_t n = seq.size();
    // crossing_[a]: bytes of the tensors made before position a and read at or after it.
    std::vector<int> position(units.size(), -1);
    for (size_t i = 0; i < n; ++i) position[static_cast<size_t>(seq[i])] = static_cast<int>(i);
    std::vector<int> unit_of_op(static_cast<size_t>(p.num_ops()));
    for (size_t u = 0; u < units.size(); ++u) {
      for (sim::OpId op : units[u].ops) unit_of_op[static_cast<size_t>(op)] = static_cast<int>(u);
    }
    std::vector<double> diff(n + 1, 0);
    for (const graph::Tensor& t : p.g().tensors()) {
      const int from = position[static_cast<size_t>(unit_of_op[static_cast<size_t>(t.producer)])];
      if (from < 0) continue;
      int last = from;
      for (sim::OpId c : p.g().Consumers(static_cast<graph::TensorId>(&t - p.g().tensors().data())))
        last = std::max(last, position[static_cast<size_t>(unit_of_op[static_cast<size_t>(c)])]);
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
  // when no such cut exists. Then Split(j) gives the placement of the units for j runs.
  void Solve(const sim::Problem& p, double scale) {
    const size_t n = seq_.size(), k = chain_.size();
    std::vector<double> prefix(n + 1, 0);
    for (size_t i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + scale * units_[static_cast<size_t>(seq_[i])].footprint_bytes;
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
        if (!Allows(units_[static_cast<size_t>(seq_[b - 1])], d)) lo = b;
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

  void Split(size_t runs, sim::Placement* placement) const {
    size_t b = seq_.size();
    for (size_t j = runs; j >= 1; --j) {
      const auto a = static_cast<size_t>(start_[j][b]);
      for (size_t i = a; i < b; ++i)
        Assign(units_[static_cast<size_t>(seq_[i])], chain_[j - 1], placement);
      b = a;
    }
  }

 private:
  const std::vector<Unit>& units_;
  const std::vector<int>& seq_;
  const std::vector<sim::DeviceId>& chain_;
  std::vector<double> crossing_;
  std::vector<std::vector<double>> cost_;
  std::vector<std::vector<int>> start_;
};

class ContiguousPlacer : public Placer {
 public:
  std::string_view name() const override { return "contiguous"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const std::vector<Unit> units = MakeUnits(p);
    const std::vector<sim::DeviceId> chain = AcceleratorChain(p);
    sim::Placement placement(static_cast<size_t>(p.num_ops()), chain.front());
    std::vector<int> seq;
    std::vector<double> used(static_cast<size_t>(p.num_devices()), 0);
    double footprint = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      const bool accelerated = std::any_of(chain.begin(), chain.end(),
                                           [&](sim::DeviceId d) { return Allows(units[u], d); });
      if (accelerated) {
        seq.push_back(static_cast<int>(u));
        footprint += units[u].footprint_bytes;
      } else {
        Assign(units[u], FirstFit(p, units[u], FastestFirst(p, units[u]), &used), &placement);
      }
    }
    if (seq.empty()) {
      ctx.note = "no unit may run on an accelerator";
      return placement;
    }
    // The static footprint counts every tensor for the whole step; the simulation frees them. The
    // second program scales footprints by what one device's simulated peak makes of them.
    const sim::Evaluation one = ctx.evaluator->Evaluate(placement);
    const double peak = one.devices[static_cast<size_t>(chain.front())].peak_memory_bytes;
    std::vector<double> scales = {1};
    if (footprint > 0 && peak > 0 && peak < footprint) scales.push_back(peak / footprint);

    CutProgram program(p, units, seq, chain);
    sim::Placement best = placement;
    Score best_score = ScoreOf(one);
    size_t best_runs = 1;
    for (double scale : scales) {
      program.Solve(p, scale);
      for (size_t runs = 1; runs <= chain.size(); ++runs) {
        if (!program.Possible(runs)) continue;
        sim::Placement candidate = placement;
        program.Split(runs, &candidate);
        const Score s = ScoreOf(ctx.evaluator->Evaluate(candidate));
        if (s < best_score) {
          best_score = s;
          best = std::move(candidate);
          best_runs = runs;
        }
      }
    }
    ctx.note = std::to_string(best_runs) + (best_runs == 1 ? " run" : " contiguous runs");
    return best;
  }
};

}  // namespace

std::unique_ptr<Placer> MakeContiguousPlacer() { return std::make_unique<ContiguousPlacer>(); }

}  // namespace dplace::place
