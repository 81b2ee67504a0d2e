#include "dplace/hw/cluster.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "dplace/base/units.h"

namespace dplace::hw {

std::optional<DeviceId> Cluster::FindDevice(std::string_view name) const {
  for (DeviceId d : devices_.ids()) {
    if (devices_[d].name == name) return d;
  }
  return std::nullopt;
}

Cluster Cluster::AtHalfPrecision() const {
  Cluster half = *this;
  for (Device& d : half.devices_) {
    if (d.peak_flops_half > 0) d.peak_flops = d.peak_flops_half;
  }
  return half;
}

Cluster Cluster::WithLinksScaled(const std::vector<double>& bandwidth_factor,
                                 double latency_factor) const {
  Cluster scaled = *this;
  for (size_t i = 0; i < scaled.links_.size(); ++i) {
    Link& link = scaled.links_[i];
    if (!bandwidth_factor.empty()) link.bandwidth_bytes_per_s *= bandwidth_factor[i];
    link.latency_s *= latency_factor;
  }
  return scaled;
}

Cluster Cluster::Subset(const std::vector<DeviceId>& keep) const {
  Cluster out;
  out.name_ = name_;
  for (DeviceId d : keep) out.devices_.push_back(devices_[d]);
  const size_t n = devices_.size();
  for (DeviceId a : keep) {
    for (DeviceId b : keep) out.links_.push_back(links_[a.index() * n + b.index()]);
  }
  for (DeviceId d{0}; d < out.num_devices(); ++d) {
    const std::string& kind = out.devices_[d].kind;
    auto it = std::find(out.kinds_.begin(), out.kinds_.end(), kind);
    if (it == out.kinds_.end()) it = out.kinds_.insert(out.kinds_.end(), kind);
    out.kind_index_.push_back(static_cast<int>(it - out.kinds_.begin()));
  }
  return out;
}

Cluster Cluster::Chunked(int chunks) const {
  Cluster out;
  out.name_ = name_;
  const size_t n = devices_.size();
  for (int c = 0; c < chunks; ++c) {
    for (const Device& d : devices_) {
      Device copy = d;
      copy.name += "#" + std::to_string(c);
      copy.memory_bytes /= chunks;
      out.devices_.push_back(std::move(copy));
    }
  }
  const size_t total = out.devices_.size();
  for (size_t a = 0; a < total; ++a) {
    for (size_t b = 0; b < total; ++b) {
      out.links_.push_back(a % n == b % n ? Link{} : links_[(a % n) * n + b % n]);
    }
  }
  for (DeviceId d{0}; d < out.num_devices(); ++d) {
    out.kind_index_.push_back(kind_index_[DeviceId(static_cast<int32_t>(d.index() % n))]);
  }
  out.kinds_ = kinds_;
  return out;
}

StatusOr<Cluster> Cluster::Grouped(const std::vector<std::vector<DeviceId>>& groups) const {
  Cluster out;
  out.name_ = name_;
  std::vector<char> used(devices_.size(), 0);
  for (const std::vector<DeviceId>& group : groups) {
    if (group.empty()) return InvalidInput("replicas: a group of no devices");
    Device d = devices_[group.front()];
    d.replicas = static_cast<int>(group.size());
    d.replica_link = Link{};
    for (size_t i = 0; i < group.size(); ++i) {
      const DeviceId m = group[i];
      if (m.index() >= devices_.size() || used[m.index()]++) {
        return InvalidInput("replicas: device " + std::to_string(m.index()) +
                            " is not one device of one group");
      }
      const Device& member = devices_[m];
      if (member.kind != d.kind || member.memory_bytes != devices_[group.front()].memory_bytes) {
        return InvalidInput("replicas: " + member.name + " is not of the kind and memory of " +
                            devices_[group.front()].name + ", the first of its group");
      }
      if (i > 0) {
        d.name += "+" + member.name;
        for (size_t j = 0; j < i; ++j) {
          for (const Link& l : {LinkBetween(group[j], m), LinkBetween(m, group[j])}) {
            d.replica_link.bandwidth_bytes_per_s =
                std::min(d.replica_link.bandwidth_bytes_per_s, l.bandwidth_bytes_per_s);
            d.replica_link.latency_s = std::max(d.replica_link.latency_s, l.latency_s);
          }
        }
      }
    }
    out.devices_.push_back(std::move(d));
  }
  for (const auto& a : groups) {
    for (const auto& b : groups) {
      out.links_.push_back(&a == &b ? Link{} : LinkBetween(a.front(), b.front()));
    }
  }
  for (const auto& group : groups) out.kind_index_.push_back(kind_index_[group.front()]);
  out.kinds_ = kinds_;
  return out;
}

DeviceId ClusterBuilder::AddDevice(Device device) {
  devices_.push_back(std::move(device));
  return static_cast<DeviceId>(devices_.size() - 1);
}

void ClusterBuilder::SetGroupLink(const std::vector<DeviceId>& group, Link link) {
  for (DeviceId a : group) {
    for (DeviceId b : group) {
      if (a < b) SetLink(a, b, link);
    }
  }
}

StatusOr<Cluster> ClusterBuilder::Build() {
  if (devices_.empty()) return InvalidInput("cluster has no devices");
  if (devices_.size() > static_cast<size_t>(kMaxDevices)) {
    return InvalidInput("cluster has " + std::to_string(devices_.size()) + " devices; at most " +
                        std::to_string(kMaxDevices) + " are supported");
  }
  std::unordered_set<std::string> names;
  for (const Device& d : devices_) {
    if (d.name.empty()) return InvalidInput("a device has an empty name");
    if (!names.insert(d.name).second) return InvalidInput("duplicate device name '" + d.name + "'");
    if (d.kind.empty()) return InvalidInput("device '" + d.name + "' has no kind");
    if (std::isnan(d.memory_bytes) || d.memory_bytes < 0 || !std::isfinite(d.peak_flops) ||
        !std::isfinite(d.peak_flops_half) || d.peak_flops_half < 0 || d.peak_flops < 0 ||
        !std::isfinite(d.memory_bandwidth_bytes_per_s) || d.memory_bandwidth_bytes_per_s < 0) {
      return InvalidInput("device '" + d.name +
                          "': memory, peak_flops, peak_flops_half and memory_bandwidth " +
                          "must be non-negative numbers");
    }
  }
  auto bad_link = [](const Link& l) {
    return std::isnan(l.bandwidth_bytes_per_s) || l.bandwidth_bytes_per_s <= 0 ||
           !std::isfinite(l.latency_s) || l.latency_s < 0;
  };
  if (bad_link(default_link_)) {
    return InvalidInput("default link: bandwidth must be positive and latency non-negative");
  }
  const auto n = static_cast<DeviceId>(devices_.size());
  Cluster c;
  c.links_.assign(devices_.size() * devices_.size(), default_link_);
  for (const PairLink& p : links_) {
    if (p.a < 0 || p.a >= n || p.b < 0 || p.b >= n)
      return InvalidInput("link to an unknown device");
    if (bad_link(p.link)) {
      return InvalidInput("link " + devices_[p.a].name + " <-> " + devices_[p.b].name +
                          ": bandwidth must be positive and latency non-negative");
    }
    c.links_[p.a.index() * devices_.size() + p.b.index()] = p.link;
    c.links_[p.b.index() * devices_.size() + p.a.index()] = p.link;
  }
  for (Link& l : c.links_) l.empty_is_free = empty_free_;
  for (const Device& d : devices_) {
    auto it = std::find(c.kinds_.begin(), c.kinds_.end(), d.kind);
    if (it == c.kinds_.end()) {
      c.kinds_.push_back(d.kind);
      c.kind_index_.push_back(static_cast<int>(c.kinds_.size() - 1));
    } else {
      c.kind_index_.push_back(static_cast<int>(it - c.kinds_.begin()));
    }
  }
  c.name_ = std::move(name_);
  c.devices_ = std::move(devices_);
  return c;
}

}  // namespace dplace::hw
