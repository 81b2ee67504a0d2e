// dplace: decides which device runs each operator of a deep-learning graph.
//   dplace place    --graph G [--cluster C] --placer NAME[,NAME...|all] ...
//   dplace simulate --graph G [--cluster C] --plan P ...
//   dplace info     --graph G [--json]
//   dplace plan     --model config.json --cluster C --global-batch B --seq-len S [--fix ...]
//   dplace bench    --suite NAME|FILE.json [--json]   (bench/suites/NAME.json)
//   dplace gen      FAMILY --count N --out DIR
//   dplace train    --graphs DIR --cluster C --out policy.pt ...
//   dplace placers
// Exit codes: 0 success (an infeasible placement is a result, not an error), 2 bad input,
// 1 internal failure.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "dplace/base/file_util.h"
#include "dplace/base/spelling.h"
#include "dplace/cli/commands.h"
#ifdef DPLACE_HAVE_TORCH
#include "dplace/learn/methods.h"
#endif

namespace {

void AddGraphFlags(CLI::App* cmd, dplace::cli::GraphFlags* flags) {
  cmd->add_option("--graph", flags->path,
                  "graph file: an ONNX model (.onnx), dplace-graph/1 JSON, the NeurIPS 2020 "
                  "paper's input JSON, Piper's input JSON or a PipeDream graph.txt profile")
      ->required();
  cmd->add_flag("--training", flags->training,
                "expand the forward graph into a training step (backward and optimiser update "
                "ops, co-located with their forward op)");
  cmd->add_flag("--free-gradients", flags->free_gradients,
                "with --training: backward and update ops may go to any device");
  cmd->add_option("--unit", flags->unit,
                  "what placers move: op (default; blocks with --stages or --export stages, "
                  "where the graph names modules); blocks: each repeated block (layers.3, "
                  "encoder.block.5, at any depth, each tower's its own) and each module beside "
                  "them whole, so that pipeline splits fall between blocks; or module[:DEPTH] to "
                  "keep the ops of each module (its path cut to DEPTH segments, default 1) on "
                  "one device");
  cmd->add_option("--shapes", flags->shapes,
                  "fix an ONNX input's size, NAME=DIMS (e.g. tokens=8x512); repeat for several "
                  "inputs; replaces symbolic axes such as a dynamic batch");
  cmd->add_option("--dtype", flags->dtype,
                  "precision of the step: fp32, fp16, bf16 or amp (half-precision activations, "
                  "fp32 master weights); tensor and parameter bytes and the devices' peak "
                  "FLOP/s follow it; default: the graph's own (an ONNX model's float type)");
}

void AddProblemFlags(CLI::App* cmd, dplace::cli::ProblemFlags* flags) {
  AddGraphFlags(cmd, &flags->graph);
  cmd->add_option("--cluster", flags->cluster,
                  "machine: preset name (k80x4, v100x8-nvlink, a100x8, h100x8, hetero) or a "
                  "dplace-cluster/1 file; optional when the graph file defines the machine");
  cmd->add_option("--objective", flags->objective,
                  "step (simulated step time), throughput (pipelined max-load), latency "
                  "(single-sample latency of a split) or pipeline (time per micro-batch of the "
                  "--schedule, simulated); default: throughput for the paper's files, pipeline "
                  "with --export stages, step otherwise");
  cmd->add_option("--runtime", flags->runtime,
                  "objective step: how the plan runs: executor (default: each device runs its "
                  "ready ops, as dplace.torch.apply or a graph executor) or eager (eager PyTorch "
                  "running a device map under accelerate: ops in program order, whole modules, "
                  "inputs moved at a module's entry); --export device_map implies eager");
  cmd->add_option("--recompute", flags->recompute,
                  "pipeline schedules (the pipeline objective, the throughput objective's and "
                  "the exact placers' memory check): what stages recompute in backward instead "
                  "of keeping it: "
                  "none (default), selective (attention's core: its scores and probabilities, "
                  "as Megatron-LM's selective recomputation), full (every stage keeps only its "
                  "inputs and outputs and runs its forward again: torch.utils.checkpoint of the "
                  "stage) or auto (on the stages that do not fit keeping everything, selective, "
                  "then full)");
  cmd->add_option(
      "--replicas", flags->replicas,
      "data-parallel replicas of a pipeline's stages: N (each N devices in order run "
      "one stage, each replica whole micro-batches in turn, the stage's weight "
      "gradients all-reduced over them after the step's last; --stages then counts "
      "stages of N devices), N1,N2,... (a degree per stage, in order) or auto (dp "
      "chooses a degree per stage with the split, Piper's DP, as the problem loads: within "
      "--time-limit, else 10 s; every placer then plans on the groups it chose); "
      "default 1");
  cmd->add_option("--schedule", flags->schedule,
                  "pipeline schedule of a training step's stages: 1f1b (default), gpipe, "
                  "interleaved[:CHUNKS] (each device runs CHUNKS chunks, default 2, round robin: "
                  "Megatron's interleaved 1F1B; place plans the chunks), zb-h1 or zb-h2 (zero "
                  "bubble: weight gradients apart, filling the bubbles), or auto (the pipeline "
                  "objective takes the fastest of 1f1b, zb-h1 and zb-h2 that fits each split, "
                  "and holds 1F1B's micro-batches in the other memory checks; place also plans "
                  "interleaved chunks and keeps them when faster), optionally :MICROBATCHES "
                  "(default 8; interleaved:2:8): how many micro-batches a stage holds (1F1B: one "
                  "per stage from it to the last; GPipe: all; ZB-H1: as many as stages; ZB-H2: "
                  "twice as many less one) in the throughput objective's and the exact placers' "
                  "memory check, the pipeline objective and the stages file's run");
  // One word, split here: CLI11 drops empty names and, given none, reads the next flag as one.
  cmd->add_option_function<std::string>(
      "--devices",
      [flags](const std::string& text) {
        flags->devices.clear();
        for (size_t begin = 0;;) {
          const size_t comma = std::min(text.find(',', begin), text.size());
          if (comma == begin) throw CLI::ValidationError("--devices", "an empty device name");
          flags->devices.push_back(text.substr(begin, comma - begin));
          if (comma == text.size()) break;
          begin = comma + 1;
        }
      },
      "use only these devices of the cluster, in this order (comma-separated names, e.g. "
      "gpu0,gpu1)");
  cmd->add_option("--stages", flags->stages,
                  "use only the first N accelerators (of --devices when given): a pipeline of N "
                  "stages, as DeepSpeed's num_stages")
      ->check(CLI::Validator(
          [](const std::string& value) {
            // 0 would read as "not given": say so (other values are checked with the cluster).
            const bool zero = !value.empty() && value.find_first_not_of("+-0") == std::string::npos;
            return zero ? std::string("must be between 1 and 4096, not 0") : "";
          },
          "", "stages"));
}

// --robust and its companions; `search`: also --robust-objective (commands that run placers).
void AddRobustFlags(CLI::App* cmd, dplace::cli::RobustFlags* flags, bool search) {
  cmd->add_option("--robust", flags->variants,
                  "also judge every plan on K variants of the step model (one outgoing bus per "
                  "device, latency that only delays arrival, noise on op times and bandwidths; "
                  "docs/semantics.md): the table adds their median and worst (0: none)")
      ->capture_default_str();
  cmd->add_option("--robust-seed", flags->seed, "seed of the variants' noise")
      ->capture_default_str();
  cmd->add_option("--robust-spread", flags->spread,
                  "noise of the variants: each op time and link bandwidth times exp(SPREAD z), "
                  "z standard normal")
      ->capture_default_str();
  if (!search) return;
  cmd->add_option("--robust-objective", flags->objective,
                  "with --robust K: searches minimise this over the K variants instead of the "
                  "step time: worst, median or qQ (the Q quantile, e.g. q0.9); each judgement "
                  "costs K evaluations");
}

// The message with control characters (terminal escapes from a file's bytes) written as \xNN.
#ifdef DPLACE_HAVE_TORCH
std::vector<std::string> MethodNameList() {
  std::vector<std::string> names;
  for (const dplace::learn::Method& m : dplace::learn::kMethods) names.emplace_back(m.name);
  return names;
}
#endif

std::string Printable(const std::string& message) {
  std::string out;
  for (const char ch : message) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

int Finish(const dplace::Status& status) {
  if (status.ok()) return 0;
  // One write: the ranks of an mpirun share stderr.
  std::cerr << ("error: " + Printable(status.message()) + "\n") << std::flush;
  return status.code() == dplace::StatusCode::kInvalidInput ? 2 : 1;
}

}  // namespace

const char* kOptHelp =
    "a placer's option, PLACER.KEY=VALUE (repeatable; it applies wherever that placer runs, also "
    "inside portfolio and the searches' start); `dplace placers --options` lists them";

const char* kCoarsenHelp =
    "place graphs of more than twice N ops through a coarse graph of about N ops, then refine on "
    "every op with the rest of --time-limit (0: never coarsen)";

const char* kEvaluationsHelp =
    "evaluations per search placer (0: its default); a search that stops on evaluations, not on "
    "--time-limit, gives the same placement for the same seed";

// "did you mean" for the first argument that is neither a known subcommand (in first place) nor a
// flag of the subcommand given.
std::string Suggestion(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
  if (argc < 2) return "";
  const std::string first = argv[1];
  if (first.starts_with("-")) return "";
  if (std::find(commands.begin(), commands.end(), first) == commands.end()) {
    const std::string hint = dplace::DidYouMean(first, commands);
    return hint.empty() ? "" : "; '" + first + "' is not a subcommand" + hint;
  }
  std::vector<std::string> flags;
  for (const CLI::Option* o : app.get_subcommand(first)->get_options()) {
    for (const std::string& name : o->get_lnames()) flags.push_back("--" + name);
  }
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (!arg.starts_with("--")) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), arg) == flags.end()) {
      return "; '" + arg + "' is not a flag of " + first + dplace::DidYouMean(arg, flags);
    }
  }
  return "";
}

