// Megatron-LM's tensor parallelism (Shoeybi et al. 2019, Fig. 3) found in any graph: the blocks
// whose matrix products form its column -> row pairs. A column product's weight is split by its
// outputs, so each of t ranks makes a t-th of its output; the ops after it work on that shard
// alone (elementwise ops, views, softmax, products of two shards: attention by heads) until a row
// product, split by its inputs, whose partial outputs one all-reduce sums; in backward one
// all-reduce sums the column products' input gradient. Attention (Q, K, V -> output projection)
// and the MLP (up -> down) are such blocks; everything else (norms, embeddings, the head, a
// convolution) stays whole on every rank. Found from the ops' types, bytes and FLOPs only: no
// shapes are read, and a block whose degrees cannot be told is left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/graph/graph.h"

namespace dplace::graph {

struct TensorParallelBlock {
  // Forward ops that run a t-th of their work on each of t ranks, ascending: the column products
  // and the ops holding their weights (a transposed copy), what lies between, the row product.
  std::vector<OpId> ops;
  std::vector<OpId> columns;
  OpId row{0};
  bool attention = false;  // a softmax lies between (split by heads)
  // The degrees it takes divide this: attention's heads, else the column products' output width.
  int64_t ways = 0;
  double forward_reduce_bytes = 0;   // the row product's output, summed over the ranks
  double backward_reduce_bytes = 0;  // the gradients of the column products' inputs
  std::string module;                // the row product's module ("layers.3.attn"), or its name
};

// Every block of the forward ops of `g` (a forward graph or a training step), in the order of
// their row products. A product's weight is a parameter it holds or one an op without inputs
// holds and passes to it (torch.onnx's transposed weight). A column's shard may reach only one row
// product, through ops of the kinds above; another input of such an op must be smaller than its
// shard (a broadcast mask or scale) and a product between must take shards only, else the block
// is not one. A product is in one block at
// most: of a chain of pairs sharing a product (linear -> linear -> linear), the first is kept.
std::vector<TensorParallelBlock> FindTensorParallelBlocks(const Graph& g);

// The share of the bytes that the forward ops of a training step send to backward ops (what it
// keeps for backward) that `ops` (forward ops, by index: 1 for each) send.
double SavedShare(const Graph& g, const std::vector<char>& ops);

}  // namespace dplace::graph
