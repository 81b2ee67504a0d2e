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

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeDpPlacer();
std::unique_ptr<Placer> MakePipeDreamPlacer();
std::unique_ptr<Placer> MakeIlpPlacer();
std::unique_ptr<Placer> MakeIlpContiguousPlacer();

}  // namespace dplace::place
