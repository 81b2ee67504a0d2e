#include "dplace/io/framework_export.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "dplace/graph/modules.h"

namespace dplace::io {
namespace {

// A top-level layer of the model: one repeated block, or a top-level module beside the list.
struct Entry {
  std::string name;
  bool block = false;
  std::set<int> stages;
};

std::string FirstSegment(const std::string& module) { return module.substr(0, module.find('.')); }

Json Unavailable(const std::string& reason) { return {{"reason", reason}}; }

}  // namespace

Json FrameworkSplits(const sim::Problem& p, const sim::Placement& placement,
                     const std::vector<sim::DeviceId>& stages) {
  const graph::Graph& g = p.g();
  std::map<sim::DeviceId, int> stage_of;
  for (size_t i = 0; i < stages.size(); ++i) stage_of[stages[i]] = static_cast<int>(i);
  std::vector<sim::OpId> forward;
  for (sim::OpId op : g.TopologicalOrder()) {
    if (g.op(op).kind == graph::OpKind::kForward) forward.push_back(op);
  }
  // The list of repeated blocks: the prefix with the most distinct blocks, first seen on ties.
  std::map<std::string, std::set<std::string>> lists;
  std::vector<std::string> seen_order;
  for (sim::OpId op : forward) {
    const std::string block = graph::BlockOf(graph::OpModule(g.op(op)));
    if (block.empty()) continue;
    const std::string list = block.substr(0, block.rfind('.'));
    if (!lists.count(list)) seen_order.push_back(list);
    lists[list].insert(block);
  }
  std::string list;
  for (const std::string& l : seen_order) {
    if (list.empty() || lists[l].size() > lists[list].size()) list = l;
  }
  if (list.empty() || lists[list].size() < 2) {
    return Unavailable(
        "the model has no list of repeated blocks (modules named like layers.0, "
        "layers.1)");
  }
  if (list.find('.') != std::string::npos) {
    return Unavailable("the repeated blocks (" + list +
                       ") are not at the model's top level, where the frameworks split");
  }
  std::vector<Entry> entries;
  std::map<std::string, size_t> entry_of;
  for (sim::OpId op : forward) {
    const std::string module = graph::OpModule(g.op(op));
    if (module.empty()) continue;  // the root's own functions make no layer
    const std::string block = graph::BlockOf(module);
    const bool in_list = !block.empty() && block.substr(0, block.rfind('.')) == list;
    const std::string name = in_list ? block : FirstSegment(module);
    auto [it, added] = entry_of.try_emplace(name, entries.size());
    if (added) entries.push_back({.name = name, .block = in_list});
    entries[it->second].stages.insert(stage_of.count(placement[op]) ? stage_of[placement[op]] : -1);
  }
  const auto device = [&](int s) {
    return s >= 0 ? p.c().device(stages[static_cast<size_t>(s)]).name : std::string("?");
  };
  int last = 0;
  const int num_stages = static_cast<int>(stages.size());
  std::vector<std::vector<size_t>> of_stage(stages.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    if (e.stages.size() > 1) {
      return Unavailable((e.block ? "block " : "module ") + e.name + " is split over " +
                         device(*e.stages.begin()) + " and " + device(*e.stages.rbegin()) +
                         ": split at block boundaries (--unit module:2)");
    }
    const int s = *e.stages.begin();
    if (s < 0) return Unavailable(e.name + " is on a device that is no stage");
    if (s < last) {
      return Unavailable("the stages do not follow the layers' order (" + e.name + " on " +
                         device(s) + " comes after a layer on " + device(last) + ")");
    }
    last = s;
    of_stage[static_cast<size_t>(s)].push_back(i);
  }
  Json split_points = Json::array(), parts = Json::array(), layers = Json::array();
  std::vector<int> blocks(stages.size(), 0);
  std::string layout;
  int layer = 0;
  for (int s = 0; s < num_stages; ++s) {
    const auto& mine = of_stage[static_cast<size_t>(s)];
    if (mine.empty()) return Unavailable("stage " + device(s) + " holds no layer");
    if (s > 0) split_points.push_back(entries[mine.front()].name);
    parts.push_back(layer);
    bool embedding = false, head = false;
    for (size_t i : mine) {
      layers.push_back(entries[i].name);
      ++layer;
      if (entries[i].block) {
        ++blocks[static_cast<size_t>(s)];
      } else {
        (blocks[static_cast<size_t>(s)] == 0 && s == 0 ? embedding : head) = true;
      }
    }
    const int k = blocks[static_cast<size_t>(s)];
    layout += std::string(s > 0 ? "|" : "") + (embedding ? "E" : "") +
              (k == 0   ? ""
               : k == 1 ? "t"
                        : "t*" + std::to_string(k)) +
              (head ? "L" : "");
  }
  parts.push_back(layer);
  Json spec = Json::object();
  for (const Json& fqn : split_points) spec[fqn.get<std::string>()] = "SplitPoint.BEGINNING";
  std::string partition;
  for (int k : blocks) partition += (partition.empty() ? "" : ",") + std::to_string(k);
  bool even_middle = true;
  for (int s = 2; s + 1 < num_stages; ++s) {
    even_middle = even_middle && blocks[static_cast<size_t>(s)] == blocks[1];
  }
  return {{"block_list", list},
          {"num_blocks", lists[list].size()},
          {"torch_pipelining", {{"split_spec", spec}}},
          {"torchtitan", {{"pipeline_parallel_split_points", split_points}}},
          {"deepspeed", {{"layers", layers}, {"parts", parts}}},
          {"megatron",
           {{"num_layers_in_first_pipeline_stage", blocks.front()},
            {"num_layers_in_last_pipeline_stage", blocks.back()},
            {"middle_stages_even", even_middle},
            {"pipeline_model_parallel_layout", layout}}},
          {"vllm", {{"VLLM_PP_LAYER_PARTITION", partition}}}};
}

}  // namespace dplace::io
