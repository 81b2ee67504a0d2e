// The explicit table of every placer dplace has (registry.cc): per row its name, what it does, its
// traits and how to make it with its options. No self-registration: adding a placer means its own
// files and one row there. Meta placers get their members through the Catalog this table is.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/place/meta/catalog.h"
#include "dplace/place/options.h"
#include "dplace/place/search/score.h"

namespace dplace::place {

struct PlacerEntry {
  std::string_view name;
  std::string_view description;
  PlacerTraits traits;
  // Makes the placer with the options `reader` holds (the reader reports unknown keys after);
  // meta placers and the searches get their members from `catalog`.
  StatusOr<std::unique_ptr<Placer>> (*make)(OptionReader& reader, const Catalog& catalog);
};

// Every placer built into this binary, in table order.
std::span<const PlacerEntry> Placers();
// The row of `name`; InvalidInput listing the known names (with a close one) when none.
StatusOr<const PlacerEntry*> FindPlacer(std::string_view name);

// Option values per placer name (ParseOptionSpecs): what `--opt` gives a whole run.
using PlacerOptions = std::map<std::string, OptionValues>;

// Makes placer `name` with `options[name]`, its members with theirs. InvalidInput for an unknown
// placer, an unknown option key or a bad value, and for options given to a placer not built in.
StatusOr<Member> MakePlacer(std::string_view name, const PlacerOptions& options = {});

// Where the searches start (place/meta/best_start.h: the best of the start heuristics and of the
// two-start searches, within a quarter of the request's limits): where the learned placers'
// episodes begin too, in training and in placement.
// `also`: placers whose placements join them (as `mcmc.start=placeto` does), made with `options`.
StatusOr<std::shared_ptr<StartFinder>> SearchStart(const std::vector<std::string>& also = {},
                                                   const PlacerOptions& options = {});

// The options of placer `name` with their defaults and meaning (`dplace placers --options`).
std::vector<OptionDoc> OptionDocs(const PlacerEntry& entry);

}  // namespace dplace::place
