#include "dplace/graph/modules.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "dplace/graph/graph_builder.h"

namespace dplace::graph {

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
  // torch.onnx names a scope by the module's attribute path from the last scope that is not an
  // nn.Sequential or nn.ModuleList, so a scope may extend the one before it ("features" then
  // "features.1", "block" then "block.0" then "block.0.0"): it replaces that one.
  std::vector<std::string> path;
  for (const std::string& s : scopes) {
    if (s.empty()) continue;
    if (!path.empty() && s.starts_with(path.back() + ".")) {
      path.back() = s;
    } else {
      path.push_back(s);
    }
  }
  std::string out;
  for (const std::string& s : path) out += (out.empty() ? "" : ".") + s;
  return out;
}

std::string ParentModule(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::optional<std::string> ParameterModule(const std::string& name) {
  if (name.empty() || name.find("::") != std::string::npos || name.find('/') != std::string::npos)
    return std::nullopt;
  return ParentModule(name);
}

std::string OpModule(const Op& op) {
  for (const std::string& param : op.parameters) {
    if (auto owner = ParameterModule(param)) return *owner;
  }
  std::string scope = ModulePath(op.name);
  for (const std::string& param : op.shared_parameters) {
    auto owner = ParameterModule(param);
    if (owner && !owner->empty() && (scope == *owner || scope.ends_with("." + *owner)))
      return *owner;
  }
  return scope;
}

Graph TieSharedParameters(const Graph& g) {
  std::map<std::string, OpId> holder;
  bool shared = false;
  for (OpId op : g.op_ids()) {
    for (const std::string& p : g.op(op).parameters) holder.emplace(p, op);
    shared = shared || !g.op(op).shared_parameters.empty();
  }
  if (!shared) return g;
  // Union-find over ops: an op's co-location group stands for its members.
  std::vector<int> parent(static_cast<size_t>(g.num_ops()));
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<int>(i);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto join = [&](int a, int b) { parent[find(a)] = find(b); };
  for (GroupId group : g.group_ids()) {
    const auto members = g.GroupMembers(group);
    for (OpId op : members) join(op.index(), members.front().index());
  }
  std::map<int, std::string> tied_by;  // root -> the parameter that tied it
  for (OpId op : g.op_ids()) {
    for (const std::string& p : g.op(op).shared_parameters) {
      auto it = holder.find(p);
      if (it == holder.end()) continue;
      join(op.index(), it->second.index());
      tied_by.emplace(find(it->second.index()), p);
    }
  }
  GraphBuilder b(g.name());
  for (const std::string& group : g.groups()) b.Group(group);
  for (OpId id : g.op_ids()) {
    Op op = g.op(id);
    const int root = find(id.index());
    auto it = std::find_if(tied_by.begin(), tied_by.end(),
                           [&](const auto& entry) { return find(entry.first) == root; });
    if (it != tied_by.end()) op.colocation = b.Group("tied:" + it->second);
    std::vector<TensorSpec> outputs;
    for (TensorId t = g.FirstOutput(id); t < g.FirstOutput(id + 1); ++t)
      outputs.push_back(SpecOf(g, t));
    b.AddOp(std::move(op), std::move(outputs));
  }
  for (const Edge& e : g.edges()) b.AddEdge(e.from, e.output, e.to, e.saved);
  auto built = b.Build();
  return built.ok() ? *std::move(built) : g;  // the same ops and edges: it builds
}

std::vector<std::string> OpModules(const Graph& g) {
  std::vector<std::string> module;
  module.reserve(g.ops().size());
  std::map<std::string, OpId> forward_op;
  for (OpId op : g.op_ids()) {
    const Op& o = g.op(op);
    module.push_back(OpModule(o));
    if (o.kind == OpKind::kForward) forward_op[o.name] = op;
  }
  // A scope that names a module registered under several names by another (T5's shared embedding
  // scoped "/encoder/shared/" is the module "shared"): every op of that scope is that module.
  std::map<std::string, std::string> alias;
  for (OpId op : g.op_ids()) {
    const std::string& m = module[static_cast<size_t>(op.index())];
    const std::string scope = ModulePath(g.op(op).name);
    if (!m.empty() && scope != m && scope.ends_with("." + m)) alias.emplace(scope, m);
  }
  for (std::string& m : module) {
    auto it = alias.find(m);
    if (it != alias.end()) m = it->second;
  }
  const std::set<std::string> seen(module.begin(), module.end());
  for (std::string& m : module) {
    const size_t underscore = m.rfind('_');
    if (underscore == std::string::npos || underscore + 1 == m.size() ||
        m.find('.', underscore) != std::string::npos ||
        !std::all_of(m.begin() + static_cast<std::ptrdiff_t>(underscore) + 1, m.end(),
                     [](char ch) { return ch >= '0' && ch <= '9'; })) {
      continue;
    }
    if (seen.count(m.substr(0, underscore))) m.resize(underscore);
  }
  for (OpId op : g.op_ids()) {
    const Op& o = g.op(op);
    if (o.kind == OpKind::kForward) continue;
    auto it = forward_op.find(o.name.substr(0, o.name.rfind('/')));
    if (it != forward_op.end()) {
      module[static_cast<size_t>(op.index())] = module[static_cast<size_t>(it->second.index())];
    }
  }
  return module;
}

std::string BlockOf(const std::string& module) {
  for (size_t start = 0; start < module.size();) {
    size_t end = module.find('.', start);
    if (end == std::string::npos) end = module.size();
    const bool index = end > start && std::all_of(module.begin() + static_cast<long>(start),
                                                  module.begin() + static_cast<long>(end),
                                                  [](char c) { return std::isdigit(c) != 0; });
    if (index && start > 0) return module.substr(0, end);
    start = end + 1;
  }
  return "";
}

}  // namespace dplace::graph
