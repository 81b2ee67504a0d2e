#include "dplace/sim/fit.h"

#include <algorithm>
#include <cmath>

#include "dplace/cost/collectives.h"
#include "dplace/sim/step_sim.h"

namespace dplace::sim {

std::vector<KindFit> FitOnOneDevice(const Problem& p, int64_t batch) {
  const graph::Graph& g = p.g();
  MemoryNeed fixed;
  for (const graph::Op& op : g.ops()) {
    switch (op.kind) {
      case graph::OpKind::kForward:
        fixed.weights_bytes += op.param_bytes;
        break;
      case graph::OpKind::kBackward:
        fixed.gradients_bytes += op.param_bytes;
        break;
      case graph::OpKind::kUpdate:
        fixed.optimizer_bytes += op.param_bytes;
        break;
    }
  }
  std::vector<KindFit> out;
  for (const std::string& kind : p.c().kinds()) {
    KindFit fit{.kind = kind};
    bool first = true;
    for (DeviceId d{0}; d < p.num_devices(); ++d) {
      if (p.c().device(d).kind != kind) continue;
      ++fit.count;
      if (first) fit.device = d, first = false;
    }
    fit.capacity_bytes = p.c().device(fit.device).memory_bytes;
    for (OpId op{0}; op < p.num_ops() && fit.runs; ++op) fit.runs = p.Allowed(op, fit.device);
    const Placement one(p.g().ops().size(), fit.device);
    const StepResult r = SimulateStep(p, one);
    fit.step_s = r.evaluation.value;
    fit.need = fixed;
    fit.need.activations_bytes =
        std::max(0.0, r.evaluation.devices[fit.device].peak_memory_bytes - fixed.Total());
    fit.fits = fit.runs && fit.need.Total() <= fit.capacity_bytes;
    if (batch > 0 && fit.need.activations_bytes > 0 && std::isfinite(fit.capacity_bytes)) {
      const double per_sample = fit.need.activations_bytes / static_cast<double>(batch);
      const double room = fit.capacity_bytes - fixed.Total();
      fit.max_batch = room > 0 ? static_cast<int64_t>(std::floor(room / per_sample)) : 0;
    }
    out.push_back(fit);
  }
  return out;
}

std::optional<DataParallel> DataParallelStep(const Problem& p, const KindFit& fit, int64_t batch) {
  if (!fit.fits || batch <= 0) return std::nullopt;
  std::vector<DeviceId> ring;
  for (DeviceId d{0}; d < p.num_devices(); ++d) {
    if (p.c().device(d).kind == fit.kind) ring.push_back(d);
  }
  DataParallel dp{.devices = static_cast<int>(ring.size()), .step_s = fit.step_s};
  const auto n = static_cast<double>(ring.size());
  if (ring.size() > 1 && fit.need.gradients_bytes > 0) {
    // Ring all-reduce: every step moves 1/n of the gradients over every ring link at once; the
    // slowest link sets the pace.
    const hw::Link* slowest = nullptr;
    double step_s = -1;
    for (size_t i = 0; i < ring.size(); ++i) {
      const hw::Link& link = p.c().LinkBetween(ring[i], ring[(i + 1) % ring.size()]);
      const double s = link.latency_s + fit.need.gradients_bytes / n / link.bandwidth_bytes_per_s;
      if (s > step_s) {
        step_s = s;
        slowest = &link;
      }
    }
    dp.allreduce_s =
        cost::RingAllReduceTime(fit.need.gradients_bytes, static_cast<int>(ring.size()), *slowest);
  }
  dp.per_sample_s = (dp.step_s + dp.allreduce_s) / (n * static_cast<double>(batch));
  return dp;
}

}  // namespace dplace::sim
