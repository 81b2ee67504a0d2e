#include "dplace/graph/graph_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <queue>
#include <set>
#include <tuple>

#include "dplace/base/units.h"

namespace dplace::graph {
namespace {

// A backward pass does at most a few times its forward's work (one GEMM per operand).
constexpr double kMaxBackwardFactor = 64;

bool BadCost(double v, double max) { return !std::isfinite(v) || v < 0 || v > max; }

std::string DescribeCost(double v, double max) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return "infinite";
  if (v > max) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%g (above the bound %g)", v, max);
    return buf;
  }
  return std::to_string(v) + " (negative)";
}

// Fills a CSR layout from (row, value) pairs: offsets has rows+1 entries; values sorted and unique
// within each row.
template <typename V>
void BuildCsr(int rows, std::vector<std::pair<int32_t, V>> pairs, std::vector<int32_t>* offsets,
              std::vector<V>* values) {
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  offsets->assign(static_cast<size_t>(rows) + 1, 0);
  for (const auto& p : pairs) ++(*offsets)[static_cast<size_t>(p.first) + 1];
  for (size_t i = 1; i < offsets->size(); ++i) (*offsets)[i] += (*offsets)[i - 1];
  values->resize(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) (*values)[i] = pairs[i].second;
}

}  // namespace

TensorSpec SpecOf(const Graph& g, TensorId t) {
  const Tensor& tensor = g.tensor(t);
  const bool based = tensor.view_of >= 0;
  return {.bytes = tensor.bytes,
          .transfer_time_s = tensor.transfer_time_s,
          .cpu_bytes = tensor.cpu_bytes,
          .view = tensor.view,
          .view_of_op = based ? g.tensor(tensor.view_of).producer : OpId(-1),
          .view_of_output = based ? g.tensor(tensor.view_of).index : 0};
}

OpId GraphBuilder::AddOp(Op op, std::vector<TensorSpec> outputs) {
  if (outputs.empty()) outputs.push_back({});
  const OpId id = ops_.next_id();
  op.first_output = tensors_.next_id();
  op.num_outputs = static_cast<int32_t>(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    tensors_.push_back({.producer = id,
                        .index = static_cast<int32_t>(i),
                        .bytes = outputs[i].bytes,
                        .cpu_bytes = outputs[i].cpu_bytes,
                        .transfer_time_s = outputs[i].transfer_time_s,
                        .view = outputs[i].view});
    view_bases_.emplace_back(outputs[i].view ? outputs[i].view_of_op : OpId(-1),
                             outputs[i].view_of_output);
  }
  ops_.push_back(std::move(op));
  return id;
}

GroupId GraphBuilder::Group(const std::string& name) {
  auto [it, inserted] = group_by_name_.emplace(name, groups_.next_id());
  if (inserted) groups_.push_back(name);
  return it->second;
}

Status GraphBuilder::Verify() const {
  if (ops_.empty()) return InvalidInput("graph has no ops");
  std::unordered_map<std::string, OpId> seen;
  for (OpId i : ops_.ids()) {
    const Op& op = ops_[i];
    if (op.name.empty())
      return InvalidInput("op #" + std::to_string(i.value()) + " has an empty name");
    auto [it, inserted] = seen.emplace(op.name, i);
    if (!inserted) return InvalidInput("duplicate op name '" + op.name + "'");
    const std::tuple<const char*, double, double> costs[] = {
        {"flops", op.flops, kMaxFlops},
        {"bytes_accessed", op.bytes_accessed, kMaxBytes},
        {"param_bytes", op.param_bytes, kMaxBytes},
        {"scratch_bytes", op.scratch_bytes, kMaxBytes},
        {"saved_bytes", op.saved_bytes, kMaxBytes},
        {"saved_bytes_cpu", std::max(op.saved_bytes_cpu, 0.0), kMaxBytes}};
    for (const auto& [field, v, max] : costs) {
      if (BadCost(v, max))
        return InvalidInput("op '" + op.name + "': " + field + " is " + DescribeCost(v, max));
    }
    if (!(op.backward_factor < 0 || op.backward_factor <= kMaxBackwardFactor)) {
      return InvalidInput("op '" + op.name + "': backward_factor is " +
                          DescribeCost(op.backward_factor, kMaxBackwardFactor));
    }
    for (const auto& [kind, t] : op.time_s) {
      if (BadCost(t, kMaxSeconds)) {
        return InvalidInput("op '" + op.name + "': time on '" + kind + "' is " +
                            DescribeCost(t, kMaxSeconds));
      }
    }
    for (int32_t k = 0; k < op.num_outputs; ++k) {
      const Tensor& t = tensors_[op.first_output + k];
      if (BadCost(t.bytes, kMaxBytes)) {
        return InvalidInput("op '" + op.name + "': output " + std::to_string(k) + " size is " +
                            DescribeCost(t.bytes, kMaxBytes));
      }
      if (!(t.cpu_bytes < 0) && BadCost(t.cpu_bytes, kMaxBytes)) {
        return InvalidInput("op '" + op.name + "': output " + std::to_string(k) +
                            " size on a cpu is " + DescribeCost(t.cpu_bytes, kMaxBytes));
      }
      if (!std::isfinite(t.transfer_time_s) || t.transfer_time_s > kMaxSeconds) {
        return InvalidInput("op '" + op.name + "': output " + std::to_string(k) +
                            " transfer time is " + DescribeCost(t.transfer_time_s, kMaxSeconds));
      }
    }
  }
  const OpId n = ops_.next_id();
  for (const Edge& e : edges_) {
    if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n) {
      return InvalidInput("edge refers to an op that does not exist");
    }
    const Op& from = ops_[e.from];
    if (e.output < 0 || e.output >= from.num_outputs) {
      return InvalidInput("edge " + from.name + " -> " + ops_[e.to].name + ": op '" + from.name +
                          "' has no output " + std::to_string(e.output));
    }
    if (e.from == e.to) return InvalidInput("edge from op '" + from.name + "' to itself");
  }
  std::set<std::tuple<OpId, int32_t, OpId>> fed;  // (base op, output, producer) of every view
  for (TensorId t : tensors_.ids()) {
    const auto [base_op, base_output] = view_bases_[t];
    if (base_op >= 0) fed.emplace(base_op, base_output, tensors_[t].producer);
  }
  for (const Edge& e : edges_) fed.erase({e.from, e.output, e.to});
  if (!fed.empty()) {
    return InvalidInput("op '" + ops_[std::get<2>(*fed.begin())].name +
                        "': its view's base is not one of its inputs");
  }
  return OkStatus();
}

