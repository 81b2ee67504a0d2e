#include "dplace/run/train.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <utility>

#include "dplace/base/file_util.h"
#include "dplace/base/hash.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/graph_json.h"
#include "dplace/learn/methods.h"
#include "dplace/learn/placeto.h"
#include "dplace/place/search/mcmc.h"
#include "dplace/registry/registry.h"
#include "dplace/run/load.h"
#include "dplace/sim/constraints.h"

namespace dplace::run {

using Namer = std::function<std::string(std::string_view)>;

namespace {

bool IsGraphFile(const std::filesystem::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".json" || ext == ".onnx" || ext == ".txt";
}

// (graph file, cluster, training) per training problem: files, every graph file of a folder
// (sorted by name), or a bench suite's workloads; each graph on each --cluster (a suite's workload
// on its own cluster when it names one).
struct Source {
  std::string graph, cluster;
  bool training;
};

StatusOr<std::vector<Source>> Sources(const TrainRequest& flags, const Namer& name) {
  std::vector<Source> out;
  auto add = [&](const std::string& graph, bool training) {
    for (const std::string& c : flags.clusters) out.push_back({graph, c, training});
  };
  for (const std::string& g : flags.graphs) {
    const std::filesystem::path p(g);
    if (std::filesystem::is_directory(p)) {
      std::vector<std::string> files;
      for (const auto& entry : std::filesystem::directory_iterator(p)) {
        if (entry.is_regular_file() && IsGraphFile(entry.path())) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        return InvalidInput(name("graphs") + " " + g + ": no graph files in the folder");
      }
      for (const std::string& f : files) add(f, flags.training);
    } else if (std::filesystem::exists(p)) {
      add(g, flags.training);
    } else {
      if (flags.suites.empty()) {
        return InvalidInput(name("graphs") + " " + g + ": neither a file nor a folder");
      }
      auto suite = LoadSuite(g, flags.suites, flags.suite_folders);
      if (!suite.ok()) {
        return InvalidInput(name("graphs") + " " + g + ": neither a file, a folder nor a suite (" +
                            suite.status().message() + ")");
      }
      for (const SuiteWorkload& w : suite->workloads) {
        if (!w.cluster.empty()) {
          out.push_back({w.graph, w.cluster, w.training});
        } else {
          add(w.graph, w.training || flags.training);
        }
      }
    }
  }
  return out;
}

// Every number `train` takes, within finite, documented bounds (--help): one line naming the field.
Status CheckNumbers(const learn::TrainOptions& o, const Namer& name) {
  struct Bound {
    const char* field;
    double value, low, high;
    bool low_open;  // the bound excludes `low`
  };
  const Bound bounds[] = {
      {"lr", o.lr, 0, 1, true},
      {"lr_end", o.lr_end, 0, 1, false},
      {"max_grad_norm", o.max_grad_norm, 0, 1e6, false},
      {"updates", static_cast<double>(o.updates), 0, 1e9, false},
      {"evaluations", static_cast<double>(o.evaluations), 0, 1e12, false},
      {"seconds", o.seconds, 0, 1e6, false},
      {"episodes", static_cast<double>(o.episodes), 1, 4096, false},
      {"samples", static_cast<double>(o.samples), 0, 4096, false},
      {"perturb", static_cast<double>(o.perturb), 0, 1e6, false},
      {"hidden", static_cast<double>(o.hidden), 1, 4096, false},
      {"groups", static_cast<double>(o.groups), 0, 65536, false},
      {"max_units", static_cast<double>(o.max_units), 1, 1e6, false},
      {"checkpoint_every", static_cast<double>(o.checkpoint_every), 0, 1e9, false},
      {"entropy", o.algorithm.entropy, 0, 100, false},
      {"discount", o.algorithm.discount, 0, 1, true},
      {"epochs", static_cast<double>(o.algorithm.epochs), 1, 1000, false},
  };
  for (const Bound& b : bounds) {
    const bool above_low = b.low_open ? b.value > b.low : b.value >= b.low;
    if (!(above_low && b.value <= b.high)) {  // also NaN
      std::ostringstream m;
      m << name(b.field) << ": must be a number in " << (b.low_open ? "(" : "[") << b.low << ", "
        << b.high << "], not " << b.value;
      return InvalidInput(m.str());
    }
  }
  return OkStatus();
}

// What a cluster name stands for: the file's bytes, or the preset's definition.
std::string ClusterText(const std::string& cluster) {
  if (auto bytes = ReadFile(cluster); bytes.ok()) return *bytes;
  auto preset = io::PresetText(cluster);
  return preset.ok() ? *preset : cluster;
}

// Improving moves a label keeps at most (evenly spaced over the run).
constexpr size_t kMaxSteps = 64;

// The imitation label of a problem: mcmc's best placement at `evaluations` evaluations from the
// training seed — started, with `policy` (expert iteration), from the best of the searches' start
// and that policy's placement (mcmc.start=METHOD) — and, with `improving`, the moves it kept that
// improved a chain's placement (learn::TrainOptions::Label; at most kMaxSteps). Read from `dir`
// when a previous run wrote it there, else computed and written. The file is named by its key, a
// hash of what the label depends on: the problem's graph as loaded (an edited file, another
// folder's file of the same name differ), the cluster's content (the file's bytes or the
// preset's definition, not its name), the evaluations, the seed, `improving`, the method and the
// policy file's bytes; its first line holds the key (a file whose key differs is computed again),
// then the best placement, then each step's before and after, one placement per line of device
// indices.
StatusOr<learn::TrainOptions::Label> Label(const Source& s, const sim::Problem& problem,
                                           int64_t evaluations, bool improving, uint64_t seed,
                                           const std::string& dir, const std::string& method,
                                           const std::string& policy,
                                           const std::string& labels_name) {
  const auto ops = static_cast<size_t>(problem.num_ops());
  auto fits = [&](const sim::Placement& x) {
    return x.size() == ops && sim::CheckShape(problem, x).ok();
  };
  std::string file, key;
  if (!dir.empty()) {
    uint64_t h = Fnv1a64(io::WriteDplaceGraph(problem.g()).dump());
    h = Fnv1a64(ClusterText(s.cluster), h);
    h = Fnv1a64(std::string(s.training ? "training|" : "|") + std::to_string(evaluations) + "|" +
                    std::to_string(seed) + (improving ? "|improving" : ""),
                h);
    if (!policy.empty()) {
      DPLACE_ASSIGN_OR_RETURN(const std::string bytes, ReadFile(policy));
      h = Fnv1a64(bytes, Fnv1a64(method, h));
    }
    std::ostringstream hex;
    hex << std::hex << h;
    key = "dplace-label " + hex.str();
    file = dir + "/" + hex.str() + ".label";
    const auto text = ReadFile(file);
    NoteInput(file, "label");  // a stale label is computed again and written over
    std::istringstream cached(text.ok() ? *text : "");
    std::string first;
    std::getline(cached, first);
    std::vector<sim::Placement> read;
    int32_t d = 0;
    while (first == key && cached >> d) {
      if (read.empty() || read.back().size() == ops) read.emplace_back();
      read.back().push_back(sim::DeviceId(d));
    }
    if (!read.empty() && read.size() % 2 == 1 && (read.size() > 1) == improving &&
        std::all_of(read.begin(), read.end(), fits)) {
      learn::TrainOptions::Label label{.best = std::move(read.front())};
      for (size_t i = 1; i + 1 < read.size(); i += 2) {
        label.steps.emplace_back(std::move(read[i]), std::move(read[i + 1]));
      }
      return label;
    }
  }
  auto shared = std::make_shared<const sim::Problem>(problem);
  auto evaluator = sim::MakeEvaluator(shared);
  place::PlacerOptions options;
  std::vector<std::string> also;
  if (!policy.empty()) {
    options[method]["policy"] = policy;
    also.push_back(method);
  }
  DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<place::StartFinder> start,
                          place::SearchStart(also, options));
  const auto mcmc = place::MakeMcmcPlacer({}, std::move(start));
  DPLACE_ASSIGN_OR_RETURN(place::PlaceResult r,
                          mcmc->Place(*shared, {.evaluator = evaluator.get(),
                                                .seed = seed,
                                                .limits = {.evaluations = evaluations},
                                                .record_improving = improving}));
  learn::TrainOptions::Label label{.best = std::move(r.placement)};
  std::vector<place::ImprovingMove>& moves = r.improving;
  const size_t keep = std::min(moves.size(), kMaxSteps);
  for (size_t i = 0; i < keep; ++i) {
    place::ImprovingMove& m = moves[i * moves.size() / keep];
    label.steps.emplace_back(std::move(m.before), std::move(m.after));
  }
  // A search that kept no improving move (its start was at the lower bound, or nothing better
  // was found) teaches to keep its best.
  if (improving && label.steps.empty()) label.steps.emplace_back(label.best, label.best);
  if (!file.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::ostringstream out;
    out << key << "\n";
    auto line = [&](const sim::Placement& x) {
      const char* gap = "";
      for (sim::DeviceId d : x) out << std::exchange(gap, " ") << d.value();
      out << "\n";
    };
    line(label.best);
    for (const auto& [before, after] : label.steps) {
      line(before);
      line(after);
    }
    DPLACE_RETURN_IF_ERROR(WriteFileAtomically(file, out.str(), "label").WithContext(labels_name));
  }
  return label;
}

}  // namespace

