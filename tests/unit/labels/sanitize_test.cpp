// Every label kgpu writes must be accepted by the API server: property tests over random and
// extreme product names, plus the sanitiser's own contract.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "labels/labels.h"
#include "labels/sanitize.h"

namespace kgpu {
namespace {

using labels::gfd_sanitise;
using labels::is_valid_label_key;
using labels::is_valid_label_value;
using labels::k8s_label_value;

TEST(Sanitise, GfdProductRule) {
  EXPECT_EQ(gfd_sanitise("NVIDIA A100-SXM4-40GB"), "NVIDIA-A100-SXM4-40GB");
  EXPECT_EQ(gfd_sanitise("Tesla  T4 (rev a1)"), "Tesla-T4-rev-a1");
  EXPECT_EQ(gfd_sanitise("GeForce RTX\u00ae 4090"), "GeForce-RTX-4090");
}

TEST(Sanitise, ValuesAreTrimmedToAlphanumericEnds) {
  EXPECT_EQ(k8s_label_value("  -_DGX A100._ "), "DGX-A100");
  EXPECT_EQ(k8s_label_value("***"), "");
}

TEST(Sanitise, LongValuesAreCutWithAStableDistinctHash) {
  const std::string a(100, 'a'), b = std::string(99, 'a') + "b";
  const auto va = k8s_label_value(a), vb = k8s_label_value(b);
  EXPECT_EQ(va.size(), 63u);
  EXPECT_TRUE(is_valid_label_value(va));
  EXPECT_NE(va, vb);
  EXPECT_EQ(va, k8s_label_value(a));
  EXPECT_EQ(va.substr(0, 54), a.substr(0, 54));
  EXPECT_EQ(k8s_label_value(std::string(63, 'x')), std::string(63, 'x'));  // exactly 63 is kept
}

TEST(Sanitise, Validators) {
  EXPECT_TRUE(is_valid_label_key("nvidia.com/gpu.count"));
  EXPECT_TRUE(is_valid_label_key("kgpu.io/gpu-model.0.product"));
  EXPECT_FALSE(is_valid_label_key("nvidia.com/"));
  EXPECT_FALSE(is_valid_label_key("Nvidia.com/gpu"));
  EXPECT_FALSE(is_valid_label_key("nvidia.com/" + std::string(64, 'a')));
  EXPECT_FALSE(is_valid_label_value("-a"));
  EXPECT_FALSE(is_valid_label_value("a+b"));
  EXPECT_TRUE(is_valid_label_value(""));
}

std::string random_text(std::mt19937& rng) {
  static const std::string pool =
      "abcXYZ019 -_.+/()!@#$%^&*\t\n\"'\\:;,<>?~`|{}[]\xc3\xa9\xe2\x84\xa2";
  std::string s;
  const size_t len = rng() % 3 == 0 ? 60 + rng() % 200 : rng() % 40;
  for (size_t i = 0; i < len; ++i) s += pool[rng() % pool.size()];
  return s;
}

// Random product names, profiles, machine types and driver versions on every MIG strategy:
// every key and value must be valid.
TEST(LabelsProperty, EveryKeyAndValueIsValidForKubernetes) {
  std::mt19937 rng(8);
  for (int round = 0; round < 300; ++round) {
    Inventory inv;
    inv.driver_version = round % 5 == 0 ? random_text(rng) : "550.54.15";
    inv.cuda_driver_version = static_cast<int>(rng() % 20000);
    const int gpus = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < gpus; ++i) {
      Gpu g;
      g.index = i;
      g.uuid = "GPU-" + std::to_string(i);
      g.product = random_text(rng);
      g.pci_bus_id = "0000:0" + std::to_string(i) + ":00.0";
      g.memory_bytes = uint64_t{rng()} << 12;
      g.cc_major = static_cast<int>(rng() % 14);
      g.mig_capable = rng() % 2;
      g.mig_enabled = g.mig_capable && rng() % 2;
      if (g.mig_enabled)
        for (int m = 0; m < static_cast<int>(rng() % 3); ++m) {
          MigDevice d;
          d.profile = rng() % 2 ? "1g.5gb+me" : random_text(rng);
          d.memory_bytes = uint64_t{rng()} << 10;
          g.mig_devices.push_back(d);
        }
      if (rng() % 3 == 0) {
        g.fabric_cluster_uuid = random_text(rng);
        g.fabric_clique = rng();
      }
      inv.gpus.push_back(g);
    }
    Config config;
    config.mig_strategy = static_cast<MigStrategy>(rng() % 3);
    ResourcePlan plan;
    Resource r;
    r.name = "nvidia.com/gpu";
    r.replicas = 1 + static_cast<int>(rng() % 3);
    r.sharing = r.replicas > 1 ? SharingKind::TimeSlicing : SharingKind::None;
    for (int i = 0; i < gpus; ++i) {
      AdvertisedDevice d;
      d.id = "GPU-" + std::to_string(i);
      d.gpu = static_cast<size_t>(i);
      d.replica = r.replicas > 1 ? 0 : -1;
      r.devices.push_back(d);
    }
    plan.resources.push_back(r);
    LabelContext ctx;
    ctx.machine_type = random_text(rng);
    ctx.timestamp = static_cast<int64_t>(rng());
    const auto got = node_labels(config, inv, plan, ctx);
    ASSERT_FALSE(got.empty());
    for (const auto& [key, value] : got) {
      ASSERT_TRUE(is_valid_label_key(key)) << "key [" << key << "]";
      ASSERT_TRUE(is_valid_label_value(value)) << key << "='" << value << "'";
    }
    // Deterministic: the same input gives the same labels.
    ASSERT_EQ(got, node_labels(config, inv, plan, ctx));
  }
}

}  // namespace
}  // namespace kgpu
