#include "dplace/graph/families.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

#include "dplace/base/hash.h"
#include "dplace/base/rng.h"
#include "dplace/graph/graph_builder.h"

namespace dplace::graph {
namespace {

constexpr double kFloat = 4;  // bytes per element (fp32)

// A family's parameters: each drawn from its distribution unless overridden.
class Params {
 public:
  Params(Rng& rng, const FamilyOverrides& overrides) : rng_(rng), overrides_(overrides) {}

  // An integer uniform in [lo, hi]; an override must be an integer in [min, max].
  int Int(const std::string& key, int lo, int hi, int min, int max) {
    const int drawn =
        lo +
        static_cast<int>(rng_.Below(static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1));
    return static_cast<int>(Take(key, drawn, min, max, /*integer=*/true));
  }
  // One of `choices`, uniformly; an override must be an integer in [min, max].
  int Choice(const std::string& key, std::initializer_list<int> choices, int min, int max) {
    const int drawn = *(choices.begin() + static_cast<long>(rng_.Below(choices.size())));
    return static_cast<int>(Take(key, drawn, min, max, /*integer=*/true));
  }
  // Log-uniform in [lo, hi].
  double LogUniform(const std::string& key, double lo, double hi, double min, double max) {
    const double drawn = lo * std::pow(hi / lo, rng_.Uniform());
    return Take(key, drawn, min, max);
  }

  // The first bad override (unknown key or out of range), or OK.
  Status Check(std::string_view family) const {
    for (const auto& [key, value] : overrides_) {
      if (!read_.contains(key)) {
        return InvalidInput("family " + std::string(family) + " has no parameter '" + key + "'");
      }
    }
    return bad_.empty() ? OkStatus() : InvalidInput(bad_);
  }

 private:
  // The override of `key`, or `drawn`. A bad override (out of range, NaN, not an integer where
  // one is needed) is reported by Check; the graph is built with `drawn` meanwhile, so that a
  // bad value never sizes anything.
  double Take(const std::string& key, double drawn, double min, double max, bool integer = false) {
    read_.insert(key);
    const auto it = overrides_.find(key);
    if (it == overrides_.end()) return drawn;
    const double v = it->second;
    if (v >= min && v <= max && (!integer || v == std::floor(v))) return v;
    if (bad_.empty()) {
      bad_ = "parameter '" + key + "' must be " + (integer ? "an integer" : "a number") + " in [" +
             FormatNumber(min) + ", " + FormatNumber(max) + "], not " + FormatNumber(v);
    }
    return drawn;
  }
  static std::string FormatNumber(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
  }

  Rng& rng_;
  const FamilyOverrides& overrides_;
  std::set<std::string> read_;
  std::string bad_;
};

// A graph under construction: ops reading output 0 of other ops, each making one tensor.
class Net {
 public:
  explicit Net(std::string name) : b_(std::move(name)) {}

  OpId Add(const std::string& name, const std::string& type, double flops, double param_bytes,
           double out_bytes, const std::vector<OpId>& inputs) {
    Op op;
    op.name = name;
    op.type = type;
    op.flops = flops;
    op.param_bytes = param_bytes;
    double in = 0;
    for (OpId i : inputs) in += bytes_[i];
    op.bytes_accessed = in + out_bytes + param_bytes;
    const OpId id = b_.AddOp(std::move(op), {{.bytes = out_bytes}});
    bytes_.push_back(out_bytes);
    std::vector<OpId> seen;
    for (OpId i : inputs) {
      if (std::find(seen.begin(), seen.end(), i) != seen.end()) continue;
      seen.push_back(i);
      b_.AddEdge(i, 0, id);
    }
    return id;
  }
  // A variable: it holds `bytes` of weights, and its output aliases them (a read allocates nothing
  // on its own device; a copy to another device is real).
  OpId Variable(const std::string& name, double bytes) {
    Op op;
    op.name = name;
    op.type = "Variable";
    op.param_bytes = bytes;
    op.parameters = {name};
    const OpId id = b_.AddOp(std::move(op), {{.bytes = bytes, .view = true}});
    bytes_.push_back(bytes);
    return id;
  }

