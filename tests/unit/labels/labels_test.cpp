// node_labels on hand-built inventories and plans, one label family at a time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "labels/labels.h"
#include "labels/vendor_labels.h"

namespace kgpu {
namespace {

using ::testing::Contains;
using ::testing::Key;
using ::testing::Not;
using ::testing::Pair;

constexpr uint64_t kMiB = 1024 * 1024;

Gpu a100(int index) {
  Gpu g;
  g.index = index;
  g.uuid = "GPU-a100-" + std::to_string(index);
  g.product = "NVIDIA A100-SXM4-40GB";
  g.memory_bytes = 40960 * kMiB;
  g.pci_bus_id = "00000000:0" + std::to_string(index) + ":00.0";
  g.cc_major = 8;
  g.cc_minor = 0;
  g.mig_capable = true;
  return g;
}

MigDevice mig(const std::string& profile, int index, uint64_t mib, int sms) {
  MigDevice m;
  m.uuid = "MIG-" + profile + "-" + std::to_string(index);
  m.index = index;
  m.profile = profile;
  m.memory_bytes = mib * kMiB;
  m.multiprocessors = sms;
  m.gpu_instance_slices = 1;
  m.compute_instance_slices = 1;
  m.copy_engines = 1;
  m.jpeg_engines = profile.ends_with("+me") ? 1 : 0;
  return m;
}

Inventory node(std::vector<Gpu> gpus) {
  Inventory inv;
  inv.driver_version = "550.54.15";
  inv.cuda_driver_version = 12040;
  inv.gpus = std::move(gpus);
  return inv;
}

// A plan serving every full GPU (and, with `replicas` > 1, replicas of them) under `name`.
ResourcePlan full_gpu_plan(const Inventory& inv, const std::string& name = "nvidia.com/gpu", int replicas = 1,
                           SharingKind sharing = SharingKind::None) {
  Resource r;
  r.name = name;
  r.replicas = replicas;
  r.sharing = sharing;
  for (size_t i = 0; i < inv.gpus.size(); ++i)
    for (int k = 0; k < replicas; ++k) {
      AdvertisedDevice d;
      d.id = inv.gpus[i].uuid + (replicas > 1 ? "::" + std::to_string(k) : "");
      d.gpu = i;
      d.replica = replicas > 1 ? k : -1;
      r.devices.push_back(d);
    }
  return {{r}, {}};
}

LabelContext context() {
  LabelContext c;
  c.machine_type = "DGX A100";
  c.timestamp = 1724632719;
  return c;
}

class LabelsTest : public ::testing::Test {
 protected:
  Labels run(const Inventory& inv, const ResourcePlan& plan) { return node_labels(config, inv, plan, ctx); }
  Labels run(const Inventory& inv) { return run(inv, full_gpu_plan(inv)); }
  Config config;
  LabelContext ctx = context();
};

TEST_F(LabelsTest, NodeWithoutGpusGetsGfdNullManagerLabels) {
  const Labels got = run(Inventory{}, ResourcePlan{});
  EXPECT_EQ(got, (Labels{{"nvidia.com/gfd.timestamp", "1724632719"}, {"nvidia.com/vgpu.present", "false"}}));
}

TEST_F(LabelsTest, TimestampOmittedOnRequest) {
  config.gfd_no_timestamp = true;
  EXPECT_THAT(run(node({a100(0)})), Not(Contains(Key("nvidia.com/gfd.timestamp"))));
  config.gfd_no_timestamp = false;
  ctx.timestamp.reset();
  EXPECT_THAT(run(node({a100(0)})), Not(Contains(Key("nvidia.com/gfd.timestamp"))));
}

TEST_F(LabelsTest, DriverAndCudaVersionsInBothSpellings) {
  const Labels got = run(node({a100(0)}));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver.major", "550")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver.minor", "54")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver.rev", "15")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver-version.major", "550")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver-version.minor", "54")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver-version.revision", "15")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver-version.full", "550.54.15")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.runtime.major", "12")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.runtime.minor", "4")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.runtime-version.full", "12.4")));
}

TEST_F(LabelsTest, TwoPartDriverVersionHasEmptyRevision) {
  auto inv = node({a100(0)});
  inv.driver_version = "535.104";
  inv.cuda_driver_version = 11080;
  const Labels got = run(inv);
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver.rev", "")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver-version.revision", "")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.runtime-version.full", "11.8")));
}

