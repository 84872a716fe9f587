// Fuzz target: the config loader (YAML and JSON text, NVIDIA's v1 schema plus kgpu's section), then
// what the daemon does with a config that loaded: describe it and plan the node's resources.
// Nothing a config file holds may crash the loader or make plan() fail (it is total).
// Two passes per input, both loaded leniently as the daemon does (the loader reads YAML and JSON
// alike; strict only turns unknown keys into errors):
//  - raw: the input is the file's text;
//  - typed: the input drives a generator that takes a complete config (every section) and puts
//    a value of any YAML shape (scalar, sequence, map, map with non-text keys, ...) at a few of its
//    keys and values: the shape mistakes an operator makes, which byte mutation rarely reaches.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/diagnostics.h"
#include "config/loader.h"
#include "fuzz/fleet_inventory.h"
#include "plan/plan.h"

namespace {

const kgpu::Inventory* inventory = nullptr;

void load_and_plan(const std::string& text) {
  auto loaded = kgpu::parse_config_text(text, "fuzz.yaml", false);
  (void)kgpu::format_diagnostics(loaded.diagnostics);
  if (kgpu::has_errors(loaded.diagnostics)) return;
  (void)kgpu::describe_effective_config(loaded);
  (void)kgpu::plan(loaded.config, *inventory);
}

// Complete configs, together touching every section the loader knows.
const char* const kTemplates[] = {
    R"(version: v1
flags:
  migStrategy: mixed
  failOnInitError: false
  mpsRoot: /run/nvidia/mps
  nvidiaDriverRoot: /run/nvidia/driver
  plugin:
    passDeviceSpecs: true
    deviceListStrategy: [envvar, cdi-annotations]
    deviceIDStrategy: index
    sharedDevicesAllocationPolicy: packed
  gfd: {oneshot: true, sleepInterval: 1m30s}
resources:
  gpus: [{pattern: "*A100*", name: a100}]
  mig: [{pattern: "1g.5gb", name: mig-small}]
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - {name: nvidia.com/gpu, rename: gpu.shared, replicas: 2, devices: [0, "1", "2:0"]}
    - {name: nvidia.com/mig-1g.5gb, replicas: 3, devices: 2}
imex: {channelIDs: [0], required: false}
)",
    R"(version: v1
sharing:
  mps:
    resources:
    - {name: nvidia.com/gpu, replicas: 4, devices: all}
kgpu:
  sysfsRoot: /host/sys
  cdiSpecDir: /etc/cdi
  metricsAddr: ":9400"
  migAllocationPolicy: spread
  backends: [nvidia, amd]
  labels: {enabled: true, keepOnExit: true}
  health:
    enabled: true
    ignoredXids: [13, 31]
    xidActions: {79: mark-unhealthy-until-reset, 94: ignore}
    recovery: {enabled: false, probeIntervalMs: 1000, quietPeriodMs: 3000}
)",
    R"(version: v1
kgpu:
  deviceGroups:
    - resource: example.com/rdma
      devices: ["/dev/infiniband/uverbs*"]
      sharedDevices: ["/dev/infiniband/rdma_cm"]
      replicas: 8
      sysfs:
        - {path: /class/infiniband_verbs/uverbs*/device/vendor, equals: "0x15b3"}
      env: {RDMA_SHARED: "1"}
    - resource: example.com/fpga
      devices: ["/dev/fpga*-mgmt", "/dev/fpga*-user"]
      mounts:
        - {containerPath: /opt/xilinx, hostPath: /opt/xilinx, readOnly: true}
)",
};

YAML::Node any_node(FuzzedDataProvider& in, int depth) {
  switch (in.ConsumeIntegralInRange<int>(0, depth > 0 ? 8 : 5)) {
    case 0: return YAML::Node(YAML::NodeType::Null);
    case 1: return YAML::Node(in.ConsumeBool());
    case 2: return YAML::Node(in.ConsumeIntegral<int64_t>());
    case 3: return YAML::Node(in.ConsumeFloatingPoint<double>());
    case 4: return YAML::Node(in.ConsumeRandomLengthString(24));
    case 5: return YAML::Node(std::to_string(in.ConsumeIntegralInRange<int>(-3, 70000)));
    case 6: {
      YAML::Node seq(YAML::NodeType::Sequence);
      for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) seq.push_back(any_node(in, depth - 1));
      return seq;
    }
    case 7: {
      YAML::Node map(YAML::NodeType::Map);
      for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n)
        map[in.ConsumeRandomLengthString(12)] = any_node(in, depth - 1);
      return map;
    }
    default: {  // a map whose key is not text
      YAML::Node map(YAML::NodeType::Map);
      map[any_node(in, 0).IsNull() ? YAML::Node(YAML::NodeType::Sequence) : any_node(in, depth - 1)] =
          any_node(in, depth - 1);
      return map;
    }
  }
}

// Every node of the tree, keys included, in document order.
void collect(YAML::Node node, std::vector<YAML::Node>& out) {
  out.push_back(node);
  if (node.IsSequence()) {
    for (auto child : node) collect(child, out);
  } else if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      out.push_back(it->first);
      collect(it->second, out);
    }
  }
}

std::string typed_config(FuzzedDataProvider& in) {
  YAML::Node root = YAML::Load(kTemplates[in.ConsumeIntegralInRange<size_t>(0, std::size(kTemplates) - 1)]);
  for (int edits = in.ConsumeIntegralInRange<int>(1, 3); edits > 0 && in.remaining_bytes() > 0; --edits) {
    std::vector<YAML::Node> nodes;
    collect(root, nodes);
    YAML::Node target = nodes[in.ConsumeIntegralInRange<size_t>(1, nodes.size() - 1)];
    target = any_node(in, 2);
  }
  YAML::Emitter out;
  out << root;
  return out.good() ? std::string(out.c_str()) : std::string();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kgpu::fuzz::silence_logs();
  // MIG-enabled and whole GPUs, so every MIG strategy and sharing mode has something to plan.
  inventory = new kgpu::Inventory(kgpu::fuzz::discover_fleet("a100-mig-mixed"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  load_and_plan(std::string(reinterpret_cast<const char*>(data), size));
  FuzzedDataProvider in(data, size);
  std::string typed;
  try {
    typed = typed_config(in);
  } catch (const YAML::Exception&) {
    return 0;  // the generator's own YAML tree could not be written: nothing to test
  }
  load_and_plan(typed);
  return 0;
}
