// Dynamic MIG publication (issue 42): NVIDIA's names and counters, the API limits in both counter
// layouts, and the scheduler's allocation rules (tests/deploy/dra-allocator, run by node) on the
// slices: overlapping placements and a placement plus the whole GPU never go together.
#include "dra/publish/dynamic_mig_slices.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "dra/model/slice_limits.h"
#include "unit/dra/h100_mig_facts.h"

namespace kgpu::dra {
namespace {


DynamicMigGpuFacts h100(unsigned minor) { return testing::h100_mig_facts(minor); }

std::vector<DynamicMigLayout> node(unsigned gpus) {
  std::vector<DynamicMigLayout> out;
  for (unsigned i = 0; i < gpus; ++i) out.push_back(dynamic_mig_layout(h100(i)));
  return out;
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

TEST(DynamicMigSlices, BothLayoutsKeepTheApiLimits) {
  const auto gpus = node(8);
  DynamicMigSliceOptions options;
  options.node_name = "node-a";
  for (CounterLayout layout : {CounterLayout::Combined, CounterLayout::Split}) {
    options.layout = layout;
    const auto slices = dynamic_mig_slices(gpus, options);
    // Combined: one slice per GPU. Split: 15-counter sets two to a slice (32 summed), then 8.
    EXPECT_EQ(slices.size(), layout == CounterLayout::Combined ? 8u : 12u);
    size_t devices = 0, sets = 0;
    for (const auto& s : slices) {
      EXPECT_EQ(slice_limit_violations(s), std::vector<std::string>{}) << s.dump();
      EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], static_cast<int64_t>(slices.size()));
      devices += s["spec"]["devices"].size();
      if (s["spec"].contains("sharedCounters")) {
        sets += s["spec"]["sharedCounters"].size();
        if (layout == CounterLayout::Split) {
          EXPECT_TRUE(s["spec"]["devices"].empty());
        }
      }
    }
    EXPECT_EQ(devices, 8u * 19u);
    EXPECT_EQ(sets, 8u);
  }
  EXPECT_EQ(counter_layout_for(1, 34), CounterLayout::Combined);
  EXPECT_EQ(counter_layout_for(1, 35), CounterLayout::Split);
  EXPECT_EQ(counter_layout_for(2, 0), CounterLayout::Split);
}

TEST(DynamicMigSlices, EightH100sWithEveryPlacementFitEightCombinedSlices) {
  // Issue 42's time bound (50 ms for the node) is bench_dra_dynamic_mig_slices', not a test's.
  DynamicMigSliceOptions options;
  options.node_name = "node-a";
  std::vector<DynamicMigLayout> layouts;
  for (unsigned i = 0; i < 8; ++i) layouts.push_back(dynamic_mig_layout(h100(i)));
  EXPECT_EQ(dynamic_mig_slices(layouts, options).size(), 8u);
}

// Runs the scheduler-rule allocator on one H100's combined slice; each claim file one attempt
// seeing the earlier ones' devices. Returns the allocated device per claim ("" when refused).
std::vector<std::string> allocate(const std::vector<std::string>& profiles) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kgpu-dynmig-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  DynamicMigSliceOptions options;
  options.node_name = "node-a";
  nlohmann::json items = nlohmann::json::array();
  for (auto& s : dynamic_mig_slices(node(1), options)) items.push_back(std::move(s));
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
