#include <Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "dplace/place/exact/milp.h"

namespace dplace::place {

int Milp::AddColumn(double lb, double ub, double obj, bool is_integer) {
  lower.push_back(lb);
  upper.push_back(ub);
  objective.push_back(obj);
  integer.push_back(is_integer);
  return static_cast<int>(lower.size()) - 1;
}

void Milp::AddRow(std::vector<int> cols, std::vector<double> coefs, char sense, double rhs) {
  rows.push_back({std::move(cols), std::move(coefs), sense, rhs});
}

namespace {

// The start completed to every column: the program with the start's columns fixed, solved (an LP
// when the start fixes every integer column). Empty when that has no solution. CBC's own
// completion of a partial start can take longer than the time limit and then fail.
std::vector<std::pair<int, double>> CompleteStart(const Milp& milp, const MilpOptions& options) {
  Milp fixed = milp;
  for (const auto& [col, value] : options.start) {
    fixed.lower[static_cast<size_t>(col)] = value;
    fixed.upper[static_cast<size_t>(col)] = value;
  }
  MilpOptions plain;
  plain.time_limit_s = options.time_limit_s;
  plain.max_nodes = options.max_nodes;
  auto r = SolveWithCbc(fixed, plain);
  if (!r.ok() || (r->status != MilpStatus::kOptimal && r->status != MilpStatus::kFeasible)) {
    return {};
  }
  std::vector<std::pair<int, double>> full;
  for (size_t c = 0; c < r->values.size(); ++c)
    full.emplace_back(static_cast<int>(c), r->values[c]);
  return full;
}

}  // namespace

StatusOr<MilpResult> SolveWithCbc(const Milp& milp, const MilpOptions& options) {
  if (!options.start.empty() && options.start.size() < milp.lower.size()) {
    const auto begin = std::chrono::steady_clock::now();
    MilpOptions completed = options;
    completed.start = CompleteStart(milp, options);
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    completed.time_limit_s = std::max(0.1, options.time_limit_s - spent);
    return SolveWithCbc(milp, completed);
  }
  Cbc_Model* model = Cbc_newModel();
  if (model == nullptr) return Internal("cbc: cannot create a model");
  for (size_t c = 0; c < milp.lower.size(); ++c) {
    // CBC matches a MIP start to the columns by name: each needs its own.
    Cbc_addCol(model, ("c" + std::to_string(c)).c_str(), milp.lower[c], milp.upper[c],
               milp.objective[c], milp.integer[c], 0, nullptr, nullptr);
  }
  for (const Milp::Row& r : milp.rows) {
    Cbc_addRow(model, "", static_cast<int>(r.cols.size()), r.cols.data(), r.coefs.data(), r.sense,
               r.rhs);
  }
  Cbc_setObjSense(model, 1);
  Cbc_setLogLevel(model, getenv("DPLACE_CBC_LOG") ? 1 : 0);
  Cbc_setMaximumSeconds(model, options.time_limit_s);
  Cbc_setParameter(model, "threads", "1");
  if (options.max_nodes > 0) {
    Cbc_setParameter(model, "maxNodes", std::to_string(options.max_nodes).c_str());
  }
  if (!options.start.empty()) {
    std::vector<int> idx;
    std::vector<double> values;
    for (const auto& [col, value] : options.start) {
      idx.push_back(col);
      values.push_back(value);
    }
    Cbc_setMIPStartI(model, static_cast<int>(idx.size()), idx.data(), values.data());
  }
  Cbc_solve(model);
  MilpResult r;
  const bool has_solution = Cbc_numberSavedSolutions(model) > 0 || Cbc_isProvenOptimal(model);
  if (Cbc_isProvenInfeasible(model)) {
    r.status = MilpStatus::kInfeasible;
  } else if (Cbc_isProvenOptimal(model)) {
    r.status = MilpStatus::kOptimal;
  } else if (has_solution) {
    r.status = MilpStatus::kFeasible;
  }
  if (r.status == MilpStatus::kOptimal || r.status == MilpStatus::kFeasible) {
    r.objective = Cbc_getObjValue(model);
    const double* x = Cbc_getColSolution(model);
    r.values.assign(x, x + milp.lower.size());
  }
  r.best_bound = Cbc_getBestPossibleObjValue(model);
  if (r.status == MilpStatus::kOptimal) r.best_bound = r.objective;
  Cbc_deleteModel(model);
  return r;
}

}  // namespace dplace::place
