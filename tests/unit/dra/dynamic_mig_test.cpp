// Dynamic MIG publication (issue 42): NVIDIA's names and counters, which GPUs are dynamic, the
// publication path (build_publication, resource_slices and resource_slice_texts) within the API
// limits in both counter layouts, health, and the scheduler's allocation rules
// (tests/deploy/dra-allocator, run by node) on the slices: overlapping placements and a placement
// plus the whole GPU never go together.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "dra/api_share.h"
#include "dra/model/dynamic_mig_select.h"
#include "dra/model/publication.h"
#include "dra/model/slice_limits.h"
#include "dra/publish/slice_objects.h"
#include "unit/dra/h100_mig_facts.h"

namespace kgpu::dra {
namespace {

DynamicMigGpuFacts h100(unsigned minor) { return testing::h100_mig_facts(minor); }

DriverPool published(const Inventory& inv, const SliceOptions& options) {
  auto p = build_publication(inv, options);
  EXPECT_TRUE(p.ok()) << p.error().message;
  if (!p.ok() || p->pools.empty()) return {};
  EXPECT_EQ(p->warnings, std::vector<std::string>{});
  return p->pools[0];
}

const DraDevice* find(const DriverPool& pool, const std::string& name) {
  for (const auto& d : pool.devices)
    if (d.name == name) return &d;
  return nullptr;
}

std::string text_of(const DraDevice* d, std::string_view attribute) {
  if (!d || !d->attribute(attribute)) return "";
  const auto* s = std::get_if<std::string>(d->attribute(attribute));
  return s ? *s : "";
}

TEST(DynamicMigLayout, NvidiasNamesCountersAndConsumption) {
  const DynamicMigLayout g = dynamic_mig_layout(h100(0));
  EXPECT_EQ(g.counter_set, "gpu-0-counter-set");
  ASSERT_EQ(g.counters.size(), 15u);  // 7 capacity dimensions + 8 memory slices
  // Full GPU + 7 + 4 + 3 + 2 + 1 + 1 placements.
  ASSERT_EQ(g.devices.size(), 19u);
  const DynamicMigDevice* three = nullptr;
  const DynamicMigDevice* full = nullptr;
  for (const auto& d : g.devices) {
    if (d.name == "gpu-0-mig-3g40gb-9-4") three = &d;
    if (d.name == "gpu-0") full = &d;
  }
  ASSERT_NE(three, nullptr);
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->consumes, g.counters);  // the whole GPU takes everything
  std::vector<std::string> slices;
  for (const auto& c : three->consumes)
    if (c.name.rfind("memory-slice-", 0) == 0) slices.push_back(c.name);
  EXPECT_EQ(slices, (std::vector<std::string>{"memory-slice-4", "memory-slice-5", "memory-slice-6", "memory-slice-7"}));
  for (const auto& c : three->capacity) {
    if (c.name == "multiprocessors") {
      EXPECT_EQ(c.value, 60u);
    }
  }
  // A GPU with no profile NVML answers is not partitioned at all.
  DynamicMigGpuFacts none;
  EXPECT_TRUE(dynamic_mig_layout(none).devices.empty());
}

TEST(DynamicMigSelect, HopperWhateverItsModeAmpereOnlyWithMigOn) {
  Inventory inv = testing::h100_node(4);
  inv.gpus[1].mig_enabled = true;  // Hopper in MIG mode: dynamic too, with its full GPU
  inv.gpus[2].architecture = "ampere";
  inv.gpus[2].cc_major = 8;
  inv.gpus[2].mig_enabled = true;  // Ampere with MIG on: placements only
  inv.gpus[3].architecture = "ampere";
  inv.gpus[3].cc_major = 8;  // Ampere, MIG off: not dynamic
  const auto s = select_dynamic_mig(inv, {"all"}, testing::h100_probes(inv), {});
  ASSERT_EQ(s.gpus.size(), 3u);
  EXPECT_TRUE(s.gpus[0].offer_full_gpu);
  EXPECT_TRUE(s.gpus[1].offer_full_gpu);
  EXPECT_FALSE(s.gpus[2].offer_full_gpu);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("GPU 3 (" + inv.gpus[3].uuid + ")"), std::string::npos) << s.warnings[0];
  EXPECT_NE(s.warnings[0].find("MIG mode is off"), std::string::npos) << s.warnings[0];
  const auto layouts = dynamic_mig_layouts(s);
  EXPECT_EQ(layouts[2].devices.size(), 18u);  // no full GPU
  EXPECT_EQ(layouts[2].devices.front().name, "gpu-2-mig-1g10gb-19-0");
}

