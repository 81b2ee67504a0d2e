// How meta placers get their members without knowing the table: the registry hands them a
// Catalog, which makes placers by name with the run's options and lists names by traits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/place/traits.h"

namespace dplace::place {

class Catalog {
 public:
  virtual ~Catalog() = default;
  // The placer `name` with the options given for it. InvalidInput for an unknown name or option.
  virtual StatusOr<Member> Make(std::string_view name) const = 0;
  // The names of the placers built in whose traits pass `keep`, in table order.
  virtual std::vector<std::string> Names(bool (*keep)(const PlacerTraits&)) const = 0;
};

}  // namespace dplace::place
