// Exact placers for the pipelined (max-load) objective of Tarnawski et al., NeurIPS 2020.
//   dp   optimal contiguous split: each device gets a difference of two ideals of the forward graph
//        (backward ops follow their forward ops), over identical accelerators and identical CPUs.
//   pipedream  the same model over the splits of one linear order of the layers (PipeDream's DP).
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeDpPlacer();
std::unique_ptr<Placer> MakePipeDreamPlacer();

}  // namespace dplace::place