TEST_F(LabelsTest, OddDriverVersionKeepsOnlyTheFullString) {
  auto inv = node({a100(0)});
  inv.driver_version = "r550 beta+1";
  const Labels got = run(inv);
  EXPECT_THAT(got, Contains(Pair("nvidia.com/cuda.driver-version.full", "r550-beta1")));
  EXPECT_THAT(got, Not(Contains(Key("nvidia.com/cuda.driver.major"))));
}

TEST_F(LabelsTest, MachineTypeSanitisedOrUnknown) {
  EXPECT_THAT(run(node({a100(0)})), Contains(Pair("nvidia.com/gpu.machine", "DGX-A100")));
  ctx.machine_type = "";
  EXPECT_THAT(run(node({a100(0)})), Contains(Pair("nvidia.com/gpu.machine", "unknown")));
  ctx.machine_type = "(none)";
  EXPECT_THAT(run(node({a100(0)})), Contains(Pair("nvidia.com/gpu.machine", "none")));
}

TEST_F(LabelsTest, FullGpuResourceLabels) {
  const Labels got = run(node({a100(0), a100(1)}));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.count", "2")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.replicas", "1")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.sharing-strategy", "none")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.memory", "40960")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.family", "ampere")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.compute.major", "8")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.compute.minor", "0")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig.capable", "true")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mps.capable", "false")));
  EXPECT_THAT(got, Not(Contains(Key("nvidia.com/mig.strategy"))));
}

TEST_F(LabelsTest, UnknownMemoryAndComputeCapabilityAreOmitted) {
  auto g = a100(0);
  g.memory_bytes = 0;
  g.cc_major = 0;
  const Labels got = run(node({g}));
  EXPECT_THAT(got, Not(Contains(Key("nvidia.com/gpu.memory"))));
  EXPECT_THAT(got, Not(Contains(Key("nvidia.com/gpu.family"))));
  EXPECT_THAT(got, Not(Contains(Key("nvidia.com/gpu.compute.major"))));
}

TEST_F(LabelsTest, TimeSlicedProductGetsSharedSuffix) {
  const auto inv = node({a100(0)});
  const Labels got = run(inv, full_gpu_plan(inv, "nvidia.com/gpu", 4, SharingKind::TimeSlicing));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-SHARED")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.replicas", "4")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.sharing-strategy", "time-slicing")));
}

TEST_F(LabelsTest, RenamedSharedResourceKeepsPlainProduct) {
  const auto inv = node({a100(0)});
  const Labels got = run(inv, full_gpu_plan(inv, "nvidia.com/gpu.shared", 4, SharingKind::TimeSlicing));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.replicas", "4")));
}

TEST_F(LabelsTest, MpsSharing) {
  const auto inv = node({a100(0)});
  const Labels got = run(inv, full_gpu_plan(inv, "nvidia.com/gpu", 2, SharingKind::Mps));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.sharing-strategy", "mps")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mps.capable", "true")));
}

struct FamilyCase {
  int major, minor;
  const char* family;
};
class FamilyTest : public LabelsTest, public ::testing::WithParamInterface<FamilyCase> {};
TEST_P(FamilyTest, FromComputeCapability) {
  auto g = a100(0);
  g.cc_major = GetParam().major;
  g.cc_minor = GetParam().minor;
  EXPECT_THAT(run(node({g})), Contains(Pair("nvidia.com/gpu.family", GetParam().family)));
}
INSTANTIATE_TEST_SUITE_P(Gfd, FamilyTest,
                         ::testing::Values(FamilyCase{1, 3, "tesla"}, FamilyCase{2, 1, "fermi"}, FamilyCase{3, 7, "kepler"},
                                           FamilyCase{5, 2, "maxwell"}, FamilyCase{6, 1, "pascal"},
                                           FamilyCase{7, 0, "volta"}, FamilyCase{7, 5, "turing"},
                                           FamilyCase{8, 6, "ampere"}, FamilyCase{8, 9, "ada-lovelace"},
                                           FamilyCase{9, 0, "hopper"}, FamilyCase{10, 0, "blackwell"},
                                           FamilyCase{12, 0, "blackwell"}, FamilyCase{13, 0, "rubin"},
                                           FamilyCase{4, 0, "undefined"}));

Inventory mig_node(std::vector<std::vector<MigDevice>> per_gpu) {
  std::vector<Gpu> gpus;
  for (size_t i = 0; i < per_gpu.size(); ++i) {
    auto g = a100(static_cast<int>(i));
    g.mig_enabled = true;
    g.mig_devices = per_gpu[i];
    gpus.push_back(g);
  }
  return node(gpus);
}