  StatusOr<Graph> Build() { return b_.Build(); }

 private:
  GraphBuilder b_;
  IdVector<OpId, double> bytes_;
};

// ---- Convolutional cells (ENAS micro, NASNet-A) ----

// A feature map: the op that makes it, channels, height (= width).
struct Map {
  OpId op;
  int channels;
  int size;
};

enum class CellOp { kSep3, kSep5, kSep7, kAvg3, kMax3, kIdentity, kConv17 };
constexpr std::array<std::string_view, 7> kCellOpNames = {"sep3", "sep5", "sep7", "avg3",
                                                          "max3", "id",   "conv7"};

// Per node: the two states it reads (0, 1: the cell's inputs; 2...: earlier nodes) and the
// operation on each.
struct CellSpec {
  std::vector<std::array<int, 2>> inputs;
  std::vector<std::array<CellOp, 2>> ops;
};

CellSpec SampleCell(Rng& rng, int nodes, const std::vector<CellOp>& menu) {
  CellSpec c;
  for (int n = 0; n < nodes; ++n) {
    std::array<int, 2> in{};
    std::array<CellOp, 2> op{};
    for (int k = 0; k < 2; ++k) {
      in[static_cast<size_t>(k)] = static_cast<int>(rng.Below(static_cast<uint64_t>(n) + 2));
      op[static_cast<size_t>(k)] = menu[rng.Below(menu.size())];
    }
    c.inputs.push_back(in);
    c.ops.push_back(op);
  }
  return c;
}

class CellNet {
 public:
  CellNet(Net& net, int batch, int sep_repeats) : net_(net), batch_(batch), repeats_(sep_repeats) {}

  double Elements(int channels, int size) const {
    return static_cast<double>(batch_) * channels * size * size;
  }
  // ReLU, k x k convolution (stride 1 or 2) to `out` channels, batch norm.
  Map ReluConvBn(const std::string& name, Map x, int out, int k, int stride) {
    const int size = std::max(1, x.size / stride);
    const double e_in = Elements(x.channels, x.size), e_out = Elements(out, size);
    const OpId r = net_.Add(name + "/relu", "Relu", e_in, 0, kFloat * e_in, {x.op});
    const OpId c = net_.Add(name + "/conv", "Conv", 2.0 * e_out * x.channels * k * k,
                            kFloat * x.channels * out * k * k, kFloat * e_out, {r});
    const OpId b = net_.Add(name + "/bn", "BatchNormalization", 4 * e_out, kFloat * 4 * out,
                            kFloat * e_out, {c});
    return {b, out, size};
  }
  // ReLU, depthwise k x k, pointwise 1 x 1, batch norm; `repeats_` times (the first strided).
  Map SepConv(const std::string& name, Map x, int k, int stride) {
    for (int r = 0; r < repeats_; ++r) {
      const std::string n = name + "/" + std::to_string(r);
      const int size = std::max(1, x.size / (r == 0 ? stride : 1));
      const double e_in = Elements(x.channels, x.size), e_out = Elements(x.channels, size);
      const OpId relu = net_.Add(n + "/relu", "Relu", e_in, 0, kFloat * e_in, {x.op});
      const OpId dw = net_.Add(n + "/depthwise", "Conv", 2.0 * e_out * k * k,
                               kFloat * x.channels * k * k, kFloat * e_out, {relu});
      const OpId pw = net_.Add(n + "/pointwise", "Conv", 2.0 * e_out * x.channels,
                               kFloat * x.channels * x.channels, kFloat * e_out, {dw});
      const OpId bn = net_.Add(n + "/bn", "BatchNormalization", 4 * e_out, kFloat * 4 * x.channels,
                               kFloat * e_out, {pw});
      x = {bn, x.channels, size};
    }
    return x;
  }
  Map Apply(const std::string& name, CellOp op, Map x, int stride) {
    switch (op) {
      case CellOp::kSep3:
        return SepConv(name, x, 3, stride);
      case CellOp::kSep5:
        return SepConv(name, x, 5, stride);
      case CellOp::kSep7:
        return SepConv(name, x, 7, stride);
      case CellOp::kAvg3:
      case CellOp::kMax3: {
        const int size = std::max(1, x.size / stride);
        const double e_out = Elements(x.channels, size);
        const OpId p = net_.Add(name, op == CellOp::kAvg3 ? "AveragePool" : "MaxPool", 9 * e_out, 0,
                                kFloat * e_out, {x.op});
        return {p, x.channels, size};
      }
      case CellOp::kIdentity:
        // A strided identity is a factorized reduction: a strided 1 x 1 convolution.
        return stride == 1 ? x : ReluConvBn(name, x, x.channels, 1, stride);
      case CellOp::kConv17: {
        const Map a = ReluConvBn(name + "/1x7", x, x.channels, 1, stride);
        return ReluConvBn(name + "/7x1", a, x.channels, 1, 1);
      }
    }
    return x;
  }

