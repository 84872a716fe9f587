// MigInstances against the fake NVML: a dynamic MIG device made at a placement and unmade again,
// NVML's refusals passed on with their codes, and a missing entry point answered, not crashed on.
#include "nvml/mig_instances.h"

#include <gtest/gtest.h>

#include "unit/nvml/fake_fleet.h"

namespace kgpu {
namespace {

using testing::FakeNode;
using testing::fleet_path;

// hgx-h100: eight H100 80GB; turn MIG on for GPU 0 (Hopper: no reset needed) and make instances.
class MigInstancesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(node_.ready()) << node_.problem();
    ASSERT_TRUE(node_.nvml().init());
    auto bound = MigInstances::bind(node_.shared());
    ASSERT_TRUE(bound) << bound.error().message;
    mig_ = *bound;
    auto gpu = node_.nvml().device_by_index(0);
    ASSERT_TRUE(gpu);
    gpu_ = *gpu;
  }
  void TearDown() override { node_.nvml().shutdown(); }

  FakeNode node_{fleet_path("hgx-h100.yaml")};
  std::shared_ptr<const MigInstances> mig_;
  nvmlDevice_t gpu_ = nullptr;
};

TEST_F(MigInstancesTest, CreatesAtThePlacementAndDestroys) {
  EXPECT_EQ(mig_->missing(), "");
  auto placements = mig_->possible_placements(gpu_, 9);  // 3g.40gb
  ASSERT_TRUE(placements) << placements.error().message;
  ASSERT_EQ(placements->size(), 2u);
  EXPECT_EQ((*placements)[1].start, 4u);
  // MIG off: NVML says INVALID_STATE, and the error names the call.
  auto refused = mig_->create(gpu_, 9, (*placements)[1]);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.nvml_code(), NVML_ERROR_INVALID_STATE);
  EXPECT_NE(refused.error().message.find("nvmlDeviceCreateGpuInstanceWithPlacement"), std::string::npos);

  auto activation = mig_->set_mig_mode(gpu_, true);
  ASSERT_TRUE(activation) << activation.error().message;
  EXPECT_EQ(*activation, NVML_SUCCESS);
  auto made = mig_->create(gpu_, 9, (*placements)[1]);
  ASSERT_TRUE(made) << made.error().message;
  EXPECT_EQ(made->gpu_instance_id, 2u);  // a 3g at slice 4
  EXPECT_EQ(made->compute_instance_id, 0u);
  EXPECT_EQ(made->mig_uuid.rfind("MIG-", 0), 0u);
  auto found = node_.nvml().device_by_uuid(made->mig_uuid);
  EXPECT_TRUE(found) << "the MIG device is there by its uuid";

  // The same placement again: the driver's INSUFFICIENT_RESOURCES, nothing half-made left.
  auto again = mig_->create(gpu_, 9, (*placements)[1]);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.nvml_code(), NVML_ERROR_INSUFFICIENT_RESOURCES);

  // MIG is never switched off under an instance.
  EXPECT_EQ(mig_->set_mig_mode(gpu_, false).nvml_code(), NVML_ERROR_IN_USE);
  ASSERT_TRUE(mig_->destroy(gpu_, made->gpu_instance_id, made->compute_instance_id));
  EXPECT_FALSE(node_.nvml().device_by_uuid(made->mig_uuid));
  // Already gone counts as destroyed (a retried unprepare, a restart's cleanup).
  EXPECT_TRUE(mig_->destroy(gpu_, made->gpu_instance_id, made->compute_instance_id));
  EXPECT_TRUE(mig_->set_mig_mode(gpu_, false));
}

TEST_F(MigInstancesTest, ThreeTwoOneOneOnOneH100AndNoFifth) {
  ASSERT_TRUE(mig_->set_mig_mode(gpu_, true));
  // (profile id, start, size): 3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb.
  const unsigned plan[][3] = {{9, 4, 4}, {14, 0, 2}, {19, 2, 1}, {19, 3, 1}};
  for (const auto& p : plan) {
    auto made = mig_->create(gpu_, p[0], {p[1], p[2]});
    EXPECT_TRUE(made) << p[0] << "@" << p[1] << ": " << made.error().message;
  }
  auto fifth = mig_->create(gpu_, 19, {6, 1});
  ASSERT_FALSE(fifth);
  EXPECT_EQ(fifth.nvml_code(), NVML_ERROR_INSUFFICIENT_RESOURCES);
}

}  // namespace
}  // namespace kgpu
