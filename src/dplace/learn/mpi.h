// The MPI world of a training run, when `mpirun` started this process (OpenMPI sets
// OMPI_COMM_WORLD_SIZE); otherwise a world of one process and no MPI call at all. Built without MPI
// (no libopenmpi-dev), a run under mpirun says so and stops.
#pragma once

#include <vector>

#include "dplace/base/status.h"

namespace dplace::learn {

class MpiWorld {
 public:
  // The world of this process, started on first use, finished at exit.
  static StatusOr<MpiWorld*> Get();
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Every rank's `mine` (each any length), in rank order.
  std::vector<std::vector<double>> AllGather(const std::vector<double>& mine) const;
  // The largest of every rank's `mine`.
  double Max(double mine) const;

 private:
  MpiWorld() = default;
  int rank_ = 0, size_ = 1;
};

}  // namespace dplace::learn
