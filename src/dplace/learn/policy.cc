#include "dplace/learn/policy.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "dplace/base/file_util.h"
#include "dplace/base/zip_check.h"
#include "dplace/learn/message_passing.h"

namespace dplace::learn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The kernels of message_passing.h as one autograd node. The DAG's arrays outlive the graph of
// the computation (the environment owns them), so the node keeps pointers to them.
class MessagePassFunction : public torch::autograd::Function<MessagePassFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& w1, const torch::Tensor& b1,
                               const torch::Tensor& w2, const torch::Tensor& b2,
                               const std::vector<int32_t>* offsets,
                               const std::vector<int32_t>* edges, bool reverse) {
    const torch::Tensor hc = h.contiguous();
    torch::Tensor m = torch::empty_like(hc);
    torch::Tensor s = torch::empty_like(hc);
    torch::Tensor pre = torch::empty_like(hc);
    const PassEdges e{offsets, edges, reverse};
    AT_DISPATCH_FLOATING_TYPES(hc.scalar_type(), "MessagePass", [&] {
      PassForward<scalar_t>(e, static_cast<int>(hc.size(0)), hc.data_ptr<scalar_t>(),
                            Weights<scalar_t>(w1, b1, w2, b2), m.data_ptr<scalar_t>(),
                            {s.data_ptr<scalar_t>(), pre.data_ptr<scalar_t>()});
    });
    ctx->save_for_backward({m, s, pre, w1, b1, w2, b2});
    ctx->saved_data["offsets"] = reinterpret_cast<int64_t>(offsets);
    ctx->saved_data["edges"] = reinterpret_cast<int64_t>(edges);
    ctx->saved_data["reverse"] = reverse;
    return m;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& m = saved[0];
    const PassEdges e{
        reinterpret_cast<const std::vector<int32_t>*>(ctx->saved_data["offsets"].toInt()),
        reinterpret_cast<const std::vector<int32_t>*>(ctx->saved_data["edges"].toInt()),
        ctx->saved_data["reverse"].toBool()};
    torch::Tensor grad_m = grad_out[0].contiguous().clone();
    torch::Tensor gh = torch::zeros_like(m), gw1 = torch::zeros_like(saved[3]),
                  gb1 = torch::zeros_like(saved[4]), gw2 = torch::zeros_like(saved[5]),
                  gb2 = torch::zeros_like(saved[6]);
    AT_DISPATCH_FLOATING_TYPES(m.scalar_type(), "MessagePassBackward", [&] {
      PassBackward<scalar_t>(
          e, static_cast<int>(m.size(0)), m.data_ptr<scalar_t>(),
          Weights<scalar_t>(saved[3], saved[4], saved[5], saved[6]),
          {saved[1].data_ptr<scalar_t>(), saved[2].data_ptr<scalar_t>()},
          grad_m.data_ptr<scalar_t>(),
          {gh.data_ptr<scalar_t>(), gw1.data_ptr<scalar_t>(), gb1.data_ptr<scalar_t>(),
           gw2.data_ptr<scalar_t>(), gb2.data_ptr<scalar_t>()});
    });
    return {gh, gw1, gb1, gw2, gb2, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }

 private:
  template <typename T>
  static PassWeights<T> Weights(const torch::Tensor& w1, const torch::Tensor& b1,
                                const torch::Tensor& w2, const torch::Tensor& b2) {
    return {w1.data_ptr<T>(), b1.data_ptr<T>(), w2.data_ptr<T>(), b2.data_ptr<T>(),
            static_cast<int>(w1.size(0))};
  }
};

torch::Tensor Rows(const std::vector<float>& data, int64_t columns) {
  return torch::from_blob(const_cast<float*>(data.data()),
                          {static_cast<int64_t>(data.size()) / columns, columns}, torch::kFloat32);
}

// Mean of the rows `index` of `e`, zeros when there are none.
torch::Tensor MeanOf(const torch::Tensor& e, const std::vector<int32_t>& index) {
  if (index.empty()) return torch::zeros({e.size(1)}, e.options());
  const torch::Tensor i = torch::from_blob(const_cast<int32_t*>(index.data()),
                                           {static_cast<int64_t>(index.size())}, torch::kInt32)
                              .to(torch::kInt64);
  return e.index_select(0, i).mean(0);
}

}  // namespace

