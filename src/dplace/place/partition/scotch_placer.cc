#include "dplace/place/partition/scotch_placer.h"

// clang-format off
#include <cstdint>
#include <cstdio>
#include <scotch.h>
// clang-format on

#include "dplace/place/partition/unit_graph.h"

namespace dplace::place {
namespace {

std::vector<SCOTCH_Num> ToScotch(const std::vector<long long>& v) {
  return std::vector<SCOTCH_Num>(v.begin(), v.end());
}

class ScotchPlacer : public Placer {
 public:
  std::string_view name() const override { return "scotch"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    const UnitGraph ug = MakeUnitGraph(p);
    const auto n = static_cast<SCOTCH_Num>(ug.units.size());
    const int k = p.num_devices();
    std::vector<SCOTCH_Num> verttab(ug.offsets.begin(), ug.offsets.end());
    std::vector<SCOTCH_Num> edgetab(ug.neighbours.begin(), ug.neighbours.end());
    std::vector<SCOTCH_Num> velotab = ToScotch(ScaledWeights(ug.vertex_s.vector(), 1e6));
    std::vector<SCOTCH_Num> edlotab = ToScotch(ScaledWeights(ug.edge_s, 1e6));
    std::vector<SCOTCH_Num> arch_weights = ToScotch(ScaledWeights(ug.speed.vector(), 1000));
    std::vector<SCOTCH_Num> parttab(static_cast<size_t>(n), 0);

    SCOTCH_Graph graph;
    SCOTCH_Arch arch;
    SCOTCH_Strat strat;
    if (SCOTCH_graphInit(&graph) != 0) return Internal("scotch: graph init failed");
    SCOTCH_archInit(&arch);
    SCOTCH_stratInit(&strat);
    // Scotch 7 maps with threads, in an order that varies from run to run unless its context
    // asks for determinism; the context also carries the seed.
    SCOTCH_Context context;
    SCOTCH_Graph bound;
    SCOTCH_contextInit(&context);
    SCOTCH_graphInit(&bound);
    SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMDETERMINISTIC, 1);
    SCOTCH_contextOptionSetNum(&context, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1);
    SCOTCH_contextRandomSeed(&context, static_cast<SCOTCH_Num>(req.seed % 2147483647));
    int rc =
        SCOTCH_graphBuild(&graph, 0, n, verttab.data(), verttab.data() + 1, velotab.data(), nullptr,
                          static_cast<SCOTCH_Num>(edgetab.size()), edgetab.data(), edlotab.data());
    if (rc == 0) rc = SCOTCH_archCmpltw(&arch, k, arch_weights.data());
    if (rc == 0) rc = SCOTCH_stratGraphMapBuild(&strat, SCOTCH_STRATQUALITY, k, 0.05);
    if (rc == 0) rc = SCOTCH_contextBindGraph(&context, &graph, &bound);
    if (rc == 0 && n > 0) rc = SCOTCH_graphMap(&bound, &arch, &strat, parttab.data());
    SCOTCH_stratExit(&strat);
    SCOTCH_archExit(&arch);
    SCOTCH_graphExit(&bound);
    SCOTCH_graphExit(&graph);
    SCOTCH_contextExit(&context);
    if (rc != 0) return Internal("scotch: mapping failed (code " + std::to_string(rc) + ")");
    return PlaceResult{PartsToPlacement(p, ug, std::vector<int>(parttab.begin(), parttab.end()))};
  }
};

}  // namespace

std::unique_ptr<Placer> MakeScotchPlacer() { return std::make_unique<ScotchPlacer>(); }

}  // namespace dplace::place
