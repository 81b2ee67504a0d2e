// Edges given as {"sourceId": a, "destId": b} between nodes with integer ids, as the NeurIPS 2020
// paper's JSON and Piper's JSON write them.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "dplace/base/json_node.h"
#include "dplace/graph/graph_builder.h"

namespace dplace::io {

// Adds one edge (output 0 of the source) per element; errors name the element and the unknown id.
Status AddIdEdges(const std::vector<JsonNode>& edges,
                  const std::unordered_map<int64_t, graph::OpId>& by_id,
                  graph::GraphBuilder& builder);

}  // namespace dplace::io
