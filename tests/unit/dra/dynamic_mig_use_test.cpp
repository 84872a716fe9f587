// `kgpu devices -o dra --live`'s dynamic MIG lines (issue 42, item 6): what each claim made, what is
// being made, and how many placements of each dynamic GPU no instance overlaps.
#include "dra/claims/dynamic_mig_use.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "unit/dra/h100_mig_facts.h"

namespace kgpu::dra {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

MigInstanceRecord record(const std::string& claim, const std::string& device, const std::string& parent,
                         unsigned profile, unsigned start, unsigned size, std::optional<unsigned> gi) {
  MigInstanceRecord r;
  r.claim_uid = claim;
  r.device = device;
  r.placement = {parent, profile, start, size};
  if (gi) r.made = MigInstanceMade{*gi, 0, "MIG-" + claim, {}};
  return r;
}

TEST(DynamicMigUse, SaysWhatEachClaimMadeAndCountsThePlacementsLeft) {
  const DynamicMigLayout gpu0 = dynamic_mig_layout(testing::h100_mig_facts(0));
  const DynamicMigLayout gpu1 = dynamic_mig_layout(testing::h100_mig_facts(1));
  const std::vector<MigInstanceRecord> records = {
      record("c1", "gpu-0-mig-3g40gb-9-4", gpu0.gpu_uuid, 9, 4, 4, 2),
      record("c2", "gpu-0-mig-1g10gb-19-0", gpu0.gpu_uuid, 19, 0, 1, std::nullopt),
  };
  const auto lines = dynamic_mig_use({gpu0, gpu1}, records);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "gpu-0-mig-3g40gb-9-4: made for claim c1: MIG-c1, GPU instance 2, compute instance 0, "
                      "memory slices 4-7 of " + gpu0.gpu_uuid);
  EXPECT_EQ(lines[1], "gpu-0-mig-1g10gb-19-0: being made for claim c2 (its intent is recorded, no instance yet), "
                      "memory slice 0 of " + gpu0.gpu_uuid);
  // Slices 0 and 4-7 taken: of H100's 18 placements, those within 1-3 are left: the 1g.10gb at 1,
  // 2, 3, the 1g.20gb at 2 (1g.20gb spans 2 slices: starts 0, 2, 4, 6), the 2g.20gb at 2.
  size_t expected_free = 0;
  for (const auto& d : gpu0.devices)
    if (!d.profile.empty() && d.placement_start >= 1 && d.placement_start + d.placement_size <= 4) ++expected_free;
  EXPECT_EQ(expected_free, 5u);
  EXPECT_EQ(lines[2], gpu0.gpu_uuid + " (gpu-0-counter-set): 5 of 18 placements free, 2 instances made by kgpu; "
                                      "the full GPU is not (it consumes every slice)");
  EXPECT_EQ(lines[3], gpu1.gpu_uuid + " (gpu-1-counter-set): 18 of 18 placements free, 0 instances made by kgpu; "
                                      "the full GPU is free");
  EXPECT_EQ(made_mig_uuids(records), std::set<std::string>{"MIG-c1"});
}

TEST(DynamicMigUse, AnInstanceOnAGpuNoLongerDynamicIsSaid) {
  const DynamicMigLayout gpu0 = dynamic_mig_layout(testing::h100_mig_facts(0));
  const auto lines = dynamic_mig_use({}, {record("c1", "gpu-0-mig-3g40gb-9-4", gpu0.gpu_uuid, 9, 4, 4, 2)});
  EXPECT_THAT(lines, Contains(HasSubstr("is not published for dynamic MIG now; the instance stays until the "
                                        "kubelet unprepares claim c1")));
}

}  // namespace
}  // namespace kgpu::dra