TEST(DynamicMigSelect, WhatIsNotDynamicSaysWhy) {
  Inventory inv = testing::h100_node(5);
  inv.gpus[0].mig_capable = false;
  auto probes = testing::h100_probes(inv);
  probes[inv.gpus[1].uuid].problem = "nvmlDeviceGetGpuInstancePossiblePlacements_v2: Function Not Found";
  probes.erase(inv.gpus[2].uuid);
  // GPU 3 holds an instance an operator made; GPU 4 one kgpu made.
  for (int i : {3, 4}) {
    inv.gpus[i].mig_enabled = true;
    MigDevice m;
    m.uuid = "MIG-" + std::to_string(i);
    m.profile = "3g.40gb";
    m.gi_profile_id = 9;
    m.placement_start = 4;
    m.placement_size = 4;
    inv.gpus[i].mig_devices.push_back(m);
  }
  const auto s = select_dynamic_mig(inv, {"0", "1", "2", "3", inv.gpus[4].uuid, "9"}, probes, {"MIG-4"});
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].uuid, inv.gpus[4].uuid);
  std::string all;
  for (const auto& w : s.warnings) all += w + "\n";
  EXPECT_EQ(s.warnings.size(), 5u) << all;
  for (const char* why : {"entry \"9\" names no NVIDIA GPU", "GPU 0 (", "not MIG-capable", "Function Not Found",
                          "not asked", "MIG-3 (3g.40gb)", "did not create"})
    EXPECT_NE(all.find(why), std::string::npos) << why << " in\n" << all;
  EXPECT_TRUE(select_dynamic_mig(inv, {}, probes, {}).gpus.empty());
}

