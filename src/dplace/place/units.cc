#include "dplace/place/units.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "dplace/sim/constraints.h"

namespace dplace::place {

Units MakeUnits(const sim::Problem& p) {
  const graph::Graph& g = p.g();
  // A co-location group's ops share its label; an op of none has a label of its own.
  const auto num_groups = static_cast<int32_t>(g.groups().size());
  sim::PerOp<int32_t> label(g.num_ops(), 0);
  for (sim::OpId op : g.op_ids()) {
    const graph::GroupId grp = g.op(op).colocation;
    label[op] = grp != graph::kNoGroup ? grp.value() : num_groups + op.value();
  }
  return MakeUnits(p, label);
}

Units MakeUnits(const sim::Problem& p, const sim::PerOp<int32_t>& label) {
  const graph::Graph& g = p.g();
  int32_t max_label = -1;
  for (int32_t l : label) max_label = std::max(max_label, l);
  std::vector<UnitId> unit_of_label(static_cast<size_t>(max_label + 1), UnitId(-1));
  Units units;
  for (sim::OpId op : g.TopologicalOrder()) {
    UnitId& index = unit_of_label[static_cast<size_t>(label[op])];
    if (index < UnitId(0)) {
      index = units.next_id();
      units.emplace_back();
    }
    Unit& u = units[index];
    u.ops.push_back(op);
    u.footprint_bytes += sim::OpFootprintBytes(g, op);
  }
  for (Unit& u : units) {
    for (sim::DeviceId d{0}; d < p.num_devices(); ++d) {
      bool ok = true;
      for (sim::OpId op : u.ops) ok = ok && p.Allowed(op, d);
      if (ok) u.devices.push_back(d);
    }
  }
  return units;
}

namespace {

// "cells.0_11" -> "cells.0"; "layer_1x" and "_3" stay as they are.
std::string_view WithoutCallIndex(std::string_view part) {
  const size_t underscore = part.rfind('_');
  if (underscore == std::string_view::npos || underscore == 0 || underscore + 1 == part.size()) {
    return part;
  }
  for (size_t i = underscore + 1; i < part.size(); ++i) {
    if (part[i] < '0' || part[i] > '9') return part;
  }
  return part.substr(0, underscore);
}

}  // namespace

ScopeGroups MakeScopeGroups(const sim::Problem& p, const Units& units) {
  std::map<std::string, std::vector<UnitId>> by_scope;
  for (UnitId u : units.ids()) {
    const std::string& name = p.g().op(units[u].ops.front()).name;
    std::vector<std::string_view> parts;
    for (size_t begin = 0; begin <= name.size();) {
      const size_t end = std::min(name.find('/', begin), name.size());
      if (end > begin) parts.push_back(std::string_view(name).substr(begin, end - begin));
      begin = end + 1;
    }
    std::string exact = "=", general = "~";  // distinct key spaces for the two kinds of scope
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      exact.append(parts[k]).push_back('/');
      general.append(WithoutCallIndex(parts[k])).push_back('/');
      by_scope[exact].push_back(u);
      by_scope[general].push_back(u);
    }
  }
  ScopeGroups groups;
  groups.of_unit.resize(units.size());
  std::set<std::vector<UnitId>> seen;
  for (auto& [scope, members] : by_scope) {
    if (members.size() < 2 || members.size() == units.size() || !seen.insert(members).second) {
      continue;
    }
    for (UnitId u : members) groups.of_unit[u].push_back(groups.members.next_id());
    groups.members.push_back(std::move(members));
  }
  return groups;
}

std::vector<sim::DeviceId> FastestFirst(const sim::Problem& p, const Unit& unit) {
  const auto time = [&](sim::DeviceId d) {
    double t = 0;
    for (sim::OpId op : unit.ops) t += p.costs.OpTime(op, d);
    return t;
  };
  std::vector<sim::DeviceId> devices = unit.devices;
  std::stable_sort(devices.begin(), devices.end(),
                   [&](sim::DeviceId a, sim::DeviceId b) { return time(a) < time(b); });
  return devices;
}

sim::DeviceId FirstFit(const sim::Problem& p, const Unit& unit,
                       const std::vector<sim::DeviceId>& candidates, sim::PerDevice<double>* used) {
  sim::DeviceId best = candidates.empty() ? sim::DeviceId(0) : candidates.front();
  double best_room = -std::numeric_limits<double>::infinity();
  for (sim::DeviceId d : candidates) {
    const double room = p.c().device(d).memory_bytes - (*used)[d];
    if (room >= unit.footprint_bytes) {
      best = d;
      break;
    }
    if (room > best_room) {
      best_room = room;
      best = d;
    }
  }
  (*used)[best] += unit.footprint_bytes;
  return best;
}

}  // namespace dplace::place