int main(int argc, char** argv) {
  const dplace::RunInputs inputs;  // no output replaces a file the command read
  CLI::App app{"dplace: device placement for deep-learning graphs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dplace " DPLACE_VERSION);

  dplace::cli::PlaceFlags place;
  CLI::App* place_cmd = app.add_subcommand("place", "place a graph with one or more placers");
  AddProblemFlags(place_cmd, &place.problem);
  place_cmd
      ->add_option("--placer", place.placers,
                   "placer name(s) and family names (one-shot, search, exact, learned), "
                   "comma-separated, or all")
      ->capture_default_str();
  place_cmd->add_option("--plan", place.plan,
                        "a given plan (dplace plan or the paper's human-expert split): `expert` "
                        "returns it, the searches start from it");
  place_cmd->add_option("--opt", place.options, kOptHelp);
  place_cmd->add_option("--portfolio", place.portfolio,
                        "members of the `portfolio` placer, comma-separated (default: every step "
                        "placer)");
  place_cmd->add_option("--total-time-limit", place.total_time_limit_s,
                        "seconds for all the placers together (--placer all): each gets an equal "
                        "share of what is left, and no more than --time-limit");
  place_cmd->add_option("--seed", place.seed, "random seed")->capture_default_str();
  place_cmd
      ->add_option("--tolerance", place.tolerance,
                   "plans within this fraction of the best value count as equal: the one on "
                   "fewer devices, then with fewer bytes crossing, is written")
      ->capture_default_str();
  place_cmd->add_option("--time-limit", place.time_limit_s, "seconds per placer (0: none)");
  place_cmd->add_option("--evaluations", place.evaluations, kEvaluationsHelp);
  place_cmd->add_option("--coarsen", place.coarsen_ops, kCoarsenHelp)->capture_default_str();
  place_cmd->add_option("--out", place.out, "write the best plan here");
  place_cmd->add_option("--out-format", place.out_format, "plan (dplace-plan/1) or paper-split")
      ->capture_default_str();
  place_cmd->add_option("--trace", place.trace, "write a Chrome trace of the best plan's step");
  place_cmd->add_option("--export", place.exports,
                        "also write the best plan as KIND=FILE: device_map (module path -> "
                        "device, for accelerate) or stages (split points of a contiguous split)");
  AddRobustFlags(place_cmd, &place.robust, /*search=*/true);
  place_cmd->add_flag("--json", place.json, "print JSON on stdout");

  dplace::cli::SimulateFlags simulate;
  CLI::App* sim_cmd = app.add_subcommand("simulate", "evaluate a given plan");
  AddProblemFlags(sim_cmd, &simulate.problem);
  sim_cmd->add_option("--plan", simulate.plan, "plan file (dplace plan or the paper's split)")
      ->required();
  sim_cmd->add_option("--trace", simulate.trace, "write a Chrome trace of the step");
  sim_cmd->add_option("--pipeline", simulate.pipeline,
                      "simulate a pipeline schedule of the plan's stages: gpipe, 1f1b, "
                      "interleaved (the plan's chunks round the devices), zb-h1, zb-h2 or auto "
                      "(the fastest that fits), recomputing as --recompute says");
  sim_cmd->add_option("--microbatches", simulate.microbatches, "micro-batches for --pipeline")
      ->capture_default_str();
  sim_cmd->add_option("--step-model", simulate.step_model,
                      "simulate the step under another model: comma-separated per_pair | "
                      "per_device (one outgoing bus per device), gap | arrival (latency delays "
                      "arrival only), no_latency (links without latency); e.g. "
                      "per_device,no_latency is Placeto's simulator");
  AddRobustFlags(sim_cmd, &simulate.robust, /*search=*/false);
  sim_cmd->add_flag("--json", simulate.json, "print JSON on stdout");

  dplace::cli::InfoFlags info;
  CLI::App* info_cmd = app.add_subcommand("info", "describe a graph");
  AddGraphFlags(info_cmd, &info.graph);
  info_cmd->add_option("--cluster", info.cluster,
                       "machine (preset or file): say whether the step fits one device of each "
                       "kind, the largest batch that does, and what data parallelism gives");
  info_cmd->add_flag("--json", info.json, "print JSON on stdout");

  dplace::cli::PlanFlags plan;
  CLI::App* plan_cmd = app.add_subcommand(
      "plan",
      "plan a training job: tensor, pipeline and data parallelism, ZeRO, recomputation "
      "and micro-batch chosen together (docs/planning.md)");
  plan_cmd
      ->add_option("--model", plan.model,
                   "a Hugging Face config.json of a decoder (gpt2, gpt_neox, llama, mistral, "
                   "qwen2), Piper's input JSON (planned by Piper's DP over its options), or any "
                   "graph dplace reads (ONNX, dplace-graph/1, ...: data parallelism, FSDP, a "
                   "pipeline and an op-level placement weighed)")
      ->required();
  plan_cmd->add_option("--cluster", plan.cluster,
                       "machine: a preset (dgx-a100, dgx-h100, dgx-h200, a100x8, h100x8, ...), "
                       "NAME:N for N nodes of it (dgx-h100:4), or a dplace-cluster/1 file "
                       "(required for a config.json)");
  plan_cmd->add_option("--global-batch", plan.global_batch,
                       "sequences per step (required; for a graph: samples, a multiple of its "
                       "batch)");
  plan_cmd->add_option("--time-limit", plan.time_limit_s,
                       "a graph: seconds for its pipeline and op-level searches (default 10)");
  plan_cmd->add_option("--seed", plan.seed, "a graph: the placers' seed (default 1)");
  plan_cmd->add_option("--shapes", plan.shapes,
                       "an ONNX graph: fix an input's size, NAME=DIMS (e.g. x=32x3x224x224); "
                       "repeat for several inputs");
  plan_cmd->add_option("--seq-len", plan.seq_len,
                       "tokens per sequence (required for a config.json)");
  plan_cmd->add_option("--gpus", plan.gpus,
                       "Piper's input: at most this many devices (default: its maxDevices)");
  plan_cmd->add_option("--gpu-memory", plan.gpu_memory,
                       "Piper's input: memory per device, e.g. 8GiB (default: the file's)");
  plan_cmd->add_option("--bandwidth", plan.bandwidth,
                       "Piper's input: the links' bandwidth, e.g. 25GiB/s (default: the file's)");
  plan_cmd->add_option("--dtype", plan.dtype,
                       "bf16 (default), fp16, or fp8 (linear layers at the FP8 peak, the rest in "
                       "bf16, as Transformer Engine and torchtitan's Float8 run them)");
  plan_cmd->add_option(
      "--fix", plan.fix,
      "judge this configuration, or search only what it leaves open: "
      "comma-separated tp=, pp=, dp=, cp=, zero=0-3, sp=on|off, mbs=, vp=, "
      "schedule=1f1b|interleaved|gpipe|zb-h1|zb-h2, recompute=none|selective|full");
  plan_cmd->add_flag("--tp-across-nodes", plan.tp_across_nodes,
                     "let a tensor-parallel group span nodes (default: inside one NVLink domain)");
  plan_cmd->add_flag("--no-flash-attention", plan.no_flash_attention,
                     "attention keeps its s x s scores (as without flash attention)");
  plan_cmd->add_option("--export", plan.exports,
                       "FRAMEWORK=FILE: the best plan's settings for megatron (command-line "
                       "arguments), torchtitan (TOML) or deepspeed (JSON); repeatable");
  plan_cmd->add_flag("--json", plan.json, "print JSON on stdout");

  dplace::cli::BenchFlags bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "run every placer on a suite of workloads");
  bench_cmd
      ->add_option("--suite", bench.suite,
                   "a suite of bench/suites (paper2020, latency2020, pipedream, models, "
                   "step-profiles) or a dplace-suite/1 file")
      ->required();
  bench_cmd->add_option("--models", bench.models, "folder with the ONNX models (suite models)")
      ->capture_default_str();
  bench_cmd->add_option("--data", bench.data, "folder with the workloads")->capture_default_str();
  bench_cmd->add_option("--cluster", bench.cluster, "machine for graphs that define none")
      ->capture_default_str();
  bench_cmd->add_option("--seed", bench.seed, "random seed")->capture_default_str();
  bench_cmd->add_option("--time-limit", bench.time_limit_s, "seconds per placer (0: none)");
  bench_cmd->add_option("--evaluations", bench.evaluations, kEvaluationsHelp);
  bench_cmd->add_option("--coarsen", bench.coarsen_ops, kCoarsenHelp)->capture_default_str();
  bench_cmd->add_option("--opt", bench.options, kOptHelp);
  AddRobustFlags(bench_cmd, &bench.robust, /*search=*/true);
  bench_cmd->add_flag("--json", bench.json, "print JSON on stdout");
  bench_cmd->add_option("--report", bench.report,
                        "also write an HTML report (tables, bar charts, best timelines) here");
  bench_cmd->add_option("--regimes", bench.regimes,
                        "a suite with regimes (learned): run only these (repeatable)");
  bench_cmd->add_option("--placers", bench.placers,
                        "a suite with regimes: run only these of each regime's placers "
                        "(the reference always runs; repeatable)");
  bench_cmd->add_option("--filter", bench.filter,
                        "run only the workloads whose name contains this text");

  dplace::cli::GenFlags gen;
  CLI::App* gen_cmd =
      app.add_subcommand("gen", "write generated graphs of a family (docs/families.md)");
  gen_cmd->add_option("family", gen.family, "enas_cnn, enas_rnn, nmt, nasnet or layered")
      ->required();
  gen_cmd->add_option("--count", gen.count, "how many graphs, 1 to 10000")->capture_default_str();
  gen_cmd->add_option("--seed", gen.seed, "random seed")->capture_default_str();
  gen_cmd->add_option("--out", gen.out, "folder to write FAMILY_SEED_INDEX.json into")->required();
  gen_cmd->add_option("--set", gen.sets,
                      "a family parameter given instead of drawn, KEY=VALUE (repeatable)");
  gen_cmd->add_flag("--training", gen.training,
                    "write training steps (forward + backward + update)");
  gen_cmd->add_flag("--quiet", gen.quiet, "do not list the files written");

