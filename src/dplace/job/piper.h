// Piper (Tarnawski et al., NeurIPS 2021: "Piper: Multidimensional Planner for DNN
// Parallelization") on its own inputs: a DAG of layers, each with options (TMPCs) per
// tensor-parallel degree t, planned into pipeline stages of one t and one data-parallel degree d,
// each layer its option, minimising the time per sample of the slowest stage.
//
// The model is Piper's, as its reference implementation (msr-fiddle/piper, algo.cpp) computes it:
// a stage's time per sample is the sum over its layers of (bytes of its edges that cross the stage,
// doubled, each with its option's sync bytes, over d, plus the all-reduce 4(d-1)/d of its
// parameters over the micro-batches) over the bandwidth, plus its time per sample over d; its
// memory A·y + B per layer with y = ceil(d's of this stage and the ones after it / d); at most K
// devices (Σ t·d) and Σ d ≤ min(micro-batches, K), d dividing the micro-batches. The DP runs over
// the DAG's successor-closed sets, each stage the difference of two, and picks each stage's options
// by Piper's knapsack heuristic (fastest options, then the best time per byte saved until it fits),
// so that its answer is Piper's answer. A transition updates the (devices, sum of degrees) table
// only where the sub-plan's row drops, where the stage's time rises in the micro-batches it holds
// (Piper's faster transition; every cell where it does not).
#pragma once

#include <string>
#include <vector>

#include "dplace/base/status.h"

namespace dplace::job {

struct PiperOption {
  std::string id;  // "vanilla", "activation recomp", ...
  double time_per_sample_s = 0, parameter_bytes = 0, memory_a = 0, memory_b = 0;
  std::vector<double> sync_fw;  // bytes, per predecessor (in PiperLayer::preds order)
  std::vector<double> sync_bw;  // bytes, per successor (in PiperLayer::succs order)
};

struct PiperLayer {
  std::string name;
  std::vector<int> preds, succs;                  // layer indices
  std::vector<double> pred_bytes, succ_bytes;     // communicationCost of those edges
  std::vector<std::vector<PiperOption>> options;  // [t] (index t, empty where not given)
};

struct PiperInstance {
  std::vector<PiperLayer> layers;
  int max_devices = 1;
  double memory_bytes = 0, bandwidth_bytes_per_s = 0;
  int microbatches = 1;  // mbsInBatch
};

struct PiperStage {
  std::vector<int> layers;
  int t = 1, d = 1;
  std::vector<int> option;  // per layer of the stage, its index in options[t]
};

struct PiperPlan {
  double time_per_sample_s = 0;
  std::vector<PiperStage> stages;  // first stage first
  int devices = 0;                 // Σ t·d
  int dp_sum = 0;                  // Σ d
  int ideals = 0;                  // successor-closed sets the DP ran over
};

// The optimum of Piper's DP, or InvalidInput when nothing fits (or the DAG has more than 40,000
// successor-closed sets, Piper's own limit).
StatusOr<PiperPlan> PlanPiper(const PiperInstance& in);

// A plan's time per sample under Piper's model (its verifier); infinity where a stage does not fit.
double PiperTimePerSample(const PiperInstance& in, const std::vector<PiperStage>& stages);

}  // namespace dplace::job
