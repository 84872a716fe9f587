// Rendering one scrape under DCGM exporter's names: label names and order, value formats, MIG
// labels, XID labels, one sample per owner, and fields without a reading left out.
#include <gtest/gtest.h>

#include "telemetry/exposition.h"

namespace kgpu::telemetry {
namespace {

Target gpu0() {
  Target t;
  t.gpu_index = 0;
  t.uuid = "GPU-aaaa";
  t.pci_bus_id = "00000000:07:00.0";
  t.model_name = "NVIDIA A100-SXM4-40GB";
  t.read_uuid = t.uuid;
  return t;
}

NodeLabels node() { return NodeLabels{"node-1", "550.54.15"}; }

std::string render(const std::vector<Target>& targets, const std::vector<Reading>& readings,
                   const std::vector<std::vector<Owner>>& owners = {}, NodeLabels n = node()) {
  std::string out;
  render_dcgm(n, targets, readings, owners, out);
  return out;
}

TEST(Exposition, GaugeWithDcgmLabelsInDcgmOrder) {
  Reading r;
  r[Field::GpuUtil] = 42;
  EXPECT_EQ(render({gpu0()}, {r}),
            "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
            "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
            "modelName=\"NVIDIA A100-SXM4-40GB\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 42\n");
}

TEST(Exposition, PowerIsPrintedAsDcgmDoubleAndCountersAsIntegers) {
  Reading r;
  r[Field::PowerUsage] = 61.5;
  r[Field::TotalEnergyConsumption] = 123456789012.0;
  const std::string out = render({gpu0()}, {r});
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"), std::string::npos);
  EXPECT_NE(out.find("\"} 61.500000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"), std::string::npos);
  EXPECT_NE(out.find("\"} 123456789012\n"), std::string::npos) << out;
}

TEST(Exposition, FieldWithoutReadingIsLeftOutEntirely) {
  Reading r;
  r[Field::SmClock] = 1410;
  const std::string out = render({gpu0()}, {r});
  EXPECT_EQ(out.find("DCGM_FI_DEV_GPU_UTIL"), std::string::npos);
  EXPECT_EQ(out.find("DCGM_FI_DEV_MEMORY_TEMP"), std::string::npos);
  EXPECT_NE(out.find("DCGM_FI_DEV_SM_CLOCK{"), std::string::npos);
}

TEST(Exposition, GpuInstanceCarriesProfileAndIdAfterModelName) {
  Target gi = gpu0();
  gi.gpu_instance_id = 1;
  gi.gpu_instance_profile = "3g.20gb";
  Reading r;
  r[Field::FbUsed] = 0;
  EXPECT_NE(render({gi}, {r}).find("modelName=\"NVIDIA A100-SXM4-40GB\",GPU_I_PROFILE=\"3g.20gb\",GPU_I_ID=\"1\","
                                   "Hostname=\"node-1\""),
            std::string::npos);
}

TEST(Exposition, XidCarriesErrCodeAndMessageBetweenContainerAndNamespace) {
  Reading r;
  r[Field::XidErrors] = 79;
  const std::string out = render({gpu0()}, {r}, {{Owner{"train-0", "ml", "main"}}});
  EXPECT_NE(out.find("DCGM_FI_DRIVER_VERSION=\"550.54.15\",container=\"main\",err_code=\"79\","
                     "err_msg=\"GPU has fallen off the bus\",namespace=\"ml\",pod=\"train-0\"} 79\n"),
            std::string::npos)
      << out;
}

TEST(Exposition, SharedDeviceGetsOneSamplePerOwner) {
  Reading r;
  r[Field::GpuUtil] = 7;
  const std::string out =
      render({gpu0()}, {r}, {{Owner{"a", "ns1", "c"}, Owner{"b", "ns2", "c"}}});
  EXPECT_NE(out.find("container=\"c\",namespace=\"ns1\",pod=\"a\"} 7\n"), std::string::npos) << out;
  EXPECT_NE(out.find("container=\"c\",namespace=\"ns2\",pod=\"b\"} 7\n"), std::string::npos) << out;
}

TEST(Exposition, NoHostnameLeavesTheLabelOutAndValuesAreEscaped) {
  Target t = gpu0();
  t.model_name = "odd \"name\"\\";
  Reading r;
  r[Field::GpuTemp] = 31;
  const std::string out = render({t}, {r}, {}, NodeLabels{"", "1.0"});
  EXPECT_EQ(out.find("Hostname"), std::string::npos);
  EXPECT_NE(out.find("modelName=\"odd \\\"name\\\"\\\\\""), std::string::npos) << out;
}

TEST(Exposition, FamiliesFollowDcgmCounterFileOrder) {
  Reading r;
  r[Field::FbUsed] = 1;
  r[Field::SmClock] = 2;
  r[Field::GpuTemp] = 3;
  const std::string out = render({gpu0()}, {r});
  EXPECT_LT(out.find("DCGM_FI_DEV_SM_CLOCK"), out.find("DCGM_FI_DEV_GPU_TEMP"));
  EXPECT_LT(out.find("DCGM_FI_DEV_GPU_TEMP"), out.find("DCGM_FI_DEV_FB_USED"));
}

}  // namespace
}  // namespace kgpu::telemetry
