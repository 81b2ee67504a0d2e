// The operator graph: ops, their output tensors and the edges that consume them.
//
// A Graph is an immutable value built and verified by GraphBuilder (graph_builder.h): ids are
// dense, the graph is acyclic, every cost is finite and non-negative, names are unique. Per-op data
// lives in vectors indexed by OpId; adjacency is stored as CSR arrays so evaluators can walk it
// without allocating. It knows nothing of devices beyond the device-kind strings an op may carry.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dplace/base/strong_id.h"

namespace dplace::graph {

using OpId = Id<struct OpTag>;
using TensorId = Id<struct TensorTag>;
using GroupId = Id<struct GroupTag>;
inline constexpr GroupId kNoGroup{-1};

enum class OpKind : uint8_t { kForward, kBackward, kUpdate };
std::string_view OpKindName(OpKind kind);
std::optional<OpKind> ParseOpKind(std::string_view name);
// True for a matrix product's type (MatMul, Gemm, aten::mm, einsum ...; any case).
bool IsMatrixProduct(std::string_view type);

struct Op {
  std::string name;
  std::string type;  // e.g. "MatMul"; free text
  OpKind kind = OpKind::kForward;
  double flops = 0;           // floating-point operations of one execution
  double bytes_accessed = 0;  // bytes read + written from device memory
  double param_bytes = 0;     // resident for the whole step (weights, gradients, optimiser state)
  double scratch_bytes = 0;   // temporary memory held while the op runs
  // Measured time (seconds) per device kind, e.g. {"gpu", 0.001}; used instead of the roofline.
  std::vector<std::pair<std::string, double>> time_s;
  GroupId colocation = kNoGroup;          // ops of one group must share a device
  std::vector<std::string> device_kinds;  // kinds it may run on; empty = any kind
  int64_t source_id = -1;    // the op's id in the file it came from (the paper's node id), or -1
  TensorId first_output{0};  // set by the builder: outputs are [first_output, +num_outputs)
  int32_t num_outputs = 0;
  // What a training step's backward pass keeps of this op's first output (PyTorch's autograd:
  // ReLU, Sigmoid, Softmax keep their result; most ops do not). Importers that know no better
  // leave it true. The inputs it keeps are marked on the edges (Edge::saved).
  bool saves_output = true;
  // Bytes backward keeps that are no tensor of the graph: what a fused op saves of its insides
  // (max pooling's indices, dropout's mask, an attention module's scores, a norm's statistics).
  // The training expansion gives the op one more output of these bytes, held until its backward.
  double saved_bytes = 0;
  // saved_bytes on a device of kind "cpu", where it differs: PyTorch's CPU dropout keeps the
  // scaled float noise (4 bytes an fp32 element) where CUDA's keeps a one-byte mask. Negative: as
  // saved_bytes. The training expansion gives it to the output it makes (Tensor::cpu_bytes).
  double saved_bytes_cpu = -1;
  // The backward op's work as a multiple of this op's (FLOPs, bytes accessed, measured times), as
  // PyTorch's autograd runs it: a GEMM or convolution runs one backward GEMM per operand that needs
  // a gradient (an activation's input gradient, a weight's gradient wherever the weight comes
  // from), so 2, 1 or 0; another op 1 when an input needs a gradient, else 0. Negative: unknown
  // (importers that cannot tell), taken as 2 for an op with parameters, else 1.
  double backward_factor = -1;
  // A backward op: the share of its work that computes weight gradients (the rest computes the
  // gradients of its inputs). Zero-bubble pipeline schedules run the two apart (pipeline_sim.h).
  // The training expansion sets it: for an op with parameters, one of its backward GEMMs of
  // `backward_factor` (all of its work where no input needs a gradient); else 0.
  double weight_gradient_share = 0;
  // Names of the parameters the op holds, as the model names them (ONNX initializers exported
  // from PyTorch are state_dict keys: "layer1.0.conv1.weight"); empty when the format has none.
  std::vector<std::string> parameters;
  // Names of parameters the op reads that another op holds (a tied weight read a second time: a
  // language model's head reading its token embedding; a shared module called twice). A device
  // map keeps a parameter's readers on its holder's device (TieSharedParameters).
  std::vector<std::string> shared_parameters;

