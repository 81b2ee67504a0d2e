#include "dplace/io/cluster_json.h"

#include <unordered_map>

#include "dplace/base/units.h"
#include "dplace/io/presets.h"

namespace dplace::io {
namespace {

// A link entry (its device keys: "between", "group") or, with `level`, a level ("name").
StatusOr<hw::Link> ReadLink(const JsonNode& node, bool level = false) {
  DPLACE_RETURN_IF_ERROR(
      node.OnlyKeys(level ? std::vector<std::string>{"name", "bandwidth", "latency"}
                          : std::vector<std::string>{"bandwidth", "latency", "between", "group"}));
  hw::Link link;
  DPLACE_ASSIGN_OR_RETURN(JsonNode bw, node.Field("bandwidth"));
  DPLACE_ASSIGN_OR_RETURN(link.bandwidth_bytes_per_s, bw.BytesPerSecond());
  if (link.bandwidth_bytes_per_s < kMinRate || link.bandwidth_bytes_per_s > kMaxRate) {
    return bw.Error("must be between 1 B/s and 1e21 B/s");
  }
  if (auto lat = node.OptionalField("latency")) {
    DPLACE_ASSIGN_OR_RETURN(link.latency_s, lat->Seconds());
    if (link.latency_s > kMaxSeconds) return lat->Error("must be at most 1e6 s");
  }
  return link;
}

StatusOr<std::vector<hw::DeviceId>> DeviceList(
    const JsonNode& node, const std::unordered_map<std::string, hw::DeviceId>& ids) {
  DPLACE_ASSIGN_OR_RETURN(auto elements, node.Elements());
  std::vector<hw::DeviceId> out;
  for (const JsonNode& e : elements) {
    DPLACE_ASSIGN_OR_RETURN(std::string name, e.String());
    auto it = ids.find(name);
    if (it == ids.end()) return e.Error("unknown device '" + name + "'");
    out.push_back(it->second);
  }
  return out;
}

StatusOr<hw::Cluster> ReadOneNode(const JsonNode& root) {
  std::string name = "cluster";
  if (auto n = root.OptionalField("name")) {
    DPLACE_ASSIGN_OR_RETURN(name, n->String());
  }
  hw::ClusterBuilder builder(name);
  std::unordered_map<std::string, hw::DeviceId> ids;
  DPLACE_ASSIGN_OR_RETURN(JsonNode devices, root.Field("devices"));
  DPLACE_ASSIGN_OR_RETURN(auto device_nodes, devices.Elements());
  if (device_nodes.empty()) return devices.Error("lists no device");
  for (const JsonNode& node : device_nodes) {
    DPLACE_RETURN_IF_ERROR(
        node.OnlyKeys({"name", "kind", "count", "memory", "peak_flops", "peak_flops_half",
                       "peak_flops_fp8", "memory_bandwidth"}));
    hw::Device d;
    DPLACE_ASSIGN_OR_RETURN(JsonNode name_node, node.Field("name"));
    DPLACE_ASSIGN_OR_RETURN(d.name, name_node.String());
    DPLACE_ASSIGN_OR_RETURN(JsonNode kind, node.Field("kind"));
    DPLACE_ASSIGN_OR_RETURN(d.kind, kind.String());
    if (auto mem = node.OptionalField("memory")) {
      DPLACE_ASSIGN_OR_RETURN(d.memory_bytes, mem->Bytes());
    }
    // A rate is 0 (unknown) or a number a machine could have.
    auto rate = [](const JsonNode& field, double value) {
      return value == 0 || (value >= kMinRate && value <= kMaxRate)
                 ? OkStatus()
                 : field.Error("must be 0 (unknown) or between 1 and 1e21 per second");
    };
    if (auto peak = node.OptionalField("peak_flops")) {
      DPLACE_ASSIGN_OR_RETURN(d.peak_flops, peak->NonNegativeNumber());
      DPLACE_RETURN_IF_ERROR(rate(*peak, d.peak_flops));
    }
    if (auto peak = node.OptionalField("peak_flops_half")) {
      DPLACE_ASSIGN_OR_RETURN(d.peak_flops_half, peak->NonNegativeNumber());
      DPLACE_RETURN_IF_ERROR(rate(*peak, d.peak_flops_half));
    }
    if (auto peak = node.OptionalField("peak_flops_fp8")) {
      DPLACE_ASSIGN_OR_RETURN(d.peak_flops_fp8, peak->NonNegativeNumber());
      DPLACE_RETURN_IF_ERROR(rate(*peak, d.peak_flops_fp8));
    }
    if (auto bw = node.OptionalField("memory_bandwidth")) {
      DPLACE_ASSIGN_OR_RETURN(d.memory_bandwidth_bytes_per_s, bw->BytesPerSecond());
      DPLACE_RETURN_IF_ERROR(rate(*bw, d.memory_bandwidth_bytes_per_s));
    }
    int64_t count = 1;
    const bool expand = node.Has("count");
    if (expand) {
      DPLACE_ASSIGN_OR_RETURN(JsonNode c, node.Field("count"));
      DPLACE_ASSIGN_OR_RETURN(count, c.Integer());
      if (count < 1 || count > kMaxDevices) {
        return c.Error("must be between 1 and " + std::to_string(kMaxDevices));
      }
    }
    for (int64_t i = 0; i < count; ++i) {
      hw::Device copy = d;
      if (expand) copy.name = d.name + std::to_string(i);
      const std::string device_name = copy.name;
      if (ids.count(device_name))
        return name_node.Error("duplicate device name '" + device_name + "'");
      ids[device_name] = builder.AddDevice(std::move(copy));
    }
  }
  if (auto empty = root.OptionalField("zero_byte_transfers")) {
    DPLACE_ASSIGN_OR_RETURN(std::string rule, empty->String());
    if (rule != "latency" && rule != "free") {
      return empty->Error(
          "must be \"latency\" (a 0-byte tensor pays the link's latency) or "
          "\"free\" (Baechi's model), not '" +
          rule + "'");
    }
    builder.SetEmptyTransfersFree(rule == "free");
  }
  if (auto def = root.OptionalField("default_link")) {
    DPLACE_ASSIGN_OR_RETURN(hw::Link link, ReadLink(*def));
    builder.SetDefaultLink(link);
  }
  if (auto links = root.OptionalField("links")) {
    DPLACE_ASSIGN_OR_RETURN(auto link_nodes, links->Elements());
    for (const JsonNode& node : link_nodes) {
      DPLACE_ASSIGN_OR_RETURN(hw::Link link, ReadLink(node));
      if (auto between = node.OptionalField("between")) {
        DPLACE_ASSIGN_OR_RETURN(auto pair, DeviceList(*between, ids));
        if (pair.size() != 2) return between->Error("must name exactly two devices");
        builder.SetLink(pair[0], pair[1], link);
      } else if (auto group = node.OptionalField("group")) {
        DPLACE_ASSIGN_OR_RETURN(auto members, DeviceList(*group, ids));
        builder.SetGroupLink(members, link);
      } else {
        return node.Error("a link needs \"between\" (two devices) or \"group\" (a list)");
      }
    }
  }
  auto cluster = builder.Build();
  if (!cluster.ok()) return root.Error(cluster.status().message());
  return cluster;
}

StatusOr<hw::Machine> ReadMachineLevels(const JsonNode& root, const hw::Cluster& node, int nodes) {
  DPLACE_ASSIGN_OR_RETURN(hw::Machine m, hw::MachineOf(node));
  if (auto source = root.OptionalField("source")) {
    DPLACE_ASSIGN_OR_RETURN(m.source, source->String());
  }
  if (auto file_nodes = root.OptionalField("nodes"); file_nodes && nodes == 0) {
    DPLACE_ASSIGN_OR_RETURN(int64_t n, file_nodes->Integer());
    if (n < 1 || n > kMaxNodes) {
      return file_nodes->Error("must be between 1 and " + std::to_string(kMaxNodes));
    }
    nodes = static_cast<int>(n);
  }
  if (nodes == 0) nodes = 1;
  const int gpus = m.gpus_per_node();
  if (auto levels = root.OptionalField("levels")) {
    DPLACE_ASSIGN_OR_RETURN(auto items, levels->Elements());
    if (items.empty() || items.size() > 2) {
      return levels->Error(
          "must list one level (the links inside a node) or two (inside a node, "
          "between nodes)");
    }
    m.levels.clear();
    for (size_t i = 0; i < items.size(); ++i) {
      const JsonNode& item = items[i];
      DPLACE_ASSIGN_OR_RETURN(hw::Link link, ReadLink(item, /*level=*/true));
      hw::Level level{.name = i == 0 ? "node" : "network",
                      .size = i == 0 ? gpus : nodes,
                      .bandwidth_bytes_per_s = link.bandwidth_bytes_per_s,
                      .latency_s = link.latency_s};
      if (auto name = item.OptionalField("name")) {
        DPLACE_ASSIGN_OR_RETURN(level.name, name->String());
      }
      m.levels.push_back(level);
    }
  }
  if (nodes > 1 && m.levels.size() < 2) {
    return root.Error(
        "has no level between nodes (\"levels\": [inside a node, between nodes]), "
        "so it cannot run " +
        std::to_string(nodes) + " nodes");
  }
  if (m.levels.size() > 1) m.levels[1].size = nodes;
  if (nodes > 1) m.name += ":" + std::to_string(nodes);
  return m;
}

}  // namespace

StatusOr<hw::Machine> ReadMachine(const JsonNode& root, int nodes) {
  DPLACE_ASSIGN_OR_RETURN(hw::Cluster node, ReadOneNode(root));
  return ReadMachineLevels(root, node, nodes);
}

StatusOr<hw::Cluster> ReadCluster(const JsonNode& root, int nodes) {
  DPLACE_RETURN_IF_ERROR(root.OnlyKeys({"format", "name", "source", "devices", "links",
                                        "default_link", "zero_byte_transfers", "levels", "nodes"}));
  DPLACE_ASSIGN_OR_RETURN(hw::Cluster node, ReadOneNode(root));
  // One node is the file's devices and links (of any kinds); the levels matter from two nodes.
  bool several = nodes > 1;
  if (auto file_nodes = root.OptionalField("nodes"); file_nodes && nodes == 0) {
    DPLACE_ASSIGN_OR_RETURN(int64_t n, file_nodes->Integer());
    several = n > 1;
  }
  if (!several) return node;
  DPLACE_ASSIGN_OR_RETURN(hw::Machine m, ReadMachineLevels(root, node, nodes));
  // Several nodes: their accelerators, gpu0 .. gpuN-1 node by node, joined by the levels' links.
  if (m.num_gpus() > kMaxDevices) {
    return root.Error(std::to_string(m.num_gpus()) + " accelerators are more than the " +
                      std::to_string(kMaxDevices) +
                      " an op-level placement takes; `dplace plan` "
                      "plans jobs of any size");
  }
  hw::ClusterBuilder builder(m.name);
  std::vector<hw::DeviceId> ids;
  for (int i = 0; i < m.num_gpus(); ++i) {
    hw::Device d = m.gpu;
    d.name = "gpu" + std::to_string(i);
    ids.push_back(builder.AddDevice(std::move(d)));
  }
  builder.SetDefaultLink({.bandwidth_bytes_per_s = m.levels[1].bandwidth_bytes_per_s,
                          .latency_s = m.levels[1].latency_s});
  for (int n = 0; n < m.nodes(); ++n) {
    const auto first = static_cast<ptrdiff_t>(n) * m.gpus_per_node();
    std::vector<hw::DeviceId> group(ids.begin() + first, ids.begin() + first + m.gpus_per_node());
    builder.SetGroupLink(group, {.bandwidth_bytes_per_s = m.levels[0].bandwidth_bytes_per_s,
                                 .latency_s = m.levels[0].latency_s});
  }
  auto cluster = builder.Build();
  if (!cluster.ok()) return root.Error(cluster.status().message());
  return cluster;
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.name);
  return names;
}

StatusOr<std::string> PresetText(const std::string& name) {
  for (const auto& p : kPresets) {
    if (p.name == name) return std::string(p.json);
  }
  return NotFound("no cluster preset named '" + name + "'");
}

}  // namespace dplace::io
