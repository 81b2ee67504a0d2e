// dplace._dplace.PlacementEnv: the learning layer's environment (learn/env.h) for Python, with
// observations as numpy arrays. dplace/env.py wraps it in the Gymnasium-style Env.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "convert.h"
#include "dplace/learn/env.h"
#include "dplace/sim/evaluator.h"

namespace dplace::python {
namespace {

template <typename T>
py::array_t<T> Array(const std::vector<T>& values, std::vector<py::ssize_t> shape) {
  py::array_t<T> out(shape);
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

// One environment over a problem: the evaluator it counts evaluations on, the units it places.
class PyEnv {
 public:
  PyEnv(const PyProblem& p, int max_units, int refresh_every)
      : problem_(p.problem), evaluator_(sim::MakeEvaluator(problem_)) {
    if (max_units < 1) throw Error("max_units: must be at least 1");
    if (refresh_every < 1) throw Error("refresh_every: must be at least 1");
    place::Units units = Unwrap(learn::PolicyUnits(*problem_, max_units));
    env_ = std::make_unique<learn::PlacementEnv>(*problem_, *evaluator_, std::move(units),
                                                 learn::EnvOptions{.refresh_every = refresh_every});
  }

  // Starts an episode from `start` (None: each unit on its fastest device that has room).
  void Reset(const py::object& start) {
    if (start.is_none()) {
      env_->Reset(learn::FastestStart(*problem_, env_->units()));
    } else {
      env_->Reset(PlacementOf(*problem_, start));
    }
    started_ = true;
  }

  double Step(int action) {
    if (!started_) throw Error("step: no episode yet; call reset() first");
    if (env_->Done()) throw Error("step: the episode is over; call reset()");
    if (action < 0 || action >= problem_->num_devices()) {
      throw Error("step: action " + std::to_string(action) + " is not a device index from 0 to " +
                  std::to_string(problem_->num_devices() - 1));
    }
    learn::Observation obs;
    env_->Observe(&obs);
    if (obs.allowed[static_cast<size_t>(action)] == 0) {
      throw Error("step: unit " + std::to_string(obs.current) + " may not run on device " +
                  problem_->c().device(sim::DeviceId(action)).name);
    }
    return env_->Step(sim::DeviceId(action));
  }

  py::dict Observe() const {
    if (!started_) throw Error("observe: no episode yet; call reset() first");
    if (env_->Done()) throw Error("observe: the episode is over; call reset()");
    learn::Observation obs;
    env_->Observe(&obs);
    const auto n = static_cast<py::ssize_t>(env_->dag().num_nodes);
    const auto d = static_cast<py::ssize_t>(problem_->num_devices());
    py::dict out;
    out["current"] = obs.current;
    out["nodes"] = Array(obs.nodes, {n, learn::kNodeFeatures});
    out["devices"] = Array(obs.devices, {d, learn::kDeviceFeatures});
    std::vector<uint8_t> allowed(obs.allowed.begin(), obs.allowed.end());
    out["allowed"] = Array(allowed, {d});
    return out;
  }

  // The units' DAG: edges (2 x E: from, to), the bytes each carries, each unit's op-type hash.
  py::dict Dag() const {
    const learn::UnitDag& dag = env_->dag();
    std::vector<int32_t> edges;
    for (int v = 0; v < dag.num_nodes; ++v) {
      for (int32_t k = dag.pred_offsets[static_cast<size_t>(v)];
           k < dag.pred_offsets[static_cast<size_t>(v) + 1]; ++k) {
        edges.push_back(dag.preds[static_cast<size_t>(k)]);
      }
    }
    std::vector<int32_t> all(edges.size() * 2);
    size_t e = 0;
    for (int v = 0; v < dag.num_nodes; ++v) {
      for (int32_t k = dag.pred_offsets[static_cast<size_t>(v)];
           k < dag.pred_offsets[static_cast<size_t>(v) + 1]; ++k, ++e) {
        all[e] = dag.preds[static_cast<size_t>(k)];
        all[edges.size() + e] = v;
      }
    }
    std::vector<float> bytes(dag.edge_bytes.begin(), dag.edge_bytes.end());
    py::dict out;
    out["edges"] = Array(all, {2, static_cast<py::ssize_t>(edges.size())});
    out["edge_bytes"] = Array(bytes, {static_cast<py::ssize_t>(bytes.size())});
    out["type"] = Array(dag.type, {static_cast<py::ssize_t>(dag.type.size())});
    return out;
  }

  const learn::PlacementEnv& env() const { return *env_; }
  const sim::Problem& problem() const { return *problem_; }
  int64_t evaluations() const { return evaluator_->evaluations(); }

 private:
  std::shared_ptr<const sim::Problem> problem_;
  std::unique_ptr<sim::Evaluator> evaluator_;
  std::unique_ptr<learn::PlacementEnv> env_;
  bool started_ = false;  // reset() was called: an episode has a placement
};

}  // namespace

void BindEnv(py::module_& m) {
  py::class_<PyEnv>(m, "PlacementEnv")
      .def(py::init<const PyProblem&, int, int>(), py::arg("problem"), py::arg("max_units") = 2000,
           py::arg("refresh_every") = 1)
      .def("reset", &PyEnv::Reset, py::arg("start") = py::none())
      .def("step", &PyEnv::Step, py::arg("action"))
      .def("observe", &PyEnv::Observe)
      .def("dag", &PyEnv::Dag)
      .def_property_readonly("done", [](const PyEnv& e) { return e.env().Done(); })
      .def_property_readonly("num_units", [](const PyEnv& e) { return e.env().dag().num_nodes; })
      .def_property_readonly("num_devices", [](const PyEnv& e) { return e.env().num_devices(); })
      .def_property_readonly("node_features", [](const PyEnv&) { return learn::kNodeFeatures; })
      .def_property_readonly("device_features", [](const PyEnv&) { return learn::kDeviceFeatures; })
      .def_property_readonly("evaluations", &PyEnv::evaluations)
      .def_property_readonly("cost", [](const PyEnv& e) { return e.env().cost(); })
      .def_property_readonly("value", [](const PyEnv& e) { return e.env().evaluation().value; })
      .def_property_readonly("feasible",
                             [](const PyEnv& e) { return e.env().evaluation().feasible; })
      .def_property_readonly(
          "placement",
          [](const PyEnv& e) { return PlacementDict(e.problem(), e.env().placement()); })
      .def_property_readonly(
          "best_placement",
          [](const PyEnv& e) { return PlacementDict(e.problem(), e.env().best()); })
      .def_property_readonly("best_value",
                             [](const PyEnv& e) { return e.env().best_score().value; })
      .def_property_readonly("best_feasible",
                             [](const PyEnv& e) { return e.env().best_score().feasible; });
}

}  // namespace dplace::python
