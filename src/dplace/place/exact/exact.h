// Exact placers for the objectives of Tarnawski et al., NeurIPS 2020: pipelined max-load
// (throughput) and single-sample latency.
//   dp   optimal contiguous split: each device gets a difference of two ideals of the forward graph
//        (backward ops follow their forward ops), over identical accelerators and identical CPUs.
//   pipedream  the same model over the splits of one linear order of the layers (PipeDream's DP).
//   ilp  the non-contiguous max-load integer program, or on objective latency the single-sample
//        latency program, solved with CBC (ilp_placer.cc).
//   ilp_contiguous  the contiguous max-load integer program (the DP's model), solved with CBC.
#pragma once

#include <memory>

#include "dplace/place/options.h"
#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeDpPlacer();
std::unique_ptr<Placer> MakePipeDreamPlacer();

// The limits of the integer-program placers (CBC).
struct IlpOptions {
  double time_limit_s = 60;    // when the request has no time limit
  int64_t max_nodes = 100000;  // branch-and-bound nodes
  double memory_gib = 4;       // the CBC process's address space
  // Share of the time the start may take: ilp's linear-order splits (1/3), ilp_contiguous's dp
  // (its table row sets 1/2); CBC has the rest.
  double start_share = 1.0 / 3;
};
void ReadOptions(OptionReader& reader, IlpOptions* options);
std::unique_ptr<Placer> MakeIlpPlacer(IlpOptions options = {});
std::unique_ptr<Placer> MakeIlpContiguousPlacer(IlpOptions options = {});

}  // namespace dplace::place
