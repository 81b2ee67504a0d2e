// The pipeline splits the frameworks make by default, as placers, so that every table shows what
// the default would give (docs/pipelines.md):
//   uniform     DeepSpeed's PipelineModule(partition_method="uniform"): the model's layers dealt
//               to the stages in equal counts, the first stages one more where the count does not
//               divide (deepspeed.runtime.utils.partition_uniform);
//   parameters  DeepSpeed's "parameters": contiguous layers whose largest stage, in parameter
//               bytes, is smallest (partition_balanced);
//   blocks      torchtitan's and PiPPy's equal blocks: the repeated blocks split evenly, what comes
//               before the first block on the first stage, everything after a block with it.
// A model's layers are its repeated blocks (the module path through its first index: "layers.3",
// "vision.blocks.1") and the top-level modules beside them (embeddings, final norm, head), in
// program order, as DeepSpeed's layer list has them; a model without indexed modules has one layer
// per unit. The stages are the
// accelerators (every device not of kind "cpu"; all devices when there is none), in order; a unit
// no stage device may run goes to its fastest allowed device.
#include <algorithm>
#include <map>

#include "dplace/graph/modules.h"
#include "dplace/place/baseline/baseline.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

struct Layer {
  std::vector<UnitId> units;
  bool block = false;
  double param_bytes = 0;
};

std::vector<Layer> ModelLayers(const sim::Problem& p, const Units& units) {
  const graph::Graph& g = p.g();
  std::vector<Layer> layers;
  std::vector<std::string> keys;  // per layer: its block, or its top-level module
  std::map<std::string, size_t> block_layer;
  bool any_block = false;
  std::vector<std::string> module_of(units.size());
  const std::vector<std::string> modules = graph::OpModules(g);  // "refine_1" is "refine"
  for (UnitId u : units.ids()) {
    // The unit's module: that of its first forward op (backward and update ops follow it).
    const Unit& unit = units[u];
    sim::OpId first = unit.ops.front();
    for (sim::OpId op : unit.ops) {
      if (g.op(op).kind == graph::OpKind::kForward) {
        first = op;
        break;
      }
    }
    module_of[static_cast<size_t>(u.index())] = modules[static_cast<size_t>(first.index())];
    any_block = any_block || !graph::BlockOf(module_of[static_cast<size_t>(u.index())]).empty();
  }
  for (UnitId u : units.ids()) {
    const std::string& module = module_of[static_cast<size_t>(u.index())];
    const std::string block = graph::BlockOf(module);
    Layer* layer = nullptr;
    if (any_block && !block.empty()) {
      auto [it, added] = block_layer.try_emplace(block, layers.size());
      if (added) {
        layers.emplace_back().block = true;
        keys.push_back(block);
      }
      layer = &layers[it->second];
    } else {
      // Without blocks every unit is a layer. With them, each top-level module beside the blocks
      // is one (DeepSpeed's layer list: embeddings, final norm, head); the root's own ops join
      // the layer before them.
      const std::string key = module.substr(0, module.find('.'));
      const bool extend = any_block && !layers.empty() && !layers.back().block &&
                          (key.empty() || key == keys.back());
      if (extend) {
        layer = &layers.back();
      } else {
        layer = &layers.emplace_back();
        keys.push_back(key);
      }
    }
    layer->units.push_back(u);
    for (sim::OpId op : units[u].ops) layer->param_bytes += g.op(op).param_bytes;
  }
  return layers;
}

// Stage sizes (layer counts) of DeepSpeed's partition_uniform: n layers over s stages.
std::vector<size_t> Uniform(size_t n, size_t s) {
  std::vector<size_t> sizes(s, n / s);
  for (size_t i = 0; i < n % s; ++i) ++sizes[i];
  return sizes;
}