torch::Tensor MessagePass(const torch::Tensor& h, const torch::Tensor& w1, const torch::Tensor& b1,
                          const torch::Tensor& w2, const torch::Tensor& b2,
                          const std::vector<int32_t>& offsets, const std::vector<int32_t>& edges,
                          bool reverse) {
  return MessagePassFunction::apply(h, w1.contiguous(), b1.contiguous(), w2.contiguous(),
                                    b2.contiguous(), &offsets, &edges, reverse);
}

PlacetoPolicy::PlacetoPolicy(PolicyShape shape) : shape_(shape) {
  const int64_t k = shape.hidden;
  node_ = register_module("node", torch::nn::Linear(shape.node_features, k));
  summary_ = register_module("summary", torch::nn::Linear(12 * k, k));
  device_ = register_module("device", torch::nn::Linear(k + shape.device_features, k));
  score_ = register_module("score", torch::nn::Linear(k, 1));
  prior_ = register_module("prior", torch::nn::Linear(shape.device_features, 1));
  {
    // Columns of env.cc's device features: current device, busy, peak memory, static memory with
    // the unit, speed, share of input bytes there, of output bytes, of units.
    torch::NoGradGuard no_grad;
    const std::vector<float> w = {3, -1, 0, -2, 1, 2, 1, 0};
    prior_->weight.zero_();
    prior_->bias.zero_();
    for (int64_t i = 0; i < std::min<int64_t>(shape.device_features, 8); ++i) {
      prior_->weight[0][i] = w[static_cast<size_t>(i)];
    }
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(k));
  auto weight = [&](const char* name) {
    return register_parameter(name, torch::randn({k, k}) * scale);
  };
  auto bias = [&](const char* name) { return register_parameter(name, torch::zeros({k})); };
  fw1_ = weight("forward_w1");
  fb1_ = bias("forward_b1");
  fw2_ = weight("forward_w2");
  fb2_ = bias("forward_b2");
  bw1_ = weight("backward_w1");
  bb1_ = bias("backward_b1");
  bw2_ = weight("backward_w2");
  bb2_ = bias("backward_b2");
}

torch::Tensor PlacetoPolicy::Embed(const Observation& obs, const UnitDag& dag) {
  const torch::Tensor x = Rows(obs.nodes, shape_.node_features).to(fw1_.dtype());
  const torch::Tensor h = torch::relu(node_->forward(x));
  const torch::Tensor forward =
      MessagePass(h, fw1_, fb1_, fw2_, fb2_, dag.pred_offsets, dag.preds, false);
  const torch::Tensor backward =
      MessagePass(h, bw1_, bb1_, bw2_, bb2_, dag.succ_offsets, dag.succs, true);
  return torch::cat({h, forward, backward}, 1);
}

torch::Tensor PlacetoPolicy::Logits(const Observation& obs, const UnitDag& dag,
                                    EpisodeState* /*state*/) {
  const torch::Tensor e = Embed(obs, dag);
  const torch::Tensor summary = torch::cat({e[obs.current], MeanOf(e, obs.ancestors),
                                            MeanOf(e, obs.descendants), MeanOf(e, obs.parallel)});
  const torch::Tensor q = torch::relu(summary_->forward(summary));
  const torch::Tensor devices = Rows(obs.devices, shape_.device_features).to(fw1_.dtype());
  const int64_t n = devices.size(0);
  const torch::Tensor u =
      torch::relu(device_->forward(torch::cat({q.expand({n, q.size(0)}), devices}, 1)));
  const torch::Tensor logits = (score_->forward(u) + prior_->forward(devices)).squeeze(1);
  const torch::Tensor allowed =
      torch::from_blob(const_cast<uint8_t*>(obs.allowed.data()), {n}, torch::kUInt8)
          .to(torch::kBool);
  return logits.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
}

torch::Tensor Policy::EpisodeLogits(const std::vector<Observation>& observations,
                                    const std::vector<int32_t>& actions, const UnitDag& dag,
                                    std::vector<int32_t>* hidden, torch::Tensor* hidden_log_prob) {
  const std::unique_ptr<EpisodeState> state =
      Begin(observations.front(), dag, nullptr, hidden, hidden_log_prob);
  std::vector<torch::Tensor> steps;
  for (size_t t = 0; t < observations.size(); ++t) {
    steps.push_back(Logits(observations[t], dag, state.get()));
    Chose(state.get(), observations[t], actions[t]);
  }
  return torch::stack(steps);
}

