#include <Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "dplace/base/isolated.h"
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

StatusOr<MilpResult> SolveInProcess(const Milp& milp, const MilpOptions& options);

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
  auto r = SolveInProcess(fixed, plain);
  if (!r.ok() || (r->status != MilpStatus::kOptimal && r->status != MilpStatus::kFeasible)) {
    return {};
  }
  std::vector<std::pair<int, double>> full;
  for (size_t c = 0; c < r->values.size(); ++c)
    full.emplace_back(static_cast<int>(c), r->values[c]);
  return full;
}

StatusOr<MilpResult> SolveInProcess(const Milp& milp, const MilpOptions& options) {
  if (!options.start.empty() && options.start.size() < milp.lower.size()) {
    const auto begin = std::chrono::steady_clock::now();
    MilpOptions completed = options;
    completed.start = CompleteStart(milp, options);
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    completed.time_limit_s = std::max(0.1, options.time_limit_s - spent);
    return SolveInProcess(milp, completed);
  }
  Cbc_Model* model = Cbc_newModel();
  if (model == nullptr) return Internal("cbc: cannot create a model");
  // The whole matrix at once, by columns (adding rows one by one is quadratic in CBC).
  const size_t num_cols = milp.lower.size();
  std::vector<CoinBigIndex> starts(num_cols + 1, 0);
  for (const Milp::Row& r : milp.rows) {
    for (int c : r.cols) ++starts[static_cast<size_t>(c) + 1];
  }
  for (size_t c = 0; c < num_cols; ++c) starts[c + 1] += starts[c];
  std::vector<int> index(static_cast<size_t>(starts[num_cols]));
  std::vector<double> coefficient(index.size());
  std::vector<double> row_lower, row_upper;
  std::vector<CoinBigIndex> fill(starts.begin(), starts.end() - 1);
  constexpr double kInf = std::numeric_limits<double>::max();  // COIN_DBL_MAX: no bound
  for (size_t row = 0; row < milp.rows.size(); ++row) {
    const Milp::Row& r = milp.rows[row];
    for (size_t i = 0; i < r.cols.size(); ++i) {
      const auto c = static_cast<size_t>(r.cols[i]);
      const auto at = static_cast<size_t>(fill[c]);
      if (at > static_cast<size_t>(starts[c]) && index[at - 1] == static_cast<int>(row)) {
        coefficient[at - 1] += r.coefs[i];  // a column named twice in one row: one entry
        continue;
      }
      index[at] = static_cast<int>(row);
      coefficient[at] = r.coefs[i];
      ++fill[c];
    }
    row_lower.push_back(r.sense == 'L' ? -kInf : std::max(r.rhs, -kInf));
    row_upper.push_back(r.sense == 'G' ? kInf : std::min(r.rhs, kInf));
  }
  // Close the gaps the merged entries left.
  CoinBigIndex kept = 0;
  for (size_t c = 0; c < num_cols; ++c) {
    const CoinBigIndex begin = starts[c], end = fill[c];
    starts[c] = kept;
    for (CoinBigIndex at = begin; at < end; ++at) {
      if (coefficient[static_cast<size_t>(at)] == 0) continue;  // no entry
      index[static_cast<size_t>(kept)] = index[static_cast<size_t>(at)];
      coefficient[static_cast<size_t>(kept)] = coefficient[static_cast<size_t>(at)];
      ++kept;
    }
  }
  starts[num_cols] = kept;
  std::vector<double> col_lower(milp.lower), col_upper(milp.upper);
  for (double& b : col_lower) b = std::max(b, -kInf);
  for (double& b : col_upper) b = std::min(b, kInf);
  Cbc_loadProblem(model, static_cast<int>(num_cols), static_cast<int>(milp.rows.size()),
                  starts.data(), index.data(), coefficient.data(), col_lower.data(),
                  col_upper.data(), milp.objective.data(), row_lower.data(), row_upper.data());
  // Columns keep CBC's default names (a MIP start is matched by name). Naming them after the load
  // makes CBC 2.10's post-processing crash on the latency program.
  for (size_t c = 0; c < num_cols; ++c) {
    if (milp.integer[c]) Cbc_setInteger(model, static_cast<int>(c));
  }
  Cbc_setObjSense(model, 1);
  Cbc_setLogLevel(model, getenv("DPLACE_CBC_LOG") ? 1 : 0);
  Cbc_setMaximumSeconds(model, options.time_limit_s);
  Cbc_setParameter(model, "threads", "1");
  Cbc_setParameter(model, "timeMode", "elapsed");  // wall-clock seconds, as --time-limit
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

// A result as bytes and back: status, objective, bound, then the values.
std::string Serialize(const MilpResult& r) {
  std::string bytes(sizeof(double) * (3 + r.values.size()), '\0');
  const double head[3] = {static_cast<double>(r.status), r.objective, r.best_bound};
  std::memcpy(bytes.data(), head, sizeof(head));
  std::memcpy(bytes.data() + sizeof(head), r.values.data(), sizeof(double) * r.values.size());
  return bytes;
}

MilpResult Deserialize(const std::string& bytes) {
  std::vector<double> all(bytes.size() / sizeof(double));
  std::memcpy(all.data(), bytes.data(), all.size() * sizeof(double));
  MilpResult r;
  r.status = static_cast<MilpStatus>(static_cast<int>(all[0]));
  r.objective = all[1];
  r.best_bound = all[2];
  r.values.assign(all.begin() + 3, all.end());
  return r;
}

}  // namespace

StatusOr<MilpResult> SolveWithCbc(const Milp& milp, const MilpOptions& options) {
  // CBC's own limit stops its search; the copy is stopped a little later if CBC has not.
  const IsolatedLimits limits{.seconds = options.time_limit_s * 1.05 + 0.8,
                              .memory_bytes = options.memory_bytes,
                              .on_crash = "a solver failure"};
  DPLACE_ASSIGN_OR_RETURN(const std::string bytes, RunIsolated(
                                                       [&]() -> StatusOr<std::string> {
                                                         DPLACE_ASSIGN_OR_RETURN(
                                                             const MilpResult r,
                                                             SolveInProcess(milp, options));
                                                         return Serialize(r);
                                                       },
                                                       "CBC", limits));
  if (bytes.size() < 3 * sizeof(double)) return Internal("CBC: a truncated result");
  return Deserialize(bytes);
}

}  // namespace dplace::place