// Stage sizes of contiguous layers whose largest parameter sum is smallest (DeepSpeed's
// partition_balanced), by bisection on that sum; greedy fill at the bound found.
std::vector<size_t> Balanced(const std::vector<double>& weights, size_t s) {
  auto fill = [&](double bound) {
    std::vector<size_t> sizes(1, 0);
    double sum = 0;
    for (double w : weights) {
      if (sizes.back() > 0 && sum + w > bound) {
        sizes.push_back(0);
        sum = 0;
      }
      ++sizes.back();
      sum += w;
    }
    return sizes;
  };
  double lo = 0, hi = 0;
  for (double w : weights) {
    lo = std::max(lo, w);
    hi += w;
  }
  for (int i = 0; i < 100 && hi - lo > 1e-9 * std::max(1.0, hi); ++i) {
    const double mid = (lo + hi) / 2;
    (fill(mid).size() <= s ? hi : lo) = mid;
  }
  std::vector<size_t> sizes = fill(hi);
  sizes.resize(s, 0);
  return sizes;
}

enum class Rule { kUniform, kParameters, kBlocks };

class FrameworkSplitPlacer : public Placer {
 public:
  FrameworkSplitPlacer(std::string_view name, Rule rule) : name_(name), rule_(rule) {}
  std::string_view name() const override { return name_; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest&) override {
    std::vector<sim::DeviceId> stages;
    for (sim::DeviceId d : p.c().device_ids()) {
      if (p.c().device(d).kind != "cpu") stages.push_back(d);
    }
    if (stages.empty()) {
      for (sim::DeviceId d : p.c().device_ids()) stages.push_back(d);
    }
    const Units units = MakeUnits(p);
    const std::vector<Layer> layers = ModelLayers(p, units);
    const std::vector<size_t> stage_of = StageOfLayer(layers, stages.size());
    sim::Placement placement(p.g().ops().size(), stages.front());
    sim::PerDevice<double> used(p.c().devices().size(), 0);
    for (size_t i = 0; i < layers.size(); ++i) {
      const sim::DeviceId d = stages[stage_of[i]];
      for (UnitId u : layers[i].units) {
        const Unit& unit = units[u];
        const bool allowed =
            std::find(unit.devices.begin(), unit.devices.end(), d) != unit.devices.end();
        Assign(unit, allowed ? d : FirstFit(p, unit, FastestFirst(p, unit), &used), &placement);
      }
    }
    return PlaceResult{.placement = std::move(placement)};
  }

  // The stage (index into the stage devices) of every layer.
  std::vector<size_t> StageOfLayer(const std::vector<Layer>& layers, size_t num_stages) const {
    std::vector<size_t> counted;  // the layers the rule deals out
    for (size_t i = 0; i < layers.size(); ++i) {
      if (rule_ != Rule::kBlocks || layers[i].block) counted.push_back(i);
    }
    if (counted.empty()) {  // no blocks: every layer counts
      for (size_t i = 0; i < layers.size(); ++i) counted.push_back(i);
    }
    const size_t s = std::min(num_stages, counted.size());
    std::vector<size_t> sizes;
    if (rule_ == Rule::kParameters) {
      std::vector<double> weights;
      for (size_t i : counted) weights.push_back(layers[i].param_bytes);
      sizes = Balanced(weights, s);
    } else {
      sizes = Uniform(counted.size(), s);
    }
    std::vector<size_t> stage(layers.size(), 0);
    size_t k = 0;
    for (size_t st = 0; st < sizes.size(); ++st) {
      for (size_t j = 0; j < sizes[st]; ++j) stage[counted[k++]] = st;
    }
    // Layers the rule did not count (blocks: what is no block) go with the block before them;
    // before the first block, with the first stage.
    size_t current = 0;
    std::vector<char> is_counted(layers.size(), 0);
    for (size_t i : counted) is_counted[i] = 1;
    for (size_t i = 0; i < layers.size(); ++i) {
      if (is_counted[i]) {
        current = stage[i];
      } else {
        stage[i] = current;
      }
    }
    return stage;
  }

  std::string_view name_;
  Rule rule_;
};

}  // namespace

std::unique_ptr<Placer> MakeUniformSplitPlacer() {
  return std::make_unique<FrameworkSplitPlacer>("uniform", Rule::kUniform);
}
std::unique_ptr<Placer> MakeParametersSplitPlacer() {
  return std::make_unique<FrameworkSplitPlacer>("parameters", Rule::kParameters);
}
std::unique_ptr<Placer> MakeBlocksSplitPlacer() {
  return std::make_unique<FrameworkSplitPlacer>("blocks", Rule::kBlocks);
}

}  // namespace dplace::place
