// What the subcommands share: loading graph + cluster into a Problem, and writing outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/io/load.h"
#include "dplace/report/result_json.h"
#include "dplace/sim/problem.h"

namespace dplace::cli {

struct GraphFlags {
  std::string path;
  bool training = false;            // expand into a training step (graph/training.h)
  bool free_gradients = false;      // ... without co-locating backward and update ops
  std::string dtype;                // fp32 | fp16 | bf16 | amp; empty: the graph's own precision
  std::vector<std::string> shapes;  // "name=8x512": an ONNX input's fixed size
  std::string unit;  // "module[:DEPTH]": ops of one module kept together (io::GroupByModule)
};

// Loads the graph, prints the importer's warnings on stderr ("warning: <file>: ..."), expands
// it for training when asked, and rescales it to --dtype (LoadedGraph::precision then says which).
StatusOr<io::LoadedGraph> LoadGraphFile(const GraphFlags& flags);

struct ProblemFlags {
  GraphFlags graph;
  std::string cluster;    // preset or file; optional when the graph file defines the machine
  std::string objective;  // step | throughput; empty: throughput for the paper's files, else step
};

struct LoadedProblem {
  io::LoadedGraph loaded;
  std::unique_ptr<sim::Problem> problem;  // stable address: evaluators keep a reference
};

StatusOr<LoadedProblem> LoadProblem(const ProblemFlags& flags);

// The plan file's content (dplace-plan/1, or the paper's split format when `format` is
// "paper-split").
std::string PlanFileContent(const std::string& format, const sim::Problem& problem,
                            const report::PlacerResult& result);

// Simulates the step of `placement` with a timeline: the Chrome trace's content.
std::string TraceFileContent(const sim::Problem& problem, const sim::Placement& placement);

// Before any work: every output path can be written, and no two are the same file.
// `outputs` are (flag, path) pairs; empty paths are outputs not asked for.
Status CheckOutputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// Runs placer `name` on `problem` with a fresh evaluator and judges the placement it returns.
struct RunOptions {
  uint64_t seed = 1;
  double time_limit_s = 0;
  int64_t evaluations = 0;  // evaluation budget of the search placers (0: none)
  const sim::Placement* given_plan = nullptr;
  std::vector<std::string> portfolio;  // members of `portfolio`; empty: its default
  int coarsen_ops = 2000;  // graphs of more than twice this many ops are coarsened (0: never)
  bool refine = true;      // ... and refined on every op after (place/coarsen.h)
};
StatusOr<report::PlacerResult> RunPlacer(const std::string& name, const sim::Problem& problem,
                                         const RunOptions& options);

// A bound a placer proved holds for every placement of the problem: give each result the best one.
void ShareBestLowerBound(std::vector<report::PlacerResult>* results);

// Lines on whether the step fits one device of each kind (sim/fit.h) and what data parallelism
// would give; with a chosen placement, its time per sample beside it and, where it leaves the
// accelerators (puts ops on a CPU) while the step does not fit one accelerator, the line that says
// so. `batch` 0: unknown.
std::vector<std::string> FitLines(const sim::Problem& problem, int64_t batch,
                                  const sim::Placement* chosen = nullptr, double chosen_s = 0);

// Prints a JSON value to stdout (pretty, one object).
void PrintJson(const Json& j);

}  // namespace dplace::cli
