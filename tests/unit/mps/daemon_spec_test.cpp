// Pure parts of MPS: daemon specs (paths, default limits) and the plugin's readiness gate.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <sys/file.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/unique_fd.h"
#include "mps/daemon_spec.h"
#include "mps/readiness.h"
#include "plan/plan.h"
#include "unit/plan/inventories.h"

namespace kgpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace kgpu::test;

Config mps_config(const std::string& root, int replicas) {
  Config c;
  c.mps_root = root;
  c.mps = ReplicatedResources{};
  c.mps->rename_by_default = true;
  c.mps->resources = {replicated("nvidia.com/gpu", replicas)};
  return c;
}

TEST(MpsDaemonSpecs, OnePerMpsResourceWithDefaultLimits) {
  const Config c = mps_config("/run/nvidia/mps", 4);
  Gpu big = a100(3);
  big.memory_bytes = 80 * kGiB;
  const auto inv = inventory_of({a100(0), big});
  const auto specs = mps_daemon_specs(c, inv, plan(c, inv));
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].resource, "nvidia.com/gpu.shared");
  EXPECT_EQ(specs[0].pipe_dir, "/run/nvidia/mps/nvidia.com/gpu.shared/pipe");
  EXPECT_EQ(specs[0].log_dir, "/run/nvidia/mps/nvidia.com/gpu.shared/log");
  EXPECT_EQ(specs[0].ready_marker, "/run/nvidia/mps/nvidia.com/gpu.shared/.ready");
  EXPECT_THAT(specs[0].commands, ElementsAre("set_default_device_pinned_mem_limit 0 10240M",
                                             "set_default_device_pinned_mem_limit 3 20480M",
                                             "set_default_active_thread_percentage 25"));
}

TEST(MpsDaemonSpecs, NoneWithoutMps) {
  Config c;
  c.time_slicing.resources = {replicated("nvidia.com/gpu", 4)};
  const auto inv = inventory_of({a100(0)});
  EXPECT_TRUE(mps_daemon_specs(c, inv, plan(c, inv)).empty());
}

TEST(WithholdUnreadyMps, RemovesOnlyUnreadyMpsResources) {
  const auto inv = inventory_of({a100(0)});
  Config plain = mps_config("/x", 2);
  ResourcePlan p = plan(plain, inv);
  Resource other;
  other.name = "amd.com/gpu";
  other.vendor = Vendor::Amd;
  p.resources.push_back(other);
  const auto withheld = withhold_unready_mps(p, [](const Resource&) { return false; });
  ASSERT_EQ(withheld.resources.size(), 1u);
  EXPECT_EQ(withheld.resources[0].name, "amd.com/gpu");
  ASSERT_EQ(withheld.problems.size(), 1u);
  EXPECT_THAT(withheld.problems[0], HasSubstr("nvidia.com/gpu.shared is withheld"));
  EXPECT_EQ(withhold_unready_mps(p, [](const Resource&) { return true; }), p);
}

TEST(MpsReady, FollowsTheMarkerFile) {
  const auto root = std::filesystem::path(::testing::TempDir()) / "kgpu-mps-ready";
  std::filesystem::remove_all(root);
  const Config c = mps_config(root.string(), 2);
  const auto p = plan(c, inventory_of({a100(0)}));
  const Resource& r = p.resources[0];
  EXPECT_FALSE(mps_ready(c, r));
  std::filesystem::create_directories(root / "nvidia.com/gpu.shared");
  const auto marker = root / "nvidia.com/gpu.shared/.ready";
  std::ofstream(marker) << "1\n";
  EXPECT_FALSE(mps_ready(c, r)) << "a marker no live supervisor locks (one killed with SIGKILL) is stale";
  {
    UniqueFd held(::open(marker.c_str(), O_RDONLY | O_CLOEXEC));  // what the live supervisor holds
    ASSERT_EQ(::flock(held.get(), LOCK_EX), 0);
    EXPECT_TRUE(mps_ready(c, r));
  }
  EXPECT_FALSE(mps_ready(c, r));
  Resource unshared = r;
  unshared.sharing = SharingKind::None;
  std::filesystem::remove_all(root);
  EXPECT_TRUE(mps_ready(c, unshared));  // only MPS resources wait for a daemon
  EXPECT_FALSE(mps_ready(c, r));
}

}  // namespace
}  // namespace kgpu
