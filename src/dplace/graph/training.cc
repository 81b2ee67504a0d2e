#include "dplace/graph/training.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "dplace/graph/graph_builder.h"

namespace dplace::graph {
namespace {

constexpr double kUpdateFlopsPerParameter = 10;     // Adam: moments, bias correction, step
constexpr double kUpdateBytesPerParameterByte = 7;  // read w, g, m, v; write w, m, v

// Whether backward keeps something of the op's insides on some device kind.
bool KeepsInsides(const Op& op) { return op.saved_bytes > 0 || op.saved_bytes_cpu > 0; }

}  // namespace

double BackwardFactor(const Op& forward) {
  if (forward.backward_factor >= 0) return forward.backward_factor;
  return forward.param_bytes > 0 ? 2 : 1;
}

StatusOr<Graph> ExpandTraining(const Graph& g, const TrainingOptions& options) {
  for (const Op& op : g.ops()) {
    if (op.kind != OpKind::kForward) {
      return InvalidInput("graph '" + g.name() + "' already has " +
                          std::string(OpKindName(op.kind)) + " ops (op '" + op.name + "')");
    }
  }
  GraphBuilder b(g.name());
  for (const std::string& group : g.groups()) b.Group(group);
  const int n = g.num_ops();
  // Forward ops as they are; each in a co-location group when colocating.
  IdVector<OpId, GroupId> group_of(static_cast<size_t>(n), kNoGroup);
  for (OpId f : g.op_ids()) {
    Op op = g.op(f);
    if (options.colocate && op.colocation == kNoGroup) op.colocation = b.Group("train:" + op.name);
    group_of[f] = op.colocation;
    std::vector<TensorSpec> outputs;
    for (TensorId t = g.FirstOutput(f); t < g.FirstOutput(f + 1); ++t)
      outputs.push_back(SpecOf(g, t));
    // What backward keeps of the op's insides: one more output, consumed by f/grad only.
    if (KeepsInsides(op))
      outputs.push_back({.bytes = op.saved_bytes, .cpu_bytes = op.saved_bytes_cpu});
    op.saved_bytes = 0;
    op.saved_bytes_cpu = -1;
    b.AddOp(std::move(op), std::move(outputs));
  }
  for (const Edge& e : g.edges()) b.AddEdge(e.from, e.output, e.to, e.saved);
  // Backward ops: output k is the gradient of the op's k-th distinct input tensor; a last output
  // carries the weight gradient to the update op.
  IdVector<OpId, OpId> grad_of(static_cast<size_t>(n));
  IdVector<OpId, std::map<TensorId, int>> grad_output(static_cast<size_t>(n));
  for (OpId f : g.op_ids()) {
    const Op& fwd = g.op(f);
    const bool has_params = fwd.param_bytes > 0;
    const double factor = BackwardFactor(fwd);
    Op op;
    op.name = fwd.name + "/grad";
    op.type = fwd.type.empty() ? "Grad" : fwd.type + "Grad";
    op.kind = OpKind::kBackward;
    op.flops = factor * fwd.flops;
    op.bytes_accessed = factor * fwd.bytes_accessed;
    op.param_bytes = fwd.param_bytes;  // the weight gradient, held for the step
    op.scratch_bytes = fwd.scratch_bytes;
    op.saves_output = false;
    op.weight_gradient_share = has_params && factor > 0 ? std::min(1.0, 1 / factor) : 0;
    for (const auto& [kind, seconds] : fwd.time_s) op.time_s.emplace_back(kind, factor * seconds);
    op.device_kinds = fwd.device_kinds;
    op.colocation = options.colocate ? group_of[f] : kNoGroup;
    std::vector<TensorSpec> outputs;
    for (TensorId t : g.Inputs(f)) {
      grad_output[f][t] = static_cast<int>(outputs.size());
      outputs.push_back({g.tensor(t).bytes, g.tensor(t).transfer_time_s});
    }
    if (has_params) outputs.push_back({fwd.param_bytes, -1});
    grad_of[f] = b.AddOp(std::move(op), std::move(outputs));
    // The op's own output, where its backward keeps it; an op nothing consumes (the loss) gets
    // no gradient from a consumer, and the edge orders its backward op after it.
    if (fwd.saves_output || g.Successors(f).empty()) b.AddEdge(f, 0, grad_of[f]);
    if (KeepsInsides(fwd)) b.AddEdge(f, fwd.num_outputs, grad_of[f]);
  }
  for (const Edge& e : g.edges()) {
    const TensorId t = g.FirstOutput(e.from) + e.output;
    if (e.saved) b.AddEdge(e.from, e.output, grad_of[e.to]);  // activation kept
    b.AddEdge(grad_of[e.to], grad_output[e.to][t],
              grad_of[e.from]);  // its gradient, in reverse
  }
  // Optimiser updates.
  for (OpId f : g.op_ids()) {
    const Op& fwd = g.op(f);
    if (fwd.param_bytes <= 0) continue;
    Op op;
    op.name = fwd.name + "/update";
    op.type = "Update";
    op.kind = OpKind::kUpdate;
    op.flops = kUpdateFlopsPerParameter * fwd.param_bytes / 4;  // float32 parameters
    op.bytes_accessed = kUpdateBytesPerParameterByte * fwd.param_bytes;
    op.param_bytes = options.optimizer_state_factor * fwd.param_bytes;
    op.device_kinds = fwd.device_kinds;
    op.colocation = options.colocate ? group_of[f] : kNoGroup;
    const OpId update = b.AddOp(std::move(op));
    b.AddEdge(grad_of[f], static_cast<int32_t>(grad_output[f].size()), update);
  }
  return b.Build();
}

}  // namespace dplace::graph

