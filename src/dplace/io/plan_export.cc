#include "dplace/io/plan_export.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "dplace/graph/graph_builder.h"
#include "dplace/graph/modules.h"
#include "dplace/io/framework_export.h"
#include "dplace/sim/pipeline_sim.h"

namespace dplace::io {

using graph::ParameterModule;

namespace {

// The module tree of a placed graph: per module, the weight (FLOPs + 1) its own ops and
// parameters put on each device, its children, and the parameters it holds directly.
struct ModuleTree {
  struct Node {
    std::map<sim::DeviceId, double> own;              // ops whose innermost module this is
    std::map<std::string, sim::DeviceId> parameters;  // its own parameters -> device
    std::set<std::string> children;
    std::set<sim::DeviceId> devices;  // of the whole subtree
  };
  std::map<std::string, Node> nodes;

  Node& Add(const std::string& path) {
    auto [it, inserted] = nodes.try_emplace(path);
    if (inserted && !path.empty()) Add(graph::ParentModule(path)).children.insert(path);
    return nodes[path];
  }
  const std::set<sim::DeviceId>& Devices(const std::string& path) {
    Node& n = nodes[path];
    if (!n.devices.empty()) return n.devices;
    for (const auto& [d, w] : n.own) n.devices.insert(d);
    for (const auto& [name, d] : n.parameters) n.devices.insert(d);
    for (const std::string& c : n.children) {
      const auto& sub = Devices(c);
      n.devices.insert(sub.begin(), sub.end());
    }
    return n.devices;
  }
};

}  // namespace

namespace {

// `g` with every op that has no co-location group put in the group "module:<unit>" of its unit
// (none where `unit_of` is empty). InvalidInput when no op gets one.
StatusOr<graph::Graph> GroupByUnit(const graph::Graph& g, const std::vector<std::string>& unit_of) {
  graph::GraphBuilder b(g.name());
  for (const std::string& group : g.groups()) b.Group(group);
  int scoped = 0;
  for (graph::OpId id{0}; id < g.num_ops(); ++id) {
    graph::Op op = g.op(id);
    const std::string& unit = unit_of[static_cast<size_t>(id.index())];
    if (!unit.empty() && op.colocation == graph::kNoGroup) {
      op.colocation = b.Group("module:" + unit);
      ++scoped;
    }
    std::vector<graph::TensorSpec> outputs;
    for (graph::TensorId t = g.FirstOutput(id); t < g.FirstOutput(id + 1); ++t) {
      outputs.push_back(graph::SpecOf(g, t));
    }
    b.AddOp(std::move(op), std::move(outputs));
  }
  if (scoped == 0) {
    return InvalidInput(
        "no op names a module (scoped ONNX node names or "
        "parameter names are needed)");
  }
  for (const graph::Edge& e : g.edges()) b.AddEdge(e.from, e.output, e.to, e.saved);
  return b.Build();
}

// Every module that has modules inside it.
std::set<std::string> Parents(const std::vector<std::string>& modules) {
  std::set<std::string> parents;
  for (const std::string& m : modules) {
    for (size_t dot = m.find('.'); dot != std::string::npos; dot = m.find('.', dot + 1))
      parents.insert(m.substr(0, dot));
  }
  return parents;
}

}  // namespace

StatusOr<graph::Graph> GroupByModule(const graph::Graph& g, int depth) {
  if (depth < 1)
    return InvalidInput("a module depth must be at least 1, not " + std::to_string(depth));
  // A module above the cut depth that runs ops of its own around its children's (a ViT's class
  // token and position add before its blocks, the CLS slice after them) does not make its own ops
  // one unit: that unit would feed its children and be fed by them, a cycle that fuses every
  // child between into one. Its own ops stay free, each a unit of its own, like the root's.
  std::vector<std::string> modules;
  for (const graph::Op& op : g.ops()) modules.push_back(OpModule(op));
  const std::set<std::string> parents = Parents(modules);
  for (std::string& module : modules) {
    const bool above_the_cut =
        std::count(module.begin(), module.end(), '.') + 1 < static_cast<std::ptrdiff_t>(depth);
    if (above_the_cut && parents.count(module)) module.clear();
    for (size_t at = 0, segments = 0; at < module.size(); ++at) {
      if (module[at] == '.' && ++segments == static_cast<size_t>(depth)) {
        module.resize(at);
        break;
      }
    }
  }
  return GroupByUnit(g, modules);
}

StatusOr<graph::Graph> GroupByBlocks(const graph::Graph& g) {
  std::vector<std::string> modules;
  for (const graph::Op& op : g.ops()) modules.push_back(OpModule(op));
  const std::set<std::string> parents = Parents(modules);
  // The lists of repeated blocks: a list path and the blocks under it, two or more.
  std::map<std::string, std::set<std::string>> lists;
  for (const std::string& m : modules) {
    const std::string block = graph::BlockOf(m);
    if (!block.empty()) lists[block.substr(0, block.rfind('.'))].insert(block);
  }
  std::vector<std::string> holders;  // the modules around a list of blocks, at every level
  for (const auto& [list, blocks] : lists) {
    if (blocks.size() < 2) continue;
    for (std::string p = graph::ParentModule(list); !p.empty(); p = graph::ParentModule(p))
      holders.push_back(p);
  }
  for (std::string& module : modules) {
    const std::string block = graph::BlockOf(module);
    if (!block.empty() && lists[block.substr(0, block.rfind('.'))].size() >= 2) {
      module = block;
      continue;
    }
    // A module beside the blocks: the module one level below the deepest module around a list
    // that it lies in ("encoder.final_layer_norm" beside "encoder.block", "vision.patch" beside
    // "vision.encoder.blocks"), else its top-level module ("embed", "head"); the own ops of a
    // module with modules inside it stay free (as in GroupByModule: a unit around its children's
    // would fuse them).
    if (parents.count(module)) {
      module.clear();
      continue;
    }
    std::string parent;
    for (const std::string& p : holders) {
      if (!p.empty() && module.starts_with(p + ".") && p.size() > parent.size()) parent = p;
    }
    const size_t dot = module.find('.', parent.empty() ? 0 : parent.size() + 1);
    if (dot != std::string::npos) module.resize(dot);
  }
  return GroupByUnit(g, modules);
}

DeviceMap MakeDeviceMap(const sim::Problem& p, const sim::Placement& placement) {
  const hw::Cluster& c = p.c();
  const graph::Graph& g = p.g();
  ModuleTree tree;
  tree.Add("");
  // An op's module: its first named parameter's (exact state_dict paths), else its scope;
  // backward and update ops ("X/grad", "X/update") count with their forward op X.
  const std::vector<std::string> module = OpModules(g);
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    const graph::Op& o = g.op(op);
    const sim::DeviceId d = placement[op];
    tree.Add(module[static_cast<size_t>(op.index())]).own[d] += o.flops + 1;
    for (const std::string& param : o.parameters) {
      if (auto owner = ParameterModule(param)) tree.Add(*owner).parameters[param] = d;
    }
  }
  auto device_name = [&c](sim::DeviceId d) -> Json {
    const hw::Device& dev = c.device(d);
    if (dev.kind == "gpu") {
      int index = 0;
      for (sim::DeviceId e{0}; e < d; ++e) index += c.device(e).kind == "gpu";
      return index;
    }
    return dev.kind == "cpu" ? Json(std::string("cpu")) : Json(dev.name);
  };
  DeviceMap out{Json::object(), {}};
  // The coarsest modules that sit on one device; a module split over devices gives its children
  // and its own parameters; a module split by its own ops goes where most of its work runs.
  auto visit = [&](auto&& self, const std::string& path) -> void {
    ModuleTree::Node& node = tree.nodes[path];
    const auto& devices = tree.Devices(path);
    if (devices.size() <= 1) {
      if (!devices.empty()) out.map[path] = device_name(*devices.begin());
      return;
    }
    // A leaf module split by its own ops (a module called twice, or an op and its bias add) goes
    // where most of its work runs; a parent's own stateless ops (a residual add) need no key.
    if (node.children.empty()) {
      std::map<sim::DeviceId, double> weight = node.own;
      for (const auto& [param, d] : node.parameters) weight[d] += 1;
      const auto heaviest = std::max_element(weight.begin(), weight.end(),
                                             [](auto& a, auto& b) { return a.second < b.second; });
      std::string where;
      for (sim::DeviceId d : devices) where += (where.empty() ? "" : ", ") + c.device(d).name;
      out.split_modules.push_back("module '" + path + "' is split over " + where +
                                  ": mapped whole to " + c.device(heaviest->first).name);
      out.map[path] = device_name(heaviest->first);
      return;
    }
    for (const std::string& child : node.children) self(self, child);
    for (const auto& [param, d] : node.parameters) out.map[param] = device_name(d);
  };
  visit(visit, "");
  return out;
}

