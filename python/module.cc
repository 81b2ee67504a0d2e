// The extension dplace._dplace: the run service and its types for Python (python/dplace/ wraps it).
// Thin by design: every function is one the command line has, with its options, budgets, outputs
// and one-line errors; nothing here decides anything the library does not.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <map>

#include "convert.h"
#include "dplace/base/file_util.h"
#include "dplace/base/interrupt.h"
#include "dplace/base/spelling.h"
#include "dplace/graph/training.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/graph_json.h"
#include "dplace/io/plan_export.h"
#include "dplace/registry/registry.h"
#include "dplace/report/job_report.h"
#include "dplace/report/outputs.h"
#include "dplace/report/result_json.h"
#include "dplace/report/table.h"
#include "dplace/run/decide.h"
#include "dplace/run/exports.h"
#include "dplace/run/load.h"
#include "dplace/run/plan_graph.h"
#include "dplace/run/plan_job.h"
#include "dplace/run/train.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/objectives.h"
#include "dplace/sim/pipeline_sim.h"

namespace dplace::python {

void BindEnv(py::module_& m);  // env_binding.cc

namespace {

constexpr const char* kDictName = "<dict>";

// A list of str: TypeError naming `what` for anything else.
std::vector<std::string> StringList(const py::handle& list, const std::string& what) {
  if (py::isinstance<py::str>(list) || !py::isinstance<py::sequence>(list)) {
    throw py::type_error(what + ": expected a list of str");
  }
  std::vector<std::string> out;
  for (const py::handle item : list) {
    if (!py::isinstance<py::str>(item)) throw py::type_error(what + ": expected a list of str");
    out.push_back(item.cast<std::string>());
  }
  return out;
}

std::shared_ptr<PyGraph> LoadGraph(const py::handle& src, bool training, bool free_gradients,
                                   const std::string& dtype, const std::vector<std::string>& shapes,
                                   const std::string& unit) {
  run::GraphSpec spec{.training = training,
                      .free_gradients = free_gradients,
                      .dtype = dtype,
                      .shapes = shapes,
                      .unit = unit};
  if (py::isinstance<py::dict>(src)) {
    spec.path = kDictName;
    spec.text = ToJson(src).dump();
  } else if (py::isinstance<py::str>(src) || py::hasattr(src, "__fspath__")) {
    spec.path = py::str(py::module_::import("os").attr("fspath")(src));
  } else {
    throw py::type_error("load_graph: expected a file path or a dict in dplace-graph/1 form");
  }
  auto out = std::make_shared<PyGraph>();
  out->source = spec.path;
  out->loaded = Unwrap(run::LoadGraphFile(spec));
  return out;
}

std::shared_ptr<const hw::Cluster> LoadCluster(const py::handle& src) {
  if (py::isinstance<PyCluster>(src)) return src.cast<const PyCluster&>().cluster;
  if (py::isinstance<py::dict>(src))
    return Unwrap(io::LoadClusterText(kDictName, ToJson(src).dump()));
  if (py::isinstance<py::str>(src) || py::hasattr(src, "__fspath__")) {
    return Unwrap(io::LoadCluster(py::str(py::module_::import("os").attr("fspath")(src))));
  }
  throw py::type_error(
      "load_cluster: expected a preset name, a file path or a dict in "
      "dplace-cluster/1 form");
}

PyProblem MakePyProblem(std::shared_ptr<const PyGraph> graph,
                        std::shared_ptr<const hw::Cluster> cluster, const std::string& objective,
                        const std::string& runtime, const std::string& schedule,
                        const std::string& recompute, const std::string& replicas) {
  if (graph == nullptr) {
    throw py::type_error(
        "Problem: graph must be a dplace.Graph (load_graph(...)), "
        "not None");
  }
  PyProblem p{.graph = std::move(graph),
              .cluster = std::move(cluster),
              .runtime = runtime,
              .schedule = schedule,
              .recompute = recompute,
              .replicas = replicas};
  p.problem = Unwrap(run::MakeLoadedProblem(p.graph->loaded, p.cluster,
                                            run::ObjectiveWithReplicas(objective, replicas),
                                            p.graph->source, runtime, schedule, recompute));
  p.problem =
      Unwrap(run::WithReplicas(p.problem, replicas, run::kReplicasSeconds, &p.replicas_note));
  return p;
}

place::PlacerOptions ParseOptions(const py::object& options) {
  std::vector<std::string> specs;
  if (options.is_none()) return {};
  if (py::isinstance<py::dict>(options)) {
    for (auto [key, value] : options.cast<py::dict>()) {
      std::string v = py::isinstance<py::bool_>(value) ? (value.cast<bool>() ? "true" : "false")
                                                       : py::str(value).cast<std::string>();
      specs.push_back(py::str(key).cast<std::string>() + "=" + v);
    }
  } else {
    specs = StringList(options, "options");
  }
  return Unwrap(place::ParseOptionSpecs(specs, "options"));
}

// The run's budgets and options; `robust` is the CLI's --robust K, --robust-objective, ... .
// (run::Validate checks them.)
run::RunRequest MakeRequest(const py::object& options, uint64_t seed, double time_limit,
                            int64_t evaluations, int coarsen, const run::RobustSpec& robust) {
  const auto [robust_options, optimise] = Unwrap(run::RobustFromSpec(robust));
  return {.options = ParseOptions(options),
          .seed = seed,
          .limits = {.evaluations = evaluations, .seconds = time_limit},
          .coarsen_ops = coarsen,
          .robust = robust_options,
          .optimise_robust = optimise};
}

std::vector<std::string> PlacerList(const py::object& placers, sim::Objective objective) {
  if (placers.is_none()) return Unwrap(run::PlacerNames("all", objective, "placers"));
  if (py::isinstance<py::str>(placers)) {
    return Unwrap(run::PlacerNames(placers.cast<std::string>(), objective, "placers"));
  }
  std::vector<std::string> names = StringList(placers, "placers");
  if (names.empty()) throw Error("placers: no placer named");
  return names;  // each checked by run::Validate
}

// dplace.place_all's `measure`: the Python callable called with {op name: device name} under
// the GIL, its float the step's seconds; an exception it raises is the measurement's error. The
// callable is held so that copies made without the GIL (the run's threads) never touch its count.
sim::MeasureFunction MeasureOf(const std::shared_ptr<const sim::Problem>& problem,
                               const py::object& measure) {
  const std::shared_ptr<py::object> held(new py::object(measure), [](py::object* o) {
    const py::gil_scoped_acquire gil;
    delete o;
  });
  return [problem, held](const sim::Placement& placement) -> StatusOr<double> {
    const py::gil_scoped_acquire gil;
    try {
      return py::cast<double>((*held)(PlacementDict(*problem, placement)));
    } catch (py::error_already_set& e) {
      return InvalidInput("measure: " + std::string(e.what()));
    } catch (const py::cast_error&) {
      return InvalidInput("measure: must return a number of seconds");
    }
  };
}

std::vector<PyResult> PlaceAll(const PyProblem& p, const py::object& placers,
                               const py::object& options, uint64_t seed, double time_limit,
                               double total_time_limit, int64_t evaluations,
                               const py::object& start, int coarsen, int robust,
                               const std::string& robust_objective, uint64_t robust_seed,
                               double robust_spread, const py::object& measure) {
  const std::vector<std::string> names = PlacerList(placers, p.problem->objective);
  run::RunRequest request = MakeRequest(options, seed, time_limit, evaluations, coarsen,
                                        {.variants = robust,
                                         .objective = robust_objective,
                                         .seed = robust_seed,
                                         .spread = robust_spread});
  sim::Placement start_placement;
  if (!start.is_none()) {
    start_placement = PlacementOf(*p.problem, start);
    request.start = &start_placement;
  }
  if (!measure.is_none()) {
    if (!PyCallable_Check(measure.ptr())) throw Error("measure: must be a callable (plan -> s)");
    request.measure = std::make_shared<const sim::Measurer>(MeasureOf(p.problem, measure));
  }
  run::ValidRequest valid = Unwrap(run::Validate(request, names, total_time_limit));
  StatusOr<std::vector<run::PlacerResult>> results = InvalidInput("not run");
  // Ctrl-C while the core runs: the searches ask Python's signal flag every 50 ms and end at
  // once; KeyboardInterrupt is then raised here, no result returned.
  const InterruptCheck check([] {
    const py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
  });
  {
    py::gil_scoped_release release;
    results = run::RunAll(p.problem, std::move(valid));
  }
  if (check.fired()) throw py::error_already_set();
  ThrowIfError(results.status());
  std::vector<PyResult> out;
  const double bound = run::LowerBound(*p.problem, *results);
  for (run::PlacerResult& r : *results) out.push_back({p.problem, std::move(r), bound});
  return out;
}

PyResult Simulate(const PyProblem& p, const py::handle& plan) {
  sim::Placement placement = PlacementOf(*p.problem, plan);
  sim::Evaluation e = sim::MakeEvaluator(p.problem)->Evaluate(placement);
  return {p.problem,
          {.placer = "plan", .placement = std::move(placement), .evaluation = e},
          p.problem->LowerBound()};
}

#ifdef DPLACE_HAVE_TORCH
// dplace.train: run::Train with the request's fields as keyword arguments (the command line's
// flags, underscored: lr_end for --lr-end), errors naming them as Python names them.
py::dict Train(const std::vector<std::string>& graphs, const std::vector<std::string>& clusters,
               const py::kwargs& kwargs) {
  run::TrainRequest r{.graphs = graphs, .clusters = clusters};
  learn::TrainOptions& o = r.options;
  bool verbose = false;
  // One row per keyword: what it sets.
  using Setter = std::function<void(const py::handle&)>;
  auto text = [](std::string* to) {
    return Setter([to](const py::handle& v) { *to = py::cast<std::string>(v); });
  };
  auto number = [](auto* to) {
    return Setter(
        [to](const py::handle& v) { *to = py::cast<std::remove_pointer_t<decltype(to)>>(v); });
  };
  const std::map<std::string, Setter> rows = {{"method", text(&o.method)},
                                              {"out", text(&o.out)},
                                              {"checkpoint", text(&o.checkpoint)},
                                              {"resume", text(&o.resume)},
                                              {"log", text(&o.log)},
                                              {"init", text(&o.init)},
                                              {"labels", text(&r.labels)},
                                              {"algorithm", text(&r.algorithm)},
                                              {"groups", number(&o.groups)},
                                              {"updates", number(&o.updates)},
                                              {"evaluations", number(&o.evaluations)},
                                              {"episodes", number(&o.episodes)},
                                              {"samples", number(&o.samples)},
                                              {"seed", number(&o.seed)},
                                              {"hidden", number(&o.hidden)},
                                              {"max_units", number(&o.max_units)},
                                              {"checkpoint_every", number(&o.checkpoint_every)},
                                              {"imitate", number(&r.imitate)},
                                              {"perturb", number(&o.perturb)},
                                              {"epochs", number(&o.algorithm.epochs)},
                                              {"max_grad_norm", number(&o.max_grad_norm)},
                                              {"seconds", number(&o.seconds)},
                                              {"lr", number(&o.lr)},
                                              {"lr_end", number(&o.lr_end)},
                                              {"clip", number(&o.algorithm.clip)},
                                              {"entropy", number(&o.algorithm.entropy)},
                                              {"discount", number(&o.algorithm.discount)},
                                              {"training", number(&r.training)},
                                              {"relabel", number(&r.relabel)},
                                              {"improving", number(&r.improving)},
                                              {"mixed_starts", number(&o.mixed_starts)},
                                              {"verbose", number(&verbose)}};
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::cast<std::string>(key);
    const auto row = rows.find(name);
    if (row == rows.end()) {
      std::vector<std::string> names;
      for (const auto& [n, setter] : rows) names.push_back(n);
      throw Error("train: no option '" + name + "'" + DidYouMean(name, names));
    }
    try {
      row->second(value);
    } catch (const py::cast_error&) {
      throw Error(name + ": " + std::string(py::str(py::type::of(value).attr("__name__"))) +
                  " is not a value of it");
    }
    r.given.insert(name);
  }
  const InterruptCheck check([] {
    const py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
  });
  StatusOr<run::Trained> trained = InvalidInput("not run");
  {
    py::gil_scoped_release release;
    trained = run::Train(std::move(r), verbose ? &std::cerr : nullptr);
  }
  if (check.fired()) throw py::error_already_set();
  ThrowIfError(trained.status());
  py::dict out;
  out["updates"] = trained->result.updates;
  out["episodes"] = trained->result.episodes;
  out["evaluations"] = trained->result.evaluations;
  out["seconds"] = trained->result.seconds;
  out["problems"] = trained->problems;
  out["hidden"] = trained->hidden;
  out["lr"] = trained->lr;
  out["algorithm"] = trained->algorithm;
  out["curve"] = trained->result.curve;
  return out;
}
#endif

std::vector<run::PlacerResult> Plain(const std::vector<PyResult>& results,
                                     const sim::Problem& problem) {
  std::vector<run::PlacerResult> out;
  for (const PyResult& r : results) {
    if (r.problem->graph != problem.graph || r.problem->cluster != problem.cluster) {
      throw Error("results: a result of another problem (graph '" + r.problem->g().name() + "')");
    }
    out.push_back(r.result);
  }
  if (out.empty()) throw Error("results: none given");
  return out;
}

py::list DeviceReports(const sim::Problem& problem, const sim::Evaluation& e) {
  py::list out;
  for (sim::DeviceId d : e.devices.ids()) {
    const sim::DeviceReport& r = e.devices[d];
    py::dict row;
    row["name"] = problem.c().device(d).name;
    row["kind"] = problem.c().device(d).kind;
    row["ops"] = r.ops;
    row["busy_s"] = r.busy_s;
    row["load"] = r.load;
    row["peak_memory_bytes"] = r.peak_memory_bytes;
    row["memory_capacity_bytes"] = std::isfinite(r.memory_capacity_bytes)
                                       ? py::object(py::float_(r.memory_capacity_bytes))
                                       : py::object(py::none());
    out.append(std::move(row));
  }
  return out;
}

// The file a path argument names ("" for a dict, a Result, a preset name that is no file).
std::string PathOf(const py::handle& arg) {
  if (!py::isinstance<py::str>(arg) && !py::hasattr(arg, "__fspath__")) return "";
  return py::str(py::module_::import("os").attr("fspath")(arg));
}

// Writes an output of problem `p`: never over a file it was read from (its graph, its cluster,
// the plan file given), under any name, as the CLI refuses (base/file_util.h).
void Write(const std::string& path, const std::string& content, const PyProblem& p,
           const py::handle& plan = py::none()) {
  const RunInputs run;
  for (const std::string& input : {p.graph->source, p.cluster_source, PathOf(plan)}) {
    if (!input.empty()) NoteInput(input);
  }
  ThrowIfError(CheckWritable("path", path));
  ThrowIfError(WriteFileAtomically(path, content));
}

// The file the export table's `format` writes for `plan` (run/exports.h).
void WriteExport(std::string_view format, const std::string& path, const PyProblem& p,
                 const py::handle& plan) {
  const run::ExportRow* row = Unwrap(run::FindExport(format));
  const run::ExportFile file = Unwrap(row->write(*p.problem, PlacementOf(*p.problem, plan)));
  Write(path, file.content.dump(2) + "\n", p, plan);
}

void BindTypes(py::module_& m) {
  py::class_<PyGraph, std::shared_ptr<PyGraph>>(m, "Graph", "An operator graph as loaded.")
      .def_property_readonly("name", [](const PyGraph& g) { return g.loaded.graph->name(); })
      .def_property_readonly("num_ops", [](const PyGraph& g) { return g.loaded.graph->num_ops(); })
      .def_property_readonly("batch", [](const PyGraph& g) { return g.loaded.batch; })
      .def_property_readonly(
          "saved_activation_bytes",
          [](const PyGraph& g) { return graph::SavedActivationBytes(*g.loaded.graph); },
          "Bytes a training step keeps for its backward pass (of a forward graph, or of the "
          "training step loaded with training=True: the same figure), each storage once; what "
          "saved_tensors_hooks would count, less parameters and the model's inputs; dropout's mask "
          "as a GPU keeps it (one byte an element).")
      .def_property_readonly(
          "saved_activation_bytes_cpu",
          [](const PyGraph& g) {
            return graph::SavedActivationBytes(*g.loaded.graph, /*on_cpu=*/true);
          },
          "saved_activation_bytes as a CPU keeps them: dropout keeps its scaled noise (4 bytes an "
          "fp32 element) where a GPU keeps a one-byte mask; the step simulator counts each device "
          "by its kind.")
      .def("__len__", [](const PyGraph& g) { return g.loaded.graph->num_ops(); })
      .def(
          "op_names",
          [](const PyGraph& g) {
            std::vector<std::string> names;
            for (const graph::Op& op : g.loaded.graph->ops()) names.push_back(op.name);
            return names;
          },
          "The ops' names, in id order.")
      .def(
          "to_json",
          [](const PyGraph& g) {
            Json j = io::WriteDplaceGraph(*g.loaded.graph);
            if (g.loaded.batch > 0) j["batch"] = g.loaded.batch;
            return FromJson(j);
          },
          "The graph as a dplace-graph/1 dict (every field; load_graph reads it back).")
      .def("__repr__", [](const PyGraph& g) {
        return "<dplace.Graph '" + g.loaded.graph->name() + "' (" +
               std::to_string(g.loaded.graph->num_ops()) + " ops)>";
      });

  py::class_<PyCluster>(m, "Cluster", "A machine: devices and the links between them.")
      .def_property_readonly("name", [](const PyCluster& c) { return c.cluster->name(); })
      .def_property_readonly("devices",
                             [](const PyCluster& c) {
                               std::vector<std::string> names;
                               for (hw::DeviceId d{0}; d < c.cluster->num_devices(); ++d) {
                                 names.push_back(c.cluster->device(d).name);
                               }
                               return names;
                             })
      .def_property_readonly("kinds", [](const PyCluster& c) { return c.cluster->kinds(); })
      .def_property_readonly("device_kinds",
                             [](const PyCluster& c) {
                               std::vector<std::string> kinds;
                               for (hw::DeviceId d{0}; d < c.cluster->num_devices(); ++d) {
                                 kinds.push_back(c.cluster->device(d).kind);
                               }
                               return kinds;
                             })
      .def("__repr__", [](const PyCluster& c) {
        return "<dplace.Cluster '" + c.cluster->name() + "' (" +
               std::to_string(c.cluster->num_devices()) + " devices)>";
      });

  py::class_<PyProblem>(m, "Problem", "A graph on a cluster, judged by an objective.")
      .def(py::init([](std::shared_ptr<PyGraph> graph, const py::object& cluster,
                       const std::string& objective, const py::object& devices,
                       const py::object& stages_given, const std::string& runtime,
                       const std::string& schedule, const std::string& recompute,
                       const std::string& replicas) {
             if (graph == nullptr) {
               throw py::type_error(
                   "Problem: graph must be a dplace.Graph (load_graph(...)), "
                   "not None");
             }
             // None: not given; 0 would read as that, so it is refused (as the CLI's --stages 0).
             if (!stages_given.is_none() && !py::isinstance<py::int_>(stages_given)) {
               throw py::type_error("Problem: stages must be an int (or None: all accelerators)");
             }
             const int stages = stages_given.is_none() ? 0 : stages_given.cast<int>();
             if (!stages_given.is_none() && stages == 0) {
               throw Error("stages: must be between 1 and 4096, not 0");
             }
             std::shared_ptr<const hw::Cluster> c =
                 cluster.is_none() ? graph->loaded.cluster : LoadCluster(cluster);
             const std::vector<std::string> names =
                 devices.is_none() ? std::vector<std::string>{} : StringList(devices, "devices");
             const int devices_for_stages = Unwrap(run::DevicesForStages(stages, replicas));
             if (c != nullptr && (!names.empty() || devices_for_stages != 0)) {
               c = Unwrap(run::RestrictCluster(c, names, devices_for_stages));
             }
             PyProblem made = MakePyProblem(
                 std::move(graph), cluster.is_none() && names.empty() && !stages ? nullptr : c,
                 objective, runtime, schedule, recompute, replicas);
             made.cluster_source = PathOf(cluster);
             return made;
           }),
           py::arg("graph"), py::arg("cluster") = py::none(), py::arg("objective") = "",
           py::kw_only(), py::arg("devices") = py::none(), py::arg("stages") = py::none(),
           py::arg("runtime") = "", py::arg("schedule") = "", py::arg("recompute") = "",
           py::arg("replicas") = "",
           "devices: only these devices of the cluster, in order; stages: only its first N "
           "accelerators (a pipeline of N stages); runtime: 'executor' (default: each device "
           "runs its ready ops, as dplace.torch.apply) or 'eager' (a device map under "
           "accelerate: ops in program order, modules whole, inputs moved at a module's entry); "
           "schedule: '1f1b' (default), 'gpipe', 'interleaved[:CHUNKS]', 'zb-h1', 'zb-h2' or "
           "'auto', optionally ':MICROBATCHES' (the CLI's --schedule); recompute: 'none' "
           "(default), 'selective', 'full' or 'auto' (--recompute); replicas: 'N', 'N1,N2,...' "
           "or 'auto' (dp chooses them as the problem is made, in at most 10 s), data-parallel "
           "replicas of each "
           "stage (--replicas).")
      .def_property_readonly("runtime",
                             [](const PyProblem& p) {
                               return std::string(sim::IssueName(p.problem->step_model.issue));
                             })
      .def_property_readonly(
          "objective",
          [](const PyProblem& p) { return std::string(sim::ObjectiveName(p.problem->objective)); })
      .def_property_readonly("graph", [](const PyProblem& p) { return p.graph; })
      .def_property_readonly("cluster",
                             [](const PyProblem& p) { return PyCluster{p.problem->cluster}; })
      .def_property_readonly("num_ops", [](const PyProblem& p) { return p.problem->num_ops(); })
      .def_property_readonly("num_devices",
                             [](const PyProblem& p) { return p.problem->num_devices(); })
      .def_property_readonly("lower_bound",
                             [](const PyProblem& p) { return p.problem->lower_bound; })
      .def_property_readonly(
          "replicas_chosen", [](const PyProblem& p) { return p.replicas_note; },
          "Under replicas='auto', what dp chose as the problem was made ('' otherwise); the "
          "cluster's devices are then its groups (names 'gpu0+gpu1').")
      .def(
          "with_objective",
          [](const PyProblem& p, const std::string& objective) {
            return MakePyProblem(p.graph, p.cluster, objective, p.runtime, p.schedule, p.recompute,
                                 p.replicas);
          },
          py::arg("objective"), "The same graph and cluster judged by another objective.");

  py::class_<PyResult>(m, "Result", "A judged placement: what place and simulate return.")
      .def_property_readonly("placer", [](const PyResult& r) { return r.result.placer; })
      .def_property_readonly(
          "placement",
          [](const PyResult& r) { return PlacementDict(*r.problem, r.result.placement); })
      .def_property_readonly(
          "objective",
          [](const PyResult& r) { return std::string(sim::ObjectiveName(r.problem->objective)); })
      .def_property_readonly("value", [](const PyResult& r) { return r.result.evaluation.value; })
      .def_property_readonly("feasible",
                             [](const PyResult& r) { return r.result.evaluation.feasible; })
      .def_property_readonly("reason", [](const PyResult& r) { return r.result.evaluation.reason; })
      .def_property_readonly("lower_bound", [](const PyResult& r) { return r.lower_bound; })
      .def_property_readonly(
          "gap",
          [](const PyResult& r) { return report::Gap(r.result.evaluation.value, r.lower_bound); })
      .def_property_readonly("note", [](const PyResult& r) { return r.result.note; })
      .def_property_readonly("search_time_s",
                             [](const PyResult& r) { return r.result.search_time_s; })
      .def_property_readonly("evaluations", [](const PyResult& r) { return r.result.evaluations; })
      .def_property_readonly("options", [](const PyResult& r) { return r.result.options; })
      .def_property_readonly(
          "devices",
          [](const PyResult& r) { return DeviceReports(*r.problem, r.result.evaluation); })
      .def_property_readonly("measured",
                             [](const PyResult& r) -> py::object {
                               if (!r.result.measured_s) return py::none();
                               return py::float_(*r.result.measured_s);
                             })
      .def_property_readonly(
          "robust",
          [](const PyResult& r) -> py::object {
            if (!r.result.robust) return py::none();
            return FromJson(report::RobustJson(*r.result.robust, r.result.robust_optimised));
          })
      .def(
          "to_json",
          [](const PyResult& r) {
            return FromJson(report::ResultJson(*r.problem, r.result, r.lower_bound));
          },
          "The result as --json prints it (dplace-result/1's entry).")
      .def("__repr__", [](const PyResult& r) {
        return "<dplace.Result " + r.result.placer + ": " +
               report::FormatValue(*r.problem, r.result.evaluation.value) +
               (r.result.evaluation.feasible ? "" : " (infeasible)") + ">";
      });
}

void BindFunctions(py::module_& m) {
  m.def("load_graph", &LoadGraph, py::arg("src"), py::kw_only(), py::arg("training") = false,
        py::arg("free_gradients") = false, py::arg("dtype") = "",
        py::arg("shapes") = std::vector<std::string>{}, py::arg("unit") = "");
  m.def(
      "load_cluster", [](const py::handle& src) { return PyCluster{LoadCluster(src)}; },
      py::arg("src"));
  m.def("presets", &io::PresetNames);
  m.def("placers", [] {
    py::list out;
    for (const place::PlacerEntry& e : place::Placers()) {
      py::dict row;
      row["name"] = std::string(e.name);
      row["description"] = std::string(e.description);
      row["family"] = std::string(place::FamilyName(e.traits.family));
      py::list objectives;
      for (const sim::ObjectiveRow& o : sim::ObjectiveTable()) {
        if (e.traits.Supports(o.id)) objectives.append(std::string(o.name));
      }
      row["objectives"] = objectives;
      out.append(std::move(row));
    }
    return out;
  });
  m.def("place_all", &PlaceAll, py::arg("problem"), py::arg("placers") = py::none(), py::kw_only(),
        py::arg("options") = py::none(), py::arg("seed") = 1, py::arg("time_limit") = 0.0,
        py::arg("total_time_limit") = 0.0, py::arg("evaluations") = 0,
        py::arg("start") = py::none(), py::arg("coarsen") = 2000, py::arg("robust") = 0,
        py::arg("robust_objective") = "", py::arg("robust_seed") = 1,
        py::arg("robust_spread") = 0.1, py::arg("measure") = py::none());
  m.def("simulate", &Simulate, py::arg("problem"), py::arg("plan"));
  m.def(
      "pipeline",
      [](const PyProblem& p, const py::handle& plan, const std::string& schedule,
         int microbatches) {
        if (microbatches < 1 || microbatches > 100000) {
          throw Error("microbatches: must be between 1 and 100000");
        }
        const sim::Placement placement = PlacementOf(*p.problem, plan);
        const sim::PipelineResult r =
            Unwrap(sim::SimulateNamedSchedule(*p.problem, placement, schedule, microbatches));
        return FromJson(io::PipelineResultJson(*p.problem, r));
      },
      py::arg("problem"), py::arg("plan"), py::arg("schedule") = "1f1b",
      py::arg("microbatches") = 8);  // the command line's (and the stages file's) default
  m.def(
      "deploy",
      [](const PyProblem& p, const std::vector<PyResult>& results, double tolerance) {
        if (!(tolerance >= 0 && tolerance <= 1)) throw Error("tolerance: must be between 0 and 1");
        std::vector<run::PlacerResult> plain = Plain(results, *p.problem);
        std::vector<std::string> lines;
        const int chosen = run::DeployIndex(p.problem, tolerance, &plain, &lines);
        return py::make_tuple(PyResult{p.problem, plain[static_cast<size_t>(chosen)],
                                       run::LowerBound(*p.problem, plain)},
                              lines);
      },
      py::arg("problem"), py::arg("results"), py::arg("tolerance") = 0.01,
      "The plan `place` writes: among the feasible results within `tolerance` of the best, the "
      "one on the fewest devices, then with the fewest bytes crossing (its placement tidied where "
      "that stays within it); returns (Result, lines to read about the choice).");
  m.def(
      "fit_report",
      [](const PyProblem& p, int64_t batch, const py::object& plan) {
        if (batch < 0) throw Error("batch: must not be negative");
        const int64_t b = batch > 0 ? batch : p.graph->loaded.batch;
        if (plan.is_none()) return report::FitLines(*p.problem, b);
        const sim::Placement placement = PlacementOf(*p.problem, plan);
        const sim::Evaluation e = sim::MakeEvaluator(p.problem)->Evaluate(placement);
        return report::FitLines(*p.problem, b, &placement, e.value);
      },
      py::arg("problem"), py::arg("batch") = 0, py::arg("plan") = py::none(),
      "The lines `info --cluster` and `place` print: whether the step fits one device of each "
      "kind (weights, gradients, optimiser state, activations), the largest batch that would, "
      "what data parallelism gives per sample, and with a plan its time per sample. batch 0: the "
      "graph's own.");
  m.def(
      "table",
      [](const PyProblem& p, const std::vector<PyResult>& results) {
        const std::vector<run::PlacerResult> plain = Plain(results, *p.problem);
        const int best = run::BestIndex(plain);
        return report::ComparisonTable(*p.problem, plain, best) +
               "\nbest: " + plain[static_cast<size_t>(best)].placer + "\n" +
               report::DeviceTable(*p.problem, plain[static_cast<size_t>(best)].evaluation);
      },
      py::arg("problem"), py::arg("results"));
  m.def(
      "device_map",
      [](const PyProblem& p, const py::handle& plan) {
        return FromJson(io::DeviceMapJson(*p.problem, PlacementOf(*p.problem, plan)));
      },
      py::arg("problem"), py::arg("plan"));
  m.def(
      "write_plan",
      [](const std::string& path, const PyProblem& p, const PyResult& r,
         const std::string& format) {
        if (format != "plan" && format != "paper-split") {
          throw Error("format: '" + format + "' is not plan or paper-split");
        }
        Plain({r}, *p.problem);
        Write(path, report::PlanFileContent(format, *p.problem, r.result, r.lower_bound), p);
      },
      py::arg("path"), py::arg("problem"), py::arg("result"), py::arg("format") = "plan");
  m.def(
      "write_trace",
      [](const std::string& path, const PyProblem& p, const py::handle& plan) {
        Write(path, report::TraceFileContent(*p.problem, PlacementOf(*p.problem, plan)), p, plan);
      },
      py::arg("path"), py::arg("problem"), py::arg("plan"));
  m.def(
      "write_device_map",
      [](const std::string& path, const PyProblem& p, const py::handle& plan) {
        WriteExport("device_map", path, p, plan);
      },
      py::arg("path"), py::arg("problem"), py::arg("plan"));
  m.def(
      "write_stages",
      [](const std::string& path, const PyProblem& p, const py::handle& plan) {
        WriteExport("stages", path, p, plan);
      },
      py::arg("path"), py::arg("problem"), py::arg("plan"));
#ifdef DPLACE_HAVE_TORCH
  m.def("train", &Train, py::arg("graphs"), py::arg("clusters"));
#endif
  m.def(
      "_plan",
      [](const std::string& model, const std::string& cluster, int64_t global_batch,
         int64_t seq_len, const std::string& dtype, const std::string& fix, bool tp_across_nodes,
         bool flash_attention, const std::vector<std::string>& exports) {
        run::PlanRequest request{.model = model,
                                 .cluster = cluster,
                                 .global_batch = global_batch,
                                 .seq_len = seq_len,
                                 .dtype = dtype,
                                 .fix = fix,
                                 .tp_across_nodes = tp_across_nodes,
                                 .flash_attention = flash_attention,
                                 .exports = exports};
        auto r = run::PlanJob(request);
        ThrowIfError(r.status());
        py::dict files;
        for (const run::FrameworkPlan& f : r->exports) {
          if (f.plan) files[py::str(f.framework)] = py::str(f.content);
        }
        return py::make_tuple(FromJson(report::PlanJson(*r)), report::PlanTable(*r), files);
      },
      py::arg("model"), py::arg("cluster"), py::arg("global_batch"), py::arg("seq_len"),
      py::arg("dtype"), py::arg("fix"), py::arg("tp_across_nodes"), py::arg("flash_attention"),
      py::arg("exports"));
  m.def(
      "_model_kind",
      [](const std::string& model) {
        switch (run::KindOfModel(model)) {
          case run::ModelKind::kPiper:
            return "piper";
          case run::ModelKind::kGraph:
            return "graph";
          case run::ModelKind::kConfig:
            break;
        }
        return "config";
      },
      py::arg("model"));
  m.def(
      "_plan_graph",
      [](const std::string& model, const std::string& cluster, int64_t global_batch,
         double time_limit_s, uint64_t seed, const std::vector<std::string>& shapes) {
        run::GraphPlanRequest request{.model = model,
                                      .cluster = cluster,
                                      .global_batch = global_batch,
                                      .time_limit_s = time_limit_s,
                                      .seed = seed,
                                      .shapes = shapes};
        StatusOr<run::GraphPlanResponse> r = [&] {
          py::gil_scoped_release release;
          return run::PlanGraph(request);
        }();
        ThrowIfError(r.status());
        return py::make_tuple(FromJson(report::GraphPlanJson(*r)), report::GraphPlanTable(*r));
      },
      py::arg("model"), py::arg("cluster"), py::arg("global_batch"), py::arg("time_limit_s"),
      py::arg("seed"), py::arg("shapes"));
  m.def(
      "_write_text",
      [](const std::string& path, const std::string& content) {
        ThrowIfError(CheckWritable("path", path));
        ThrowIfError(WriteFileAtomically(path, content));
      },
      py::arg("path"), py::arg("content"));
  m.def(
      "write_report",
      [](const std::string& path, const PyProblem& p, const std::vector<PyResult>& results) {
        const std::vector<run::PlacerResult> plain = Plain(results, *p.problem);
        Write(path, report::ResultsJson(*p.problem, plain, run::BestIndex(plain)).dump(2) + "\n",
              p);
      },
      py::arg("path"), py::arg("problem"), py::arg("results"));
}

}  // namespace
}  // namespace dplace::python

PYBIND11_MODULE(_dplace, m) {
  namespace dp = dplace::python;
  m.doc() = "dplace's run service (see the dplace package for the documented API).";
  m.attr("__version__") = DPLACE_VERSION;  // the project's version (CMake), as `dplace --version`
  pybind11::register_exception<dp::Error>(m, "Error", PyExc_ValueError);
  dp::BindTypes(m);
  dp::BindFunctions(m);
  dp::BindEnv(m);
}