namespace dplace::graph {

double SavedActivationBytes(const Graph& forward, bool on_cpu) {
  IdVector<TensorId, char> kept(forward.tensors().size(), 0);
  const bool expanded = std::any_of(forward.ops().begin(), forward.ops().end(),
                                    [](const Op& op) { return op.kind != OpKind::kForward; });
  if (expanded) {
    // A training step: what its forward ops send to backward ops, less a model output sent to
    // its own backward op only to order it (ExpandTraining).
    for (const Edge& e : forward.edges()) {
      const Op& from = forward.op(e.from);
      const Op& to = forward.op(e.to);
      if (from.kind != OpKind::kForward || to.kind != OpKind::kBackward) continue;
      if (e.output == 0 && to.name == from.name + "/grad") {
        const auto succ = forward.Successors(e.from);
        const bool output = std::none_of(succ.begin(), succ.end(), [&](OpId s) {
          return forward.op(s).kind == OpKind::kForward;
        });
        if (!from.saves_output || output) continue;
      }
      const TensorId t = forward.StorageOf(forward.FirstOutput(e.from) + e.output);
      if (t >= 0) kept[t] = 1;
    }
    double bytes = 0;
    for (TensorId t : forward.tensor_ids()) {
      if (kept[t]) bytes += forward.tensor(t).BytesOn(on_cpu);
    }
    return bytes;
  }
  for (const Edge& e : forward.edges()) {
    if (!e.saved) continue;
    const TensorId t = forward.StorageOf(forward.FirstOutput(e.from) + e.output);
    if (t >= 0) kept[t] = 1;
  }
  for (OpId op : forward.op_ids()) {
    if (!forward.op(op).saves_output || forward.Successors(op).empty()) continue;
    const TensorId t = forward.StorageOf(forward.FirstOutput(op));
    if (t >= 0) kept[t] = 1;
  }
  double bytes = 0;
  for (TensorId t : forward.tensor_ids()) {
    if (kept[t]) bytes += forward.tensor(t).bytes;
  }
  for (const Op& op : forward.ops())
    bytes += on_cpu && op.saved_bytes_cpu >= 0 ? op.saved_bytes_cpu : op.saved_bytes;
  return bytes;
}

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<char> AttentionCoreOps(const Graph& g) {
  std::vector<char> core(static_cast<size_t>(g.num_ops()), 0);
  auto forward = [&](OpId op) { return g.op(op).kind == OpKind::kForward; };
  for (OpId s : g.op_ids()) {
    if (!forward(s) || Lower(g.op(s).type).find("softmax") == std::string::npos) continue;
    // Back along the scores to the product that makes them, a few elementwise steps at most; a
    // softmax that no product feeds so (a classifier's) is no attention.
    std::vector<OpId> chain{s};
    bool product = false;
    for (OpId at = s; !product && chain.size() < 9;) {
      OpId widest{-1};
      double bytes = -1;
      for (TensorId t : g.Inputs(at)) {
        const OpId producer = g.tensor(t).producer;
        if (forward(producer) && g.tensor(t).bytes > bytes) {
          widest = producer;
          bytes = g.tensor(t).bytes;
        }
      }
      if (widest < 0) break;
      chain.push_back(widest);
      product = IsMatrixProduct(g.op(widest).type);
      at = widest;
    }
    if (!product) continue;
    for (OpId o : chain) core[o.index()] = 1;
    for (OpId c : g.Successors(s)) {
      if (forward(c) && Lower(g.op(c).type).find("dropout") != std::string::npos) {
        core[c.index()] = 1;
      }
    }
  }
  return core;
}

}  // namespace dplace::graph
