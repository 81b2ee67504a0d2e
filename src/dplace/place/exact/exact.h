// Exact placers for the pipelined (max-load) objective of Tarnawski et al., NeurIPS 2020.
//   dp   optimal contiguous split: each device gets a difference of two ideals of the forward graph
//        (backward ops follow their forward ops), over identical accelerators and identical CPUs.
//   pipedream  the same model over the splits of one linear order of the layers (PipeDream's DP).
//   ilp  the non-contiguous max-load integer program, solved with CBC (ilp_placer.cc).
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeDpPlacer();
std::unique_ptr<Placer> MakePipeDreamPlacer();
std::unique_ptr<Placer> MakeIlpPlacer();

}  // namespace dplace::place