  // A cell: both inputs brought to `channels` at the resolution of `prev` (halved in a reduction
  // cell, whose operations on the inputs stride 2), its nodes, and the concatenation of the nodes
  // no other node reads.
  Map Cell(const std::string& name, const CellSpec& spec, Map prev_prev, Map prev, int channels,
           bool reduce) {
    const int pp_stride = prev_prev.size > prev.size ? 2 : 1;
    std::vector<Map> states = {ReluConvBn(name + "/in0", prev_prev, channels, 1, pp_stride),
                               ReluConvBn(name + "/in1", prev, channels, 1, 1)};
    std::vector<char> used(spec.inputs.size() + 2, 0);
    for (size_t n = 0; n < spec.inputs.size(); ++n) {
      std::array<Map, 2> branch{};
      for (size_t k = 0; k < 2; ++k) {
        const int from = spec.inputs[n][k];
        used[static_cast<size_t>(from)] = 1;
        const int stride = reduce && from < 2 ? 2 : 1;
        branch[k] = Apply(name + "/node" + std::to_string(n) + "/" +
                              std::string(kCellOpNames[static_cast<size_t>(spec.ops[n][k])]) + "_" +
                              std::to_string(k),
                          spec.ops[n][k], states[static_cast<size_t>(from)], stride);
      }
      const double e = Elements(channels, branch[0].size);
      const OpId add = net_.Add(name + "/node" + std::to_string(n) + "/add", "Add", e, 0,
                                kFloat * e, {branch[0].op, branch[1].op});
      states.push_back({add, channels, branch[0].size});
    }
    std::vector<OpId> loose;
    int size = states.back().size;
    for (size_t s = 2; s < states.size(); ++s) {
      if (!used[s]) loose.push_back(states[s].op);
    }
    if (loose.size() == 1) return {loose[0], channels, size};
    const int out = channels * static_cast<int>(loose.size());
    const double e = Elements(out, size);
    return {net_.Add(name + "/concat", "Concat", 0, 0, kFloat * e, loose), out, size};
  }

