#include "dplace/graph/graph.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace dplace::graph {

std::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kForward:
      return "forward";
    case OpKind::kBackward:
      return "backward";
    case OpKind::kUpdate:
      return "update";
  }
  return "forward";
}

std::optional<OpKind> ParseOpKind(std::string_view name) {
  if (name == "forward") return OpKind::kForward;
  if (name == "backward") return OpKind::kBackward;
  if (name == "update") return OpKind::kUpdate;
  return std::nullopt;
}

bool IsMatrixProduct(std::string_view type) {
  std::string t(type);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t.rfind("aten::", 0) == 0) t = t.substr(6);
  for (const char* name : {"matmul", "bmm", "baddbmm", "mm", "einsum", "gemm"}) {
    if (t == name) return true;
  }
  return false;
}

std::optional<double> Op::MeasuredTime(std::string_view device_kind) const {
  for (const auto& [measured_kind, seconds] : time_s) {
    if (measured_kind == device_kind) return seconds;
  }
  return std::nullopt;
}

bool Op::AllowsKind(std::string_view device_kind) const {
  return device_kinds.empty() ||
         std::find(device_kinds.begin(), device_kinds.end(), device_kind) != device_kinds.end();
}

std::optional<OpId> Graph::FindOp(std::string_view name) const {
  auto it = op_by_name_.find(std::string(name));
  if (it == op_by_name_.end()) return std::nullopt;
  return it->second;
}

double Graph::TotalFlops() const {
  double sum = 0;
  for (const Op& op : ops_) sum += op.flops;
  return sum;
}

double Graph::TotalParamBytes() const {
  double sum = 0;
  for (const Op& op : ops_) sum += op.param_bytes;
  return sum;
}

double Graph::TotalOutputBytes() const {
  double sum = 0;
  for (const Tensor& t : tensors_) sum += t.bytes;
  return sum;
}

}  // namespace dplace::graph
