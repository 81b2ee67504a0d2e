#include "dplace/io/plan_export.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace dplace::io {

std::string ModulePath(const std::string& op_name) {
  std::string name = op_name;
  for (const char* suffix : {"/grad", "/update"}) {
    if (name.ends_with(suffix)) name.resize(name.size() - std::string(suffix).size());
  }
  if (name.empty() || name[0] != '/') return "";
  std::vector<std::string> scopes;
  for (size_t start = 1; start <= name.size();) {
    const size_t end = std::min(name.find('/', start), name.size());
    scopes.push_back(name.substr(start, end - start));
    start = end + 1;
  }
  scopes.pop_back();  // the op itself
  std::string path;
  for (const std::string& s : scopes) {
    if (s.empty()) continue;
    // A scope may repeat its parent's path ("layer1" then "layer1.0"): keep the longer one.
    path = path.empty() || s.starts_with(path + ".") ? s : path + "." + s;
  }
  return path;
}

Json DeviceMapJson(const sim::Problem& p, const sim::Placement& placement) {
  const hw::Cluster& c = p.c();
  std::map<std::string, std::map<sim::DeviceId, double>> weight;  // module -> device -> FLOPs
  for (sim::OpId op = 0; op < p.num_ops(); ++op) {
    const std::string module = ModulePath(p.g().op(op).name);
    if (module.empty()) continue;
    // Every op counts a little, so that modules of FLOP-free ops still get a device.
    weight[module][placement[static_cast<size_t>(op)]] += p.g().op(op).flops + 1;
  }
  Json out = Json::object();
  for (const auto& [module, devices] : weight) {
    const auto best = std::max_element(devices.begin(), devices.end(),
                                       [](auto& a, auto& b) { return a.second < b.second; });
    const hw::Device& d = c.device(best->first);
    if (d.kind == "gpu") {
      int index = 0;
      for (sim::DeviceId e = 0; e < best->first; ++e) index += c.device(e).kind == "gpu";
      out[module] = index;
    } else {
      out[module] = d.kind == "cpu" ? std::string("cpu") : d.name;
    }
  }
  return out;
}

StatusOr<Json> StagesJson(const sim::Problem& p, const sim::Placement& placement) {
  const graph::Graph& g = p.g();
  std::vector<int> position(static_cast<size_t>(g.num_ops()));
  for (size_t i = 0; i < g.TopologicalOrder().size(); ++i) {
    position[static_cast<size_t>(g.TopologicalOrder()[i])] = static_cast<int>(i);
  }
  struct Stage {
    sim::DeviceId device;
    sim::OpId first = -1, last = -1;
    bool fed = false;
    int ops = 0;
  };
  std::map<sim::DeviceId, Stage> by_device;
  for (sim::OpId op : g.TopologicalOrder()) {
    if (g.op(op).kind != graph::OpKind::kForward) continue;
    Stage& s = by_device[placement[static_cast<size_t>(op)]];
    s.device = placement[static_cast<size_t>(op)];
    // The stage's entry: its first op fed from another stage (else its first op at all).
    bool fed = false;
    for (sim::OpId pred : g.Predecessors(op)) {
      fed = fed || placement[static_cast<size_t>(pred)] != s.device;
    }
    if (s.first < 0 || (fed && !s.fed)) {
      if (s.first < 0 || !s.fed) s.first = op;
      s.fed = s.fed || fed;
    }
    s.last = op;
    ++s.ops;
  }
  // Pipeline order: a topological order of the devices under the forward edges between them
  // (earliest first op first among the ready ones); a cycle means the split is not contiguous.
  std::map<sim::DeviceId, std::set<sim::DeviceId>> succ;
  std::map<sim::DeviceId, int> indegree;
  for (const auto& [d, s] : by_device) indegree[d] = 0;
  for (const graph::Edge& e : g.edges()) {
    if (g.op(e.from).kind != graph::OpKind::kForward || g.op(e.to).kind != graph::OpKind::kForward)
      continue;
    const sim::DeviceId a = placement[static_cast<size_t>(e.from)];
    const sim::DeviceId b = placement[static_cast<size_t>(e.to)];
    if (a != b && succ[a].insert(b).second) ++indegree[b];
  }
  auto later = [&](sim::DeviceId a, sim::DeviceId b) {
    return position[static_cast<size_t>(by_device[a].first)] >
           position[static_cast<size_t>(by_device[b].first)];
  };
  std::vector<sim::DeviceId> ready;
  for (const auto& [d, n] : indegree) {
    if (n == 0) ready.push_back(d);
  }
  std::vector<Stage> stages;
  while (!ready.empty()) {
    std::sort(ready.begin(), ready.end(), later);
    const sim::DeviceId d = ready.back();
    ready.pop_back();
    stages.push_back(by_device[d]);
    for (sim::DeviceId b : succ[d]) {
      if (--indegree[b] == 0) ready.push_back(b);
    }
  }
  if (stages.size() != by_device.size()) {
    std::string devices;
    for (const auto& [d, n] : indegree) {
      if (n > 0) devices += (devices.empty() ? "" : ", ") + p.c().device(d).name;
    }
    return InvalidInput("--export stages: the plan is not a pipeline of contiguous stages: " +
                        devices + " feed each other");
  }
  Json list = Json::array(), splits = Json::array();
  for (size_t i = 0; i < stages.size(); ++i) {
    const Stage& s = stages[i];
    list.push_back({{"device", p.c().device(s.device).name},
                    {"first", g.op(s.first).name},
                    {"last", g.op(s.last).name},
                    {"ops", s.ops}});
    if (i > 0) splits.push_back(g.op(s.first).name);
  }
  return Json{{"format", "dplace-stages/1"}, {"stages", list}, {"split_points", splits}};
}

}  // namespace dplace::io
