// Training expansion of a forward graph (any importer): forward -> forward + backward + update.
//   - each forward op f gets a backward op "f/grad" (kind backward): about twice f's FLOPs, bytes
//     and measured times when f has parameters (gradients for its inputs and its weights), about
//     once otherwise; it holds f's weight gradient (f's parameter bytes) for the step;
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

#include "dplace/base/status.h"
#include "dplace/graph/graph.h"

namespace dplace::graph {

struct TrainingOptions {
  bool colocate = true;
  double optimizer_state_factor = 2;  // bytes of optimiser state per parameter byte (Adam: 2)
};

// Bytes of the activations a training step of `forward` keeps for its backward pass (Edge::saved,
// Op::saves_output, Op::saved_bytes), each storage once: a view counts as its base, a view of a
// parameter or of a model input as nothing. What torch.autograd.graph.saved_tensors_hooks would
// see, less the parameters and the model's inputs (which are not ops here).
double SavedActivationBytes(const Graph& forward);

// InvalidInput when the graph already has backward or update ops.
StatusOr<Graph> ExpandTraining(const Graph& forward, const TrainingOptions& options = {});

}  // namespace dplace::graph
