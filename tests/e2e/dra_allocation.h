#pragma once
// The scheduler's DRA allocation step for the e2e tests: tests/deploy/dra-allocator/allocate.js (run
// by node; CEL by cel-js, the allocation rules written down from k8s.io/dynamic-resource-allocation
// structured v0.34.0) on the ResourceSlices the real kgpu published to the fake API server, the
// DeviceClasses kgpu ships (deploy/static/kgpu-dra.yaml) and claims such as deploy/examples. Where
// the scheduler would allocate differently from what a test expects, the test fails: the slices are
// judged by the scheduler's rules, not by our picture of them.
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/harness.h"
#include "support/fake_api_server.h"

namespace kgpu::test {

struct AllocationOutcome {
  std::string claim;          // "namespace/name" of the claim or template
  nlohmann::json allocation;  // status.allocation; null when it could not be allocated
  std::string error;          // why not
  bool allocated() const { return !allocation.is_null(); }
  // The results' device names, in order.
  std::vector<std::string> devices() const {
    std::vector<std::string> out;
    if (allocated())
      for (const auto& r : allocation["devices"]["results"]) out.push_back(r.value("device", ""));
    return out;
  }
};

inline std::string example_path(const std::string& name) { return std::string(KGPU_SOURCE_DIR) + "/deploy/examples/" + name; }
inline std::string shipped_device_classes() { return std::string(KGPU_SOURCE_DIR) + "/deploy/static/kgpu-dra.yaml"; }

// Allocates `claim_files` in order (each document one scheduling attempt that sees the earlier
// ones' devices) on the slices `api` holds now. `work` holds the inputs and the allocator's logs.
inline std::vector<AllocationOutcome> allocate_claims(const FakeApiServer& api, const std::vector<std::string>& claim_files,
                                                      const TempDir& work, const std::string& classes = shipped_device_classes()) {
  nlohmann::json slices = nlohmann::json::array();
  for (const auto& [name, slice] : api.slices()) slices.push_back(slice);
  const std::string slices_file = work.write("allocator-slices.json", nlohmann::json{{"kind", "List"}, {"items", slices}}.dump());
  ProcessOptions options;
  options.argv = {"/usr/bin/node", std::string(KGPU_SOURCE_DIR) + "/tests/deploy/dra-allocator/allocate.js",
                  "--slices", slices_file, "--classes", classes, "--sequential-share-ids"};
  for (const auto& file : claim_files) options.argv.insert(options.argv.end(), {"--claims", file});
  ChildProcess allocator(options, work.path(), "allocator");
  const auto rc = allocator.wait_exit(std::chrono::seconds(60));
  if (!rc || *rc != 0) throw std::runtime_error("allocate.js failed: " + allocator.stderr_text());
  const auto out = nlohmann::json::parse(allocator.stdout_text(), nullptr, false);
  if (!out.is_array()) throw std::runtime_error("allocate.js printed no JSON array: " + allocator.stdout_text());
  std::vector<AllocationOutcome> outcomes;
  for (const auto& entry : out)
    outcomes.push_back({entry.value("claim", ""), entry.value("allocation", nlohmann::json()), entry.value("error", "")});
  return outcomes;
}

// A ResourceClaim team-a/<name> (uid `uid`) holding `allocation`, for the fake API server.
inline nlohmann::json allocated_claim(const std::string& uid, const std::string& name, const nlohmann::json& allocation) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid}}},
          {"spec", {{"devices", {{"requests", nlohmann::json::array()}}}}},
          {"status", {{"allocation", allocation}}}};
}

}  // namespace kgpu::test
