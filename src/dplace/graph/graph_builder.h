// GraphBuilder: the only way to make a Graph. Collects ops and edges, then Build() verifies them
// (unique non-empty names, finite non-negative costs, valid edge endpoints, no cycle) and lays out
// the CSR adjacency. Verification errors are InvalidInput statuses that name the ops involved;
// importers prefix the file name.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/graph/graph.h"

namespace dplace::graph {

struct TensorSpec {
  double bytes = 0;
  double transfer_time_s = -1;  // negative: not given
  double cpu_bytes = -1;        // Tensor::cpu_bytes; negative: as bytes
  // A view (Tensor::view): of output `view_of_output` of op `view_of_op`, which must feed the
  // producer; `view_of_op` < 0 for a view of something outside the graph.
  bool view = false;
  OpId view_of_op{-1};
  int32_t view_of_output = 0;
};

// The spec that makes a copy of tensor `t` of `g` (in a builder that adds g's ops in g's order).
TensorSpec SpecOf(const Graph& g, TensorId t);

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name) : name_(std::move(name)) {}

  // Adds an op with its output tensors (at least one is created: an op with no declared output
  // gets one empty tensor, so that it can still be depended on). `op.first_output` and
  // `op.num_outputs` are filled in here. Returns the new op's id.
  OpId AddOp(Op op, std::vector<TensorSpec> outputs = {});

  // Returns the id of the co-location group with this name, creating it on first use.
  GroupId Group(const std::string& name);

  // Edge from output `output` of `from` to `to`; `saved`: `to`'s backward keeps the tensor
  // (Edge::saved). Endpoints are checked in Build().
  void AddEdge(OpId from, int32_t output, OpId to, bool saved = true) {
    edges_.push_back({from, output, to, saved});
  }

  int num_ops() const { return static_cast<int>(ops_.size()); }

  // Verifies and returns the graph. The builder is left empty.
  StatusOr<Graph> Build();

 private:
  Status Verify() const;
  Status CheckAcyclic(const Graph& g) const;

  std::string name_;
  IdVector<OpId, Op> ops_;
  IdVector<TensorId, Tensor> tensors_;
  IdVector<TensorId, std::pair<OpId, int32_t>> view_bases_;  // TensorSpec's view_of_*
  std::vector<Edge> edges_;
  IdVector<GroupId, std::string> groups_;
  std::unordered_map<std::string, GroupId> group_by_name_;
};

}  // namespace dplace::graph