namespace {
std::recursive_mutex& TorchMutex() {
  static std::recursive_mutex mutex;
  return mutex;
}
}  // namespace

TorchTurn::TorchTurn() : lock_(TorchMutex()), threads_(torch::get_num_threads()) {
  torch::set_num_threads(1);
}

TorchTurn::~TorchTurn() { torch::set_num_threads(threads_); }

std::string TorchErrorLine(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string what = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  std::istringstream lines(what);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos) return line.substr(first);
  }
  return "LibTorch cannot read it";
}

StatusOr<std::shared_ptr<Policy>> MakePolicy(const std::string& kind, PolicyShape shape,
                                             uint64_t seed) {
  if (shape.hidden < 1 || shape.hidden > 1024) {
    return InvalidInput("policy width " + std::to_string(shape.hidden) + " is not 1 to 1024");
  }
  const Method* method = FindMethod(kind);
  if (method == nullptr) {
    return InvalidInput("unknown policy '" + kind + "' (known: " + MethodNames(", ") + ")");
  }
  if (method->groups && shape.groups == 0) shape.groups = 256;
  if (!method->groups) shape.groups = 0;
  if (shape.groups < 0 || shape.groups > 4096) {
    return InvalidInput("policy groups " + std::to_string(shape.groups) + " is not 1 to 4096");
  }
  const std::lock_guard<std::recursive_mutex> lock(TorchMutex());  // the default generator
  torch::manual_seed(seed);
  return method->make(shape);
}

std::shared_ptr<Policy> MakePlacetoPolicy(PolicyShape shape) {
  return std::make_shared<PlacetoPolicy>(shape);
}

std::string MethodNames(std::string_view last_joiner) {
  std::string out;
  for (size_t i = 0; i < std::size(kMethods); ++i) {
    if (i > 0) out += i + 1 == std::size(kMethods) ? std::string(last_joiner) : ", ";
    out += kMethods[i].name;
  }
  return out;
}

namespace {
constexpr const char* kFormat = "dplace-policy/1";
}  // namespace

void WritePolicy(Policy& policy, torch::serialize::OutputArchive* archive,
                 const std::string& training) {
  archive->write("format", c10::IValue(std::string(kFormat)));
  if (!training.empty()) archive->write("training", c10::IValue(training));
  archive->write("kind", c10::IValue(policy.kind()));
  const PolicyShape s = policy.shape();
  archive->write("hidden", c10::IValue(s.hidden));
  archive->write("node_features", c10::IValue(s.node_features));
  archive->write("device_features", c10::IValue(s.device_features));
  if (s.groups > 0) archive->write("groups", c10::IValue(s.groups));
  torch::serialize::OutputArchive weights;
  policy.save(weights);
  archive->write("weights", weights);
}