Status GraphBuilder::CheckAcyclic(const Graph& g) const {
  const int n = g.num_ops();
  if (static_cast<int>(g.topo_.size()) == n) return OkStatus();
  // Every op left over by Kahn's algorithm has a left-over predecessor; walking predecessors must
  // therefore revisit an op, and the walk between the two visits is a cycle.
  IdVector<OpId, char> done(static_cast<size_t>(n), 0);
  for (OpId v : g.topo_) done[v] = 1;
  OpId v{0};
  while (done[v]) ++v;
  IdVector<OpId, int> position(static_cast<size_t>(n), -1);
  std::vector<OpId> walk;
  while (position[v] < 0) {
    position[v] = static_cast<int>(walk.size());
    walk.push_back(v);
    for (OpId p : g.Predecessors(v)) {
      if (!done[p]) {
        v = p;
        break;
      }
    }
  }
  std::vector<OpId> cycle(walk.begin() + position[v], walk.end());
  std::reverse(cycle.begin(), cycle.end());  // predecessors were walked; print in edge order
  std::string text;
  for (OpId c : cycle) text += g.op(c).name + " -> ";
  text += g.op(cycle.front()).name;
  return InvalidInput("graph has a cycle: " + text);
}

StatusOr<Graph> GraphBuilder::Build() {
  DPLACE_RETURN_IF_ERROR(Verify());
  for (TensorId t : tensors_.ids()) {
    const auto [base_op, base_output] = view_bases_[t];
    if (base_op >= 0) tensors_[t].view_of = ops_[base_op].first_output + base_output;
  }
  view_bases_.clear();
  Graph g;
  g.name_ = std::move(name_);
  g.ops_ = std::move(ops_);
  g.tensors_ = std::move(tensors_);
  g.edges_ = std::move(edges_);
  g.groups_ = std::move(groups_);
  const int n = g.num_ops();
  g.op_by_name_.reserve(static_cast<size_t>(n));
  for (OpId i : g.op_ids()) g.op_by_name_.emplace(g.ops_[i].name, i);
  g.first_output_.reserve(static_cast<size_t>(n) + 1);
  for (const Op& op : g.ops_) g.first_output_.push_back(op.first_output);
  g.first_output_.push_back(TensorId(g.num_tensors()));

  std::vector<std::pair<int32_t, OpId>> consumers, preds, succs, members;
  std::vector<std::pair<int32_t, TensorId>> inputs;
  consumers.reserve(g.edges_.size());
  inputs.reserve(g.edges_.size());
  preds.reserve(g.edges_.size());
  succs.reserve(g.edges_.size());
  for (const Edge& e : g.edges_) {
    const TensorId t = g.ops_[e.from].first_output + e.output;
    consumers.emplace_back(t.value(), e.to);
    inputs.emplace_back(e.to.value(), t);
    preds.emplace_back(e.to.value(), e.from);
    succs.emplace_back(e.from.value(), e.to);
  }
  for (OpId i : g.op_ids()) {
    const GroupId grp = g.ops_[i].colocation;
    if (grp != kNoGroup) members.emplace_back(grp.value(), i);
  }
  BuildCsr(g.num_tensors(), std::move(consumers), &g.consumer_offsets_, &g.consumers_);
  BuildCsr(n, std::move(inputs), &g.input_offsets_, &g.inputs_);
  BuildCsr(n, std::move(preds), &g.pred_offsets_, &g.preds_);
  BuildCsr(n, std::move(succs), &g.succ_offsets_, &g.succs_);
  BuildCsr(static_cast<int>(g.groups_.size()), std::move(members), &g.group_offsets_,
           &g.group_members_);

  IdVector<OpId, int32_t> indegree(static_cast<size_t>(n));
  for (OpId i : g.op_ids()) indegree[i] = static_cast<int32_t>(g.Predecessors(i).size());
  std::priority_queue<OpId, std::vector<OpId>, std::greater<>> ready;
  for (OpId i : g.op_ids()) {
    if (indegree[i] == 0) ready.push(i);
  }
  g.topo_.reserve(static_cast<size_t>(n));
  while (!ready.empty()) {
    const OpId v = ready.top();
    ready.pop();
    g.topo_.push_back(v);
    for (OpId s : g.Successors(v)) {
      if (--indegree[s] == 0) ready.push(s);
    }
  }
  DPLACE_RETURN_IF_ERROR(CheckAcyclic(g));
  return g;
}

}  // namespace dplace::graph
