#include "dplace/place/baseline/baseline.h"

namespace dplace::place {
namespace {

class ExpertPlacer : public Placer {
 public:
  std::string_view name() const override { return "expert"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    if (ctx.given_plan == nullptr) {
      return InvalidInput(
          "placer 'expert' needs a plan: pass --plan FILE (a dplace plan or the paper's "
          "human-expert split)");
    }
    if (static_cast<int>(ctx.given_plan->size()) != p.num_ops()) {
      return InvalidInput("the plan does not cover the graph's " + std::to_string(p.num_ops()) +
                          " ops");
    }
    return *ctx.given_plan;
  }
};

}  // namespace

std::unique_ptr<Placer> MakeExpertPlacer() { return std::make_unique<ExpertPlacer>(); }

}  // namespace dplace::place
