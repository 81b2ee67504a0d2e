#include "dplace/io/id_edges.h"

#include <string>

namespace dplace::io {

Status AddIdEdges(const std::vector<JsonNode>& edges,
                  const std::unordered_map<int64_t, graph::OpId>& by_id,
                  graph::GraphBuilder& builder) {
  for (const JsonNode& e : edges) {
    graph::OpId ends[2];
    const char* keys[2] = {"sourceId", "destId"};
    for (int k = 0; k < 2; ++k) {
      DPLACE_ASSIGN_OR_RETURN(JsonNode field, e.Field(keys[k]));
      DPLACE_ASSIGN_OR_RETURN(int64_t id, field.Integer());
      auto it = by_id.find(id);
      if (it == by_id.end()) return field.Error("no node with id " + std::to_string(id));
      ends[k] = it->second;
    }
    builder.AddEdge(ends[0], 0, ends[1]);
  }
  return OkStatus();
}

}  // namespace dplace::io
