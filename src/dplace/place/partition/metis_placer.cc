#include "dplace/place/partition/metis_placer.h"

#include <fcntl.h>
#include <metis.h>
#include <unistd.h>

#include <cstdio>
#include <numeric>

#include "dplace/place/partition/unit_graph.h"

namespace dplace::place {
namespace {

// Sends stdout to /dev/null while it lives (the process is single-threaded while it places).
class QuietStdout {
 public:
  QuietStdout() {
    std::fflush(stdout);
    saved_ = dup(STDOUT_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    if (saved_ >= 0 && null >= 0) dup2(null, STDOUT_FILENO);
    if (null >= 0) close(null);
  }
  ~QuietStdout() {
    std::fflush(stdout);
    if (saved_ >= 0) {
      dup2(saved_, STDOUT_FILENO);
      close(saved_);
    }
  }
  QuietStdout(const QuietStdout&) = delete;
  QuietStdout& operator=(const QuietStdout&) = delete;

 private:
  int saved_ = -1;
};

class MetisPlacer : public Placer {
 public:
  std::string_view name() const override { return "metis"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    const UnitGraph ug = MakeUnitGraph(p);
    idx_t n = static_cast<idx_t>(ug.units.size());
    idx_t parts = p.num_devices();
    std::vector<int> part(static_cast<size_t>(n), 0);
    if (parts < 2 || n <= 1) return PlaceResult{PartsToPlacement(p, ug, part)};
    idx_t constraints = 1, cut = 0;
    std::vector<idx_t> xadj(ug.offsets.begin(), ug.offsets.end());
    std::vector<idx_t> adjncy(ug.neighbours.begin(), ug.neighbours.end());
    const std::vector<long long> v = ScaledWeights(ug.vertex_s.vector(), 1e6);
    const std::vector<long long> e = ScaledWeights(ug.edge_s, 1e6);
    std::vector<idx_t> vwgt(v.begin(), v.end()), adjwgt(e.begin(), e.end());
    const double speed_sum = std::accumulate(ug.speed.begin(), ug.speed.end(), 0.0);
    std::vector<real_t> targets;
    for (double s : ug.speed) targets.push_back(static_cast<real_t>(s / speed_sum));
    std::vector<idx_t> out(static_cast<size_t>(n), 0);
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = static_cast<idx_t>(req.seed % 2147483647);
    options[METIS_OPTION_OBJTYPE] = METIS_OBJTYPE_CUT;
    int rc;
    {
      // METIS prints its complaints ("Cannot bisect a graph with 0 vertices!", on small graphs
      // whose host CPU's share is tiny) on stdout, where they would break --json; its return code
      // says what we need.
      const QuietStdout quiet;
      rc = METIS_PartGraphKway(&n, &constraints, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                               adjwgt.empty() ? nullptr : adjwgt.data(), &parts, targets.data(),
                               nullptr, options, &cut, out.data());
    }
    if (rc != METIS_OK)
      return Internal("metis: partitioning failed (code " + std::to_string(rc) + ")");
    part.assign(out.begin(), out.end());
    return PlaceResult{PartsToPlacement(p, ug, part)};
  }
};

}  // namespace

std::unique_ptr<Placer> MakeMetisPlacer() { return std::make_unique<MetisPlacer>(); }

}  // namespace dplace::place