TEST(DynamicMigPublication, DevicesAttributesAndCounterSetsInThePool) {
  const Inventory inv = testing::h100_node(2);
  const DriverPool pool = published(inv, testing::dynamic_options(inv));
  EXPECT_EQ(pool.devices.size(), 2u * 19u);
  ASSERT_EQ(pool.counter_sets.size(), 2u);
  EXPECT_EQ(pool.counter_sets[1].name, "gpu-1-counter-set");
  const DraDevice* full = find(pool, "gpu-1");
  const DraDevice* three = find(pool, "gpu-1-mig-3g40gb-9-4");
  ASSERT_NE(full, nullptr);
  ASSERT_NE(three, nullptr);
  EXPECT_EQ(text_of(full, "type"), "gpu");
  EXPECT_EQ(text_of(full, "uuid"), inv.gpus[1].uuid);
  EXPECT_EQ(text_of(three, "type"), "mig");
  EXPECT_EQ(text_of(three, "parentUUID"), inv.gpus[1].uuid);
  EXPECT_EQ(text_of(three, "profile"), "3g.40gb");
  EXPECT_EQ(text_of(three, "productName"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(three->attribute("uuid"), nullptr) << "no instance yet: no MIG uuid";
  ASSERT_EQ(three->consumes_counters.size(), 1u);
  EXPECT_EQ(three->consumes_counters[0].counter_set, "gpu-1-counter-set");
  EXPECT_EQ(three->consumes_counters[0].counters.size(), 7u + 4u);
  EXPECT_EQ(full->consumes_counters[0].counters, pool.counter_sets[1].counters);
  ASSERT_NE(three->capacity_of("memory"), nullptr);
  EXPECT_EQ(*three->capacity_of("memory"), 40448ULL << 20);
  EXPECT_EQ(*three->capacity_of("multiprocessors"), 60u);
  // The DRA API owns GPU 1 only: GPU 0's devices and counter set leave the pool.
  DraConfig dra;
  const auto served = served_pools({pool}, inv, dra, {false, true});
  ASSERT_EQ(served.size(), 1u);
  EXPECT_EQ(served[0].devices.size(), 19u);
  ASSERT_EQ(served[0].counter_sets.size(), 1u);
  EXPECT_EQ(served[0].counter_sets[0].name, "gpu-1-counter-set");
}

TEST(DynamicMigPublication, XidOnAnInstanceTaintsItsPlacementOnly) {
  Inventory inv = testing::h100_node(2);
  MigDevice m;
  m.uuid = "MIG-kgpu-made";
  m.profile = "2g.20gb";
  m.gi_profile_id = 14;
  m.placement_start = 2;
  m.placement_size = 2;
  m.health = HealthState(false, "XID 94 (contained ECC error)", 94);
  inv.gpus[0].mig_enabled = true;
  inv.gpus[0].mig_devices.push_back(m);
  inv.gpus[1].health = HealthState(false, "XID 79 (GPU has fallen off the bus)", 79);
  SliceOptions o;
  o.node_name = "node-a";
  o.dynamic_mig = dynamic_mig_layouts(select_dynamic_mig(inv, {"all"}, testing::h100_probes(inv), {"MIG-kgpu-made"}));
  ASSERT_EQ(o.dynamic_mig.size(), 2u);
  const DriverPool pool = published(inv, o);
  EXPECT_EQ(find(pool, "gpu-0-mig-2g20gb-14-2")->taints,
            (std::vector<DeviceTaint>{{"gpu.nvidia.com/xid", "94", kTaintNoSchedule}}));
  size_t tainted0 = 0, tainted1 = 0;
  for (const auto& d : pool.devices) {
    if (d.taints.empty()) continue;
    (d.name.rfind("gpu-0", 0) == 0 ? tainted0 : tainted1)++;
  }
  EXPECT_EQ(tainted0, 1u) << "the instance's placement only, not the GPU nor other placements";
  EXPECT_EQ(tainted1, 19u) << "an XID on the GPU taints all its devices";
  EXPECT_EQ(find(pool, "gpu-0-mig-2g20gb-14-2")->attribute("uuid"), nullptr);
  for (const auto& d : pool.devices) EXPECT_NE(text_of(&d, "uuid"), "MIG-kgpu-made") << "no static MIG device";
}

TEST(DynamicMigSlices, BothLayoutsKeepTheApiLimitsInBothApiVersions) {
  const Inventory inv = testing::h100_node(8);
  for (CounterLayout layout : {CounterLayout::Combined, CounterLayout::Split}) {
    const SliceOptions options = testing::dynamic_options(inv, layout);
    const DriverPool pool = published(inv, options);
    for (SliceApi api : {SliceApi::V1, SliceApi::V1beta1}) {
      const auto slices = resource_slices(pool, options, 1, api);
      const auto texts = resource_slice_texts(pool, options, 1, api);
      // Combined: one slice per GPU. Split: 15-counter sets two to a slice (32 summed), then 8.
      ASSERT_EQ(slices.size(), layout == CounterLayout::Combined ? 8u : 12u);
      ASSERT_EQ(texts.size(), slices.size());
      size_t devices = 0, sets = 0;
      for (size_t k = 0; k < slices.size(); ++k) {
        const auto& s = slices[k];
        EXPECT_EQ(texts[k], s.dump()) << "the text renderer writes what the JSON one does";
        EXPECT_EQ(slice_limit_violations(s), std::vector<std::string>{}) << s.dump();
        EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], static_cast<int64_t>(slices.size()));
        devices += s["spec"]["devices"].size();
        if (s["spec"].contains("sharedCounters")) {
          sets += s["spec"]["sharedCounters"].size();
          if (layout == CounterLayout::Split) {
            EXPECT_TRUE(s["spec"]["devices"].empty());
          }
        }
        if (api == SliceApi::V1beta1 && !s["spec"]["devices"].empty()) {
          EXPECT_TRUE(s["spec"]["devices"][0]["basic"].contains("consumesCounters"));
        }
      }
      EXPECT_EQ(devices, 8u * 19u);
      EXPECT_EQ(sets, 8u);
    }
  }
  EXPECT_EQ(counter_layout_for(1, 34), CounterLayout::Combined);
  EXPECT_EQ(counter_layout_for(1, 35), CounterLayout::Split);
  EXPECT_EQ(counter_layout_for(2, 0), CounterLayout::Split);
}