StatusOr<std::shared_ptr<Policy>> ReadPolicy(torch::serialize::InputArchive& archive,
                                             const std::string& path) {
  auto fail = [&](const std::string& why) { return InvalidInput(path + ": " + why); };
  c10::IValue format, kind, hidden, node_features, device_features;
  if (!archive.try_read("format", format) || !format.isString() ||
      format.toStringRef() != kFormat) {
    return fail(std::string("not a dplace policy (no \"format\": \"") + kFormat + "\")");
  }
  if (!archive.try_read("kind", kind) || !archive.try_read("hidden", hidden) ||
      !archive.try_read("node_features", node_features) ||
      !archive.try_read("device_features", device_features) || !kind.isString() ||
      !hidden.isInt() || !node_features.isInt() || !device_features.isInt()) {
    return fail("policy lacks its kind or shape");
  }
  c10::IValue groups(static_cast<int64_t>(0));
  if (archive.try_read("groups", groups) && !groups.isInt())
    return fail("policy's groups not a number");
  const PolicyShape shape{hidden.toInt(), node_features.toInt(), device_features.toInt(),
                          groups.toInt()};
  if (shape.node_features != kNodeFeatures || shape.device_features != kDeviceFeatures) {
    return fail("policy made for " + std::to_string(shape.node_features) + " node and " +
                std::to_string(shape.device_features) + " device features; this dplace has " +
                std::to_string(kNodeFeatures) + " and " + std::to_string(kDeviceFeatures));
  }
  auto made = MakePolicy(kind.toStringRef(), shape, 0);
  if (!made.ok()) return fail(made.status().message());
  torch::serialize::InputArchive weights;
  if (!archive.try_read("weights", weights)) return fail("policy has no weights");
  const std::string expected = "weights do not fit a " + kind.toStringRef() + " policy of width " +
                               std::to_string(shape.hidden);
  std::vector<std::vector<int64_t>> sizes;  // loading replaces tensors whatever their size
  for (const torch::Tensor& p : (*made)->parameters()) sizes.push_back(p.sizes().vec());
  try {
    (*made)->load(weights);
  } catch (const c10::Error& e) {
    return fail(expected + " (" + TorchErrorLine(e) + ")");
  }
  const auto loaded = (*made)->parameters();
  for (size_t i = 0; i < loaded.size(); ++i) {
    if (loaded[i].sizes().vec() != sizes[i]) return fail(expected);
  }
  if (const int64_t bad = NonFiniteWeights(**made); bad > 0) {
    return fail(std::to_string(bad) +
                " weights are NaN or infinite (trained with too high a rate?)");
  }
  return made;
}

int64_t NonFiniteWeights(Policy& policy) {
  int64_t bad = 0;
  for (const torch::Tensor& p : policy.parameters()) {
    bad += (~torch::isfinite(p)).sum().item<int64_t>();
  }
  return bad;
}

Status SavePolicy(Policy& policy, const std::string& path, const std::string& training) {
  torch::serialize::OutputArchive archive;
  WritePolicy(policy, &archive, training);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return WriteFileAtomically(path, bytes.str());
}

StatusOr<std::shared_ptr<Policy>> LoadPolicy(const std::string& path) {
  std::error_code ec;  // a symbolic-link loop is an error code here, not an exception
  if (!std::filesystem::is_regular_file(path, ec)) {
    return InvalidInput(path + ": no such policy file" + (ec ? " (" + ec.message() + ")" : ""));
  }
  // LibTorch trusts the archive's entries: a damaged one is refused before it parses them.
  DPLACE_ASSIGN_OR_RETURN(const std::string bytes, ReadZipFile(path, "policy file"));
  torch::serialize::InputArchive archive;
  try {
    std::istringstream in(bytes);
    archive.load_from(in);
  } catch (const c10::Error& e) {
    return InvalidInput(path + ": not a policy archive (" + TorchErrorLine(e) + ")");
  } catch (const std::exception& e) {  // TorchScript's parser (torch::jit::ErrorReport)
    return InvalidInput(path + ": damaged policy file (" + TorchErrorLine(e) + ")");
  }
  // Entries are parsed as they are read: what the integrity check cannot see still ends here.
  try {
    return ReadPolicy(archive, path);
  } catch (const std::exception& e) {
    return InvalidInput(path + ": damaged policy file (" + TorchErrorLine(e) + ")");
  }
}

std::string PolicyTrainingNote(const std::string& path) {
  const auto bytes = ReadZipFile(path, "policy file");
  if (!bytes.ok()) return "";
  try {
    torch::serialize::InputArchive archive;
    std::istringstream in(*bytes);
    archive.load_from(in);
    c10::IValue note;
    if (archive.try_read("training", note) && note.isString()) return note.toStringRef();
  } catch (const std::exception&) {  // c10::Error and TorchScript's parser alike
  }
  return "";
}

torch::Tensor FlatGradients(Policy& policy) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& p : policy.parameters()) {
    parts.push_back(p.grad().defined() ? p.grad().reshape({-1})
                                       : torch::zeros({p.numel()}, p.options()));
  }
  return torch::cat(parts);
}

void SetGradients(Policy& policy, const torch::Tensor& flat) {
  int64_t at = 0;
  for (torch::Tensor& p : policy.parameters()) {
    const torch::Tensor part = flat.slice(0, at, at + p.numel()).view_as(p);
    if (p.grad().defined()) {
      p.mutable_grad().copy_(part);
    } else {
      p.mutable_grad() = part.clone();
    }
    at += p.numel();
  }
}

}  // namespace dplace::learn
