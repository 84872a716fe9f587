// Issue 18, "a key that is accepted must have an effect": walk every key the config schema accepts
// (NVIDIA's and kgpu:), require it in the accepted-keys table (config/accepted_keys.h), and prove
// its effect: the plan, the Allocate edits, the preferred allocation, the labels or the discovered
// devices change when it is set; daemon keys change the Config the daemon runs with; keys accepted
// for compatibility only are listed in docs/operations.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "alloc/preferred.h"
#include "config/accepted_keys.h"
#include "config/loader.h"
#include "labels/labels.h"
#include "plan/allocate.h"
#include "plan/plan.h"
#include "sysfs/backends.h"
#include "unit/plan/inventories.h"

namespace kgpu {
namespace {

using namespace kgpu::test;

// ---- the schema, as the parser itself reports it ----

// Every mapping level of the schema and a document whose key "zzzzzzzzzz" sits at that level: the
// parser's own unknown-key error names the valid keys there ("(valid: a, b, c)").
const std::map<std::string, std::string>& levels() {
  static const std::map<std::string, std::string> all = {
      {"", "zzzzzzzzzz: 1\n"},
      {"flags", "flags: {zzzzzzzzzz: 1}\n"},
      {"flags.plugin", "flags: {plugin: {zzzzzzzzzz: 1}}\n"},
      {"flags.gfd", "flags: {gfd: {zzzzzzzzzz: 1}}\n"},
      {"resources", "resources: {zzzzzzzzzz: 1}\n"},
      {"resources.gpus[]", "resources: {gpus: [{zzzzzzzzzz: 1}]}\n"},
      {"resources.mig[]", "resources: {mig: [{zzzzzzzzzz: 1}]}\n"},
      {"sharing", "sharing: {zzzzzzzzzz: 1}\n"},
      {"sharing.timeSlicing", "sharing: {timeSlicing: {zzzzzzzzzz: 1, resources: [{name: gpu, replicas: 2}]}}\n"},
      {"sharing.timeSlicing.resources[]", "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, zzzzzzzzzz: 1}]}}\n"},
      {"sharing.mps", "sharing: {mps: {zzzzzzzzzz: 1, resources: [{name: gpu, replicas: 2}]}}\n"},
      {"sharing.mps.resources[]", "sharing: {mps: {resources: [{name: gpu, replicas: 2, zzzzzzzzzz: 1}]}}\n"},
      {"imex", "imex: {zzzzzzzzzz: 1}\n"},
      {"kgpu", "kgpu: {zzzzzzzzzz: 1}\n"},
      {"kgpu.labels", "kgpu: {labels: {zzzzzzzzzz: 1}}\n"},
      {"kgpu.dra", "kgpu: {dra: {zzzzzzzzzz: 1}}\n"},
      {"kgpu.dra.mig", "kgpu: {dra: {mig: {zzzzzzzzzz: 1}}}\n"},
      {"kgpu.dra.sharing", "kgpu: {dra: {sharing: {zzzzzzzzzz: 1}}}\n"},
      {"kgpu.dra.sharing.memory", "kgpu: {dra: {sharing: {memory: {zzzzzzzzzz: 1}}}}\n"},
      {"kgpu.dra.sharing.memory.requestPolicy", "kgpu: {dra: {sharing: {memory: {requestPolicy: {zzzzzzzzzz: 1}}}}}\n"},
      {"kgpu.health", "kgpu: {health: {zzzzzzzzzz: 1}}\n"},
      {"kgpu.health.recovery", "kgpu: {health: {recovery: {zzzzzzzzzz: 1}}}\n"},
      {"kgpu.deviceGroups[]", "kgpu: {deviceGroups: [{resource: a.com/b, devices: [/dev/x], zzzzzzzzzz: 1}]}\n"},
      {"kgpu.deviceGroups[].mounts[]",
       "kgpu: {deviceGroups: [{resource: a.com/b, devices: [/dev/x], mounts: [{containerPath: /a, hostPath: /a, "
       "zzzzzzzzzz: 1}]}]}\n"},
      {"kgpu.deviceGroups[].sysfs[]",
       "kgpu: {deviceGroups: [{resource: a.com/b, devices: [/dev/x], sysfs: [{path: /a, equals: b, zzzzzzzzzz: 1}]}]}\n"},
  };
  return all;
}

std::vector<std::string> valid_keys_at(const std::string& level) {
  const auto loaded = parse_config_text(levels().at(level), "c.yaml", true);
  const std::string text = format_diagnostics(loaded.diagnostics);
  const auto start = text.find("(valid: ");
  EXPECT_NE(start, std::string::npos) << level << ": " << text;
  if (start == std::string::npos) return {};
  const auto end = text.find(')', start);
  std::vector<std::string> keys;
  std::stringstream list(text.substr(start + 8, end - start - 8));
  for (std::string key; std::getline(list, key, ',');) keys.push_back(key.substr(key.find_first_not_of(' ')));
  return keys;
}

// Every leaf key the schema accepts, spelled like the table ("a.b[].c").
std::set<std::string> schema_keys() {
  std::set<std::string> out;
  for (const auto& [level, doc] : levels())
    for (const auto& child : valid_keys_at(level)) {
      const std::string key = level.empty() ? child : level + "." + child;
      if (!levels().contains(key) && !levels().contains(key + "[]")) out.insert(key);
    }
  return out;
}

TEST(AcceptedKeys, TheTableListsExactlyTheKeysTheSchemaAccepts) {
  std::set<std::string> table;
  for (const auto& k : accepted_keys()) EXPECT_TRUE(table.insert(std::string(k.key)).second) << "twice: " << k.key;
  const std::set<std::string> schema = schema_keys();
  for (const auto& key : schema) EXPECT_TRUE(table.contains(key)) << key << " is accepted but not in accepted_keys()";
  for (const auto& key : table) EXPECT_TRUE(schema.contains(key)) << key << " is in accepted_keys() but not accepted";
  EXPECT_GT(schema.size(), 60u);
}

// ---- effects ----

struct Change {
  std::string before;  // a config document without the key (or with another value)
  std::string after;   // the same with the key set
};

const std::string kTs = "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}]}}\n";
const std::string kMpsRoot = "flags: {mpsRoot: /run/mps}\n";
std::string group(const std::string& extra) {
  return "kgpu: {deviceGroups: [{resource: example.com/rdma, devices: [/dev/infiniband/uverbs*]" + extra + "}]}\n";
}
std::string ts(const std::string& block_extra, const std::string& entry_extra) {
  return "sharing: {timeSlicing: {" + block_extra + "resources: [{name: gpu, replicas: 2" + entry_extra + "}]}}\n";
}
std::string mps(const std::string& block_extra, const std::string& entry_extra) {
  return kMpsRoot + "sharing: {mps: {" + block_extra + "resources: [{name: gpu, replicas: 2" + entry_extra + "}]}}\n";
}

const std::map<std::string, Change>& changes() {
  static const std::map<std::string, Change> all = {
      {"flags.migStrategy", {"", "flags: {migStrategy: mixed}\n"}},
      // sharing.mps without a root is an error (issue 30, item 11): the change is where it is.
      {"flags.mpsRoot", {mps("", ""), "flags: {mpsRoot: /var/lib/kgpu-mps}\n" + mps("", "").substr(kMpsRoot.size())}},
      {"flags.nvidiaDriverRoot",
       {"flags: {plugin: {passDeviceSpecs: true}}\n", "flags: {nvidiaDriverRoot: /driver, plugin: {passDeviceSpecs: true}}\n"}},
      {"flags.nvidiaDevRoot",
       {"flags: {plugin: {passDeviceSpecs: true}}\n", "flags: {nvidiaDevRoot: /host, plugin: {passDeviceSpecs: true}}\n"}},
      {"flags.gdsEnabled", {"", "flags: {gdsEnabled: true}\n"}},
      {"flags.mofedEnabled", {"", "flags: {mofedEnabled: true}\n"}},
      {"flags.gdrcopyEnabled", {"", "flags: {gdrcopyEnabled: true}\n"}},
      {"flags.plugin.passDeviceSpecs", {"", "flags: {plugin: {passDeviceSpecs: true}}\n"}},
      {"flags.plugin.deviceListStrategy", {"", "flags: {plugin: {deviceListStrategy: volume-mounts}}\n"}},
      {"flags.plugin.deviceIDStrategy", {"", "flags: {plugin: {deviceIDStrategy: index}}\n"}},
      {"flags.plugin.cdiAnnotationPrefix",
       {"flags: {plugin: {deviceListStrategy: cdi-annotations}}\n",
        "flags: {plugin: {deviceListStrategy: cdi-annotations, cdiAnnotationPrefix: example.com/}}\n"}},
      {"flags.plugin.sharedDevicesAllocationPolicy",
       {kTs, kTs + "flags: {plugin: {sharedDevicesAllocationPolicy: packed}}\n"}},
      {"flags.gfd.noTimestamp", {"", "flags: {gfd: {noTimestamp: true}}\n"}},
      {"resources.gpus[].pattern",
       {"resources: {gpus: [{pattern: 'H100*', name: big}]}\n", "resources: {gpus: [{pattern: '*A100*', name: big}]}\n"}},
      {"resources.gpus[].name",
       {"resources: {gpus: [{pattern: '*A100*', name: big}]}\n", "resources: {gpus: [{pattern: '*A100*', name: huge}]}\n"}},
      {"resources.mig[].pattern",
       {"flags: {migStrategy: mixed}\nresources: {mig: [{pattern: 7g*, name: small}]}\n",
        "flags: {migStrategy: mixed}\nresources: {mig: [{pattern: 1g*, name: small}]}\n"}},
      {"resources.mig[].name",
       {"flags: {migStrategy: mixed}\nresources: {mig: [{pattern: 1g*, name: small}]}\n",
        "flags: {migStrategy: mixed}\nresources: {mig: [{pattern: 1g*, name: tiny}]}\n"}},
      {"sharing.timeSlicing.renameByDefault", {ts("", ""), ts("renameByDefault: true, ", "")}},
      {"sharing.timeSlicing.failRequestsGreaterThanOne", {ts("", ""), ts("failRequestsGreaterThanOne: true, ", "")}},
      {"sharing.timeSlicing.resources[].name",
       {"sharing: {timeSlicing: {resources: [{name: example.com/none, replicas: 2}]}}\n", ts("", "")}},
      {"sharing.timeSlicing.resources[].rename", {ts("", ""), ts("", ", rename: gpu-shared")}},
      {"sharing.timeSlicing.resources[].replicas",
       {ts("", ""), "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 3}]}}\n"}},
      {"sharing.timeSlicing.resources[].devices", {ts("", ""), ts("", ", devices: [0]")}},
      {"sharing.mps.renameByDefault", {mps("", ""), mps("renameByDefault: true, ", "")}},
      {"sharing.mps.failRequestsGreaterThanOne", {mps("", ""), mps("failRequestsGreaterThanOne: false, ", "")}},
      {"sharing.mps.resources[].name",
       {kMpsRoot + "sharing: {mps: {resources: [{name: example.com/none, replicas: 2}]}}\n", mps("", "")}},
      {"sharing.mps.resources[].rename", {mps("", ""), mps("", ", rename: gpu-mps")}},
      {"sharing.mps.resources[].replicas",
       {mps("", ""), kMpsRoot + "sharing: {mps: {resources: [{name: gpu, replicas: 3}]}}\n"}},
      {"sharing.mps.resources[].devices", {mps("", ""), mps("", ", devices: [0]")}},
      {"kgpu.cdiKind",
       {"flags: {plugin: {deviceListStrategy: cdi-cri}}\n",
        "flags: {plugin: {deviceListStrategy: cdi-cri}}\nkgpu: {cdiKind: example.com/gpu}\n"}},
      {"kgpu.migAllocationPolicy",
       {"flags: {migStrategy: mixed}\n", "flags: {migStrategy: mixed}\nkgpu: {migAllocationPolicy: same-parent}\n"}},
      {"kgpu.deviceGroups[].resource",
       {group(""), "kgpu: {deviceGroups: [{resource: example.com/verbs, devices: [/dev/infiniband/uverbs*]}]}\n"}},
      {"kgpu.deviceGroups[].devices",
       {group(""), "kgpu: {deviceGroups: [{resource: example.com/rdma, devices: [/dev/fpga*-mgmt]}]}\n"}},
      {"kgpu.deviceGroups[].sharedDevices", {group(""), group(", sharedDevices: [/dev/infiniband/rdma_cm]")}},
      {"kgpu.deviceGroups[].replicas", {group(""), group(", replicas: 4")}},
      {"kgpu.deviceGroups[].permissions", {group(""), group(", permissions: r")}},
      {"kgpu.deviceGroups[].mounts[].containerPath",
       {group(", mounts: [{containerPath: /a, hostPath: /a}]"), group(", mounts: [{containerPath: /b, hostPath: /a}]")}},
      {"kgpu.deviceGroups[].mounts[].hostPath",
       {group(", mounts: [{containerPath: /a, hostPath: /a}]"), group(", mounts: [{containerPath: /a, hostPath: /b}]")}},
      {"kgpu.deviceGroups[].mounts[].readOnly",
       {group(", mounts: [{containerPath: /a, hostPath: /a}]"),
        group(", mounts: [{containerPath: /a, hostPath: /a, readOnly: false}]")}},
      {"kgpu.deviceGroups[].env", {group(""), group(", env: {RDMA_SHARED: '1'}")}},
      {"kgpu.deviceGroups[].sysfs[].path",
       {group(", sysfs: [{path: /class/infiniband_verbs/uverbs*/device/vendor, equals: '0x15b3'}]"),
        group(", sysfs: [{path: /class/infiniband_verbs/uverbs*/device/device, equals: '0x15b3'}]")}},
      {"kgpu.deviceGroups[].sysfs[].equals",
       {group(", sysfs: [{path: /class/infiniband_verbs/uverbs*/device/vendor, equals: '0x15b3'}]"),
        group(", sysfs: [{path: /class/infiniband_verbs/uverbs*/device/vendor, equals: '0x8086'}]")}},
      // Daemon keys: the value reaches the Config the daemon runs with (their behaviour is tested
      // by the modules that read them).
      {"flags.failOnInitError", {"", "flags: {failOnInitError: false}\n"}},
      {"flags.plugin.nvidiaCTKPath", {"", "flags: {plugin: {nvidiaCTKPath: /x/ctk}}\n"}},
      {"flags.plugin.containerDriverRoot", {"", "flags: {plugin: {containerDriverRoot: /x}}\n"}},
      {"flags.gfd.oneshot", {"", "flags: {gfd: {oneshot: true}}\n"}},
      {"flags.gfd.sleepInterval", {"", "flags: {gfd: {sleepInterval: 30s}}\n"}},
      {"flags.gfd.outputFile", {"", "flags: {gfd: {outputFile: /x/labels}}\n"}},
      {"flags.gfd.machineTypeFile", {"", "flags: {gfd: {machineTypeFile: /x/product}}\n"}},
      {"kgpu.sysfsRoot", {"", "kgpu: {sysfsRoot: /x/sys}\n"}},
      {"kgpu.procRoot", {"", "kgpu: {procRoot: /x/proc}\n"}},
      {"kgpu.cdiSpecDir", {"", "kgpu: {cdiSpecDir: /x/cdi}\n"}},
      {"kgpu.metricsAddr", {"", "kgpu: {metricsAddr: ':9400'}\n"}},
      {"kgpu.gpuTelemetry", {"", "kgpu: {gpuTelemetry: false}\n"}},
      {"kgpu.backends", {"", "kgpu: {backends: [nvidia]}\n"}},
      {"kgpu.labels.enabled", {"", "kgpu: {labels: {enabled: true}}\n"}},
      {"kgpu.labels.keepOnExit", {"", "kgpu: {labels: {keepOnExit: true}}\n"}},
      {"kgpu.dra.enabled", {"", "kgpu: {dra: {enabled: true}}\n"}},
      {"kgpu.dra.devicePlugin",
       {"kgpu: {dra: {enabled: true}}\n", "kgpu: {dra: {enabled: true, devicePlugin: false}}\n"}},
      {"kgpu.dra.gpus", {"", "kgpu: {dra: {gpus: [0, GPU-1]}}\n"}},
      {"kgpu.dra.driver", {"", "kgpu: {dra: {driver: gpu.example.com}}\n"}},
      {"kgpu.dra.vendors", {"", "kgpu: {dra: {vendors: [nvidia, amd]}}\n"}},
      {"kgpu.dra.amdDriver", {"", "kgpu: {dra: {amdDriver: amd.example.com}}\n"}},
      {"kgpu.dra.intelDriver", {"", "kgpu: {dra: {intelDriver: intel.example.com}}\n"}},
      {"kgpu.dra.nvidiaSmiPath", {"", "kgpu: {dra: {nvidiaSmiPath: /x/nvidia-smi}}\n"}},
      {"kgpu.dra.deviceMetadata", {"", "kgpu: {dra: {deviceMetadata: true}}\n"}},
      {"kgpu.dra.mig.dynamic", {"", "kgpu: {dra: {mig: {dynamic: [all]}}}\n"}},
      {"kgpu.dra.noExecuteXids", {"", "kgpu: {dra: {noExecuteXids: [48, 79]}}\n"}},
      {"kgpu.dra.sharing.memory.gpus",
       {"", "flags: {mpsRoot: /run/mps}\nkgpu: {dra: {sharing: {memory: {gpus: [all]}}}}\n"}},
      {"kgpu.dra.sharing.memory.requestPolicy.default",
       {"", "kgpu: {dra: {sharing: {memory: {requestPolicy: {default: 2Gi}}}}}\n"}},
      {"kgpu.dra.sharing.memory.requestPolicy.min", {"", "kgpu: {dra: {sharing: {memory: {requestPolicy: {min: 2Gi}}}}}\n"}},
      {"kgpu.dra.sharing.memory.requestPolicy.step",
       {"", "kgpu: {dra: {sharing: {memory: {requestPolicy: {step: 2Gi}}}}}\n"}},
      {"kgpu.dra.sharing.memory.multiprocessorsDefault",
       {"", "kgpu: {dra: {sharing: {memory: {multiprocessorsDefault: 4}}}}\n"}},
      {"kgpu.dra.sharing.memory.activeThreadPercentage",
       {"", "kgpu: {dra: {sharing: {memory: {activeThreadPercentage: 50}}}}\n"}},
      {"kgpu.dra.sharing.memory.oneNamespacePerGpu",
       {"", "kgpu: {dra: {sharing: {memory: {oneNamespacePerGpu: true}}}}\n"}},
      {"kgpu.health.enabled", {"", "kgpu: {health: {enabled: false}}\n"}},
      {"kgpu.health.xidsEnabled", {"", "kgpu: {health: {xidsEnabled: false}}\n"}},
      {"kgpu.health.ignoredXids", {"", "kgpu: {health: {ignoredXids: [1]}}\n"}},
      {"kgpu.health.xidActions", {"", "kgpu: {health: {xidActions: {79: ignore}}}\n"}},
      {"kgpu.health.recovery.enabled", {"", "kgpu: {health: {recovery: {enabled: false}}}\n"}},
      {"kgpu.health.recovery.probeIntervalMs", {"", "kgpu: {health: {recovery: {probeIntervalMs: 100}}}\n"}},
      {"kgpu.health.recovery.probeMaxIntervalMs",
       {"", "kgpu: {health: {recovery: {probeMaxIntervalMs: 120000}}}\n"}},
      {"kgpu.health.recovery.quietPeriodMs", {"", "kgpu: {health: {recovery: {quietPeriodMs: 1}}}\n"}},
      {"flags.useNodeFeatureAPI", {"", "flags: {useNodeFeatureAPI: true}\n"}},
      // Compatibility-only keys: accepted without an error.
      {"version", {"", "version: v1\n"}},
      {"flags.deviceDiscoveryStrategy", {"", "flags: {deviceDiscoveryStrategy: nvml}\n"}},
      {"imex.channelIDs", {"", "imex: {channelIDs: [0]}\n"}},
      {"imex.required", {"", "imex: {required: true}\n"}},
  };
  return all;
}

Config load(const std::string& text) {
  const auto loaded = parse_config_text(text, "c.yaml", true);
  for (const auto& d : loaded.diagnostics)
    EXPECT_NE(d.severity, Diagnostic::Severity::Error) << text << format_diagnostic(d);
  return loaded.config;
}

// Two whole A100s and one with MIG (two 1g.5gb, one 2g.10gb), one more MIG A100 (two 1g.5gb), and
// an RDMA verbs device of the group "example.com/rdma".
Inventory node() {
  Gpu verbs;
  verbs.vendor = Vendor::Generic;
  verbs.index = 4;
  verbs.uuid = "uverbs0";
  verbs.device_nodes = {{"/dev/infiniband/uverbs0"}};
  verbs.attributes = {{"resource", "example.com/rdma"}};
  return inventory_of({a100(0), a100(1), a100_mig(2, {"1g.5gb", "1g.5gb", "2g.10gb"}),
                       a100_mig(3, {"1g.5gb", "1g.5gb"}), verbs});
}

// The Allocate answer for the first two IDs of every resource (one when it has one).
std::vector<std::string> edits_of(const Config& c, const Inventory& inv) {
  std::vector<std::string> out;
  for (const auto& r : plan(c, inv).resources) {
    std::vector<std::string> ids;
    for (size_t i = 0; i < std::min<size_t>(2, r.devices.size()); ++i) ids.push_back(r.devices[i].id);
    auto e = allocate(c, inv, r, ids);
    if (!e) {
      out.push_back(r.name + ": " + e.error().message);
      // Shared resources that refuse two replicas at once (MPS): the edits of one.
      if (ids.size() < 2) continue;
      e = allocate(c, inv, r, {ids.front()});
      if (!e) continue;
    }
    std::string s = r.name + ":";
    for (const auto& [k, v] : e->envs) s += " env " + k + "=" + v;
    for (const auto& m : e->mounts) s += " mount " + m.container_path + "<" + m.host_path + (m.read_only ? " ro" : " rw");
    for (const auto& d : e->devices) s += " dev " + d.container_path + "<" + d.host_path + " " + d.permissions;
    for (const auto& [k, v] : e->annotations) s += " ann " + k + "=" + v;
    for (const auto& n : e->cdi_devices) s += " cdi " + n;
    out.push_back(s);
  }
  return out;
}

// Two IDs preferred from every resource with at least four.
std::vector<std::vector<std::string>> preferences_of(const Config& c, const Inventory& inv) {
  std::vector<std::vector<std::string>> out;
  for (const auto& r : plan(c, inv).resources) {
    if (r.devices.size() < 4) continue;
    std::vector<std::string> ids;
    for (const auto& d : r.devices) ids.push_back(d.id);
    auto chosen = preferred_allocation(c, inv, r, ids, {}, 2);
    out.push_back(chosen ? *chosen : std::vector<std::string>{chosen.error().message});
  }
  return out;
}

Labels labels_of(const Config& c, const Inventory& inv) {
  LabelContext context;
  context.timestamp = 1700000000;
  return node_labels(c, inv, plan(c, inv), context);
}

std::vector<std::string> discovered(const Config& c) {
  const SysfsRoots roots{std::string(KGPU_SYSFS_FIXTURES_DIR) + "/rdma/sys", std::string(KGPU_SYSFS_FIXTURES_DIR) + "/rdma"};
  auto inv = discover_generic(c.device_groups, roots);
  std::vector<std::string> out;
  if (!inv) return {inv.error().message};
  for (const auto& g : inv->gpus) out.push_back(g.uuid + " " + g.attributes.at("resource"));
  return out;
}

TEST(AcceptedKeys, EveryKeyHasTheEffectTheTableClaims) {
  const Inventory inv = node();
  for (const auto& k : accepted_keys()) {
    const std::string key(k.key);
    SCOPED_TRACE(key + " (" + to_string(k.effect) + ")");
    EXPECT_FALSE(k.what.empty());
    const auto change = changes().find(key);
    ASSERT_NE(change, changes().end()) << "no test change for " << key;
    const Config before = load(change->second.before), after = load(change->second.after);
    switch (k.effect) {
      case KeyEffect::Plan: EXPECT_NE(plan(before, inv), plan(after, inv)); break;
      case KeyEffect::Edits: EXPECT_NE(edits_of(before, inv), edits_of(after, inv)); break;
      case KeyEffect::Preference: EXPECT_NE(preferences_of(before, inv), preferences_of(after, inv)); break;
      case KeyEffect::Labels: EXPECT_NE(labels_of(before, inv), labels_of(after, inv)); break;
      case KeyEffect::Discovery: EXPECT_NE(discovered(before), discovered(after)); break;
      case KeyEffect::Daemon: EXPECT_NE(before, after); break;
      case KeyEffect::CompatibilityOnly:
        // Accepted (load() checks there is no error) and changes nothing kgpu computes.
        EXPECT_EQ(plan(before, inv), plan(after, inv));
        EXPECT_EQ(edits_of(before, inv), edits_of(after, inv));
        EXPECT_EQ(labels_of(before, inv), labels_of(after, inv));
        break;
    }
  }
}

// The one table in the docs: docs/operations.md lists exactly the compatibility-only keys.
TEST(AcceptedKeys, CompatibilityOnlyKeysAreDocumented) {
  std::ifstream in(std::string(KGPU_SOURCE_DIR) + "/docs/operations.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const auto start = doc.find("<!-- compatibility-only keys -->");
  ASSERT_NE(start, std::string::npos) << "docs/operations.md has no compatibility-only key table";
  const auto end = doc.find("<!-- end compatibility-only keys -->", start);
  ASSERT_NE(end, std::string::npos);
  const std::string table = doc.substr(start, end - start);
  size_t listed = 0;
  for (const auto& k : accepted_keys()) {
    const bool in_table = table.find("`" + std::string(k.key) + "`") != std::string::npos;
    EXPECT_EQ(in_table, k.effect == KeyEffect::CompatibilityOnly) << k.key;
    listed += in_table;
  }
  EXPECT_GT(listed, 0u);
}

}  // namespace
}  // namespace kgpu