ResourcePlan mig_plan(const Inventory& inv, const std::string& name) {
  Resource r;
  r.name = name;
  for (size_t i = 0; i < inv.gpus.size(); ++i)
    for (size_t j = 0; j < inv.gpus[i].mig_devices.size(); ++j) {
      AdvertisedDevice d;
      d.id = inv.gpus[i].mig_devices[j].uuid;
      d.gpu = i;
      d.mig = j;
      r.devices.push_back(d);
    }
  return {{r}, {}};
}

TEST_F(LabelsTest, MigSingleUniformLayout) {
  config.mig_strategy = MigStrategy::Single;
  const auto inv = mig_node({{mig("1g.5gb", 0, 4864, 14), mig("1g.5gb", 1, 4864, 14)}, {mig("1g.5gb", 0, 4864, 14)}});
  const Labels got = run(inv, mig_plan(inv, "nvidia.com/gpu"));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig.strategy", "single")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.count", "3")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.replicas", "1")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.memory", "4864")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.multiprocessors", "14")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.slices.gi", "1")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.engines.copy", "1")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.mode", "compute")));
}

TEST_F(LabelsTest, MigSingleInvalidLayoutsAreLabelledInvalid) {
  config.mig_strategy = MigStrategy::Single;
  const Labels invalid{{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-INVALID"},
                       {"nvidia.com/gpu.count", "0"},
                       {"nvidia.com/gpu.replicas", "0"},
                       {"nvidia.com/gpu.memory", "0"},
                       {"nvidia.com/gpu.sharing-strategy", ""}};
  auto expect_invalid = [&](const Inventory& inv) {
    const Labels got = run(inv, mig_plan(inv, "nvidia.com/gpu"));
    for (const auto& kv : invalid) EXPECT_THAT(got, Contains(kv));
  };
  // Two profiles.
  expect_invalid(mig_node({{mig("1g.5gb", 0, 4864, 14)}, {mig("2g.10gb", 0, 9856, 28)}}));
  // An empty MIG GPU.
  expect_invalid(mig_node({{mig("1g.5gb", 0, 4864, 14)}, {}}));
  // MIG enabled and disabled mixed.
  auto mixed = mig_node({{mig("1g.5gb", 0, 4864, 14)}});
  mixed.gpus.push_back(a100(1));
  expect_invalid(mixed);
}

TEST_F(LabelsTest, MigMixedPerProfileLabels) {
  config.mig_strategy = MigStrategy::Mixed;
  auto inv = mig_node({{mig("3g.20gb", 0, 19968, 42), mig("1g.5gb+me", 1, 4864, 14)}});
  inv.gpus.push_back(a100(1));  // a full GPU next to the MIG one
  ResourcePlan plan = mig_plan(inv, "nvidia.com/mig-3g.20gb");
  plan.resources[0].devices.pop_back();
  Resource me = mig_plan(inv, "nvidia.com/mig-1g.5gb.me").resources[0];
  me.devices.erase(me.devices.begin());
  plan.resources.push_back(me);
  plan.resources.push_back(full_gpu_plan(inv).resources[0]);
  plan.resources.back().devices.erase(plan.resources.back().devices.begin());
  const Labels got = run(inv, plan);
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig.strategy", "mixed")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig-3g.20gb.count", "1")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig-3g.20gb.product", "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig-3g.20gb.memory", "19968")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig-3g.20gb.multiprocessors", "42")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig-3g.20gb.sharing-strategy", "none")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig-1g.5gb.me.count", "1")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig-1g.5gb.me.engines.jpeg", "1")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig-1g.5gb.me.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gbme")));
  EXPECT_THAT(got, Not(Contains(Key("nvidia.com/mig-3g.20gb.family"))));
  // As GFD: nvidia.com/gpu.count counts every physical GPU, MIG-enabled or not; the full GPU's
  // sharing wins. kgpu.io/full-gpu.count says how many GPUs nvidia.com/gpu serves whole.
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.count", "2")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.replicas", "1")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.family", "ampere")));
  EXPECT_THAT(got, Contains(Pair("kgpu.io/full-gpu.count", "1")));
}

TEST_F(LabelsTest, MigMixedWithEveryGpuInMigModeCountsThemLikeGfd) {
  config.mig_strategy = MigStrategy::Mixed;
  const auto inv = mig_node({{mig("1g.5gb", 0, 4864, 14)}, {mig("1g.5gb", 0, 4864, 14)}});
  const Labels got = run(inv, mig_plan(inv, "nvidia.com/mig-1g.5gb"));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.count", "2")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.replicas", "0")));  // no full GPU is offered
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB")));
  EXPECT_THAT(got, Contains(Pair("kgpu.io/full-gpu.count", "0")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/mig-1g.5gb.count", "2")));
}

TEST_F(LabelsTest, MigEnabledUnderStrategyNoneReportsNoReplicas) {
  const auto inv = mig_node({{mig("1g.5gb", 0, 4864, 14)}});
  const Labels got = run(inv, ResourcePlan{});
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.count", "1")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.replicas", "0")));
}

