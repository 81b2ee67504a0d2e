// The objectives as one table: what `--objective` and the files call each, what its value is
// called, the evaluator that judges a placement by it, the lower bound proven for every placement
// of a problem, and what it takes. A new objective is its row, its evaluator and its bound.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "dplace/base/status.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/problem.h"

namespace dplace::sim {

struct ObjectiveRow {
  Objective id;
  std::string_view name;        // as --objective, suites and plan files spell it
  std::string_view value_name;  // what its value is called in tables
  // The objective for a graph file read without one: the paper's files (a max-load model) are
  // judged by throughput, every other graph by its simulated step.
  bool default_for_paper_files = false;
  bool default_for_graphs = false;
  // Whether `--runtime` (how the step's ops are issued: executor or eager) applies to it.
  bool takes_runtime = false;
  std::unique_ptr<Evaluator> (*make_evaluator)(std::shared_ptr<const Problem>) = nullptr;
  // A bound no feasible placement of the problem goes below (lower_bound.h).
  double (*lower_bound)(const Problem&) = nullptr;
};

// Every objective, in the order tables list them.
std::span<const ObjectiveRow> ObjectiveTable();
const ObjectiveRow& RowOf(Objective objective);
// The objective named `name`; InvalidInput "<field>: 'x' is not step, throughput, ... or ..."
StatusOr<Objective> ObjectiveNamed(std::string_view name, std::string_view field = "objective");
// The objective of a graph file read without one.
Objective DefaultObjective(bool paper_file);

}  // namespace dplace::sim