StatusOr<Trained> Train(TrainRequest flags, std::ostream* progress, const Namer& name) {
  const RunInputs run;  // what it reads, no output of it replaces (also from Python)
  // The hyper-parameters not given are the method's, as its placer trains (learn::kMethods).
  if (const learn::Method* method = learn::FindMethod(flags.options.method)) {
    const learn::MethodDefaults& d = method->defaults;
    if (!flags.given.count("hidden")) flags.options.hidden = d.hidden;
    if (!flags.given.count("lr")) flags.options.lr = d.lr;
    if (!flags.given.count("max_grad_norm")) flags.options.max_grad_norm = d.max_grad_norm;
    if (flags.algorithm.empty()) flags.algorithm = std::string(d.algorithm);
  } else {
    return InvalidInput(name("method") + ": '" + flags.options.method + "' is not " +
                        learn::MethodNames());
  }
  DPLACE_RETURN_IF_ERROR(CheckNumbers(flags.options, name));
  if (flags.relabel && (flags.imitate == 0 || flags.options.init.empty())) {
    return InvalidInput(name("relabel") + ": needs " + name("imitate") + " and " + name("init") +
                        " (the policy whose placement the labels' search starts from)");
  }
  if (flags.improving && flags.imitate == 0) {
    return InvalidInput(name("improving") + ": needs " + name("imitate") +
                        " (the evaluations of the search imitated)");
  }
  if (flags.imitate < 0 || flags.imitate > 1'000'000'000) {
    return InvalidInput(name("imitate") + ": must be a number in [0, 1e+09], not " +
                        std::to_string(flags.imitate));
  }
  if (flags.clusters.empty()) return InvalidInput(name("cluster") + ": give at least one");
  auto algorithm = learn::AlgorithmByName(flags.algorithm, flags.options.algorithm);
  if (!algorithm.ok()) return InvalidInput(name("algorithm") + ": " + algorithm.status().message());
  if (flags.options.out.empty() && flags.options.checkpoint.empty()) {
    return InvalidInput(name("out") + ": give the policy file to write (or " + name("checkpoint") +
                        ")");
  }
  // Writable and distinct (the learning curve must not overwrite the policy), checked before
  // training; a checkpoint's "{update}" stands for the first update.
  std::string checkpoint = flags.options.checkpoint;
  if (const size_t at = checkpoint.find("{update}"); at != std::string::npos) {
    checkpoint.replace(at, 8, "0");
  }
  DPLACE_ASSIGN_OR_RETURN(const std::vector<Source> sources, Sources(flags, name));
  // A checkpoint resumed from may be replaced by the next one (--resume ck --checkpoint ck).
  NoteInput(flags.options.resume, "checkpoint");
  std::vector<std::string> inputs = {flags.options.init};
  for (const Source& s : sources) {
    inputs.push_back(s.graph);
    inputs.push_back(s.cluster);
  }
  DPLACE_RETURN_IF_ERROR(CheckOutputs({{name("out"), flags.options.out},
                                       {name("log"), flags.options.log},
                                       {name("checkpoint"), checkpoint, "checkpoint"}},
                                      inputs));
  // Episodes begin where the placer's do under its default budget: the searches' start.
  DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<place::StartFinder> finder, place::SearchStart());
  std::vector<learn::TrainProblem> problems;
  std::map<const sim::Problem*, learn::TrainOptions::Label> labels;
  for (const Source& s : sources) {
    auto loaded = LoadProblem({.graph = {.path = s.graph, .training = s.training},
                               .cluster = s.cluster,
                               .objective = "step"});
    if (!loaded.ok()) return loaded.status();
    problems.push_back(
        {std::filesystem::path(s.graph).stem().string() + "@" + s.cluster, loaded->problem});
    if (flags.imitate > 0) {
      DPLACE_ASSIGN_OR_RETURN(labels[loaded->problem.get()],
                              Label(s, *loaded->problem, flags.imitate, flags.improving,
                                    flags.options.seed, flags.labels, flags.options.method,
                                    flags.relabel ? flags.options.init : "", name("labels")));
    }
  }
  learn::TrainOptions o = flags.options;
  o.algorithm = *algorithm;
  o.start = [&](const std::shared_ptr<const sim::Problem>& problem) {
    auto evaluator = sim::MakeEvaluator(problem);
    return finder
        ->Find(*problem, {.evaluator = evaluator.get(),
                          .seed = o.seed,
                          .limits = {.evaluations = learn::kPlacetoEvaluations}})
        .placement;
  };
  if (flags.imitate > 0) {
    o.label = [&](const std::shared_ptr<const sim::Problem>& problem) {
      return labels.at(problem.get());
    };
  }
  DPLACE_ASSIGN_OR_RETURN(learn::TrainResult trained, learn::Train(problems, o, progress));
  return Trained{.result = std::move(trained),
                 .problems = static_cast<int>(problems.size()),
                 .hidden = o.hidden,
                 .lr = o.lr,
                 .algorithm = flags.algorithm};
}

}  // namespace dplace::run
