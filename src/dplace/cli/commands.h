// The subcommands of the dplace binary. Each returns a Status; main() turns InvalidInput into exit
// code 2 and any other error into 1, printing the one-line message on stderr.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "dplace/cli/common.h"
#ifdef DPLACE_HAVE_TORCH
#include "dplace/learn/train.h"
#endif

namespace dplace::cli {

struct PlaceFlags {
  ProblemFlags problem;
  std::string placers = "all";       // comma-separated names, or "all"
  std::string plan;                  // given plan: where the searches start, what `expert` returns
  std::string portfolio;             // members of `portfolio`, comma-separated; empty: its default
  std::vector<std::string> options;  // --opt PLACER.KEY=VALUE
  uint64_t seed = 1;
  double time_limit_s = 0;
  double total_time_limit_s = 0;  // for all placers together (shared out as they run); 0: none
  int64_t evaluations = 0;        // per search placer; 0: the placer's own default
  int coarsen_ops = 2000;         // see run::RunRequest
  std::string out;
  bool out_given = false;  // --out was on the command line (an empty name is then an error)
  std::string out_format = "plan";  // plan | paper-split
  std::string trace;
  std::vector<std::string> exports;  // KIND=FILE, KIND: device_map | stages
  // Plans within this fraction of the best value count as equal: the one on fewer devices, then
  // with fewer bytes crossing, is the one written (place/deploy.h).
  double tolerance = 0.01;
  RobustFlags robust;  // judge every plan on variants; with an objective, search by it
  bool json = false;
};
Status RunPlace(const PlaceFlags& flags);

struct SimulateFlags {
  ProblemFlags problem;
  std::string plan;
  std::string trace;
  std::string pipeline;  // a schedule (sim/schedules.h): simulate it instead of one step
  int microbatches = 8;
  std::string step_model;  // simulate under this model (sim::ParseVariantSpec); empty: the default
  RobustFlags robust;      // also judge the plan on variants (no objective: nothing searches)
  bool json = false;
};
Status RunSimulate(const SimulateFlags& flags);

struct InfoFlags {
  GraphFlags graph;
  std::string cluster;  // with it: whether the step fits one device of each kind (sim/fit.h)
  bool json = false;
};
Status RunInfo(const InfoFlags& flags);

struct BenchFlags {
  std::string suite;  // a manifest's name (bench/suites/NAME.json) or a manifest file
  std::string suites = DPLACE_SOURCE_DIR "/bench/suites";  // where the named manifests are
  // Folders of the suites' workloads and of the bundled models; relative to the source tree the
  // binary was built from (not the working directory), unless given.
  std::string data = DPLACE_SOURCE_DIR "/testdata";
  std::string models = DPLACE_SOURCE_DIR "/models";  // the bundled ONNX models (suite models)
  std::string cluster = "k80x4";                     // machine for workloads that do not define one
  uint64_t seed = 1;
  double time_limit_s = 0;
  int64_t evaluations = 0;           // per search placer; 0: the placer's own default
  int coarsen_ops = 2000;            // see run::RunRequest
  std::vector<std::string> options;  // --opt PLACER.KEY=VALUE, for every workload
  RobustFlags robust;  // judge every plan on variants; with an objective, search by it
  bool json = false;
  std::string report;  // HTML report file; empty: none
  // A suite with regimes: only these (empty: all), only workloads whose name contains `filter`.
  // Regimes named NAME@E (a ladder's rungs) are chosen by NAME too. Only `placers` of each regime
  // (empty: all; the reference always runs).
  std::vector<std::string> regimes;
  std::vector<std::string> placers;
  std::string filter;
};
Status RunBench(const BenchFlags& flags);

struct GenFlags {
  std::string family;  // graph::FamilyNames()
  int count = 1;       // graphs: indices 0 .. count - 1
  uint64_t seed = 1;
  std::string out;                // folder; FAMILY_SEED_INDEX.json in it
  std::vector<std::string> sets;  // --set KEY=VALUE: family parameters given, not drawn
  bool training = false;          // write training steps (graph::ExpandTraining)
  bool quiet = false;
};
Status RunGen(const GenFlags& flags);

#ifdef DPLACE_HAVE_TORCH
struct TrainFlags {
  std::vector<std::string> graphs;    // files, folders or bench suites
  std::vector<std::string> clusters;  // each graph on each
  bool training = false;              // expand ONNX graphs into training steps
  bool quiet = false;
  std::string algorithm = "reinforce";  // or ppo
  // Which of --hidden, --lr, --max-grad-norm and --algorithm were given: the others take the
  // method's defaults (learn::Method::defaults, the learned placer's own).
  std::set<std::string> given;
  learn::TrainOptions options;  // method, budgets, files, hyper-parameters
  // Imitation: label each problem with mcmc's best placement at this many evaluations (0: policy
  // gradients instead), cached in `labels` when given.
  int64_t imitate = 0;
  std::string labels;
  bool relabel = false;  // expert iteration: the labels' search starts from --init's placement
  // Label with the moves mcmc kept that improved its placement too, and imitate those
  // (learn::TrainOptions::Label::steps).
  bool improving = false;
};
Status RunTrain(const TrainFlags& flags);
#endif

struct PlanFlags {
  std::string model;    // a Hugging Face config.json, Piper's input, or any graph file
  std::string cluster;  // preset, NAME:N, or a cluster file
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  std::string dtype = "bf16";
  std::string fix;
  bool tp_across_nodes = false;
  bool no_flash_attention = false;
  std::vector<std::string> exports;  // FRAMEWORK=FILE
  bool json = false;
  // Piper's inputs: the machine, where not the file's (0 / empty: the file's).
  int gpus = 0;
  std::string gpu_memory, bandwidth;
  // Graphs: the pipeline's and the op-level placers' time (0: 10 s) and their seed.
  double time_limit_s = 0;
  uint64_t seed = 1;
  std::vector<std::string> shapes;  // an ONNX graph's input sizes, NAME=DIMS
};
Status RunPlan(const PlanFlags& flags);

struct PlacersFlags {
  bool options = false;  // list each placer's options with defaults
  bool json = false;
};
Status RunPlacers(const PlacersFlags& flags);

}  // namespace dplace::cli
