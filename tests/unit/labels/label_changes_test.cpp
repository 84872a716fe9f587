// changed_label_keys: what the labels daemon's log names after a rewrite.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "labels/label_changes.h"

namespace kgpu {
namespace {

using ::testing::ElementsAre;

TEST(ChangedLabelKeys, AddedRemovedAndChangedSorted) {
  const Labels before = {{"nvidia.com/gpu.count", "8"}, {"nvidia.com/mig.capable", "true"}, {"nvidia.com/gpu.present", "true"}};
  const Labels after = {{"nvidia.com/gpu.count", "7"}, {"nvidia.com/gpu.present", "true"}, {"nvidia.com/gpu.replicas", "1"}};
  EXPECT_THAT(changed_label_keys(before, after),
              ElementsAre("nvidia.com/gpu.count", "nvidia.com/gpu.replicas", "nvidia.com/mig.capable"));
}

TEST(ChangedLabelKeys, TheTimestampAloneIsNoChange) {
  EXPECT_TRUE(changed_label_keys({{"nvidia.com/gfd.timestamp", "1"}, {"a", "b"}}, {{"nvidia.com/gfd.timestamp", "2"}, {"a", "b"}})
                  .empty());
}

}  // namespace
}  // namespace kgpu