TEST(DynamicMigSlices, StaticGpusBesideDynamicOnesKeepTheirSlice) {
  Inventory inv = testing::h100_node(3);
  SliceOptions o;
  o.node_name = "node-a";
  o.dynamic_mig = dynamic_mig_layouts(select_dynamic_mig(inv, {"1"}, testing::h100_probes(inv), {}));
  const DriverPool pool = published(inv, o);
  const auto slices = resource_slices(pool, o, 1, SliceApi::V1);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]["spec"]["devices"].size(), 2u) << "gpu-0 and gpu-2, as without the key";
  EXPECT_FALSE(slices[0]["spec"].contains("sharedCounters"));
  EXPECT_EQ(slices[1]["spec"]["devices"].size(), 19u);
  EXPECT_EQ(slices[1]["spec"]["sharedCounters"][0]["name"], "gpu-1-counter-set");
}

TEST(DynamicMigSlices, WithoutCounterSupportOnlyTheFullGpusGoOut) {
  const Inventory inv = testing::h100_node(2);
  const DriverPool pool = published(inv, testing::dynamic_options(inv));
  EXPECT_TRUE(has_counters(pool));
  EXPECT_EQ(with_counter_support(pool, true), pool);
  const DriverPool whole = with_counter_support(pool, false);
  EXPECT_FALSE(has_counters(whole));
  ASSERT_EQ(whole.devices.size(), 2u);
  EXPECT_EQ(whole.devices[0].name, "gpu-0");
  EXPECT_EQ(whole.devices[1].name, "gpu-1");
}

// Runs the scheduler-rule allocator on one H100's combined slice (the publication path); each claim
// file one attempt seeing the earlier ones' devices. Returns the allocated device per claim ("" when
// refused).
std::vector<std::string> allocate(const std::vector<std::string>& profiles) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kgpu-dynmig-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const Inventory inv = testing::h100_node(1);
  const SliceOptions options = testing::dynamic_options(inv);
  nlohmann::json items = nlohmann::json::array();
  for (auto& s : resource_slices(published(inv, options), options, 1, SliceApi::V1)) items.push_back(std::move(s));
  std::ofstream(dir / "slices.json") << nlohmann::json{{"kind", "List"}, {"items", items}}.dump();
  std::string cmd = "/usr/bin/node '" + std::string(KGPU_SOURCE_DIR) + "/tests/deploy/dra-allocator/allocate.js' --slices '" +
                    (dir / "slices.json").string() + "' --classes '" + KGPU_SOURCE_DIR + "/deploy/static/kgpu-dra.yaml'";
  for (size_t i = 0; i < profiles.size(); ++i) {
    // "gpu": the whole GPU; else a MIG profile.
    const bool whole = profiles[i] == "gpu";
    nlohmann::json request = {{"name", "r"},
                              {"exactly",
                               {{"deviceClassName", whole ? "gpu.nvidia.com" : "mig.nvidia.com"}, {"count", 1}}}};
    if (!whole)
      request["exactly"]["selectors"] = nlohmann::json::array(
          {{{"cel", {{"expression", "device.attributes['gpu.nvidia.com'].profile == '" + profiles[i] + "'"}}}}});
    nlohmann::json claim = {{"apiVersion", "resource.k8s.io/v1"},
                            {"kind", "ResourceClaim"},
                            {"metadata", {{"name", "c" + std::to_string(i)}, {"namespace", "team-a"}}},
                            {"spec", {{"devices", {{"requests", nlohmann::json::array({request})}}}}}};
    const fs::path file = dir / ("claim-" + std::to_string(i) + ".json");
    std::ofstream(file) << claim.dump();
    cmd += " --claims '" + file.string() + "'";
  }
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = ::pclose(p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  const auto results = nlohmann::json::parse(out, nullptr, false);
  std::vector<std::string> devices;
  if (!results.is_array()) {
    ADD_FAILURE() << "allocate.js printed: " << out;
    return devices;
  }
  for (const auto& r : results)
    devices.push_back(r.contains("allocation") ? r["allocation"]["devices"]["results"][0].value("device", "") : "");
  return devices;
}