Json DeviceMapJson(const sim::Problem& p, const sim::Placement& placement) {
  return MakeDeviceMap(p, placement).map;
}

Json PipelineStageJson(const sim::Problem& p, const sim::PipelineStage& st) {
  return {
      {"name", p.c().device(st.device).name},
      {"forward_s", st.forward_s},
      {"backward_s", st.backward_s},
      {"weight_s", st.weight_s},
      {"busy_s", st.busy_s},
      {"peak_in_flight", st.peak_in_flight},
      {"held_per_microbatch_bytes", st.held_per_microbatch_bytes},
      {"held_for_weight_bytes", st.held_for_weight_bytes},
      {"recomputes", st.recomputes},
      {"recompute", sim::RecomputeName(st.recompute)},
      {"held_when_recomputing_bytes", st.held_when_recomputing_bytes},
      {"held_selective_bytes", st.held_selective_bytes},
      {"peak_memory_bytes", st.peak_memory_bytes},
      {"replicas", st.replicas},
      {"allreduce_s", st.allreduce_s},
      {"memory_capacity_bytes",
       std::isfinite(st.memory_capacity_bytes) ? Json(st.memory_capacity_bytes) : Json(nullptr)}};
}

Json PipelineResultJson(const sim::Problem& p, const sim::PipelineResult& r) {
  Json stages = Json::array();
  for (const sim::PipelineStage& st : r.stages) stages.push_back(PipelineStageJson(p, st));
  Json out = {{"schedule", sched::ScheduleName(r.schedule)},
              {"microbatches", r.microbatches},
              {"virtual_stages", r.virtual_stages},
              {"makespan_s", r.makespan_s},
              {"time_per_microbatch_s", r.time_per_microbatch_s},
              {"bubble_fraction", r.bubble_fraction},
              {"feasible", r.feasible},
              {"stages", stages}};
  if (!r.feasible) out["reason"] = r.reason;
  return out;
}

