// CostModel predicts how long an op takes on a device; transfers follow the linear link model.
//
// RooflineCostModel is the default: the measured time for the device's kind when the op has one,
// else the roofline max(FLOPs / peak FLOP/s, bytes accessed / memory bandwidth). CostTable
// precomputes every op's time on every distinct device class once per problem, so evaluators look
// times up in flat arrays.
#pragma once

#include <vector>

#include "dplace/graph/graph.h"
#include "dplace/hw/cluster.h"

namespace dplace::cost {

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Seconds `op` takes on `device`; finite and non-negative for a verified graph.
  virtual double OpTime(const graph::Op& op, const hw::Device& device) const = 0;
};

class RooflineCostModel : public CostModel {
 public:
  double OpTime(const graph::Op& op, const hw::Device& device) const override;
};

// Seconds to move `tensor` over `link`: its measured transfer time when the graph gives one, else
// latency + bytes / bandwidth.
inline double TransferTime(const graph::Tensor& tensor, const hw::Link& link) {
  if (tensor.transfer_time_s >= 0) return tensor.transfer_time_s;
  if (tensor.bytes == 0 && link.empty_is_free) return 0;
  return link.latency_s + tensor.bytes / link.bandwidth_bytes_per_s;
}

// Op times of one graph on one cluster, by device class (devices with equal kind, peak FLOP/s and
// memory bandwidth share a class and therefore a column).
class CostTable {
 public:
  CostTable() = default;
  CostTable(const graph::Graph& g, const hw::Cluster& c, const CostModel& model);
  // The table of a coarsened graph: op `c`'s time on each class is the sum of the times of the
  // ops `i` of `fine` with coarse_of[i] == c (they run one after another on one device).
  static CostTable Summed(const CostTable& fine,
                          const IdVector<graph::OpId, graph::OpId>& coarse_of, int num_coarse);

  double OpTime(graph::OpId op, hw::DeviceId d) const {
    return times_[static_cast<size_t>(class_of_[d]) * num_ops_ + op.index()];
  }
  // Times of every op on device `d`, indexed by OpId.
  const double* OpTimes(hw::DeviceId d) const {
    return times_.data() + static_cast<size_t>(class_of_[d]) * num_ops_;
  }
  int num_classes() const { return num_classes_; }
  size_t num_ops() const { return num_ops_; }
  // This table with op i's time on class k multiplied by factor[k * num_ops() + i] (factors finite
  // and non-negative): a noisy variant of the cost model (sim/variants.h).
  CostTable Scaled(const std::vector<double>& factor) const;
  // This table for hw::Cluster::Chunked(chunks): device k times as device k mod n.
  CostTable Chunked(int chunks) const;
  // This table for a machine whose device k is device from[k] of this one's (hw::Cluster::Grouped:
  // a group's first device).
  CostTable Mapped(const std::vector<hw::DeviceId>& from) const;
  // Smallest time of `op` over the devices it may run on (`allowed(op, d)` decides).
  template <typename Allowed>
  double MinOpTime(graph::OpId op, int num_devices, Allowed allowed) const {
    double best = -1;
    for (hw::DeviceId d{0}; d < num_devices; ++d) {
      if (!allowed(op, d)) continue;
      const double t = OpTime(op, d);
      if (best < 0 || t < best) best = t;
    }
    return best < 0 ? 0 : best;
  }

 private:
  size_t num_ops_ = 0;
  int num_classes_ = 0;
  IdVector<hw::DeviceId, int> class_of_;
  std::vector<double> times_;  // [class][op]
};

}  // namespace dplace::cost
