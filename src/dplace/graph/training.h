// Training expansion of a forward graph (any importer): forward -> forward + backward + update.
//   - each forward op f gets a backward op "f/grad" (kind backward): f's FLOPs, bytes and measured
//     times times BackwardFactor(f) (one backward GEMM per operand of a GEMM that needs a
//     gradient); it holds f's weight gradient (f's parameter bytes) for the step;
//   - gradient edges run in reverse: for each forward edge u -> v carrying tensor t, v/grad sends
//     the gradient of t (t's bytes) to u/grad;
//   - activations are kept until their backward op, where it keeps them (PyTorch's autograd, as
//     the importer marked it: Edge::saved, Op::saves_output): t also goes to v/grad, and f's first
//     output to f/grad, so the memory model holds them until the backward pass has used them;
//     what f keeps of its insides (Op::saved_bytes) becomes one more output of f, sent to f/grad;
//   - each op with parameters gets an optimiser update op "f/update" (kind update) that receives
//     the weight gradient from f/grad and holds the optimiser state (Adam: 2 x parameter bytes);
//   - by default f, f/grad and f/update are co-located (f's co-location group, or a new group named
//     after f), as TensorFlow's colocate_gradients_with_ops does; `colocate = false` frees them.
#pragma once

#include <vector>

#include "dplace/base/status.h"
#include "dplace/graph/graph.h"

namespace dplace::graph {

struct TrainingOptions {
  bool colocate = true;
  double optimizer_state_factor = 2;  // bytes of optimiser state per parameter byte (Adam: 2)
};

// The backward op's work over the forward op's: Op::backward_factor where the importer knew which
// inputs need gradients, else 2 for an op with parameters (input and weight gradients), 1
// otherwise.
double BackwardFactor(const Op& forward);

// Bytes of the activations a training step of `forward` keeps for its backward pass (Edge::saved,
// Op::saves_output, Op::saved_bytes), each storage once: a view counts as its base, a view of a
// parameter or of a model input as nothing. What torch.autograd.graph.saved_tensors_hooks would
// see, less the parameters and the model's inputs (which are not ops here). Of a training step
// (ExpandTraining's result), the same: the storages its forward ops send to backward ops. With
// `on_cpu`, at the sizes a device of kind "cpu" keeps (Op::saved_bytes_cpu: dropout's noise).
double SavedActivationBytes(const Graph& graph, bool on_cpu = false);

// InvalidInput when the graph already has backward or update ops.
StatusOr<Graph> ExpandTraining(const Graph& forward, const TrainingOptions& options = {});

// The forward ops of attention's core, which selective recomputation runs again before the
// backward instead of keeping what they make (Korthikanti et al. 2022; Megatron-LM's
// --recompute-granularity selective): each softmax (an op whose type names it, in any case), the
// ops from it back to and including the matrix product that makes its scores (each step to the
// input with the most bytes: the scores, not the mask), and the dropout ops that read it; a
// softmax that no matrix product feeds within 8 such steps is no attention's. Per op (by index),
// 1 for those; none where attention is one fused op.
std::vector<char> AttentionCoreOps(const Graph& g);

}  // namespace dplace::graph
