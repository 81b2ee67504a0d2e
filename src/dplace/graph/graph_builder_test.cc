#include "dplace/graph/graph_builder.h"

#include <gtest/gtest.h>

#include <limits>

#include "dplace/graph/synthetic.h"

namespace dplace::graph {
namespace {

Op Named(const std::string& name, double gpu_s = 1) {
  Op op;
  op.name = name;
  op.time_s = {{"gpu", gpu_s}};
  return op;
}

TEST(GraphBuilderTest, BuildsCsrAndTopologicalOrder) {
  GraphBuilder b("toy");
  const OpId a = b.AddOp(Named("a"), {{100, -1}, {200, -1}});
  const OpId c = b.AddOp(Named("c"));
  const OpId d = b.AddOp(Named("d"));
  b.AddEdge(a, 0, d);
  b.AddEdge(a, 1, c);
  b.AddEdge(a, 1, d);
  b.AddEdge(a, 1, d);  // duplicate input: one tensor, counted once
  b.AddEdge(c, 0, d);
  auto g = b.Build();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->num_ops(), 3);
  EXPECT_EQ(g->num_tensors(), 4);
  EXPECT_EQ(g->Consumers(graph::TensorId(1)).size(), 2u);  // a:1 -> c, d
  EXPECT_EQ(g->Inputs(d).size(), 3u);                      // a:0, a:1, c:0
  EXPECT_EQ(g->Predecessors(d).size(), 2u);
  EXPECT_EQ(g->TopologicalOrder(), (std::vector<OpId>{a, c, d}));
  EXPECT_EQ(g->FindOp("c"), c);
  EXPECT_FALSE(g->FindOp("zz").has_value());
  EXPECT_DOUBLE_EQ(g->TotalOutputBytes(), 300);
}

TEST(GraphBuilderTest, CycleIsReportedWithItsOps) {
  GraphBuilder b("cyc");
  const OpId x = b.AddOp(Named("x"));
  const OpId y = b.AddOp(Named("y"));
  const OpId z = b.AddOp(Named("z"));
  const OpId w = b.AddOp(Named("w"));
  b.AddEdge(w, 0, x);
  b.AddEdge(x, 0, y);
  b.AddEdge(y, 0, z);
  b.AddEdge(z, 0, x);
  auto g = b.Build();
  ASSERT_FALSE(g.ok());
  const std::string& m = g.status().message();
  EXPECT_NE(m.find("cycle"), std::string::npos) << m;
  EXPECT_TRUE(m.find("x -> y -> z -> x") != std::string::npos ||
              m.find("y -> z -> x -> y") != std::string::npos ||
              m.find("z -> x -> y -> z") != std::string::npos)
      << m;
  EXPECT_EQ(m.find('w'), std::string::npos) << "w is not on the cycle: " << m;
}

TEST(GraphBuilderTest, RejectsBadCostsNamesAndEdges) {
  {
    GraphBuilder b("g");
    b.AddOp(Named("a", -1));
    EXPECT_NE(b.Build().status().message().find("negative"), std::string::npos);
  }
  {
    GraphBuilder b("g");
    Op op = Named("a");
    op.flops = std::numeric_limits<double>::quiet_NaN();
    b.AddOp(op);
    EXPECT_NE(b.Build().status().message().find("flops is NaN"), std::string::npos);
  }
  {
    GraphBuilder b("g");
    b.AddOp(Named("a", std::numeric_limits<double>::infinity()));
    EXPECT_NE(b.Build().status().message().find("infinite"), std::string::npos);
  }
  {
    GraphBuilder b("g");
    b.AddOp(Named("a"));
    b.AddOp(Named("a"));
    EXPECT_EQ(b.Build().status().message(), "duplicate op name 'a'");
  }
  {
    GraphBuilder b("g");
    const OpId a = b.AddOp(Named("a"));
    const OpId c = b.AddOp(Named("c"));
    b.AddEdge(a, 3, c);
    EXPECT_NE(b.Build().status().message().find("has no output 3"), std::string::npos);
  }
  {
    GraphBuilder b("g");
    EXPECT_EQ(b.Build().status().code(), StatusCode::kInvalidInput);
  }
}

TEST(GraphBuilderTest, GroupsCollectTheirMembers) {
  GraphBuilder b("g");
  Op a = Named("a");
  a.colocation = b.Group("L1");
  Op c = Named("c");
  c.colocation = b.Group("L1");
  b.AddOp(a);
  b.AddOp(Named("x"));
  b.AddOp(c);
  auto g = b.Build();
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->groups().size(), 1u);
  EXPECT_EQ(g->GroupMembers(graph::GroupId(0)).size(), 2u);
}

TEST(SyntheticTest, SameSeedSameGraph) {
  Graph a = MakeLayeredGraph({.num_ops = 200, .width = 8, .seed = 3});
  Graph b = MakeLayeredGraph({.num_ops = 200, .width = 8, .seed = 3});
  ASSERT_EQ(a.edges().size(), b.edges().size());
  EXPECT_EQ(a.op(graph::OpId(150)).time_s, b.op(graph::OpId(150)).time_s);
  EXPECT_EQ(a.TopologicalOrder().size(), 200u);
}

}  // namespace
}  // namespace dplace::graph