StatusOr<Json> StagesJson(const sim::Problem& p, const sim::Placement& placement) {
  const graph::Graph& g = p.g();
  struct Stage {
    sim::DeviceId device;
    sim::OpId first{-1}, last{-1};
    bool fed = false;
    int ops = 0;
  };
  // Pipeline order: the simulator's (data order, shared constants ordering no stage; the chunks
  // of an interleaved plan).
  DPLACE_ASSIGN_OR_RETURN(
      const sim::PipelineStages pipeline,
      sim::StagesOf(p, placement, sim::RowOf(p.schedule).interleaves || p.schedule_auto));
  std::map<int, Stage> by_stage;
  for (sim::OpId op : g.TopologicalOrder()) {
    if (g.op(op).kind != graph::OpKind::kForward) continue;
    Stage& s = by_stage[pipeline.stage[op]];
    s.device = placement[op];
    // The stage's entry: its first op fed from another stage (else its first op at all).
    bool fed = false;
    for (sim::OpId pred : g.Predecessors(op)) {
      fed = fed || pipeline.stage[pred] != pipeline.stage[op];
    }
    if (s.first < 0 || (fed && !s.fed)) {
      if (s.first < 0 || !s.fed) s.first = op;
      s.fed = s.fed || fed;
    }
    s.last = op;
    ++s.ops;
  }
  std::vector<Stage> stages;
  std::map<int, size_t> index_of_stage;  // pipeline stage -> index in `stages`
  for (const auto& [stage, s] : by_stage) {
    index_of_stage[stage] = stages.size();
    stages.push_back(s);
  }
  // The max-load model (throughput) sends a CPU's tensors for free: real for the host holding the
  // model's inputs or outputs (the first or last stage), not for a stage in between.
  if (p.objective == sim::Objective::kThroughput) {
    for (size_t i = 1; i + 1 < stages.size(); ++i) {
      const hw::Device& d = p.c().device(stages[i].device);
      if (d.kind != "cpu") continue;
      return InvalidInput("the host CPU " + d.name + " is stage " + std::to_string(i + 1) + " of " +
                          std::to_string(stages.size()) +
                          ": the throughput objective sends its tensors for free, which holds "
                          "only for a first or last stage");
    }
  }
  Json list = Json::array(), splits = Json::array(), split_modules = Json::array();
  // A stage's module: the outermost module that starts in it (its first op's module, or the block
  // around it when no op of the block is in an earlier stage: "layers.7", not
  // "layers.7.input_norm").
  const std::vector<std::string> op_module = graph::OpModules(g);
  std::map<std::string, size_t> first_stage;  // per module path: the earliest stage of its ops
  for (sim::OpId op : g.op_ids()) {
    auto it = index_of_stage.find(pipeline.stage[op]);
    if (it == index_of_stage.end()) continue;
    for (std::string m = op_module[static_cast<size_t>(op.index())]; !m.empty();) {
      auto [at, added] = first_stage.try_emplace(m, it->second);
      if (!added) at->second = std::min(at->second, it->second);
      m = graph::ParentModule(m);
    }
  }
  // A list of blocks (nn.ModuleList: the next segment is an index) is never called: its block is.
  auto is_list = [](const std::string& m, size_t dot) {
    if (dot == std::string::npos) return false;
    const size_t end = std::min(m.find('.', dot + 1), m.size());
    return end > dot + 1 && std::all_of(m.begin() + static_cast<std::ptrdiff_t>(dot) + 1,
                                        m.begin() + static_cast<std::ptrdiff_t>(end),
                                        [](char c) { return c >= '0' && c <= '9'; });
  };
  auto stage_module = [&](size_t i) {
    const std::string& m = op_module[static_cast<size_t>(stages[i].first.index())];
    for (size_t dot = m.find('.');; dot = m.find('.', dot + 1)) {
      std::string prefix = m.substr(0, dot);
      if ((first_stage[prefix] == i && !is_list(m, dot)) || dot == std::string::npos) return prefix;
    }
  };
  for (size_t i = 0; i < stages.size(); ++i) {
    const Stage& s = stages[i];
    list.push_back({{"device", p.c().device(s.device).name},
                    {"module", stage_module(i)},
                    {"first", g.op(s.first).name},
                    {"last", g.op(s.last).name},
                    {"ops", s.ops}});
    if (i > 0) splits.push_back(g.op(s.first).name);
    if (i > 0) split_modules.push_back(stage_module(i));
  }
  Json out{{"format", "dplace-stages/1"},
           {"stages", list},
           {"split_points", splits},
           {"split_modules", split_modules}};
  // The split as its pipeline runs it: its schedule (the fastest that fits under auto) over the
  // problem's micro-batches, its time and each stage's memory.
  auto run = sim::SimulateProblemPipeline(p, placement);
  if (run.ok()) {
    out["pipeline"] = PipelineResultJson(p, *run);
    out["schedule"] = FrameworkSchedule(*run);
    out["feasible"] = run->feasible;
  } else {
    out["feasible"] = false;
    out["pipeline"] = {{"reason", std::string(run.status().message())}};
  }
  out["frameworks"] = FrameworkSplits(p, pipeline);
  return out;
}

}  // namespace dplace::io
