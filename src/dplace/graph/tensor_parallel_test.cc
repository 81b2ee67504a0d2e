#include "dplace/graph/tensor_parallel.h"

#include <gtest/gtest.h>

#include "dplace/graph/graph_builder.h"
#include "dplace/graph/training.h"

namespace dplace::graph {
namespace {

// Adds an op of one output, fed by `from` (each output 0).
struct Builder {
  GraphBuilder b;
  OpId operator()(const char* name, const char* type, double flops, double out_bytes,
                  const std::vector<OpId>& from, double params = 0) {
    const OpId id =
        b.AddOp({.name = name, .type = type, .flops = flops, .param_bytes = params}, {{out_bytes}});
    for (OpId f : from) b.AddEdge(f, 0, id);
    return id;
  }
  Graph Build() { return std::move(b.Build()).value(); }
};

// One transformer layer in fp32 as torch.onnx writes it: batch 2, sequence 4, hidden 8, 2 heads of
// 4, MLP width 32 (rows M = 8). Q's weight comes through a transposed copy; `side` is the bytes of
// a tensor the attention scores add (a mask: 16 bytes broadcast; 256 would be a whole tensor).
Graph Layer(double side = 16) {
  Builder op{GraphBuilder("layer")};
  const OpId x = op("/embed/Gather", "Gather", 0, 256, {}, 4096);
  const OpId qw = op("/layers.0/q/Transpose", "Transpose", 0, 256, {}, 256);
  const OpId q = op("/layers.0/q/MatMul", "MatMul", 1024, 256, {x, qw});
  const OpId k = op("/layers.0/k/MatMul", "MatMul", 1024, 256, {x}, 256);
  const OpId v = op("/layers.0/v/MatMul", "MatMul", 1024, 256, {x}, 256);
  const OpId qh = op("/layers.0/Reshape", "Reshape", 0, 256, {q});
  const OpId kt = op("/layers.0/Transpose", "Transpose", 0, 256, {k});
  const OpId s = op("/layers.0/MatMul", "MatMul", 512, 256, {qh, kt});
  const OpId mask = op("/mask", "Unsqueeze", 0, side, {x});
  const OpId sm = op("/layers.0/Add", "Add", 64, 256, {s, mask});
  const OpId p = op("/layers.0/Softmax", "Softmax", 256, 256, {sm});
  const OpId pv = op("/layers.0/MatMul_1", "MatMul", 512, 256, {p, v});
  const OpId merged = op("/layers.0/Reshape_1", "Reshape", 0, 256, {pv});
  const OpId o = op("/layers.0/o/MatMul", "MatMul", 1024, 256, {merged}, 256);
  const OpId r1 = op("/layers.0/Add_1", "Add", 64, 256, {o, x});
  const OpId n1 = op("/layers.0/norm/ReduceMean", "ReduceMean", 64, 256, {r1});
  const OpId up = op("/layers.0/ff1/MatMul", "MatMul", 4096, 1024, {n1}, 1024);
  const OpId bias = op("/layers.0/ff1/Add", "Add", 256, 1024, {up}, 128);
  const OpId act = op("/layers.0/Gelu", "Gelu", 256, 1024, {bias});
  const OpId down = op("/layers.0/ff2/MatMul", "MatMul", 4096, 256, {act}, 1024);
  const OpId r2 = op("/layers.0/Add_2", "Add", 64, 256, {down, n1});
  const OpId n2 = op("/norm/ReduceMean", "ReduceMean", 64, 256, {r2});
  op("/head/MatMul", "MatMul", 8192, 2048, {n2}, 1024);
  return op.Build();
}

TEST(TensorParallelTest, FindsAttentionAndTheMlpAsColumnRowPairs) {
  const Graph g = Layer();
  const auto blocks = FindTensorParallelBlocks(g);
  ASSERT_EQ(blocks.size(), 2u);
  const TensorParallelBlock& attention = blocks[0];
  EXPECT_TRUE(attention.attention);
  EXPECT_EQ(attention.row, *g.FindOp("/layers.0/o/MatMul"));
  EXPECT_EQ(attention.columns.size(), 3u);  // Q, K, V
  EXPECT_EQ(attention.ways, 2);             // the heads, found from the scores' product
  EXPECT_EQ(attention.ops.size(), 12u);     // Q, K, V, Q's weight copy, the 7 between, O
  EXPECT_DOUBLE_EQ(attention.forward_reduce_bytes, 256);
  EXPECT_DOUBLE_EQ(attention.backward_reduce_bytes, 256);  // x's gradient, once for Q, K, V
  EXPECT_EQ(attention.module, "layers.0");
  const TensorParallelBlock& mlp = blocks[1];
  EXPECT_FALSE(mlp.attention);
  EXPECT_EQ(mlp.ways, 32);  // the up projection's width
  EXPECT_EQ(mlp.ops.size(), 4u);
  EXPECT_DOUBLE_EQ(mlp.backward_reduce_bytes, 256);
}

TEST(TensorParallelTest, ATensorAsLargeAsTheShardBreaksTheBlock) {
  const auto blocks = FindTensorParallelBlocks(Layer(/*side=*/256));
  ASSERT_EQ(blocks.size(), 1u);  // the MLP only
  EXPECT_FALSE(blocks[0].attention);
}

// Attention over short sequences, its scores smaller than V: if Q and K are not split (their
// shard meets a norm), V alone is no block, though the scores would pass as a broadcast.
TEST(TensorParallelTest, AProductOfAShardAndAWholeTensorIsNoBlock) {
  Builder op{GraphBuilder("v-only")};
  const OpId x = op("x", "Gather", 0, 256, {}, 4096);
  const OpId scores = op("scores", "ReduceMean", 64, 128, {x});  // whole, smaller than V's shard
  const OpId v = op("v", "MatMul", 1024, 256, {x}, 256);
  const OpId pv = op("pv", "MatMul", 512, 256, {scores, v});
  const OpId o = op("o", "MatMul", 1024, 256, {pv}, 256);
  op("out", "ReduceMean", 64, 256, {o});
  EXPECT_TRUE(FindTensorParallelBlocks(op.Build()).empty());
}

TEST(TensorParallelTest, ATrainingStepHasTheForwardGraphsBlocks) {
  const Graph g = std::move(ExpandTraining(Layer())).value();
  const auto blocks = FindTensorParallelBlocks(g);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].ways, 2);
  EXPECT_EQ(blocks[1].ways, 32);
  std::vector<char> mlp(static_cast<size_t>(g.num_ops()), 0);
  for (OpId o : blocks[1].ops) mlp[o.index()] = 1;
  const double share = SavedShare(g, mlp);
  EXPECT_GT(share, 0);
  EXPECT_LT(share, 1);
}

TEST(TensorParallelTest, AGraphWithoutProductsHasNoBlocks) {
  Builder op{GraphBuilder("conv")};
  op("relu", "Relu", 0, 64, {op("conv", "Conv", 100, 64, {}, 64)});
  EXPECT_TRUE(FindTensorParallelBlocks(op.Build()).empty());
}

}  // namespace
}  // namespace dplace::graph
