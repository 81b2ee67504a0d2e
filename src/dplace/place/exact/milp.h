// A mixed-integer linear program as a value (columns, rows), solved by CBC (COIN-OR, Debian
// coinor-libcbc-dev). The request (Milp + MilpOptions) and the result (MilpResult) are kept apart
// from the models that build them; infeasibility and running out of time are results, not errors.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dplace/base/status.h"

namespace dplace::place {

struct Milp {
  struct Row {
    std::vector<int> cols;
    std::vector<double> coefs;
    char sense;  // 'L' (<=), 'G' (>=) or 'E' (=)
    double rhs;
  };
  std::vector<double> lower, upper, objective;  // per column
  std::vector<char> integer;                    // per column
  std::vector<Row> rows;

  int AddColumn(double lb, double ub, double obj, bool is_integer);
  void AddRow(std::vector<int> cols, std::vector<double> coefs, char sense, double rhs);
};

struct MilpOptions {
  double time_limit_s = 60;
  int64_t max_nodes =
      0;  // branch-and-bound nodes; 0: no limit. A node limit keeps runs reproducible.
  // (column, value) of a solution to start from; when it names only some columns (say, the
  // integer ones) the rest are completed first by solving the program with those fixed.
  std::vector<std::pair<int, double>> start;
  double memory_bytes = 4.0 * (1ull << 30);  // CBC's address space
};

enum class MilpStatus { kOptimal, kFeasible, kInfeasible, kNoSolution };

struct MilpResult {
  MilpStatus status = MilpStatus::kNoSolution;
  double objective = 0;   // of the best solution (kOptimal, kFeasible)
  double best_bound = 0;  // proven lower bound on the optimum (minimisation)
  std::vector<double> values;
};

// Minimises. CBC runs in a forked copy of the process: its presolve and root LP do not watch its
// own time limit, so the copy is stopped shortly after `time_limit_s` (and capped at
// `memory_bytes`). InvalidInput, saying so, when it was stopped or ran out of memory; Internal if
// CBC itself fails.
StatusOr<MilpResult> SolveWithCbc(const Milp& milp, const MilpOptions& options);

}  // namespace dplace::place