TEST_F(LabelsTest, SeveralModelsGetMainModelAndPerModelLabels) {
  auto t4 = a100(2);
  t4.product = "Tesla T4";
  t4.memory_bytes = 15360 * kMiB;
  t4.cc_major = 7;
  t4.cc_minor = 5;
  auto t4b = t4;
  t4b.index = 3;
  const Labels got = run(node({a100(0), t4, t4b}));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.count", "3")));
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.product", "Tesla-T4")));  // two T4s beat one A100
  EXPECT_THAT(got, Contains(Pair("nvidia.com/gpu.family", "turing")));
  EXPECT_THAT(got, Contains(Pair("kgpu.io/gpu-model.0.product", "NVIDIA-A100-SXM4-40GB")));
  EXPECT_THAT(got, Contains(Pair("kgpu.io/gpu-model.0.count", "1")));
  EXPECT_THAT(got, Contains(Pair("kgpu.io/gpu-model.0.memory", "40960")));
  EXPECT_THAT(got, Contains(Pair("kgpu.io/gpu-model.1.product", "Tesla-T4")));
  EXPECT_THAT(got, Contains(Pair("kgpu.io/gpu-model.1.count", "2")));
  EXPECT_THAT(got, Contains(Pair("kgpu.io/gpu-model.1.compute.minor", "5")));
  // One model: no per-model labels.
  EXPECT_THAT(run(node({a100(0)})), Not(Contains(Key("kgpu.io/gpu-model.0.product"))));
}

TEST_F(LabelsTest, GpuModeFromPciClass) {
  auto inv = node({a100(0), a100(1)});
  EXPECT_THAT(run(inv), Contains(Pair("nvidia.com/gpu.mode", "unknown")));  // no class known
  ctx.pci_class[inv.gpus[0].pci_bus_id] = 0x030200;
  ctx.pci_class[inv.gpus[1].pci_bus_id] = 0x030200;
  EXPECT_THAT(run(inv), Contains(Pair("nvidia.com/gpu.mode", "compute")));
  ctx.pci_class[inv.gpus[0].pci_bus_id] = 0x030000;
  EXPECT_THAT(run(inv), Contains(Pair("nvidia.com/gpu.mode", "unknown")));  // mixed
  ctx.pci_class[inv.gpus[1].pci_bus_id] = 0x030000;
  EXPECT_THAT(run(inv), Contains(Pair("nvidia.com/gpu.mode", "graphics")));
}

TEST_F(LabelsTest, CliqueOnlyWhenAllFabricGpusAgree) {
  auto a = a100(0), b = a100(1), c = a100(2);
  a.fabric_cluster_uuid = b.fabric_cluster_uuid = "7b96a8c4-5e4f-4d6c-9a7b-0e1f2d3c4c31";
  a.fabric_clique = b.fabric_clique = 1;
  EXPECT_THAT(run(node({a, b, c})),
              Contains(Pair("nvidia.com/gpu.clique", "7b96a8c4-5e4f-4d6c-9a7b-0e1f2d3c4c31.1")));
  b.fabric_clique = 2;
  EXPECT_THAT(run(node({a, b, c})), Not(Contains(Key("nvidia.com/gpu.clique"))));
}

TEST_F(LabelsTest, MigCapableFalseWithoutMigGpus) {
  auto g = a100(0);
  g.mig_capable = false;
  EXPECT_THAT(run(node({g})), Contains(Pair("nvidia.com/mig.capable", "false")));
}

TEST_F(LabelsTest, OtherVendorsGetTheirLabellersLabelsOnly) {
  Inventory inv;
  Gpu g;
  g.vendor = Vendor::Amd;
  g.uuid = "0000:c1:00.0";
  g.pci_bus_id = "0000:c1:00.0";
  g.product = "AMD Instinct MI210";
  g.attributes = {{"family", "AI"}, {"device-id", "740f"}, {"product-name", "Instinct MI210"}, {"cu-count", "104"}};
  inv.gpus.push_back(g);
  const Labels got = run(inv, ResourcePlan{});
  for (const auto& [key, value] : vendor_labels(inv)) EXPECT_THAT(got, Contains(Pair(key, value)));
  for (const auto& [key, value] : got) EXPECT_FALSE(key.starts_with("nvidia.com/")) << key;
}

}  // namespace
}  // namespace kgpu