#ifdef DPLACE_HAVE_TORCH
  dplace::cli::TrainFlags train;
  dplace::learn::TrainOptions& t = train.options;
  CLI::App* train_cmd = app.add_subcommand(
      "train", "train a learned placer's policy on graphs and clusters (docs/learned.md)");
  train_cmd
      ->add_option("--method", t.method,
                   "the learned placer: " + dplace::learn::MethodNames() +
                       " (whole-episode policies are trained with discount 1)")
      ->check(CLI::IsMember(MethodNameList()))
      ->capture_default_str();
  train_cmd->add_option("--groups", t.groups,
                        "hdp: the grouper's most groups (0: 256); 0 to 65536");
  train_cmd->add_option("--max-grad-norm", t.max_grad_norm,
                        "clip the gradient's norm to this (0: no clipping; default: the "
                        "method's); 0 to 1e6");
  train_cmd
      ->add_option("--graphs", train.graphs,
                   "graph files, folders of them (every .json/.onnx/.txt) or bench suites")
      ->required();
  train_cmd
      ->add_option("--cluster", train.clusters,
                   "machines to train on (each graph on each; repeatable)")
      ->required();
  train_cmd->add_flag("--training", train.training, "expand ONNX graphs into training steps");
  train_cmd->add_option("--out", t.out, "the trained policy file (--opt METHOD.policy=FILE)");
  train_cmd->add_option("--updates", t.updates, "stop after this many updates (0: none); 0 to 1e9");
  train_cmd->add_option("--evaluations", t.evaluations,
                        "stop after this many evaluations; 0 to 1e12");
  train_cmd->add_option("--seconds", t.seconds, "stop after this many seconds; 0 to 1e6");
  train_cmd->add_option("--episodes", t.episodes, "episodes per update; 1 to 4096")
      ->capture_default_str();
  train_cmd->add_option(
      "--samples", t.samples,
      "episodes of one problem per update (0: 4 for colocrl, hdp and gdp; else 1); 0 to 4096");
  train_cmd->add_option("--seed", t.seed, "random seed")->capture_default_str();
  train_cmd->add_option("--hidden", t.hidden,
                        "width of the policy (default: the method's, as its placer: placeto 32, "
                        "colocrl 256, hdp 512, gdp 64); 1 to 4096");
  train_cmd->add_option("--lr", t.lr,
                        "Adam's learning rate at the start (default: the method's); above 0, at "
                        "most 1");
  train_cmd->add_option("--lr-end", t.lr_end, "... at the last update (with --updates); 0 to 1")
      ->capture_default_str();
  train_cmd->add_option("--algorithm", train.algorithm,
                        "reinforce or ppo (default: the method's: ppo for gdp, else reinforce)");
  train_cmd->add_option("--clip", t.algorithm.clip,
                        "PPO's clip range of the ratio (0: 0.2); 0 to below 1");
  train_cmd->add_option("--epochs", t.algorithm.epochs,
                        "PPO's gradient steps per update (1: 4); 1 to 1000");
  train_cmd->add_option("--entropy", t.algorithm.entropy, "weight of the entropy bonus; 0 to 100")
      ->capture_default_str();
  train_cmd
      ->add_option("--discount", t.algorithm.discount,
                   "discount of later rewards in a return; above 0, at most 1")
      ->capture_default_str();
  train_cmd
      ->add_option("--max-units", t.max_units, "coarsen graphs of more co-location units; 1 to 1e6")
      ->capture_default_str();
  train_cmd->add_option("--checkpoint", t.checkpoint,
                        "checkpoint file ({update} in the name: one per checkpoint)");
  train_cmd->add_option("--checkpoint-every", t.checkpoint_every,
                        "updates between checkpoints; 0 to 1e9");
  train_cmd->add_option("--resume", t.resume, "continue from this checkpoint");
  train_cmd->add_option("--init", t.init, "start from this policy instead of fresh weights");
  train_cmd->add_option("--imitate", train.imitate,
                        "imitate the search instead of policy gradients: label each problem with "
                        "mcmc's best placement at this many evaluations and train each unit's "
                        "distribution towards the label's device, from the label perturbed by "
                        "--perturb random unit moves (0: off); 0 to 1e9");
  train_cmd->add_option("--perturb", t.perturb,
                        "imitation, --mixed-starts: at most this many random unit moves from the "
                        "placement an episode starts near; 0 to 1e6");
  train_cmd->add_flag("--relabel", train.relabel,
                      "imitation, expert iteration: the labels' mcmc also starts from the "
                      "placement of the --init policy (mcmc.start=METHOD), so each round imitates "
                      "the search improved from the last round's policy");
  train_cmd->add_flag("--improving", train.improving,
                      "imitation of improving moves: label with the moves the --imitate search "
                      "kept that improved its placement (at most 64 per problem) and train the "
                      "proposal mcmc.proposal draws to make them");
  train_cmd->add_flag("--mixed-starts", t.mixed_starts,
                      "policy gradients from a mix of starts: random, fastest device, and the "
                      "searches' start moved by up to --perturb random unit moves (so that keeping "
                      "the start earns nothing)");
  train_cmd->add_option("--labels", train.labels,
                        "imitation: a folder caching the labels (named by a hash of the graph "
                        "file, cluster, evaluations and seed)");
  train_cmd->add_option("--log", t.log, "learning curve, .csv or .json");
  train_cmd->add_flag("--quiet", train.quiet, "no progress lines");
