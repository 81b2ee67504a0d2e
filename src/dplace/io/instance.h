// A graph together with the machine its file defines (the paper's and Piper's inputs do).
#pragma once

#include "dplace/graph/graph.h"
#include "dplace/hw/cluster.h"

namespace dplace::io {

struct GraphWithMachine {
  graph::Graph graph;
  hw::Cluster cluster;
};

}  // namespace dplace::io
