#include "dplace/io/framework_export.h"

#include <algorithm>
#include <charconv>
#include <limits>
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

Json Unavailable(const std::string& reason) { return {{"reason", reason}}; }

// A block's index in its list ("layers.12": 12; one past any index when it does not fit a long).
long BlockIndex(const std::string& block) {
  const std::string digits = block.substr(block.rfind('.') + 1);
  long index = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  return error == std::errc() ? index : std::numeric_limits<long>::max();
}

// The name of a module's layer: its block, if it is in one of `lists`; else the module path one
// segment below the deepest list parent it lies under ("encoder.final_layer_norm" beside
// "encoder.block", "model.norm" beside "model.layers"), or its first segment; "" for a stack's
// parent itself, whose own ops make no layer (as the root's).
std::string LayerName(const std::string& module, const std::vector<std::string>& lists) {
  std::string block = graph::BlockOf(module);
  if (!block.empty() &&
      std::count(lists.begin(), lists.end(), block.substr(0, block.rfind('.'))) > 0)
    return block;
  std::string parent;
  for (const std::string& list : lists) {
    const std::string p = graph::ParentModule(list);
    if (module == p) return "";  // the stack's own ops (a mask, rotary tables): no layer
    if (!p.empty() && module.starts_with(p + ".") && p.size() > parent.size()) parent = p;
  }
  const size_t from = parent.empty() ? 0 : parent.size() + 1;
  const size_t dot = module.find('.', from);
  return dot == std::string::npos ? module : module.substr(0, dot);
}

// The terms of a split of a model with several stacks of blocks (an encoder–decoder, a masked
// autoencoder): torch.distributed.pipelining and torchtitan split at module FQNs at any depth;
// Megatron-LM splits an encoder–decoder at one rank (pipeline_model_parallel_split_rank), the
// encoder's blocks before it, the decoder's from it; DeepSpeed's PipelineModule and vLLM take one
// chain of layers, which several stacks are not.
template <typename DeviceName>
Json SeveralStacks(const std::vector<std::string>& stacks, const std::vector<Entry>& entries,
                   const std::vector<int>& stack_of_entry,
                   const std::vector<std::vector<size_t>>& of_stage, const Json& spec,
                   const Json& split_points, DeviceName device) {
  const int num_stages = static_cast<int>(of_stage.size());
  std::string names;
  for (const std::string& st : stacks) names += (names.empty() ? "" : ", ") + st;
  // Blocks of each stack per stage.
  std::vector<std::vector<int>> blocks(stacks.size(), std::vector<int>(of_stage.size(), 0));
  for (int s = 0; s < num_stages; ++s) {
    for (size_t i : of_stage[static_cast<size_t>(s)]) {
      if (stack_of_entry[i] >= 0) ++blocks[static_cast<size_t>(stack_of_entry[i])][s];
    }
  }
  Json megatron;
  if (stacks.size() != 2) {
    megatron = Unavailable("Megatron-LM splits an encoder–decoder at one rank; this model has " +
                           std::to_string(stacks.size()) + " stacks of blocks (" + names + ")");
  } else {
    // The split rank: the first stage with a decoder block; no encoder block from it on.
    int rank = num_stages;
    for (int s = 0; s < num_stages && rank == num_stages; ++s) {
      if (blocks[1][s] > 0) rank = s;
    }
    int mixed = -1;
    for (int s = rank; s < num_stages && mixed < 0; ++s) {
      if (blocks[0][s] > 0) mixed = s;
    }
    if (rank == 0 || rank == num_stages || mixed >= 0) {
      megatron =
          Unavailable("Megatron-LM puts " + stacks[0] + " on the stages before one rank and " +
                      stacks[1] + " on the rest; this split " +
                      (mixed >= 0 ? "puts blocks of both on " + device(mixed)
                                  : "leaves one of them no stage of its own"));
    } else {
      Json first = Json::array(), second = Json::array();
      for (int s = 0; s < rank; ++s) first.push_back(blocks[0][s]);
      for (int s = rank; s < num_stages; ++s) second.push_back(blocks[1][s]);
      auto even = [](const Json& counts) {
        return std::all_of(counts.begin(), counts.end(),
                           [&](const Json& c) { return c == counts.front(); });
      };
      megatron = {{"pipeline_model_parallel_split_rank", rank},
                  {"encoder_layers_per_stage", first},
                  {"decoder_layers_per_stage", second},
                  {"even", even(first) && even(second)}};
    }
  }
  (void)entries;
  return {{"block_lists", stacks},
          {"torch_pipelining", {{"split_spec", spec}}},
          {"torchtitan", {{"pipeline_parallel_split_points", split_points}}},
          {"megatron", megatron},
          {"deepspeed", Unavailable("DeepSpeed's PipelineModule calls its layers one after "
                                    "another, each on the one before's output; the stacks " +
                                    names + " are not one such chain")},
          {"vllm", Unavailable("vLLM partitions the layers of one decoder stack "
                               "(VLLM_PP_LAYER_PARTITION); this model has the stacks " +
                               names)}};
}

}  // namespace

