#include "dplace/hw/cluster.h"

#include <gtest/gtest.h>

namespace dplace::hw {
namespace {

TEST(ClusterTest, LinksResolveToAMatrix) {
  ClusterBuilder b("c");
  const DeviceId g0 = b.AddDevice({.name = "gpu0", .kind = "gpu"});
  const DeviceId g1 = b.AddDevice({.name = "gpu1", .kind = "gpu"});
  const DeviceId g2 = b.AddDevice({.name = "gpu2", .kind = "gpu"});
  const DeviceId c0 = b.AddDevice({.name = "cpu0", .kind = "cpu"});
  b.SetDefaultLink({.bandwidth_bytes_per_s = 1e9, .latency_s = 1e-5});
  b.SetGroupLink({g0, g1, g2}, {.bandwidth_bytes_per_s = 5e10, .latency_s = 1e-6});
  b.SetLink(g0, g2, {.bandwidth_bytes_per_s = 1e11, .latency_s = 1e-6});
  auto c = b.Build();
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->LinkBetween(g1, g0).bandwidth_bytes_per_s, 5e10);
  EXPECT_DOUBLE_EQ(c->LinkBetween(g2, g0).bandwidth_bytes_per_s, 1e11);
  EXPECT_DOUBLE_EQ(c->LinkBetween(c0, g0).bandwidth_bytes_per_s, 1e9);
  EXPECT_EQ(c->kinds(), (std::vector<std::string>{"gpu", "cpu"}));
  EXPECT_EQ(c->KindIndex(c0), 1);
  EXPECT_EQ(c->FindDevice("gpu2"), g2);
}

TEST(ClusterTest, AChunkedClusterRepeatsItsDevicesWithAShareOfTheirMemory) {
  ClusterBuilder b("c");
  const DeviceId g0 = b.AddDevice({.name = "gpu0", .kind = "gpu", .memory_bytes = 8});
  const DeviceId c0 = b.AddDevice({.name = "cpu0", .kind = "cpu"});
  b.SetLink(g0, c0, {.bandwidth_bytes_per_s = 1e9, .latency_s = 1e-5});
  auto c = b.Build();
  ASSERT_TRUE(c.ok());
  const Cluster chunked = c->Chunked(2);
  ASSERT_EQ(chunked.num_devices(), 4);
  EXPECT_EQ(chunked.device(DeviceId(2)).name, "gpu0#1");
  EXPECT_DOUBLE_EQ(chunked.device(DeviceId(2)).memory_bytes, 4);
  EXPECT_EQ(chunked.device(DeviceId(3)).memory_bytes, kUnlimited);
  EXPECT_EQ(chunked.KindIndex(DeviceId(3)), c->KindIndex(c0));
  // Copies of two devices: their link; of one device: free.
  EXPECT_DOUBLE_EQ(chunked.LinkBetween(DeviceId(2), DeviceId(1)).latency_s, 1e-5);
  EXPECT_EQ(chunked.LinkBetween(DeviceId(0), DeviceId(2)).bandwidth_bytes_per_s, kUnlimited);
  EXPECT_DOUBLE_EQ(chunked.LinkBetween(DeviceId(0), DeviceId(2)).latency_s, 0);
}

TEST(ClusterTest, AGroupedClusterRunsEachGroupAsOneDeviceOfItsReplicas) {
  ClusterBuilder b("c");
  for (int i = 0; i < 4; ++i) {
    b.AddDevice({.name = "gpu" + std::to_string(i), .kind = "gpu", .memory_bytes = 8});
  }
  const DeviceId c0 = b.AddDevice({.name = "cpu0", .kind = "cpu"});
  b.SetDefaultLink({.bandwidth_bytes_per_s = 1e9, .latency_s = 1e-5});
  b.SetLink(DeviceId(0), DeviceId(1), {.bandwidth_bytes_per_s = 1e11, .latency_s = 1e-6});
  auto c = b.Build();
  ASSERT_TRUE(c.ok());
  auto grouped = c->Grouped({{DeviceId(0), DeviceId(1)}, {DeviceId(2), DeviceId(3)}, {c0}});
  ASSERT_TRUE(grouped.ok()) << grouped.status().message();
  ASSERT_EQ(grouped->num_devices(), 3);
  EXPECT_EQ(grouped->device(DeviceId(0)).name, "gpu0+gpu1");
  EXPECT_EQ(grouped->device(DeviceId(0)).replicas, 2);
  EXPECT_DOUBLE_EQ(grouped->device(DeviceId(0)).replica_link.bandwidth_bytes_per_s, 1e11);
  EXPECT_DOUBLE_EQ(grouped->device(DeviceId(1)).replica_link.bandwidth_bytes_per_s, 1e9);
  EXPECT_EQ(grouped->device(DeviceId(2)).replicas, 1);
  EXPECT_EQ(grouped->KindIndex(DeviceId(2)), c->KindIndex(c0));
  EXPECT_DOUBLE_EQ(grouped->LinkBetween(DeviceId(0), DeviceId(1)).latency_s, 1e-5);
  // Groups of mixed kinds, or that share a device, are refused.
  EXPECT_FALSE(c->Grouped({{DeviceId(0), c0}}).ok());
  EXPECT_FALSE(c->Grouped({{DeviceId(0), DeviceId(1)}, {DeviceId(1)}}).ok());
  EXPECT_FALSE(c->Grouped({{}}).ok());
}

TEST(ClusterTest, RejectsDuplicateNamesAndBadLinks) {
  {
    ClusterBuilder b("c");
    b.AddDevice({.name = "a", .kind = "gpu"});
    b.AddDevice({.name = "a", .kind = "gpu"});
    EXPECT_EQ(b.Build().status().message(), "duplicate device name 'a'");
  }
  {
    ClusterBuilder b("c");
    const DeviceId a = b.AddDevice({.name = "a", .kind = "gpu"});
    const DeviceId x = b.AddDevice({.name = "x", .kind = "gpu"});
    b.SetLink(a, x, {.bandwidth_bytes_per_s = 0, .latency_s = 0});
    EXPECT_FALSE(b.Build().ok());
  }
  EXPECT_FALSE(ClusterBuilder("empty").Build().ok());
}

}  // namespace
}  // namespace dplace::hw
