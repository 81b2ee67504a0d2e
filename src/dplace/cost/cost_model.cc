#include "dplace/cost/cost_model.h"

#include <algorithm>

namespace dplace::cost {

double RooflineCostModel::OpTime(const graph::Op& op, const hw::Device& device) const {
  if (auto measured = op.MeasuredTime(device.kind)) return *measured;
  double t = 0;
  if (device.peak_flops > 0) t = std::max(t, op.flops / device.peak_flops);
  if (device.memory_bandwidth_bytes_per_s > 0) {
    t = std::max(t, op.bytes_accessed / device.memory_bandwidth_bytes_per_s);
  }
  return t;
}

CostTable::CostTable(const graph::Graph& g, const hw::Cluster& c, const CostModel& model)
    : num_ops_(g.ops().size()) {
  std::vector<hw::DeviceId> representative;
  for (hw::DeviceId d{0}; d < c.num_devices(); ++d) {
    const hw::Device& dev = c.device(d);
    int cls = -1;
    for (size_t k = 0; k < representative.size(); ++k) {
      const hw::Device& r = c.device(representative[k]);
      if (r.kind == dev.kind && r.peak_flops == dev.peak_flops &&
          r.memory_bandwidth_bytes_per_s == dev.memory_bandwidth_bytes_per_s) {
        cls = static_cast<int>(k);
        break;
      }
    }
    if (cls < 0) {
      cls = static_cast<int>(representative.size());
      representative.push_back(d);
    }
    class_of_.push_back(cls);
  }
  num_classes_ = static_cast<int>(representative.size());
  times_.resize(representative.size() * num_ops_);
  for (size_t k = 0; k < representative.size(); ++k) {
    const hw::Device& dev = c.device(representative[k]);
    for (size_t i = 0; i < num_ops_; ++i) {
      times_[k * num_ops_ + i] = model.OpTime(g.op(graph::OpId(i)), dev);
    }
  }
}

CostTable CostTable::Summed(const CostTable& fine,
                            const IdVector<graph::OpId, graph::OpId>& coarse_of, int num_coarse) {
  CostTable t;
  t.num_ops_ = static_cast<size_t>(num_coarse);
  t.num_classes_ = fine.num_classes_;
  t.class_of_ = fine.class_of_;
  t.times_.assign(static_cast<size_t>(t.num_classes_) * t.num_ops_, 0.0);
  for (size_t k = 0; k < static_cast<size_t>(t.num_classes_); ++k) {
    for (graph::OpId i : coarse_of.ids()) {
      t.times_[k * t.num_ops_ + coarse_of[i].index()] += fine.times_[k * fine.num_ops_ + i.index()];
    }
  }
  return t;
}

CostTable CostTable::Chunked(int chunks) const {
  CostTable t = *this;
  t.class_of_.clear();
  for (int c = 0; c < chunks; ++c) {
    for (hw::DeviceId d : class_of_.ids()) t.class_of_.push_back(class_of_[d]);
  }
  return t;
}

CostTable CostTable::Mapped(const std::vector<hw::DeviceId>& from) const {
  CostTable t = *this;
  t.class_of_.clear();
  for (hw::DeviceId d : from) t.class_of_.push_back(class_of_[d]);
  return t;
}

CostTable CostTable::Scaled(const std::vector<double>& factor) const {
  CostTable t = *this;
  for (size_t i = 0; i < t.times_.size(); ++i) t.times_[i] *= factor[i];
  return t;
}

}  // namespace dplace::cost
