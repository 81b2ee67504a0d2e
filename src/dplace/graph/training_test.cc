#include "dplace/graph/training.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "dplace/graph/graph_builder.h"

namespace dplace::graph {
namespace {

// a (weights) -> b -> c, and a -> c.
Graph Forward() {
  GraphBuilder b("fwd");
  Op a{.name = "a", .type = "MatMul", .flops = 100, .bytes_accessed = 40, .param_bytes = 400};
  a.time_s = {{"gpu", 0.5}};
  const OpId x = b.AddOp(a, {{8}});
  const OpId y = b.AddOp({.name = "b", .type = "Relu", .flops = 10}, {{8}});
  const OpId z = b.AddOp({.name = "c", .type = "Add", .flops = 5}, {{8}});
  b.AddEdge(x, 0, y);
  b.AddEdge(y, 0, z);
  b.AddEdge(x, 0, z);
  return std::move(b.Build()).value();
}

// What the backward pass keeps, as the importer marks it: x = MatMul (weights) -> r = Relu (keeps
// its output) -> v = Reshape (a view of r) -> m = Mul(v, x) (keeps both) -> s = Add (keeps
// nothing).
TEST(TrainingTest, KeepsWhatTheBackwardPassNeeds) {
  GraphBuilder b("keep");
  const OpId x =
      b.AddOp({.name = "x", .type = "MatMul", .param_bytes = 400, .saves_output = false}, {{8}});
  const OpId r = b.AddOp({.name = "r", .type = "Relu"}, {{16}});
  const OpId v = b.AddOp({.name = "v", .type = "Reshape", .saves_output = false},
                         {{.bytes = 16, .view = true, .view_of_op = r}});
  const OpId m = b.AddOp({.name = "m", .type = "Mul", .saves_output = false}, {{32}});
  const OpId s = b.AddOp({.name = "s", .type = "Add", .saves_output = false}, {{64}});
  b.AddEdge(x, 0, r, /*saved=*/false);
  b.AddEdge(r, 0, v, false);
  b.AddEdge(v, 0, m, true);
  b.AddEdge(x, 0, m, true);
  b.AddEdge(m, 0, s, false);
  const Graph g = std::move(b.Build()).value();
  // Kept: x's output (8) and r's (16; v is r's storage, counted once); not m's or s's.
  EXPECT_DOUBLE_EQ(SavedActivationBytes(g), 8 + 16);
  auto t = ExpandTraining(g);
  ASSERT_TRUE(t.ok());
  auto feeds = [&](const char* from, const char* to) {
    const auto preds = t->Predecessors(*t->FindOp(to));
    return std::count(preds.begin(), preds.end(), *t->FindOp(from)) > 0;
  };
  EXPECT_TRUE(feeds("r", "r/grad"));   // its own output, kept
  EXPECT_FALSE(feeds("x", "r/grad"));  // relu's input, not kept
  EXPECT_TRUE(feeds("v", "m/grad"));
  EXPECT_TRUE(feeds("x", "m/grad"));
  EXPECT_FALSE(feeds("m", "m/grad"));
  EXPECT_FALSE(feeds("m", "s/grad"));
  EXPECT_TRUE(feeds("s", "s/grad"));  // the last op: orders its backward after it
  EXPECT_TRUE(t->tensor(t->FirstOutput(*t->FindOp("v"))).view);
}

TEST(TrainingTest, AddsBackwardAndUpdateOpsWithReversedGradients) {
  auto t = ExpandTraining(Forward());
  ASSERT_TRUE(t.ok()) << t.status().message();
  const Graph& g = *t;
  ASSERT_EQ(g.num_ops(), 3 + 3 + 1);  // forward, backward, one update (only a has parameters)
  const OpId a = *g.FindOp("a"), a_grad = *g.FindOp("a/grad"), b_grad = *g.FindOp("b/grad");
  const OpId c_grad = *g.FindOp("c/grad"), update = *g.FindOp("a/update");
  EXPECT_EQ(g.op(a_grad).kind, OpKind::kBackward);
  EXPECT_EQ(g.op(update).kind, OpKind::kUpdate);
  EXPECT_DOUBLE_EQ(g.op(a_grad).flops, 200);  // 2x: it has parameters
  EXPECT_DOUBLE_EQ(g.op(b_grad).flops, 10);   // 1x otherwise
  EXPECT_DOUBLE_EQ(*g.op(a_grad).MeasuredTime("gpu"), 1.0);
  EXPECT_DOUBLE_EQ(g.op(update).param_bytes, 800);  // Adam: 2x the parameters
  EXPECT_DOUBLE_EQ(g.op(a_grad).param_bytes, 400);  // the weight gradient
  // Gradients flow c/grad -> b/grad -> a/grad and c/grad -> a/grad; a's output is kept for b/grad,
  // c/grad and a/grad.
  auto has = [&](OpId from, OpId to) {
    for (OpId s : g.Successors(from)) {
      if (s == to) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(c_grad, b_grad));
  EXPECT_TRUE(has(c_grad, a_grad));
  EXPECT_TRUE(has(b_grad, a_grad));
  EXPECT_TRUE(has(a, b_grad));
  EXPECT_TRUE(has(a, c_grad));
  EXPECT_TRUE(has(a, a_grad));
  EXPECT_TRUE(has(a_grad, update));
  EXPECT_FALSE(has(a_grad, b_grad));
  // The last op of the step is the update; the first backward op is c's.
  EXPECT_EQ(g.TopologicalOrder().back(), update);
  // Co-located by default: a, a/grad, a/update share a group.
  EXPECT_NE(g.op(a).colocation, kNoGroup);
  EXPECT_EQ(g.op(a_grad).colocation, g.op(a).colocation);
  EXPECT_EQ(g.op(update).colocation, g.op(a).colocation);
}

TEST(TrainingTest, FreeGradientsHaveNoGroups) {
  auto t = ExpandTraining(Forward(), {.colocate = false});
  ASSERT_TRUE(t.ok());
  for (const Op& op : t->ops()) EXPECT_EQ(op.colocation, kNoGroup) << op.name;
}

TEST(TrainingTest, ATrainingGraphIsNotExpandedTwice) {
  auto once = ExpandTraining(Forward());
  ASSERT_TRUE(once.ok());
  auto twice = ExpandTraining(*once);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("already has backward ops"), std::string::npos);
}

TEST(TrainingTest, AttentionsCoreRunsFromTheScoresProductToTheDropoutAfterItsSoftmax) {
  // q, k -> matmul (scores) -> div -> add (a mask) -> Softmax -> dropout -> matmul (with v) -> out.
  GraphBuilder b("attention");
  auto op = [&](const std::string& name, const std::string& type, double bytes) {
    return b.AddOp({.name = name, .type = type}, {{bytes, -1}});
  };
  const OpId q = op("q", "Linear", 4), k = op("k", "Linear", 4), v = op("v", "Linear", 4);
  const OpId scores = op("scores", "MatMul", 16), scale = op("scale", "Div", 16);
  const OpId mask = op("mask", "Constant", 8), masked = op("masked", "Add", 16);
  const OpId probs = op("probs", "Softmax", 16), drop = op("drop", "Dropout", 16);
  const OpId out = op("out", "MatMul", 4), proj = op("proj", "Linear", 4);
  b.AddEdge(q, 0, scores);
  b.AddEdge(k, 0, scores);
  b.AddEdge(scores, 0, scale);
  b.AddEdge(scale, 0, masked);
  b.AddEdge(mask, 0, masked);
  b.AddEdge(masked, 0, probs);
  b.AddEdge(probs, 0, drop);
  b.AddEdge(drop, 0, out);
  b.AddEdge(v, 0, out);
  b.AddEdge(out, 0, proj);
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::vector<char> core = AttentionCoreOps(*g);
  std::string marked;
  for (OpId o : g->op_ids()) marked += core[o.index()] ? g->op(o).name + " " : "";
  EXPECT_EQ(marked, "scores scale masked probs drop ");
}

}  // namespace
}  // namespace dplace::graph
