#include <gtest/gtest.h>

#include "fixture_tree.h"
#include "sysfs/backends.h"

namespace kgpu {
namespace {

using testing::FixtureCopy;

TEST(RecheckHealth, DisappearingGpuLeavesAndReturnsWhenItReappears) {
  FixtureCopy t("amd-mi210");
  auto first = discover_amd(t.roots());
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->gpus.size(), 2u);

  // The second GPU's sysfs node goes away (fell off the bus / unbound).
  t.remove("sys/bus/pci/drivers/amdgpu/0000:83:00.0");
  auto gone = discover_amd(t.roots());
  ASSERT_TRUE(gone.ok());
  Inventory after = recheck_health(*first, *gone);
  ASSERT_EQ(after.gpus.size(), 2u);  // IDs stay advertised, as unhealthy
  EXPECT_TRUE(after.gpus[0].health.healthy);
  EXPECT_FALSE(after.gpus[1].health.healthy);
  EXPECT_NE(after.gpus[1].health.reason.find("0000:83:00.0"), std::string::npos);

  // It comes back.
  std::filesystem::create_directory_symlink("../../../../devices/pci0000:00/0000:83:00.0",
                                            t.path("sys/bus/pci/drivers/amdgpu/0000:83:00.0"));
  auto back = discover_amd(t.roots());
  ASSERT_TRUE(back.ok());
  Inventory healed = recheck_health(after, *back);
  ASSERT_EQ(healed.gpus.size(), 2u);
  EXPECT_TRUE(healed.gpus[1].health.healthy);
  EXPECT_EQ(healed, recheck_health(*first, *back));
}

TEST(RecheckHealth, FaultReportedByTheRescanIsTaken) {
  FixtureCopy t("amd-mi210");
  auto first = discover_amd(t.roots());
  ASSERT_TRUE(first.ok());
  t.remove("sys/class/kfd/kfd/topology/nodes/2");
  auto faulty = discover_amd(t.roots());
  ASSERT_TRUE(faulty.ok());
  Inventory after = recheck_health(*first, *faulty);
  EXPECT_FALSE(after.gpus[0].health.healthy);
  EXPECT_TRUE(after.gpus[1].health.healthy);
}

TEST(RecheckHealth, NvidiaGpusPassThroughAndNewDevicesAreAppended) {
  Inventory prev;
  Gpu nv;
  nv.uuid = "GPU-1";
  nv.health = {false, "XID 79"};
  prev.gpus.push_back(nv);
  Inventory now;
  Gpu amd;
  amd.vendor = Vendor::Amd;
  amd.uuid = "0000:03:00.0";
  now.gpus.push_back(amd);
  Inventory out = recheck_health(prev, now);
  ASSERT_EQ(out.gpus.size(), 2u);
  EXPECT_EQ(out.gpus[0].health.reason, "XID 79");
  EXPECT_EQ(out.gpus[1].uuid, "0000:03:00.0");
  EXPECT_EQ(out.gpus[1].index, 1);
}

}  // namespace
}  // namespace kgpu
