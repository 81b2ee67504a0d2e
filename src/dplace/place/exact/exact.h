// Exact placers for the pipelined (max-load) objective of Tarnawski et al., NeurIPS 2020.
//   dp   optimal contiguous split: each device gets a difference of two ideals of the forward graph
//        (backward ops follow their forward ops), over identical accelerators and identical CPUs.
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeDpPlacer();

}  // namespace dplace::place