 private:
  Net& net_;
  const int batch_;
  const int repeats_;
};

// Stem, three stacks of `cells` normal cells with a reduction cell between stacks (channels
// doubling there), global pooling and a classifier.
StatusOr<Graph> CellStack(const std::string& name, Params& params, Rng& rng, int image,
                          int stem_reduce, int sep_repeats, const std::vector<CellOp>& menu,
                          std::initializer_list<int> channel_choices, int classes) {
  const int cells = params.Int("cells", 1, 4, 1, 12);
  const int channels = params.Choice("channels", channel_choices, 4, 512);
  const int batch = params.Choice("batch", {32, 64, 128}, 1, 4096);
  const int nodes = params.Int("nodes", 4, 5, 2, 8);
  const CellSpec normal = SampleCell(rng, nodes, menu);
  const CellSpec reduction = SampleCell(rng, nodes, menu);
  Net net(name);
  CellNet c(net, batch, sep_repeats);
  const double e_image = c.Elements(3, image);
  const OpId input = net.Add("input", "Input", 0, 0, kFloat * e_image, {});
  Map stem = c.ReluConvBn("stem", {input, 3, image}, channels, 3, stem_reduce);
  Map prev_prev = stem, prev = stem;
  int ch = channels, index = 0;
  for (int stack = 0; stack < 3; ++stack) {
    if (stack > 0) {
      ch *= 2;
      const Map r = c.Cell("cell" + std::to_string(index++), reduction, prev_prev, prev, ch, true);
      prev_prev = prev;
      prev = r;
    }
    for (int k = 0; k < cells; ++k) {
      const Map m = c.Cell("cell" + std::to_string(index++), normal, prev_prev, prev, ch, false);
      prev_prev = prev;
      prev = m;
    }
  }
  const double e = c.Elements(prev.channels, prev.size);
  const double pooled = static_cast<double>(batch) * prev.channels;
  const OpId pool = net.Add("head/pool", "GlobalAveragePool", e, 0, kFloat * pooled, {prev.op});
  const OpId fc = net.Add("head/fc", "Gemm", 2 * pooled * classes, kFloat * prev.channels * classes,
                          kFloat * batch * classes, {pool});
  net.Add("head/softmax", "Softmax", 5.0 * batch * classes, 0, kFloat * batch * classes, {fc});
  DPLACE_RETURN_IF_ERROR(params.Check(name));
  return net.Build();
}

// ---- Recurrent families ----

// ENAS's recurrent cell: node 0 reads [x_t, h_{t-1}]; node i reads one earlier node; each applies
// a matrix and an activation; h_t is the mean of the nodes no other node reads. Unrolled, with an
// embedding lookup before and a softmax projection after every step.
StatusOr<Graph> EnasRnn(const std::string& name, Params& params, Rng& rng) {
  const int steps = params.Int("steps", 12, 35, 1, 200);
  const int nodes = params.Int("nodes", 4, 12, 2, 24);
  const int hidden = params.Choice("hidden", {200, 400, 650, 1000}, 8, 8192);
  const int batch = params.Choice("batch", {32, 64}, 1, 4096);
  const int vocab = 10000;
  std::vector<int> parent(static_cast<size_t>(nodes), -1);
  std::vector<int> activation(static_cast<size_t>(nodes));  // 0 tanh, 1 relu, 2 sigmoid, 3 id
  std::vector<char> read(static_cast<size_t>(nodes), 0);
  for (int i = 0; i < nodes; ++i) {
    if (i > 0) {
      parent[static_cast<size_t>(i)] = static_cast<int>(rng.Below(static_cast<uint64_t>(i)));
      read[static_cast<size_t>(parent[static_cast<size_t>(i)])] = 1;
    }
    activation[static_cast<size_t>(i)] = static_cast<int>(rng.Below(4));
  }
  constexpr std::array<std::string_view, 4> kActivations = {"Tanh", "Relu", "Sigmoid", ""};
  Net net(name);
  const double h_bytes = kFloat * batch * hidden;
  const OpId embedding = net.Variable("embedding", kFloat * vocab * hidden);
  std::vector<OpId> w;
  for (int i = 0; i < nodes; ++i) {
    w.push_back(net.Variable("w" + std::to_string(i), kFloat * hidden * hidden * (i == 0 ? 2 : 1)));
  }
  const OpId softmax_w = net.Variable("softmax_w", kFloat * hidden * vocab);
  OpId h = net.Add("h_init", "Zeros", 0, 0, h_bytes, {});
  for (int t = 0; t < steps; ++t) {
    const std::string s = "step" + std::to_string(t);
    const OpId x = net.Add(s + "/embed", "Gather", batch * hidden, 0, h_bytes, {embedding});
    const OpId xh = net.Add(s + "/concat", "Concat", 0, 0, 2 * h_bytes, {x, h});
    std::vector<OpId> node(static_cast<size_t>(nodes));
    for (int i = 0; i < nodes; ++i) {
      const auto si = static_cast<size_t>(i);
      const OpId in = i == 0 ? xh : node[static_cast<size_t>(parent[si])];
      const double flops = 2.0 * batch * hidden * hidden * (i == 0 ? 2 : 1);
      OpId y = net.Add(s + "/node" + std::to_string(i) + "/matmul", "MatMul", flops, 0, h_bytes,
                       {in, w[si]});
      if (!kActivations[static_cast<size_t>(activation[si])].empty()) {
        y = net.Add(s + "/node" + std::to_string(i) + "/act",
                    std::string(kActivations[static_cast<size_t>(activation[si])]),
                    static_cast<double>(batch) * hidden, 0, h_bytes, {y});
      }
      node[si] = y;
    }
    std::vector<OpId> loose;
    for (int i = 0; i < nodes; ++i) {
      if (!read[static_cast<size_t>(i)]) loose.push_back(node[static_cast<size_t>(i)]);
    }
    h = net.Add(s + "/mean", "Mean", static_cast<double>(batch) * hidden * loose.size(), 0, h_bytes,
                loose);
    const double logits = kFloat * batch * vocab;
    const OpId proj =
        net.Add(s + "/logits", "MatMul", 2.0 * batch * hidden * vocab, 0, logits, {h, softmax_w});
    net.Add(s + "/softmax", "Softmax", 5.0 * batch * vocab, 0, logits, {proj});
  }
  DPLACE_RETURN_IF_ERROR(params.Check(name));
  return net.Build();
}

// One LSTM step: gates from [x, h] (one matrix), c' = f c + i g, h' = o tanh(c').
struct LstmState {
  OpId h, c;
};
LstmState LstmStep(Net& net, const std::string& s, OpId x, LstmState prev, OpId w, int batch,
                   int hidden) {
  const double e = static_cast<double>(batch) * hidden, b = kFloat * e;
  const OpId xh = net.Add(s + "/concat", "Concat", 0, 0, 2 * b, {x, prev.h});
  const OpId gates = net.Add(s + "/gates", "MatMul", 2.0 * e * 2 * hidden * 4, 0, 4 * b, {xh, w});
  const OpId ifo = net.Add(s + "/sigmoid", "Sigmoid", 3 * e, 0, 3 * b, {gates});
  const OpId g = net.Add(s + "/tanh_g", "Tanh", e, 0, b, {gates});
  const OpId fc = net.Add(s + "/f_c", "Mul", e, 0, b, {ifo, prev.c});
  const OpId ig = net.Add(s + "/i_g", "Mul", e, 0, b, {ifo, g});
  const OpId c = net.Add(s + "/c", "Add", e, 0, b, {fc, ig});
  const OpId tc = net.Add(s + "/tanh_c", "Tanh", e, 0, b, {c});
  const OpId h = net.Add(s + "/h", "Mul", e, 0, b, {ifo, tc});
  return {h, c};
}

// An LSTM encoder over the source, an LSTM decoder over the target with Luong attention over the
// encoder's top layer, and a softmax projection per target step.
StatusOr<Graph> Nmt(const std::string& name, Params& params) {
  const int layers = params.Int("layers", 1, 4, 1, 16);
  const int hidden = params.Choice("hidden", {256, 512, 1024}, 8, 8192);
  const int batch = params.Choice("batch", {32, 64, 128}, 1, 4096);
  const int source = params.Int("source_steps", 8, 30, 1, 200);
  const int target = params.Int("target_steps", 8, 30, 1, 200);
  const int vocab = 32000;
  Net net(name);
  const double e = static_cast<double>(batch) * hidden, b = kFloat * e;
  const OpId src_embedding = net.Variable("encoder/embedding", kFloat * vocab * hidden);
  const OpId tgt_embedding = net.Variable("decoder/embedding", kFloat * vocab * hidden);
  std::vector<OpId> enc_w, dec_w;
  for (int l = 0; l < layers; ++l) {
    enc_w.push_back(
        net.Variable("encoder/lstm" + std::to_string(l), kFloat * 2 * hidden * 4 * hidden));
    dec_w.push_back(
        net.Variable("decoder/lstm" + std::to_string(l), kFloat * 2 * hidden * 4 * hidden));
  }
  const OpId attention_w = net.Variable("decoder/attention", kFloat * 2 * hidden * hidden);
  const OpId out_w = net.Variable("decoder/softmax", kFloat * hidden * vocab);
  const OpId zero = net.Add("state_init", "Zeros", 0, 0, b, {});
  std::vector<LstmState> state(static_cast<size_t>(layers), {zero, zero});
  std::vector<OpId> top;
  for (int t = 0; t < source; ++t) {
    const std::string s = "encoder/step" + std::to_string(t);
    OpId x = net.Add(s + "/embed", "Gather", e, 0, b, {src_embedding});
    for (int l = 0; l < layers; ++l) {
      const auto sl = static_cast<size_t>(l);
      state[sl] =
          LstmStep(net, s + "/layer" + std::to_string(l), x, state[sl], enc_w[sl], batch, hidden);
      x = state[sl].h;
    }
    top.push_back(x);
  }
  const OpId memory = net.Add("encoder/memory", "Concat", 0, 0, b * source, top);
  for (int t = 0; t < target; ++t) {
    const std::string s = "decoder/step" + std::to_string(t);
    OpId x = net.Add(s + "/embed", "Gather", e, 0, b, {tgt_embedding});
    for (int l = 0; l < layers; ++l) {
      const auto sl = static_cast<size_t>(l);
      state[sl] =
          LstmStep(net, s + "/layer" + std::to_string(l), x, state[sl], dec_w[sl], batch, hidden);
      x = state[sl].h;
    }
    const double scores = kFloat * batch * source;
    const OpId score = net.Add(s + "/scores", "MatMul", 2.0 * e * source, 0, scores, {x, memory});
    const OpId align = net.Add(s + "/align", "Softmax", 5.0 * batch * source, 0, scores, {score});
    const OpId context = net.Add(s + "/context", "MatMul", 2.0 * e * source, 0, b, {align, memory});
    const OpId hc = net.Add(s + "/concat", "Concat", 0, 0, 2 * b, {x, context});
    const OpId att =
        net.Add(s + "/attention", "MatMul", 2.0 * e * 2 * hidden, 0, b, {hc, attention_w});
    const OpId att_h = net.Add(s + "/attention_tanh", "Tanh", e, 0, b, {att});
    const double logits = kFloat * batch * vocab;
    const OpId proj = net.Add(s + "/logits", "MatMul", 2.0 * e * vocab, 0, logits, {att_h, out_w});
    net.Add(s + "/softmax", "Softmax", 5.0 * batch * vocab, 0, logits, {proj});
  }
  DPLACE_RETURN_IF_ERROR(params.Check(name));
  return net.Build();
}

// ---- Layered random DAGs ----

StatusOr<Graph> Layered(const std::string& name, Params& params, Rng& rng) {
  // At most 200,000 ops (600,000 as a training step): what a placer's memory budget handles.
  const int ops = static_cast<int>(std::lround(params.LogUniform("ops", 100, 3000, 1, 2e5)));
  const int width = params.Int("width", 4, 64, 1, 1 << 20);
  const int fan_in = params.Int("fan_in", 1, 4, 1, 64);
  const double cost_spread = params.LogUniform("cost_spread", 10, 1000, 1, 1e9);
  const double size_spread = params.LogUniform("size_spread", 10, 1000, 1, 1e9);
  Net net(name);
  std::vector<OpId> previous, layer;
  for (int i = 0; i < ops; ++i) {
    if (static_cast<int>(layer.size()) == width) {
      previous = std::move(layer);
      layer.clear();
    }
    const double flops = 1e8 * std::pow(cost_spread, rng.Uniform());
    const double out = 1e5 * std::pow(size_spread, rng.Uniform());
    const double params_bytes = rng.Uniform() < 0.5 ? out * rng.Uniform() : 0;
    std::vector<OpId> inputs;
    if (!previous.empty()) {
      const int k = 1 + static_cast<int>(rng.Below(static_cast<uint64_t>(fan_in)));
      for (int j = 0; j < k; ++j) inputs.push_back(previous[rng.Below(previous.size())]);
    }
    layer.push_back(
        net.Add("op" + std::to_string(i), "Synthetic", flops, params_bytes, out, inputs));
  }
  DPLACE_RETURN_IF_ERROR(params.Check(name));
  return net.Build();
}

struct Family {
  std::string_view name;
  std::vector<std::pair<std::string_view, std::string_view>> keys;
  std::function<StatusOr<Graph>(const std::string&, Params&, Rng&)> make;
};

const std::vector<Family>& Families() {
  static const std::vector<Family> families = {
      {"enas_cnn",
       {{"cells", "normal cells per stack, uniform 1-4"},
        {"channels", "first stack's channels, one of 16, 20, 24, 32, 36"},
        {"batch", "one of 32, 64, 128"},
        {"nodes", "nodes per cell, uniform 4-5"}},
       [](const std::string& n, Params& p, Rng& rng) {
         using enum CellOp;
         return CellStack(n, p, rng, 32, 1, 1, {kSep3, kSep5, kAvg3, kMax3, kIdentity},
                          {16, 20, 24, 32, 36}, 10);
       }},
      {"enas_rnn",
       {{"steps", "unrolled steps, uniform 12-35"},
        {"nodes", "cell nodes, uniform 4-12"},
        {"hidden", "one of 200, 400, 650, 1000"},
        {"batch", "one of 32, 64"}},
       [](const std::string& n, Params& p, Rng& rng) { return EnasRnn(n, p, rng); }},
      {"nmt",
       {{"layers", "LSTM layers in encoder and decoder, uniform 1-4"},
        {"hidden", "one of 256, 512, 1024"},
        {"batch", "one of 32, 64, 128"},
        {"source_steps", "uniform 8-30"},
        {"target_steps", "uniform 8-30"}},
       [](const std::string& n, Params& p, Rng&) { return Nmt(n, p); }},
      {"nasnet",
       {{"cells", "normal cells per stack, uniform 1-4"},
        {"channels", "first stack's channels, one of 24, 32, 44"},
        {"batch", "one of 32, 64, 128"},
        {"nodes", "blocks per cell, uniform 4-5"}},
       [](const std::string& n, Params& p, Rng& rng) {
         using enum CellOp;
         return CellStack(n, p, rng, 224, 8, 2,
                          {kSep3, kSep5, kSep7, kAvg3, kMax3, kIdentity, kConv17}, {24, 32, 44},
                          1000);
       }},
      {"layered",
       {{"ops", "log-uniform 100-3,000"},
        {"width", "ops per layer, uniform 4-64"},
        {"fan_in", "most inputs per op (each op 1 to fan_in), uniform 1-4"},
        {"cost_spread", "ratio of the largest to the smallest op FLOPs, log-uniform 10-1,000"},
        {"size_spread", "same for output bytes, log-uniform 10-1,000"}},
       [](const std::string& n, Params& p, Rng& rng) { return Layered(n, p, rng); }},
  };
  return families;
}

const Family* FindFamily(std::string_view name) {
  for (const Family& f : Families()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string_view> FamilyNames() {
  std::vector<std::string_view> names;
  for (const Family& f : Families()) names.push_back(f.name);
  return names;
}

std::vector<std::pair<std::string_view, std::string_view>> FamilyKeys(std::string_view family) {
  const Family* f = FindFamily(family);
  return f == nullptr ? std::vector<std::pair<std::string_view, std::string_view>>{} : f->keys;
}

StatusOr<Graph> GenerateGraph(std::string_view family, uint64_t seed, int index,
                              const FamilyOverrides& overrides) {
  const Family* f = FindFamily(family);
  if (f == nullptr) {
    std::string known;
    for (std::string_view n : FamilyNames()) known += (known.empty() ? "" : ", ") + std::string(n);
    return InvalidInput("unknown graph family '" + std::string(family) + "' (known: " + known +
                        ")");
  }
  // One stream per (seed, index), the family's parameters drawn first, then its structure.
  Rng rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(index) * 0xBF58476D1CE4E5B9ull +
          Fnv1a64(family));
  Params params(rng, overrides);
  const std::string name =
      std::string(family) + "_" + std::to_string(seed) + "_" + std::to_string(index);
  return f->make(name, params, rng);
}

}  // namespace dplace::graph