Json FrameworkSplits(const sim::Problem& p, const sim::Placement& placement,
                     const std::vector<sim::DeviceId>& stages) {
  std::map<sim::DeviceId, int> stage_of;
  for (size_t i = 0; i < stages.size(); ++i) stage_of[stages[i]] = static_cast<int>(i);
  sim::PipelineStages pipeline{.device = stages};
  for (sim::DeviceId d : placement) {
    pipeline.stage.push_back(stage_of.count(d) ? stage_of[d] : -1);
  }
  return FrameworkSplits(p, pipeline);
}

Json FrameworkSplits(const sim::Problem& p, const sim::PipelineStages& pipeline) {
  const graph::Graph& g = p.g();
  const std::vector<sim::DeviceId>& stages = pipeline.device;
  // Each op's module as the device map reads it (a module called again, "refine_1", is "refine").
  const std::vector<std::string> modules = graph::OpModules(g);
  std::vector<sim::OpId> forward;
  for (sim::OpId op : g.TopologicalOrder()) {
    if (g.op(op).kind == graph::OpKind::kForward) forward.push_back(op);
  }
  // The list of repeated blocks: the prefix with the most distinct blocks, first seen on ties.
  std::map<std::string, std::set<std::string>> lists;
  std::vector<std::string> seen_order;
  for (sim::OpId op : forward) {
    const std::string block = graph::BlockOf(modules[static_cast<size_t>(op.index())]);
    if (block.empty()) continue;
    const std::string list = block.substr(0, block.rfind('.'));
    if (!lists.count(list)) seen_order.push_back(list);
    lists[list].insert(block);
  }
  std::string list;
  std::vector<std::string> stacks;  // the lists of two or more blocks, in program order
  for (const std::string& l : seen_order) {
    if (list.empty() || lists[l].size() > lists[list].size()) list = l;
    if (lists[l].size() >= 2) stacks.push_back(l);
  }
  if (list.empty() || lists[list].size() < 2) {
    return Unavailable(
        "the model has no list of repeated blocks (modules named like layers.0, "
        "layers.1)");
  }
  if (stacks.size() > 1) list.clear();  // several stacks (an encoder and a decoder): no one list
  std::vector<Entry> entries;
  std::map<std::string, size_t> entry_of;
  std::vector<int> stack_of_entry;  // per entry: its stack's index in `stacks`, or -1
  for (sim::OpId op : forward) {
    const std::string& module = modules[static_cast<size_t>(op.index())];
    if (module.empty()) continue;  // the root's own functions make no layer
    const std::string block = graph::BlockOf(module);
    const std::string name = LayerName(module, seen_order);
    if (name.empty()) continue;
    const auto stack = std::find(stacks.begin(), stacks.end(),
                                 block.empty() ? "" : block.substr(0, block.rfind('.')));
    const bool in_list = name == block && stack != stacks.end() && (list.empty() || *stack == list);
    if (!entry_of.count(name))
      stack_of_entry.push_back(
          stack == stacks.end() || name != block ? -1 : static_cast<int>(stack - stacks.begin()));
    auto [it, added] = entry_of.try_emplace(name, entries.size());
    if (added) entries.push_back({.name = name, .block = in_list});
    entries[it->second].stages.insert(pipeline.stage[op]);
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
  // The layers in stage order: the layers before the first block are the embedding (Megatron's
  // E), those after the last the head (L).
  size_t first_block = entries.size(), last_block = 0;
  for (const auto& mine : of_stage) {
    for (size_t i : mine) {
      if (!entries[i].block) continue;
      first_block = std::min(first_block, i);
      last_block = std::max(last_block, i);
    }
  }
  Json split_points = Json::array(), parts = Json::array(), layers = Json::array();
  std::vector<int> blocks(stages.size(), 0);
  std::string layout;
  // Why Megatron-LM's and vLLM's terms, which count the blocks of each stage in index order with
  // the embedding first and the head last, cannot say this split ("" when they can).
  std::string uncountable;
  long previous_index = -1;
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
        const long index = BlockIndex(entries[i].name);
        if (index < previous_index && uncountable.empty()) {
          uncountable = "the blocks run out of index order (" + entries[i].name + " after " + list +
                        "." + std::to_string(previous_index) + ")";
        }
        previous_index = std::max(previous_index, index);
      } else if (i < first_block) {
        embedding = true;
      } else if (i > last_block) {
        head = true;
      } else if (uncountable.empty()) {
        uncountable = "module " + entries[i].name + " runs between the blocks of " + list;
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
  if (list.empty())
    return SeveralStacks(stacks, entries, stack_of_entry, of_stage, spec, split_points, device);
  std::string partition;
  for (int k : blocks) partition += (partition.empty() ? "" : ",") + std::to_string(k);
  bool even_middle = true;
  for (int s = 2; s + 1 < num_stages; ++s) {
    even_middle = even_middle && blocks[static_cast<size_t>(s)] == blocks[1];
  }
  Json megatron = {{"num_layers_in_first_pipeline_stage", blocks.front()},
                   {"num_layers_in_last_pipeline_stage", blocks.back()},
                   {"middle_stages_even", even_middle},
                   {"pipeline_model_parallel_layout", layout}};
  Json vllm = {{"VLLM_PP_LAYER_PARTITION", partition}};
  if (!uncountable.empty()) {
    megatron = Unavailable(
        "Megatron-LM counts the blocks of each stage, in index order, between "
        "the embedding and the head; " +
        uncountable);
    vllm = Unavailable(
        "vLLM counts the layers of each stage in index order "
        "(VLLM_PP_LAYER_PARTITION); " +
        uncountable);
  }
  Json deepspeed = {{"layers", layers}, {"parts", parts}};
  if (pipeline.chunks > 1) {
    // Megatron-LM's layout lists the virtual stages in order (chunk c of rank r is c * S + r).
    const std::string chunks = std::to_string(pipeline.chunks) + " chunks a device";
    if (megatron.contains("pipeline_model_parallel_layout")) {
      megatron = {{"pipeline_model_parallel_layout", layout},
                  {"virtual_pipeline_model_parallel_size", pipeline.chunks}};
      bool even = true;
      for (int k : blocks) even = even && k == blocks.front();
      if (even) megatron["num_layers_per_virtual_pipeline_stage"] = blocks.front();
    }
    deepspeed = Unavailable("DeepSpeed's PipelineModule runs one stage a device, not " + chunks);
    vllm = Unavailable("vLLM runs one stage a device, not " + chunks);
  }
  return {{"block_list", list},
          {"num_blocks", lists[list].size()},
          {"torch_pipelining", {{"split_spec", spec}}},
          {"torchtitan", {{"pipeline_parallel_split_points", split_points}}},
          {"deepspeed", deepspeed},
          {"megatron", megatron},
          {"vllm", vllm}};
}

namespace {

// A pipeline of replicated stages as the frameworks run data and pipeline parallelism together:
// every stage of one degree d, the ranks of a stage consecutive (the pipeline dimension
// outermost, as torchtitan's, Megatron-LM's and DeepSpeed's meshes lay them out), each of the d
// pipelines running M/d of the step's micro-batches. Null when every stage has one replica.
Json DataParallel(const sim::PipelineResult& run) {
  Json replicas = Json::array();
  bool any = false, uniform = true;
  for (const sim::PipelineStage& st : run.stages) {
    replicas.push_back(st.replicas);
    any = any || st.replicas > 1;
    uniform = uniform && st.replicas == run.stages.front().replicas;
  }
  if (!any) return nullptr;
  if (!uniform) {
    Json out = Unavailable(
        "torchtitan, Megatron-LM and DeepSpeed run one data-parallel degree for every stage, "
        "and these stages have " +
        replicas.dump() + " replicas");
    out["replicas"] = replicas;
    return out;
  }
  const int d = run.stages.front().replicas;
  const int stages = static_cast<int>(run.stages.size());
  const int per_pipeline = run.microbatches / d;
  return {
      {"replicas", replicas},
      {"degree", d},
      {"microbatches_per_pipeline", per_pipeline},
      {"torchtitan", {{"data_parallel_replicate_degree", d}, {"pipeline_parallel_degree", stages}}},
      {"megatron",
       {{"pipeline_model_parallel_size", stages},
        {"data_parallel_size", d},
        {"world_size", stages * d}}},
      {"deepspeed",
       {{"topology", "PipeDataParallelTopology(num_pp=" + std::to_string(stages) +
                         ", num_dp=" + std::to_string(d) + ")"},
        {"gradient_accumulation_steps", per_pipeline}}}};
}

}  // namespace

Json FrameworkSchedule(const sim::PipelineResult& run) {
  const sim::PipelineSchedule schedule = run.schedule;
  const bool table = sim::RowOf(schedule).splits_backward;
  const bool interleaved = run.virtual_stages > 1;
  // The order each rank ran its tasks in, as torch's actions: "{stage}{F|B|I|W}{micro-batch}".
  Json actions = Json::array();
  for (size_t s = 0; s < run.stages.size(); ++s) {
    Json row = Json::array();
    for (const sim::PipelineTask& t : run.tasks) {
      if (t.device != run.stages[s].device) continue;
      row.push_back(std::to_string(t.stage) + static_cast<char>(t.kind) +
                    std::to_string(t.microbatch));
    }
    actions.push_back(row);
  }
  // What every stage recomputes, when they all recompute alike.
  size_t recomputing = 0;
  for (const sim::PipelineStage& st : run.stages) recomputing += st.recomputes ? 1 : 0;
  bool some = false;
  for (const sim::PipelineStage& st : run.stages) {
    some = some || st.recompute != run.stages.front().recompute;
  }
  const sim::Recompute alike =
      run.stages.empty() ? sim::Recompute::kNone : run.stages.front().recompute;
  const std::string partial = "this plan recomputes on " + std::to_string(recomputing) + " of " +
                              std::to_string(run.stages.size()) +
                              " stages (or not alike), and the framework recomputes alike on "
                              "every stage";
  const std::string name(sched::ScheduleName(schedule));
  // A plan of one stage a device runs 1F1B under the interleaved schedule.
  const bool one_f_one_b = schedule == sim::PipelineSchedule::k1F1B ||
                           (schedule == sim::PipelineSchedule::kInterleaved && !interleaved);
  const bool megatron_runs = one_f_one_b || interleaved;
  Json torch = table ? Json{{"actions", actions}}
               : interleaved
                   ? Json{{"schedule_class", "ScheduleInterleaved1F1B"}, {"actions", actions}}
                   : Json{{"schedule_class", one_f_one_b ? "Schedule1F1B" : "ScheduleGPipe"}};
  Json titan = table ? Json{{"pipeline_parallel_schedule_csv",
                             "the actions table, written as CSV (a row per rank)"}}
                     : Json{{"pipeline_parallel_schedule", interleaved   ? "Interleaved1F1B"
                                                           : one_f_one_b ? "1F1B"
                                                                         : "GPipe"}};
  titan["activation_checkpoint"] =
      some ? Unavailable(partial)
      : alike == sim::Recompute::kSelective
          ? Unavailable(
                "torchtitan's selective checkpointing keeps matrix products and "
                "recomputes the rest, not attention's core only")
          : Json{{"mode", alike == sim::Recompute::kFull ? "full" : "none"}};
  Json megatron = megatron_runs
                      ? Json::object()
                      : Unavailable("Megatron-LM runs 1F1B (and interleaved 1F1B), not " + name);
  if (megatron_runs) {
    if (some) {
      megatron = Unavailable(partial);
    } else if (alike == sim::Recompute::kFull) {
      megatron = {{"recompute_granularity", "full"},
                  {"recompute_method", "uniform"},
                  {"recompute_num_layers", 1}};
    } else if (alike == sim::Recompute::kSelective) {
      megatron = {{"recompute_granularity", "selective"}};  // its core_attn module
    }
    if (interleaved && !some) megatron["virtual_pipeline_model_parallel_size"] = run.virtual_stages;
  }
  Json deepspeed = one_f_one_b
                       ? Json{{"activation_checkpoint_interval", recomputing > 0 ? 1 : 0}}
                       : Unavailable("DeepSpeed's PipelineEngine runs its own 1F1B schedule, not " +
                                     (interleaved ? "interleaved chunks" : name));
  if (one_f_one_b && some) deepspeed = Unavailable(partial);
  if (one_f_one_b && !some && alike == sim::Recompute::kSelective) {
    deepspeed = Unavailable(
        "DeepSpeed's PipelineModule checkpoints whole layers (activation_checkpoint_interval), "
        "not attention's core");
  }
  Json out = {{"schedule", name},          {"microbatches", run.microbatches},
              {"torch_pipelining", torch}, {"torchtitan", titan},
              {"megatron", megatron},      {"deepspeed", deepspeed}};
  if (Json parallel = DataParallel(run); !parallel.is_null()) out["data_parallel"] = parallel;
  return out;
}

}  // namespace dplace::io
