#include <charconv>
#include <map>
#include <sstream>
#include <unordered_map>

#include "dplace/graph/graph_builder.h"
#include "dplace/io/profiles.h"

namespace dplace::io {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

struct Layer {
  std::string name, description;
  double forward_ms = 0, backward_ms = 0, activation_bytes = 0, parameter_bytes = 0;
};

Status LineError(int line, const std::string& message) {
  return InvalidInput("line " + std::to_string(line) + ": " + message);
}

// "forward_compute_time=2.211, backward_compute_time=2.788, activation_size=...,
// parameter_size=..."
Status ParseFields(std::string_view text, int line, Layer* layer) {
  const std::pair<const char*, double*> fields[] = {{"forward_compute_time", &layer->forward_ms},
                                                    {"backward_compute_time", &layer->backward_ms},
                                                    {"activation_size", &layer->activation_bytes},
                                                    {"parameter_size", &layer->parameter_bytes}};
  for (const auto& [key, out] : fields) {
    const size_t at = text.find(std::string(key) + "=");
    if (at == std::string_view::npos) return LineError(line, "missing " + std::string(key));
    std::string_view rest = text.substr(at + std::char_traits<char>::length(key) + 1);
    const size_t end = rest.find(',');
    // A layer with several outputs lists them: "[6291456.0; 131072.0]"; they add up.
    std::string_view value = Trim(rest.substr(0, end));
    if (!value.empty() && value.front() == '[') {
      if (value.back() != ']') return LineError(line, std::string(key) + ": missing ']'");
      value = value.substr(1, value.size() - 2);
    }
    *out = 0;
    std::string_view list = value;
    do {
      const size_t semi = list.find(';');
      const std::string number(Trim(list.substr(0, semi)));
      char* stop = nullptr;
      const double v = std::strtod(number.c_str(), &stop);
      if (number.empty() || *stop != '\0' || !(v >= 0) || v > 1e300) {
        return LineError(
            line, std::string(key) + " '" + std::string(value) + "' is not a non-negative number");
      }
      *out += v;
      list = semi == std::string_view::npos ? std::string_view() : list.substr(semi + 1);
    } while (!list.empty());
  }
  return OkStatus();
}

}  // namespace

bool IsPipeDreamProfile(std::string_view text) {
  const std::string_view first = Trim(text.substr(0, text.find('\n')));
  return first.rfind("node", 0) == 0 && first.find(" -- ") != std::string_view::npos;
}

StatusOr<graph::Graph> ReadPipeDreamProfile(std::string_view text, const std::string& name) {
  std::vector<Layer> layers;
  std::unordered_map<std::string, int> index;
  std::vector<std::pair<int, int>> edges;
  std::vector<std::pair<std::string, std::string>> edge_names;
  std::vector<int> edge_lines;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string_view line = Trim(raw);
    if (line.empty()) {
      if (end == text.size()) break;
      continue;
    }
    const size_t sep = line.find(" -- ");
    if (sep == std::string_view::npos) return LineError(line_no, "expected 'nodeA -- ...'");
    const bool is_edge =
        raw.front() == '\t' || line.find(" -- ", sep + 4) == std::string_view::npos;
    if (is_edge) {
      edge_names.emplace_back(std::string(Trim(line.substr(0, sep))),
                              std::string(Trim(line.substr(sep + 4))));
      edge_lines.push_back(line_no);
      continue;
    }
    const size_t sep2 = line.rfind(" -- ");
    Layer layer;
    layer.name = std::string(Trim(line.substr(0, sep)));
    layer.description = std::string(Trim(line.substr(sep + 4, sep2 - sep - 4)));
    DPLACE_RETURN_IF_ERROR(ParseFields(line.substr(sep2 + 4), line_no, &layer));
    if (index.count(layer.name)) return LineError(line_no, "duplicate node '" + layer.name + "'");
    index[layer.name] = static_cast<int>(layers.size());
    layers.push_back(std::move(layer));
  }
  if (layers.empty()) return InvalidInput("no layers");
  for (size_t e = 0; e < edge_names.size(); ++e) {
    int ends[2];
    const std::string* names[2] = {&edge_names[e].first, &edge_names[e].second};
    for (int k = 0; k < 2; ++k) {
      auto it = index.find(*names[k]);
      if (it == index.end())
        return LineError(edge_lines[e], "edge to unknown node '" + *names[k] + "'");
      ends[k] = it->second;
    }
    edges.emplace_back(ends[0], ends[1]);
  }
  // Forward op per layer; backward op per layer, co-located; the gradient for each input goes back
  // along the reversed edge and is as large as that input's activation.
  graph::GraphBuilder builder(name);
  std::vector<std::vector<int>> inputs(layers.size());
  for (const auto& [a, b] : edges) inputs[static_cast<size_t>(b)].push_back(a);
  std::vector<graph::OpId> fwd(layers.size()), bwd(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    graph::Op f;
    f.name = l.name;
    f.type = l.description.substr(0, l.description.find('('));
    f.time_s = {{"gpu", l.forward_ms * 1e-3}};
    f.param_bytes = l.parameter_bytes;
    f.device_kinds = {"gpu"};
    f.colocation = builder.Group(l.name);
    fwd[i] = builder.AddOp(f, {{l.activation_bytes, -1}});
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    graph::Op b;
    b.name = l.name + "_grad";
    b.type = "Backward";
    b.kind = graph::OpKind::kBackward;
    b.time_s = {{"gpu", l.backward_ms * 1e-3}};
    b.device_kinds = {"gpu"};
    b.colocation = builder.Group(l.name);
    std::vector<graph::TensorSpec> grads;
    for (int a : inputs[i]) grads.push_back({layers[static_cast<size_t>(a)].activation_bytes, -1});
    bwd[i] = builder.AddOp(b, std::move(grads));
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    builder.AddEdge(fwd[i], 0, bwd[i]);  // the stashed activation
    for (size_t k = 0; k < inputs[i].size(); ++k) {
      const auto a = static_cast<size_t>(inputs[i][k]);
      builder.AddEdge(fwd[a], 0, fwd[i]);
      builder.AddEdge(bwd[i], static_cast<int32_t>(k), bwd[a]);
    }
  }
  return builder.Build();
}

}  // namespace dplace::io