  // Measured time on `device_kind`, or nullopt.
  std::optional<double> MeasuredTime(std::string_view device_kind) const;
  // True when the op may run on a device of this kind.
  bool AllowsKind(std::string_view device_kind) const;
};

struct Tensor {
  OpId producer{0};
  int32_t index = 0;  // output index of the producer
  double bytes = 0;
  // Bytes held on a device of kind "cpu", where they differ (Op::saved_bytes_cpu); negative: as
  // bytes. Transfers move `bytes` of the producer's kind (BytesOn).
  double cpu_bytes = -1;
  // Measured time to move this tensor between two devices (seconds), e.g. the paper's edge cost;
  // negative when not given (the cost model then uses the link's latency and bandwidth).
  double transfer_time_s = -1;
  // A view (PyTorch's reshape, transpose, ...) aliases another tensor's memory: it allocates
  // nothing on its producer's device, and its base (`view_of`, an input of the producer, or -1
  // when the base is outside the graph: a parameter or a model input) stays allocated while the
  // view lives. A copy sent to another device is a real tensor of `bytes`.
  bool view = false;
  TensorId view_of{-1};

  // What the tensor holds on a device of kind "cpu" (`cpu`) or of another kind.
  double BytesOn(bool cpu) const { return cpu && cpu_bytes >= 0 ? cpu_bytes : bytes; }
};

struct Edge {
  OpId from{0};
  int32_t output = 0;
  OpId to{0};
  // Whether `to`'s backward pass keeps this tensor (training expansion); importers that know no
  // better leave it true.
  bool saved = true;
};

class Graph {
 public:
  const std::string& name() const { return name_; }
  int num_ops() const { return static_cast<int>(ops_.size()); }
  int num_tensors() const { return static_cast<int>(tensors_.size()); }
  const IdVector<OpId, Op>& ops() const { return ops_; }
  const Op& op(OpId id) const { return ops_[id]; }
  // Every op id, ascending.
  IdRange<OpId> op_ids() const { return ops_.ids(); }
  const IdVector<TensorId, Tensor>& tensors() const { return tensors_; }
  const Tensor& tensor(TensorId id) const { return tensors_[id]; }
  IdRange<TensorId> tensor_ids() const { return tensors_.ids(); }
  // Edges as given (duplicates of one tensor to one consumer kept).
  const std::vector<Edge>& edges() const { return edges_; }
  // Names of co-location groups, indexed by GroupId.
  const IdVector<GroupId, std::string>& groups() const { return groups_; }
  IdRange<GroupId> group_ids() const { return groups_.ids(); }
  // Ops of each group, indexed by GroupId.
  std::span<const OpId> GroupMembers(GroupId g) const {
    return Slice(group_members_, group_offsets_, g);
  }

  // Distinct consumer ops of a tensor, ascending.
  std::span<const OpId> Consumers(TensorId t) const {
    return Slice(consumers_, consumer_offsets_, t);
  }
  // Distinct input tensors of an op, ascending.
  std::span<const TensorId> Inputs(OpId op) const { return Slice(inputs_, input_offsets_, op); }
  // Distinct predecessor / successor ops, ascending.
  std::span<const OpId> Predecessors(OpId op) const { return Slice(preds_, pred_offsets_, op); }
  std::span<const OpId> Successors(OpId op) const { return Slice(succs_, succ_offsets_, op); }
  // First output tensor of `op`; outputs of op are [FirstOutput(op), FirstOutput(op + 1)).
  // FirstOutput(num_ops()) == num_tensors().
  TensorId FirstOutput(OpId op) const { return first_output_[op]; }
  // A topological order (Kahn's algorithm, smallest id first among ready ops).
  const std::vector<OpId>& TopologicalOrder() const { return topo_; }

  std::optional<OpId> FindOp(std::string_view name) const;
  // The tensor whose memory `t` uses: `t`, or the base its chain of views ends at; -1 for a view
  // of something outside the graph (a parameter, a model input).
  TensorId StorageOf(TensorId t) const {
    while (t >= 0 && tensors_[t].view) t = tensors_[t].view_of;
    return t;
  }

  double TotalFlops() const;
  double TotalParamBytes() const;
  double TotalOutputBytes() const;

 private:
  friend class GraphBuilder;
  template <typename T, typename IdT>
  static std::span<const T> Slice(const std::vector<T>& data, const std::vector<int32_t>& offsets,
                                  IdT i) {
    const auto b = static_cast<size_t>(offsets[i.index()]);
    const auto e = static_cast<size_t>(offsets[i.index() + 1]);
    return std::span<const T>(data.data() + b, e - b);
  }

  std::string name_;
  IdVector<OpId, Op> ops_;
  IdVector<TensorId, Tensor> tensors_;
  std::vector<Edge> edges_;
  IdVector<GroupId, std::string> groups_;
  std::unordered_map<std::string, OpId> op_by_name_;
  std::vector<int32_t> consumer_offsets_, input_offsets_, pred_offsets_, succ_offsets_,
      group_offsets_;
  std::vector<OpId> consumers_, preds_, succs_, group_members_;
  std::vector<TensorId> inputs_;
  std::vector<OpId> topo_;
  IdVector<OpId, TensorId> first_output_;  // num_ops + 1 entries
};

}  // namespace dplace::graph
