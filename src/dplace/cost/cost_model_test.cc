#include "dplace/cost/cost_model.h"

#include <gtest/gtest.h>

namespace dplace::cost {
namespace {

TEST(CostModelTest, MeasuredTimeWinsOverRoofline) {
  graph::Op op;
  op.flops = 2e9;
  op.bytes_accessed = 3e7;
  op.time_s = {{"gpu", 0.5}};
  RooflineCostModel model;
  hw::Device gpu{
      .name = "g", .kind = "gpu", .peak_flops = 1e12, .memory_bandwidth_bytes_per_s = 1e9};
  hw::Device cpu{
      .name = "c", .kind = "cpu", .peak_flops = 1e11, .memory_bandwidth_bytes_per_s = 1e9};
  EXPECT_DOUBLE_EQ(model.OpTime(op, gpu), 0.5);
  // Roofline on cpu: max(2e9 / 1e11 = 0.02, 3e7 / 1e9 = 0.03) = 0.03.
  EXPECT_DOUBLE_EQ(model.OpTime(op, cpu), 0.03);
}

TEST(CostModelTest, TransferIsLatencyPlusBytesOverBandwidth) {
  graph::Tensor t{.bytes = 1e9};
  EXPECT_DOUBLE_EQ(TransferTime(t, {.bandwidth_bytes_per_s = 1e10, .latency_s = 1e-5}), 0.1 + 1e-5);
  t.transfer_time_s = 2;
  EXPECT_DOUBLE_EQ(TransferTime(t, {.bandwidth_bytes_per_s = 1e10, .latency_s = 1e-5}), 2);
}

}  // namespace
}  // namespace dplace::cost
