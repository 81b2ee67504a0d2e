#include "dplace/learn/mpi.h"

#include <algorithm>
#include <cstdlib>

#ifdef DPLACE_HAVE_MPI
#include <mpi.h>
#endif

namespace dplace::learn {
namespace {

bool UnderMpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

#ifdef DPLACE_HAVE_MPI
void Finish() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
#endif

}  // namespace

StatusOr<MpiWorld*> MpiWorld::Get() {
  static MpiWorld world;
  static bool started = false;
  if (started || !UnderMpirun()) return &world;
#ifdef DPLACE_HAVE_MPI
  MPI_Init(nullptr, nullptr);
  std::atexit(Finish);
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size_);
  started = true;
  return &world;
#else
  return InvalidInput("run under mpirun, but this dplace was built without MPI (libopenmpi-dev)");
#endif
}

std::vector<std::vector<double>> MpiWorld::AllGather(const std::vector<double>& mine) const {
  if (size_ == 1) return {mine};
#ifdef DPLACE_HAVE_MPI
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_), 0);
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    total += counts[r];
  }
  std::vector<double> all(static_cast<size_t>(total));
  MPI_Allgatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(),
                 MPI_DOUBLE, MPI_COMM_WORLD);
  std::vector<std::vector<double>> out;
  for (size_t r = 0; r < counts.size(); ++r) {
    out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
  }
  return out;
#else
  return {mine};
#endif
}

double MpiWorld::Max(double mine) const {
  double most = mine;
  for (const std::vector<double>& theirs : AllGather({mine})) {
    for (double v : theirs) most = std::max(most, v);
  }
  return most;
}

}  // namespace dplace::learn
