// Fuzz target: the kubelet's requests, as the gRPC handlers (src/server/resource_server.cpp) pass
// them to the pure functions behind them: Allocate -> allocate() (+ backing_devices()), and
// GetPreferredAllocation -> preferred_allocation(), against fixed plans built from shipped fleets
// (whole GPUs, time-slicing and MPS replicas, MIG mixed). PreStartContainer is not fuzzed: kgpu
// advertises preStartRequired=false and its handler reads nothing from the request.
// IDs are drawn from the resource's own devices (so requests get past validation) or are
// arbitrary text; sizes are arbitrary. Every answer must be a value or an Error, and a value must
// keep the promises the kubelet relies on (checked below).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "alloc/preferred.h"
#include "fuzz/fleet_inventory.h"
#include "plan/allocate.h"
#include "plan/plan.h"

namespace {

struct FixedPlan {
  kgpu::Config config;
  kgpu::Inventory inventory;
  kgpu::ResourcePlan plan;
  std::unique_ptr<kgpu::TopologyScorer> scorer;
};

std::vector<FixedPlan>* plans = nullptr;

void add_plan(const std::string& fleet, const std::string& config_yaml) {
  FixedPlan p;
  p.config = kgpu::fuzz::config_from_yaml(config_yaml);
  p.inventory = kgpu::fuzz::discover_fleet(fleet);
  p.plan = kgpu::plan(p.config, p.inventory);
  p.scorer = std::make_unique<kgpu::TopologyScorer>(p.inventory);
  if (p.plan.resources.empty()) __builtin_trap();  // a setup mistake, not a finding
  plans->push_back(std::move(p));
}

std::vector<std::string> pick_ids(FuzzedDataProvider& in, const kgpu::Resource& resource) {
  std::vector<std::string> ids;
  const size_t count = in.ConsumeIntegralInRange<size_t>(0, 24);
  for (size_t i = 0; i < count && in.remaining_bytes() > 0; ++i) {
    switch (in.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
      case 1:  // one of the resource's IDs (duplicates allowed: the kubelet must not send them, but may)
        ids.push_back(resource.devices[in.ConsumeIntegralInRange<size_t>(0, resource.devices.size() - 1)].id);
        break;
      case 2: {  // a resource ID with text appended (replica suffixes, "::", NUL, ...)
        std::string id = resource.devices[in.ConsumeIntegralInRange<size_t>(0, resource.devices.size() - 1)].id;
        ids.push_back(id + in.ConsumeRandomLengthString(16));
        break;
      }
      default:
        ids.push_back(in.ConsumeRandomLengthString(48));
    }
  }
  return ids;
}

void check_allocate(const FixedPlan& p, const kgpu::Resource& resource, const std::vector<std::string>& ids) {
  auto edits = kgpu::allocate(p.config, p.inventory, resource, ids);
  if (!edits) return;
  if (ids.empty()) __builtin_trap();  // an empty request must be refused
  for (const auto& id : ids)
    if (!resource.find(id)) __builtin_trap();  // an unknown ID must be refused
  (void)kgpu::backing_devices(p.inventory, resource, ids);
}

void check_preferred(const FixedPlan& p, const kgpu::Resource& resource, const std::vector<std::string>& available,
                     const std::vector<std::string>& must, int size) {
  auto got = kgpu::preferred_allocation(p.config, *p.scorer, resource, available, must, size);
  if (!got) return;
  // The answer: `size` distinct available IDs, must_include first.
  const std::set<std::string> offered(available.begin(), available.end());
  const std::set<std::string> distinct(got->begin(), got->end());
  if (static_cast<int>(got->size()) != size || distinct.size() != got->size()) __builtin_trap();
  for (const auto& id : *got)
    if (!offered.count(id)) __builtin_trap();
  const std::set<std::string> required(must.begin(), must.end());
  for (size_t i = 0; i < required.size() && i < got->size(); ++i)
    if (!required.count((*got)[i])) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kgpu::fuzz::silence_logs();
  plans = new std::vector<FixedPlan>;
  add_plan("dgx-a100", "version: v1\n");
  add_plan("dgx-a100",
           "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n");
  add_plan("hgx-h100",
           "version: v1\nflags:\n  mpsRoot: /run/nvidia/mps\n  plugin: {deviceIDStrategy: index}\n"
           "sharing:\n  mps:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 3}\n");
  add_plan("a100-mig-mixed", "version: v1\nflags:\n  migStrategy: mixed\n");
  add_plan("a100-mig-mixed",
           "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
           "    failRequestsGreaterThanOne: true\n    resources:\n    - {name: nvidia.com/mig-1g.5gb, replicas: 2}\n");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const FixedPlan& p = (*plans)[in.ConsumeIntegralInRange<size_t>(0, plans->size() - 1)];
  const kgpu::Resource& resource =
      p.plan.resources[in.ConsumeIntegralInRange<size_t>(0, p.plan.resources.size() - 1)];
  if (resource.devices.empty()) return 0;
  if (in.ConsumeBool()) {
    check_allocate(p, resource, pick_ids(in, resource));
  } else {
    auto available = pick_ids(in, resource);
    auto must = pick_ids(in, resource);
    const int want = in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(-2, 40) : in.ConsumeIntegral<int>();
    check_preferred(p, resource, available, must, want);
  }
  return 0;
}
