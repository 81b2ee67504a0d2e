// The dplace graph format, "dplace-graph/1" (docs/formats.md): read and write.
#pragma once

#include <string>

#include "dplace/base/json_node.h"
#include "dplace/graph/graph.h"

namespace dplace::io {

// Builds a graph from a parsed dplace-graph/1 document. Errors name the place in the document
// ("edges[2].to: unknown op 'x'") or the verification failure ("graph has a cycle: a -> b -> a").
StatusOr<graph::Graph> ReadDplaceGraph(const JsonNode& root);

// The graph as a dplace-graph/1 document (every field, so that reading it back gives the same
// graph).
Json WriteDplaceGraph(const graph::Graph& g);

}  // namespace dplace::io
