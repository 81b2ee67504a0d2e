#include <algorithm>
#include <iostream>
#include <map>
#include <optional>

#include "dplace/base/units.h"
#include "dplace/cli/commands.h"
#include "dplace/graph/training.h"
#include "dplace/registry/registry.h"
#include "dplace/report/table.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/sim/objectives.h"

namespace dplace::cli {

Status RunInfo(const InfoFlags& flags) {
  GraphFlags forward_flags = flags.graph;
  forward_flags.training = false;
  DPLACE_ASSIGN_OR_RETURN(io::LoadedGraph loaded, GraphFromFlags(forward_flags));
  const double saved_bytes = graph::SavedActivationBytes(*loaded.graph);
  const double saved_bytes_cpu = graph::SavedActivationBytes(*loaded.graph, /*on_cpu=*/true);
  if (flags.graph.training) {
    auto expanded = graph::ExpandTraining(*loaded.graph, {.colocate = !flags.graph.free_gradients});
    if (!expanded.ok()) {
      return expanded.status().WithContext("--training").WithContext(flags.graph.path);
    }
    loaded.graph = std::make_shared<const graph::Graph>(std::move(expanded).value());
  }
  const graph::Graph& g = *loaded.graph;
  std::optional<LoadedProblem> lp;
  std::optional<sim::StepBoundParts> bound;
  if (!flags.cluster.empty()) {
    DPLACE_ASSIGN_OR_RETURN(
        lp,
        ProblemFromFlags({.graph = flags.graph, .cluster = flags.cluster, .objective = "step"}));
    bound = sim::StepLowerBoundParts(*lp->problem);
  }
  if (flags.json) {
    Json out = {{"name", g.name()},
                {"ops", g.num_ops()},
                {"edges", g.edges().size()},
                {"flops", g.TotalFlops()},
                {"param_bytes", g.TotalParamBytes()},
                {"output_bytes", g.TotalOutputBytes()},
                {"saved_activation_bytes", saved_bytes},
                {"saved_activation_bytes_cpu", saved_bytes_cpu}};
    if (bound) {
      out["step_lower_bound"] = {{"value", bound->value()},
                                 {"critical_path", bound->path},
                                 {"work", bound->work},
                                 {"group", bound->group},
                                 {"energy", bound->energy}};
    }
    PrintJson(out);
    return OkStatus();
  }
  std::map<std::string, int> by_kind;
  std::map<std::string, double> flops_by_type;
  for (const graph::Op& op : g.ops()) {
    ++by_kind[std::string(graph::OpKindName(op.kind))];
    flops_by_type[op.type.empty() ? "(untyped)" : op.type] += op.flops;
  }
  std::cout << "graph " << g.name() << "\n  ops: " << g.num_ops();
  for (const auto& [kind, count] : by_kind) std::cout << ", " << kind << " " << count;
  std::cout << "\n  edges: " << g.edges().size() << "\n  co-location groups: " << g.groups().size()
            << "\n  FLOPs: " << g.TotalFlops()
            << (flags.graph.training ? "\n  weights, gradients and optimiser state: "
                                     : "\n  parameters: ")
            << FormatBytes(g.TotalParamBytes())
            << "\n  activations (outputs): " << FormatBytes(g.TotalOutputBytes())
            << "\n  activations kept for backward (training): " << FormatBytes(saved_bytes);
  if (saved_bytes_cpu != saved_bytes)
    std::cout << " (on a CPU " << FormatBytes(saved_bytes_cpu) << ": dropout keeps its noise)";
  std::cout << "\n";
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [type, flops] : flops_by_type) top.emplace_back(flops, type);
  std::sort(top.rbegin(), top.rend());
  if (!top.empty() && top.front().first > 0) {
    std::cout << "  top op types by FLOPs:\n";
    for (size_t i = 0; i < top.size() && i < 5 && top[i].first > 0; ++i) {
      std::cout << "    " << top[i].second << ": " << top[i].first << "\n";
    }
  }
  if (lp) {
    std::cout << "on " << lp->problem->c().name() << " ("
              << graph::PrecisionName(lp->loaded.precision)
              << (lp->loaded.batch > 0 ? ", batch " + std::to_string(lp->loaded.batch) : "")
              << "):\n";
    for (const std::string& line : FitLines(*lp->problem, lp->loaded.batch)) {
      std::cout << "  " << line << "\n";
    }
    std::cout << "  step time is at least " << report::FormatValue(*lp->problem, bound->value())
              << " (critical path " << report::FormatValue(*lp->problem, bound->path) << ", work "
              << report::FormatValue(*lp->problem, bound->work) << ", heaviest co-location group "
              << report::FormatValue(*lp->problem, bound->group) << ", path and work together "
              << report::FormatValue(*lp->problem, bound->energy) << ")\n";
  }
  if (loaded.cluster) {
    std::cout << "machine (from the file): " << loaded.cluster->num_devices() << " devices:";
    for (const hw::Device& d : loaded.cluster->devices()) std::cout << " " << d.name;
    std::cout << "\n";
  }
  return OkStatus();
}

Status RunPlacers(const PlacersFlags& flags) {
  Json all = Json::array();
  for (const place::PlacerEntry& e : place::Placers()) {
    const place::PlacerTraits& t = e.traits;
    std::string objectives;
    for (const sim::ObjectiveRow& o : sim::ObjectiveTable()) {
      if (t.Supports(o.id)) objectives += (objectives.empty() ? "" : ",") + std::string(o.name);
    }
    Json options = Json::array();
    for (const place::OptionDoc& d : place::OptionDocs(e)) {
      options.push_back(
          {{"key", d.key}, {"default", d.default_value}, {"doc", d.doc}, {"values", d.values}});
    }
    all.push_back({{"name", e.name},
                   {"description", e.description},
                   {"family", place::FamilyName(t.family)},
                   {"objectives", objectives},
                   {"takes_start", t.takes_start},
                   {"options", options}});
    if (flags.json) continue;
    std::cout << e.name << std::string(15 - std::min<size_t>(14, e.name.size()), ' ')
              << place::FamilyName(t.family)
              << std::string(10 - place::FamilyName(t.family).size(), ' ') << e.description << "\n";
    if (!flags.options) continue;
    for (const Json& o : options) {
      std::cout << "    " << e.name << "." << o["key"].get<std::string>() << " = "
                << o["default"].get<std::string>() << "  " << o["doc"].get<std::string>() << " ("
                << o["values"].get<std::string>() << ")\n";
    }
  }
  if (flags.json) PrintJson(all);
  return OkStatus();
}

}  // namespace dplace::cli