TEST(DynamicMigAllocation, OneOneTwoThreeFitAndAFifthDoesNot) {
  const auto got = allocate({"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb", "1g.10gb", "gpu"});
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0], "gpu-0-mig-1g10gb-19-0");
  EXPECT_EQ(got[1], "gpu-0-mig-1g10gb-19-1");
  EXPECT_EQ(got[2], "gpu-0-mig-2g20gb-14-2");
  EXPECT_EQ(got[3], "gpu-0-mig-3g40gb-9-4");
  // Every memory slice is taken: no further 1g, and no whole GPU.
  EXPECT_EQ(got[4], "");
  EXPECT_EQ(got[5], "");
}

// The scheduler places each claim on its own, first fit in device-name order (NVIDIA's order, which
// kgpu keeps): a 3g claimed first takes slices 0-3, and after 2g at 4-5 and 1g at 6 the last memory
// slice cannot host a 1g.10gb (its placements start at 0..6). The hardware fragments the same way.
TEST(DynamicMigAllocation, ThreeFirstFragmentsAsTheHardwareDoes) {
  const auto got = allocate({"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"});
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], "gpu-0-mig-3g40gb-9-0");
  EXPECT_EQ(got[1], "gpu-0-mig-2g20gb-14-4");
  EXPECT_EQ(got[2], "gpu-0-mig-1g10gb-19-6");
  EXPECT_EQ(got[3], "");
}

TEST(DynamicMigAllocation, WholeGpuExcludesEveryPlacement) {
  const auto got = allocate({"gpu", "1g.10gb", "7g.80gb"});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "gpu-0");
  EXPECT_EQ(got[1], "");
  EXPECT_EQ(got[2], "");
}

}  // namespace
}  // namespace kgpu::dra

#include "dra/model/dynamic_mig_name.h"

namespace kgpu::dra {
namespace {

TEST(DynamicMigName, ReadsBackWhatTheLayoutNames) {
  for (const auto& d : dynamic_mig_layout(h100(3)).devices) {
    if (d.profile.empty()) continue;
    auto parsed = parse_dynamic_mig_name(d.name);
    ASSERT_TRUE(parsed) << d.name << ": " << parsed.error().message;
    EXPECT_EQ(parsed->parent_minor, 3u);
    EXPECT_EQ(parsed->profile_id, d.profile_id);
    EXPECT_EQ(parsed->placement_start, d.placement_start);
  }
  auto me = parse_dynamic_mig_name("gpu-12-mig-1g10gb-me-20-6");
  ASSERT_TRUE(me);
  EXPECT_EQ(*me, (DynamicMigName{12, "1g10gb-me", 20, 6}));
}

TEST(DynamicMigName, RefusesWhatIsNotOne) {
  for (const char* bad : {"", "gpu-0", "gpu-0-mig-", "gpu-0-mig-3g40gb-9", "gpu-x-mig-3g40gb-9-4",
                          "gpu-0-mig-3g40gb-9-", "gpu-0-mig--9-4", "gpu-0-mig-3G40GB-9-4", "gpu-0-mig-3g40gb-99999999-4",
                          "gpu-0-mig-3g40gb--4", "mig-3g40gb-9-4", "gpu-0-mig-3g40gb-9-4-"}) {
    EXPECT_FALSE(parse_dynamic_mig_name(bad)) << bad;
  }
  EXPECT_FALSE(parse_dynamic_mig_name("gpu-0-mig-" + std::string(60, 'a') + "-9-4"));
}

}  // namespace
}  // namespace kgpu::dra
