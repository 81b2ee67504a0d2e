// What the bindings share: dplace's errors as the Python exception dplace.Error (the same one-line
// messages as the command line), the loaded objects the Python classes hold, and placements read
// from whatever Python hands over (a Result, a {op: device} dict, a plan dict or file).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "dplace/base/json_node.h"
#include "dplace/base/status.h"
#include "dplace/hw/cluster.h"
#include "dplace/io/load.h"
#include "dplace/run/run.h"
#include "dplace/sim/problem.h"

namespace dplace::python {

namespace py = pybind11;

// Thrown for bad input; registered as dplace.Error (a ValueError).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Raises dplace.Error for bad input, RuntimeError for an internal failure.
void ThrowIfError(const Status& status);
template <typename T>
T Unwrap(StatusOr<T> value) {
  ThrowIfError(value.status());
  return std::move(value).value();
}

// A graph as loaded, with the options it was loaded with (Problem keeps them for new objectives).
struct PyGraph {
  io::LoadedGraph loaded;
  std::string source;  // the file, or "<dict>", for messages
};

struct PyCluster {
  std::shared_ptr<const hw::Cluster> cluster;
};

struct PyProblem {
  std::shared_ptr<const PyGraph> graph;
  std::shared_ptr<const hw::Cluster> cluster;  // the one given (null: the graph file's)
  std::string cluster_source;                  // the cluster file read ("": none)
  std::shared_ptr<const sim::Problem> problem;
  std::string runtime;        // as given: "", executor or eager
  std::string schedule;       // as given: "" or a schedule (sim/schedules.h), [:M]
  std::string recompute;      // as given: "", none, full or auto
  std::string replicas;       // as given: "", N, N1,N2,... or auto (run::ProblemSpec)
  std::string replicas_note;  // under auto, what dp chose (run::WithReplicas)
};

// A judged placement of one problem (what place and simulate return).
struct PyResult {
  std::shared_ptr<const sim::Problem> problem;
  run::PlacerResult result;
  double lower_bound = 0;  // the bound of the call that made it (run::LowerBound)
};

// Python's JSON value (dict, list, str, numbers) and nlohmann's, through the json module's text.
Json ToJson(const py::handle& value);
py::object FromJson(const Json& value);

// The placement `plan` gives for `problem`: a Result of this problem, a {op name: device name}
// dict (ops of a co-location group may be left out), a dplace-plan/1 dict, or a plan file's path.
// dplace.Error names what does not fit ("plan: unknown op 'x'", a Result of another problem).
sim::Placement PlacementOf(const sim::Problem& problem, const py::handle& plan);

// {op name: device name}.
py::dict PlacementDict(const sim::Problem& problem, const sim::Placement& placement);

}  // namespace dplace::python
