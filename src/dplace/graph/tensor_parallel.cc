#include "dplace/graph/tensor_parallel.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "dplace/graph/modules.h"

namespace dplace::graph {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The words of `text`, split at spaces.
std::set<std::string> Words(std::string_view text) {
  std::set<std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find(' ', at), text.size());
    if (end > at) out.emplace(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// The type as the tables below name it: lower case, without "aten::" and leading underscores
// (dplace.torch's "_softmax", "_unsafe_view").
std::string Plain(std::string_view type) {
  std::string t = Lower(type);
  if (t.rfind("aten::", 0) == 0) t = t.substr(6);
  const size_t first = t.find_first_not_of('_');
  return first == std::string::npos ? t : t.substr(first);
}

// A matrix product, also as a module or its fused form: torch's Linear and addmm, Hugging Face's
// Conv1D (GPT-2's linears; not torch's Conv1d).
bool Product(std::string_view type) {
  return IsMatrixProduct(type) || type == "Conv1D" || Plain(type) == "linear" ||
         Plain(type) == "addmm";
}

// Ops that work on a shard of their input as on the whole: elementwise ops (and a bias of the
// shard's width), views and copies, indexing, dropout, masking, softmax over a shard's rows, a
// product of two shards. Types as ONNX, torch.fx (dplace.torch) and aten name them.
bool Shardable(std::string_view type) {
  static const std::set<std::string> kTypes = Words(
      "add sub mul div truediv pow sqrt reciprocal erf tanh gelu geluactivation "
      "newgeluactivation relu sigmoid silu neg exp cast to float half bfloat16 type_as "
      "dropout native_dropout where masked_fill softmax reshape view unsafe_view "
      "reshape_alias flatten unflatten transpose permute squeeze unsqueeze identity "
      "alias clone contiguous expand split chunk slice getitem cat concat stack");
  return kTypes.count(Plain(type)) > 0 || Product(type);
}

class Finder {
 public:
  explicit Finder(const Graph& g) : g_(g) {}

  std::vector<TensorParallelBlock> Run() {
    // Each column candidate's row product and the ops between.
    std::map<OpId, std::vector<std::pair<OpId, std::set<OpId>>>> by_row;
    for (OpId c : g_.op_ids()) {
      if (!Weighted(c) || ActivationInputs(c).empty()) continue;
      std::set<OpId> region;
      if (auto row = RowOf(c, region)) by_row[*row].emplace_back(c, std::move(region));
    }
    // A product is in one block at most: where a row is also the next pair's column (a chain of
    // linears), the first pair is kept.
    std::vector<TensorParallelBlock> out;
    std::set<OpId> taken;
    for (auto& [row, reached] : by_row) {
      auto block = BlockOf(row, reached);
      if (!block || std::any_of(block->ops.begin(), block->ops.end(),
                                [&](OpId o) { return taken.count(o) > 0; }))
        continue;
      taken.insert(block->ops.begin(), block->ops.end());
      out.push_back(std::move(*block));
    }
    return out;
  }

 private:
  bool Forward(OpId op) const { return g_.op(op).kind == OpKind::kForward; }
  // An op that holds a parameter and passes it on, reading nothing (a transposed weight).
  bool WeightOp(OpId op) const {
    static const std::set<std::string> kCopies =
        Words("transpose t permute identity cast reshape view contiguous parameter");
    if (!Forward(op) || g_.op(op).param_bytes <= 0 || !kCopies.count(Plain(g_.op(op).type)))
      return false;
    const auto preds = g_.Predecessors(op);
    return std::none_of(preds.begin(), preds.end(), [&](OpId p) { return Forward(p); });
  }
  double WeightBytes(OpId op) const {
    double bytes = g_.op(op).param_bytes;
    for (OpId p : g_.Predecessors(op)) {
      if (WeightOp(p)) bytes += g_.op(p).param_bytes;
    }
    return bytes;
  }
  bool Weighted(OpId op) const {
    return Forward(op) && Product(g_.op(op).type) && WeightBytes(op) > 0;
  }
  std::vector<TensorId> ActivationInputs(OpId op) const {
    std::vector<TensorId> out;
    for (TensorId t : g_.Inputs(op)) {
      const OpId p = g_.tensor(t).producer;
      if (Forward(p) && !WeightOp(p)) out.push_back(t);
    }
    return out;
  }
  std::vector<OpId> ForwardConsumers(OpId op) const {
    std::vector<OpId> out;
    for (OpId s : g_.Successors(op)) {
      if (Forward(s)) out.push_back(s);
    }
    return out;
  }

  // The one weighted product column `c`'s shard reaches, through shardable ops (into `region`);
  // nullopt where it reaches another op, several products or the graph's end.
  std::optional<OpId> RowOf(OpId c, std::set<OpId>& region) const {
    std::set<OpId> rows;
    std::vector<OpId> stack = ForwardConsumers(c);
    if (stack.empty()) return std::nullopt;
    while (!stack.empty()) {
      const OpId o = stack.back();
      stack.pop_back();
      if (region.count(o) || rows.count(o)) continue;
      if (Weighted(o)) {
        rows.insert(o);
        continue;
      }
      if (!Shardable(g_.op(o).type) || region.size() > 64) return std::nullopt;
      region.insert(o);
      const std::vector<OpId> next = ForwardConsumers(o);
      if (next.empty()) return std::nullopt;  // a shard would leave the graph
      stack.insert(stack.end(), next.begin(), next.end());
    }
    if (rows.size() != 1) return std::nullopt;
    return *rows.begin();
  }

  std::optional<TensorParallelBlock> BlockOf(
      OpId row, const std::vector<std::pair<OpId, std::set<OpId>>>& reached) const {
    std::set<OpId> sharded, columns;
    for (const auto& [c, region] : reached) {
      columns.insert(c);
      sharded.insert(c);
      sharded.insert(region.begin(), region.end());
    }
    // The row reads shards only; an op between reads shards and, besides, only what is smaller
    // than its shards (a broadcast mask, a scale; not for a product) or a weight of its own (a
    // bias).
    for (TensorId t : ActivationInputs(row)) {
      if (!sharded.count(g_.tensor(t).producer)) return std::nullopt;
    }
    for (OpId o : sharded) {
      if (columns.count(o)) continue;
      double least_shard = -1;
      for (TensorId t : g_.Inputs(o)) {
        if (sharded.count(g_.tensor(t).producer)) {
          const double b = g_.tensor(t).bytes;
          least_shard = least_shard < 0 ? b : std::min(least_shard, b);
        }
      }
      // A product of two tensors takes shards only (a shard times a whole tensor is no shard).
      const bool product = Product(g_.op(o).type);
      for (TensorId t : ActivationInputs(o)) {
        if (!sharded.count(g_.tensor(t).producer) &&
            (product || !(g_.tensor(t).bytes < least_shard)))
          return std::nullopt;
      }
    }
    TensorParallelBlock b;
    b.row = row;
    b.columns.assign(columns.begin(), columns.end());
    std::set<OpId> ops = sharded;
    ops.insert(row);
    std::set<TensorId> inputs;
    for (OpId o : std::vector<OpId>(ops.begin(), ops.end())) {
      if (!columns.count(o) && o != row) continue;
      for (OpId p : g_.Predecessors(o)) {
        if (WeightOp(p)) ops.insert(p);
      }
    }
    for (OpId c : columns) {
      for (TensorId t : ActivationInputs(c)) inputs.insert(t);
    }
    b.ops.assign(ops.begin(), ops.end());
    for (TensorId t : inputs) b.backward_reduce_bytes += g_.tensor(t).bytes;
    b.forward_reduce_bytes = g_.tensor(g_.FirstOutput(row)).bytes;
    for (OpId o : sharded) {
      if (Plain(g_.op(o).type) == "softmax") b.attention = true;
    }
    b.ways = Ways(b, sharded);
    if (b.ways <= 0) return std::nullopt;
    const std::string module = OpModule(g_.op(row));
    const std::string parent = ParentModule(module);
    b.module = !parent.empty() ? parent : !module.empty() ? module : g_.op(row).name;
    return b;
  }

  // A product's rows M and element bytes e from its input, weight and output bytes and FLOPs
  // (2 M K N): e^3 = in * weight * out / (M K N)^2, M = in * out / (M K N e^2).
  struct Dims {
    double rows = 0, width = 0, element_bytes = 0;
  };
  std::optional<Dims> DimsOf(OpId c) const {
    double in = 0;
    for (TensorId t : ActivationInputs(c)) in += g_.tensor(t).bytes;
    const double w = WeightBytes(c), out = g_.tensor(g_.FirstOutput(c)).bytes;
    const double mkn = g_.op(c).flops / 2;
    if (in <= 0 || w <= 0 || out <= 0 || mkn <= 0) return std::nullopt;
    const double e = std::cbrt(in * w * out / (mkn * mkn));
    const double rounded = std::exp2(std::round(std::log2(e)));
    if (std::abs(e / rounded - 1) > 0.03 || rounded < 1 || rounded > 8) return std::nullopt;
    const double rows = in * out / (mkn * rounded * rounded);
    return Dims{.rows = rows, .width = out / (rows * rounded), .element_bytes = rounded};
  }

  static std::optional<int64_t> Whole(double x) {
    const double r = std::round(x);
    if (r < 1 || std::abs(x - r) > 0.02 * r) return std::nullopt;
    return static_cast<int64_t>(r);
  }

  // What t must divide: every column's width; for attention its heads (from the product that
  // makes the scores: S * A / (b h s s' d) = M e^2 h for each input A, S the scores' bytes) and
  // each column's heads (its width over the head size).
  int64_t Ways(const TensorParallelBlock& b, const std::set<OpId>& sharded) const {
    const auto dims = DimsOf(b.columns.front());
    if (!dims) return 0;
    int64_t ways = 0;
    std::vector<double> widths;
    for (OpId c : b.columns) {
      const auto d = DimsOf(c);
      if (!d) return 0;
      widths.push_back(d->width);
    }
    if (!b.attention) {
      for (double w : widths) {
        const auto n = Whole(w);
        if (!n) return 0;
        ways = std::gcd(ways, *n);
      }
      return ways;
    }
    // Back from the softmax along its widest input to the product that makes the scores.
    OpId at{-1};
    for (OpId o : sharded) {
      if (Plain(g_.op(o).type) == "softmax") at = o;
    }
    for (int step = 0; step < 8 && at >= 0 && !Product(g_.op(at).type); ++step) {
      OpId widest{-1};
      double bytes = -1;
      for (TensorId t : g_.Inputs(at)) {
        const OpId p = g_.tensor(t).producer;
        if (sharded.count(p) && g_.tensor(t).bytes > bytes) {
          widest = p;
          bytes = g_.tensor(t).bytes;
        }
      }
      at = widest;
    }
    if (at < 0 || !Product(g_.op(at).type) || g_.op(at).flops <= 0) return 0;
    const double scores = g_.tensor(g_.FirstOutput(at)).bytes;
    const double e2 = dims->element_bytes * dims->element_bytes;
    std::optional<int64_t> heads;
    double operand = 0;
    for (TensorId t : ActivationInputs(at)) {
      const auto h = Whole(scores * g_.tensor(t).bytes / (g_.op(at).flops / 2 * dims->rows * e2));
      if (!h || (heads && *heads != *h)) return 0;
      heads = h;
      operand = g_.tensor(t).bytes;
    }
    if (!heads) return 0;
    ways = *heads;
    const double head_size = operand / (dims->rows * dims->element_bytes * *heads);
    for (double w : widths) {
      const auto n = Whole(w / head_size);
      if (!n) return 0;
      ways = std::gcd(ways, *n);
    }
    return ways;
  }

  const Graph& g_;
};

}  // namespace

std::vector<TensorParallelBlock> FindTensorParallelBlocks(const Graph& g) {
  return Finder(g).Run();
}

double SavedShare(const Graph& g, const std::vector<char>& ops) {
  double kept = 0, of_ops = 0;
  for (OpId o : g.op_ids()) {
    if (g.op(o).kind != OpKind::kForward) continue;
    for (TensorId t = g.FirstOutput(o); t < g.FirstOutput(o + 1); ++t) {
      if (g.tensor(t).view) continue;
      const auto consumers = g.Consumers(t);
      if (std::none_of(consumers.begin(), consumers.end(),
                       [&](OpId c) { return g.op(c).kind == OpKind::kBackward; }))
        continue;
      kept += g.tensor(t).bytes;
      if (ops[o.index()]) of_ops += g.tensor(t).bytes;
    }
  }
  return kept > 0 ? of_ops / kept : 0;
}

}  // namespace dplace::graph