#endif

  dplace::cli::PlacersFlags placers;
  CLI::App* placers_cmd = app.add_subcommand("placers", "list the placers and their traits");
  placers_cmd->add_flag("--options", placers.options,
                        "also list each placer's options (--opt PLACER.KEY=VALUE) with defaults");
  placers_cmd->add_flag("--json", placers.json, "print JSON on stdout");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "error: " << Printable(e.what()) << Printable(Suggestion(app, argc, argv))
              << " (see dplace --help)" << std::endl;
    return 2;
  }
  try {
    if (place_cmd->parsed()) {
      place.out_given = place_cmd->get_option("--out")->count() > 0;
      return Finish(dplace::cli::RunPlace(place));
    }
    if (sim_cmd->parsed()) return Finish(dplace::cli::RunSimulate(simulate));
    if (info_cmd->parsed()) return Finish(dplace::cli::RunInfo(info));
    if (bench_cmd->parsed()) return Finish(dplace::cli::RunBench(bench));
    if (plan_cmd->parsed()) return Finish(dplace::cli::RunPlan(plan));
    if (placers_cmd->parsed()) return Finish(dplace::cli::RunPlacers(placers));
    if (gen_cmd->parsed()) return Finish(dplace::cli::RunGen(gen));
#ifdef DPLACE_HAVE_TORCH
    if (train_cmd->parsed()) {
      for (const char* flag : {"--hidden", "--lr", "--max-grad-norm", "--algorithm"}) {
        if (train_cmd->get_option(flag)->count() > 0) train.given.insert(flag);
      }
      return Finish(dplace::cli::RunTrain(train));
    }
#endif
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << std::endl;
    return 1;
  }
  return 1;
}
