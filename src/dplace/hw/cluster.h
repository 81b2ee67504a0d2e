// The machine: devices (kind, memory, peak FLOP/s, memory bandwidth) and the links between them.
//
// A Cluster is an immutable value made by ClusterBuilder. Links are resolved into a dense matrix of
// directed (latency, bandwidth) pairs at build time, so the cost model asks for the route between
// two devices in O(1). Memory may be unlimited (infinity), as for the host CPU of the paper's
// model.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/base/strong_id.h"

namespace dplace::hw {

using DeviceId = Id<struct DeviceTag>;
inline constexpr double kUnlimited = std::numeric_limits<double>::infinity();

struct Link {
  double bandwidth_bytes_per_s = kUnlimited;
  double latency_s = 0;
  // Whether a tensor of 0 bytes (a control dependency) crosses for free. By default it pays the
  // latency: the consumer's device must still learn that the producer ended (a CUDA event, a
  // TensorFlow _Recv). Baechi's model charges nothing (the cluster file's "zero_byte_transfers").
  bool empty_is_free = false;
};

struct Device {
  std::string name;
  std::string kind;                  // "gpu", "cpu", "accel", ... free text
  double memory_bytes = kUnlimited;  // capacity; infinity = unlimited
  double peak_flops = 0;             // FP32 FLOP/s; 0 = unknown (roofline then uses bandwidth only)
  double peak_flops_half = 0;        // FP16/BF16 FLOP/s (tensor cores); 0 = as peak_flops
  double peak_flops_fp8 = 0;         // dense FP8 FLOP/s (tensor cores); 0 = none
  double memory_bandwidth_bytes_per_s = 0;  // 0 = unknown
  // Devices this one stands for: a stage's data-parallel replicas (Cluster::Grouped), each running
  // whole micro-batches in turn; `replica_link` the slowest link among them (their all-reduce's).
  int replicas = 1;
  Link replica_link;
};

class Cluster {
 public:
  const std::string& name() const { return name_; }
  int num_devices() const { return static_cast<int>(devices_.size()); }
  const IdVector<DeviceId, Device>& devices() const { return devices_; }
  const Device& device(DeviceId d) const { return devices_[d]; }
  // Every device id, ascending.
  IdRange<DeviceId> device_ids() const { return devices_.ids(); }
  // The link used by a transfer from `src` to `dst` (src != dst).
  const Link& LinkBetween(DeviceId src, DeviceId dst) const {
    return links_[src.index() * devices_.size() + dst.index()];
  }
  std::optional<DeviceId> FindDevice(std::string_view name) const;
  // This machine as a half-precision step sees it: each device's peak_flops_half (where given)
  // as its peak_flops.
  Cluster AtHalfPrecision() const;
  // This machine with the bandwidth of the link src -> dst multiplied by
  // bandwidth_factor[src * n + dst] (n devices; empty: every factor 1) and every link's latency by
  // `latency_factor`. Factors must be positive and finite (latency_factor: finite, >= 0); the
  // diagonal is not read. Noisy variants of a machine (sim/variants.h).
  Cluster WithLinksScaled(const std::vector<double>& bandwidth_factor, double latency_factor) const;
  // This machine with only the devices `keep` (distinct, valid ids), in that order, and the links
  // between them: a device subset for a pipeline of fewer stages than the machine has devices.
  Cluster Subset(const std::vector<DeviceId>& keep) const;
  // This machine with each device run as `chunks` (>= 1) chunks of an interleaved pipeline: device
  // k of n * chunks a copy of device k mod n named "name#c" (c = k / n), with a chunks-th of its
  // memory; between copies of two devices their link, between copies of one a free one.
  Cluster Chunked(int chunks) const;
  // This machine with each group of devices (distinct valid ids, each group of one kind and
  // memory) run as one device: device g a copy of group g's first device named by its members
  // joined with '+', with `replicas` the group's size and `replica_link` the slowest link among
  // them; between two groups the link of their first devices. InvalidInput for a group that is
  // empty, mixes kinds or memories, or repeats a device.
  StatusOr<Cluster> Grouped(const std::vector<std::vector<DeviceId>>& groups) const;
  // Distinct device kinds in order of first appearance; KindIndex maps a device to its position.
  const std::vector<std::string>& kinds() const { return kinds_; }
  int KindIndex(DeviceId d) const { return kind_index_[d]; }

 private:
  friend class ClusterBuilder;
  std::string name_;
  IdVector<DeviceId, Device> devices_;
  std::vector<Link> links_;  // row-major [src][dst]
  std::vector<std::string> kinds_;
  IdVector<DeviceId, int> kind_index_;
};

class ClusterBuilder {
 public:
  explicit ClusterBuilder(std::string name) : name_(std::move(name)) {}

  DeviceId AddDevice(Device device);
  // The link of every pair not named by SetLink (default: infinite bandwidth, zero latency).
  void SetDefaultLink(Link link) { default_link_ = link; }
  // Link between two devices, both directions. Later calls override earlier ones.
  void SetLink(DeviceId a, DeviceId b, Link link) { links_.push_back({a, b, link}); }
  // Links every ordered pair of the group (e.g. the GPUs of one NVLink island).
  void SetGroupLink(const std::vector<DeviceId>& group, Link link);
  // Whether 0-byte tensors cross every link for free (Link::empty_is_free); default false.
  void SetEmptyTransfersFree(bool free) { empty_free_ = free; }

  // Verifies (at least one device, unique non-empty names, positive bandwidths, non-negative
  // latencies and memory) and returns the cluster.
  StatusOr<Cluster> Build();

 private:
  struct PairLink {
    DeviceId a, b;
    Link link;
  };
  std::string name_;
  IdVector<DeviceId, Device> devices_;
  Link default_link_;
  std::vector<PairLink> links_;
  bool empty_free_ = false;
};

}  // namespace dplace::hw
