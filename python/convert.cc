#include "convert.h"

#include <pybind11/stl.h>

#include "dplace/io/plan_json.h"

namespace dplace::python {

void ThrowIfError(const Status& status) {
  if (status.ok()) return;
  if (status.code() == StatusCode::kInternal) throw std::runtime_error(status.message());
  throw Error(status.message());
}

Json ToJson(const py::handle& value) {
  const py::module_ json = py::module_::import("json");
  std::string text;
  try {
    text = py::str(json.attr("dumps")(value, py::arg("allow_nan") = false));
  } catch (const py::error_already_set& e) {
    throw Error(std::string("not JSON data: ") + py::str(e.value()).cast<std::string>());
  }
  auto parsed = ParseJson(text);
  if (!parsed.ok()) throw Error(parsed.status().message());
  return std::move(parsed).value();
}

py::object FromJson(const Json& value) {
  return py::module_::import("json").attr("loads")(value.dump());
}

sim::Placement PlacementOf(const sim::Problem& problem, const py::handle& plan) {
  if (py::isinstance<PyResult>(plan)) {
    const PyResult& r = plan.cast<const PyResult&>();
    if (r.problem->graph != problem.graph || r.problem->cluster != problem.cluster) {
      throw Error("plan: the result of another problem (graph '" + r.problem->g().name() +
                  "' on '" + r.problem->c().name() + "'), not of graph '" + problem.g().name() +
                  "' on '" + problem.c().name() + "'");
    }
    return r.result.placement;
  }
  if (py::isinstance<py::str>(plan)) {
    return Unwrap(io::LoadPlan(plan.cast<std::string>(), problem.g(), problem.c()));
  }
  if (!py::isinstance<py::dict>(plan)) {
    throw py::type_error(
        "plan: expected a Result, a dict {op name: device name}, a dplace-plan/1 "
        "dict or a plan file's path, not " +
        py::str(py::type::of(plan).attr("__name__")).cast<std::string>());
  }
  Json j = ToJson(plan);
  if (!io::IsDplacePlan(j)) j = Json{{"format", "dplace-plan/1"}, {"placement", std::move(j)}};
  return Unwrap(io::LoadPlanText("plan", j.dump(), problem.g(), problem.c()));
}

py::dict PlacementDict(const sim::Problem& problem, const sim::Placement& placement) {
  py::dict out;
  for (sim::OpId op : placement.ids()) {
    out[py::str(problem.g().op(op).name)] = py::str(problem.c().device(placement[op]).name);
  }
  return out;
}

}  // namespace dplace::python
