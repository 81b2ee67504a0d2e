// The integer programs of Tarnawski et al., NeurIPS 2020, built for CBC (milp.h) over dplace's unit
// model (contiguous_model.h), each with its way from a placement to a MIP start and from CBC's
// solution back to a placement. docs/exact.md states each program.
//
//   NonContiguousMaxLoad  the paper's non-contiguous max-load program over co-location classes.
// On a grouped problem (hw::Cluster::Grouped) an accelerator's load is its replicas' (a share of
// its work and transfers plus its all-reduce: ContiguousModel::ReplicaTerms).
//   ContiguousMaxLoad     contiguous max-load over the DP's units, as a chain of ideals
//                         I_1 ⊆ … ⊆ I_K (K = accelerators + CPUs), block j = I_j \ I_(j-1) on a
//                         device whose kind is a variable: exactly the DP's splits, so its
//                         optimum is the DP's.
//   Latency               the paper's single-sample latency program: one call per accelerator
//                         (contiguous), a CPU pool running ops as soon as they are ready.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "dplace/place/exact/contiguous_model.h"
#include "dplace/place/exact/milp.h"

namespace dplace::place {

class PlacementProgram {
 public:
  virtual ~PlacementProgram() = default;
  const Milp& milp() const { return milp_; }
  // Values of the integer columns that describe `placement` (CBC completes the rest); empty when
  // the program cannot represent it.
  virtual std::vector<std::pair<int, double>> StartValues(
      const sim::Placement& placement) const = 0;
  // The placement of a solution of the program.
  virtual sim::Placement Decode(const std::vector<double>& values, int num_ops) const = 0;

 protected:
  Milp milp_;
};

// `m` built without contiguity (units = co-location classes).
std::unique_ptr<PlacementProgram> NonContiguousMaxLoad(const ContiguousModel& m);
// `m` built for contiguity (the DP's units), its accelerators of the same replicas
// (ContiguousModel::UniformReplicas: a block's accelerator is not known in the program).
std::unique_ptr<PlacementProgram> ContiguousMaxLoad(const ContiguousModel& m);
// `m` built without contiguity. `upper_bound`: the latency of a known feasible placement (it
// tightens the program's big-M terms), or infinity.
std::unique_ptr<PlacementProgram> Latency(const sim::Problem& p, const ContiguousModel& m,
                                          double upper_bound);

}  // namespace dplace::place
