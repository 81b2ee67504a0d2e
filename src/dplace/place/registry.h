// The explicit table of every placer dplace has (registry.cc). No self-registration: adding a
// placer means adding one line there.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "dplace/place/placer.h"

namespace dplace::place {

struct PlacerEntry {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<Placer> (*make)();
  bool needs_plan;        // only runs when a plan is given (--plan)
  bool paper_model_only;  // the paper's model only: objectives throughput and latency
};

std::span<const PlacerEntry> Placers();

// InvalidInput listing the known names when `name` is not one.
StatusOr<std::unique_ptr<Placer>> MakePlacer(std::string_view name);

}  // namespace dplace::place
