// End to end against the real CDI library: the CDI specs the real `kgpu plugin` writes — the
// device-plugin spec (cdi-cri, cdi-annotations) and a DRA claim's spec — judged by
// kgpu-cdi-check (tests/interop/cdi), a Go program on the CDI project's own package (Debian's
// golang-github-container-orchestrated-devices-container-device-interface-dev 0.5.2), the code
// containerd, CRI-O and podman read specs with. The specs must load without one error, the names
// kgpu hands the kubelet must resolve, and injecting them into an empty OCI spec must give the
// device nodes, driver mounts, hooks and environment a container should get.
//
// What cannot be checked here: the library stats a device node's host path for its type and
// numbers, and the fixture nodes are regular files (real ones need privileges). The tests first
// show the library refusing them ("not a device node", naming the host path kgpu wrote), then let
// the checker stand in for exactly those (--fake-nodes: type c, major -1) so the rest of the
// injection is still the library's own. DeviceNumbersComeFromTheHostNode shows the stat on a real
// node (/dev/null).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "e2e/sim_fixture.h"
#include "sim/dra_kubelet_sim.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const std::string kGpu = "nvidia.com/gpu";
const std::string kDriver = "gpu.nvidia.com";
const std::string kDriverVersion = "550.54.15";  // tests/fixtures/driver-root and the DGX A100 fleet
const std::string kCtk = "/opt/hooks/nvidia-ctk";
const std::regex kGpuNode("/dev/nvidia[0-9]+");

std::string cdi_check() { return KGPU_CDI_CHECK; }
std::string driver_root() { return std::string(KGPU_FIXTURES_DIR) + "/driver-root"; }
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// One run of kgpu-cdi-check: exit status, its JSON report and its stderr.
struct CdiReport {
  int rc = -1;
  json report;
  std::string log;

  std::string describe() const { return "kgpu-cdi-check exit " + std::to_string(rc) + "\n" + report.dump(1) + "\n" + log; }
  const json& oci() const {
    static const json none = json::object();
    return report.contains("oci") ? report["oci"] : none;
  }
  std::vector<std::string> env() const {
    std::vector<std::string> out;
    if (oci().contains("process"))
      for (const auto& e : oci()["process"].value("env", json::array())) out.push_back(e.get<std::string>());
    return out;
  }
  // Container path -> the OCI linux device.
  std::map<std::string, json> devices() const {
    std::map<std::string, json> out;
    if (oci().contains("linux"))
      for (const auto& d : oci()["linux"].value("devices", json::array())) out[d.value("path", "")] = d;
    return out;
  }
  std::set<std::string> gpu_nodes() const {
    std::set<std::string> out;
    for (const auto& [path, d] : devices())
      if (std::regex_match(path, kGpuNode)) out.insert(path);
    return out;
  }
  // Destination -> the OCI mount.
  std::map<std::string, json> mounts() const {
    std::map<std::string, json> out;
    for (const auto& m : oci().value("mounts", json::array())) out[m.value("destination", "")] = m;
    return out;
  }
  json hooks(const std::string& name) const {
    return oci().contains("hooks") ? oci()["hooks"].value(name, json::array()) : json::array();
  }
  std::set<std::string> known() const {
    std::set<std::string> out;
    for (const auto& d : report.value("devices", json::array())) out.insert(d.get<std::string>());
    return out;
  }
  bool spec_errors() const { return !report.value("specErrors", json::object()).empty(); }
};

class CdiInteropE2E : public SimE2E {
 protected:
  void SetUp() override {
    if (cdi_check().empty())
      GTEST_SKIP() << "kgpu-cdi-check was not built (no Go or "
                      "golang-github-container-orchestrated-devices-container-device-interface-dev; CI builds it "
                      "with -DKGPU_CDI_INTEROP=ON)";
    SimE2E::SetUp();
  }

  CdiReport check(const std::vector<std::string>& spec_dirs, const std::vector<std::string>& names, bool fake_nodes,
                  const std::vector<std::string>& annotations = {}) {
    static int runs = 0;
    ProcessOptions p;
    p.argv = {cdi_check()};
    for (const auto& d : spec_dirs) p.argv.insert(p.argv.end(), {"--spec-dir", d});
    for (const auto& n : names) p.argv.insert(p.argv.end(), {"--device", n});
    for (const auto& a : annotations) p.argv.insert(p.argv.end(), {"--annotation", a});
    if (fake_nodes) p.argv.push_back("--fake-nodes");
    ChildProcess run(p, work.path(), "cdi-check-" + std::to_string(runs++));
    CdiReport out;
    auto rc = run.wait_exit(60s);
    out.rc = rc.value_or(-1);
    out.log = run.stderr_text();
    out.report = json::parse(run.stdout_text(), nullptr, /*allow_exceptions=*/false);
    if (out.report.is_discarded()) out.report = json::object({{"unparsed stdout", run.stdout_text()}});
    return out;
  }

  // The library refuses the fixture's regular files as device nodes, naming the host path kgpu
  // wrote: that path lies under `host_root`.
  void expect_refused_as_no_device_node(const CdiReport& r, const std::string& host_root) {
    EXPECT_EQ(r.rc, 3) << r.describe();
    const std::string error = r.report.value("injectError", "");
    EXPECT_TRUE(contains(error, "failed to stat CDI host device \"" + host_root)) << r.describe();
    EXPECT_TRUE(contains(error, "not a device node")) << r.describe();
  }

  // The driver's files from the fixture driver root, as a container gets them from a spec.
  static void expect_driver_files(const CdiReport& r) {
    const auto devices = r.devices();
    for (const std::string node : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}) {
      ASSERT_TRUE(devices.count(node)) << node << "\n" << r.describe();
      EXPECT_EQ(devices.at(node).value("type", ""), "c") << node;
    }
    const auto mounts = r.mounts();
    for (const std::string& file : {"/usr/lib/x86_64-linux-gnu/libcuda.so." + kDriverVersion, std::string("/usr/bin/nvidia-smi"),
                                   "/lib/firmware/nvidia/" + kDriverVersion + "/gsp_ga10x.bin"}) {
      ASSERT_TRUE(mounts.count(file)) << file << "\n" << r.describe();
      const auto& m = mounts.at(file);
      // The host's path (the driver root is / on the host), bind-mounted read-only.
      EXPECT_EQ(m.value("source", ""), file);
      const auto options = m.value("options", std::vector<std::string>{});
      for (const std::string o : {"ro", "bind", "nosuid", "nodev"})
        EXPECT_NE(std::find(options.begin(), options.end(), o), options.end()) << file << " lacks " << o;
    }
    // The distractors stay out: another version's library, an unversioned one, an unrelated tool.
    EXPECT_FALSE(mounts.count("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05")) << r.describe();
    EXPECT_FALSE(mounts.count("/usr/bin/unrelated-tool")) << r.describe();
    const auto hooks = r.hooks("createContainer");
    ASSERT_FALSE(hooks.empty()) << r.describe();
    std::set<std::string> subcommands;
    for (const auto& h : hooks) {
      EXPECT_EQ(h.value("path", ""), kCtk) << h.dump();
      const auto args = h.value("args", std::vector<std::string>{});
      ASSERT_GE(args.size(), 3u) << h.dump();
      EXPECT_EQ(args[0], "nvidia-ctk");
      EXPECT_EQ(args[1], "hook");
      subcommands.insert(args[2]);
    }
    EXPECT_TRUE(subcommands.count("create-symlinks")) << r.describe();
    EXPECT_TRUE(subcommands.count("update-ldcache")) << r.describe();
  }

  // Each injected device node has a cgroup rule allowing it (as the library derives them).
  static void expect_cgroup_rules(const CdiReport& r) {
    const auto rules = r.oci()["linux"]["resources"].value("devices", json::array());
    for (const auto& [path, d] : r.devices()) {
      bool allowed = std::any_of(rules.begin(), rules.end(), [&](const json& rule) {
        return rule.value("allow", false) && rule.value("type", "") == d.value("type", "") &&
               rule.value("major", int64_t{0}) == d.value("major", int64_t{0}) &&
               rule.value("minor", int64_t{0}) == d.value("minor", int64_t{0}) && rule.value("access", "") == "rw";
      });
      EXPECT_TRUE(allowed) << path << "\n" << r.describe();
    }
  }

  std::string cdi_dir = work.file("cdi");
};

// The device-plugin spec (cdi-cri: the names travel in the CRI's CDIDevices field) loads, the names
// Allocate returns resolve, and injecting them gives exactly those GPUs' nodes plus the driver's
// control nodes, libraries, binaries, firmware and hooks, with NVIDIA_VISIBLE_DEVICES=void.
TEST_F(CdiInteropE2E, DevicePluginSpecLoadsAndAllocatedNamesInjectTheirGpus) {
  PluginOptions options;
  options.extra_args = {"--device-list-strategy", "cdi-cri",  "--cdi-spec-dir", cdi_dir, "--container-driver-root",
                        driver_root(),            "--nvidia-ctk-path", kCtk};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return contains(plugin->stderr_text(), "cdi: wrote"); }, 20s)) << diagnostics(*plugin);
  const auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_GE(ids.size(), 2u);
  auto edits = sim->allocate(kGpu, {ids[0], ids[1]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  const auto& names = edits->cdi_devices;
  ASSERT_EQ(names.size(), 2u);

  // As a runtime would on this node: the fixture's nodes are no device nodes.
  expect_refused_as_no_device_node(check({cdi_dir}, names, false), work.path());

  const auto r = check({cdi_dir}, names, true);
  ASSERT_EQ(r.rc, 0) << r.describe();
  EXPECT_FALSE(r.spec_errors()) << r.describe();
  const auto known = r.known();
  for (const auto& id : ids) EXPECT_TRUE(known.count("k8s.device-plugin.nvidia.com/gpu=" + id)) << id << "\n" << r.describe();
  EXPECT_TRUE(known.count("k8s.device-plugin.nvidia.com/gpu=all")) << r.describe();

  // Exactly the two GPUs' nodes: the spec's common edits add none, and each is the node kgpu's
  // spec names for that UUID.
  std::set<std::string> expected;
  for (const auto& e : fs::directory_iterator(cdi_dir)) {
    const auto spec = json::parse(read_file(e.path()), nullptr, false);
    if (spec.is_discarded() || spec.value("kind", "") != "k8s.device-plugin.nvidia.com/gpu") continue;
    for (const auto& d : spec["devices"])
      if (d["name"] == ids[0] || d["name"] == ids[1])
        for (const auto& n : d["containerEdits"]["deviceNodes"]) expected.insert(n.value("path", ""));
  }
  EXPECT_EQ(expected.size(), 2u);
  EXPECT_EQ(r.gpu_nodes(), expected) << r.describe();
  for (const auto& node : r.gpu_nodes()) EXPECT_EQ(r.devices().at(node).value("type", ""), "c");
  expect_driver_files(r);
  expect_cgroup_rules(r);
  // Every stand-in was a regular file kgpu's spec points at; none is missing.
  for (const auto& n : r.report["hostNodes"]) {
    EXPECT_NE(n.value("hostKind", ""), "missing") << n.dump();
    EXPECT_EQ(n.value("hostPath", "").rfind(work.path(), 0), 0u) << n.dump();  // under the node's --dev-root
  }
  const auto env = r.env();
  EXPECT_NE(std::find(env.begin(), env.end(), "NVIDIA_VISIBLE_DEVICES=void"), env.end()) << r.describe();
}

// cdi-annotations: the annotation Allocate returns is read by the library's ParseAnnotations, as
// containerd reads it; its key follows the library's own key rules, and the names resolve.
TEST_F(CdiInteropE2E, DevicePluginAnnotationIsParsedAndItsNamesResolve) {
  PluginOptions options;
  options.extra_args = {"--device-list-strategy", "cdi-annotations", "--cdi-spec-dir", cdi_dir,
                        "--container-driver-root", driver_root()};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return contains(plugin->stderr_text(), "cdi: wrote"); }, 20s)) << diagnostics(*plugin);
  const auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_GE(ids.size(), 3u);
  auto edits = sim->allocate(kGpu, {ids[2], ids[0]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  ASSERT_EQ(edits->annotations.size(), 1u);
  const auto& [key, value] = *edits->annotations.begin();
  const auto r = check({cdi_dir}, {}, true, {key + "=" + value});
  ASSERT_EQ(r.rc, 0) << r.describe();
  EXPECT_FALSE(r.spec_errors()) << r.describe();
  EXPECT_EQ(r.report.value("annotationErrors", json::array()), json::array()) << r.describe();
  EXPECT_EQ(r.report.value("requested", json::array()),
            json::array({"k8s.device-plugin.nvidia.com/gpu=" + ids[2], "k8s.device-plugin.nvidia.com/gpu=" + ids[0]}))
      << r.describe();
  EXPECT_EQ(r.gpu_nodes().size(), 2u) << r.describe();
}

// A DRA claim's spec: it loads beside the others in the CDI folder, the IDs NodePrepareResources
// answers resolve, and injecting them gives the claim's GPU node, NVIDIA_VISIBLE_DEVICES=<its
// UUID>, and (issue 29, item 1) the driver's files and hooks, as a plain CDI runtime needs them.
TEST_F(CdiInteropE2E, DraClaimSpecLoadsAndPreparedIdsInjectTheClaimsGpuAndDriverFiles) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  PluginOptions options;
  options.env = {{"NODE_NAME", "node-1"}, {"KGPU_KUBE_API", api.url()}};
  // The device-plugin API keeps GPUs 2-7 and writes its spec into the same folder.
  options.extra_args = {"--dra", "--dra-gpus", "0,1", "--cdi-spec-dir", cdi_dir, "--container-driver-root",
                        driver_root(), "--nvidia-ctk-path", kCtk, "--device-list-strategy", "cdi-cri"};
  auto plugin = start(options);
  sim::DraKubeletSim kubelet(work.path(), 34);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);

  // The published device, its UUID and minor number.
  std::string device, uuid;
  int64_t minor = -1;
  auto published = [&] {
    for (const auto& [name, slice] : api.slices())
      if (slice["spec"].value("driver", "") == kDriver)
        for (const auto& d : slice["spec"].value("devices", json::array())) {
          device = d.value("name", "");
          uuid = d["attributes"]["uuid"].value("string", "");
          minor = d["attributes"].contains("minor") ? d["attributes"]["minor"].value("int", int64_t{-1}) : -1;
          return true;
        }
    return false;
  };
  ASSERT_TRUE(eventually(published, 20s)) << diagnostics(*plugin);
  ASSERT_FALSE(uuid.empty());
  ASSERT_GE(minor, 0);

  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", "train"}, {"namespace", "team-a"}, {"uid", "uid-cdi"}}},
                {"spec", {{"devices", {{"requests", json::array()}}}}},
                {"status",
                 {{"allocation",
                   {{"devices",
                     {{"results", {{{"request", "gpu"}, {"driver", kDriver}, {"pool", "node-1"}, {"device", device}}}},
                      {"config", json::array()}}}}}}}};
  api.put_resource_claim(claim);
  std::vector<std::string> ids;
  std::string error = "not prepared";
  auto prepared = [&] {  // as the kubelet does, until kgpu knows its devices
    auto answer = kubelet.prepare(kDriver, {{"team-a", "train", "uid-cdi"}});
    if (!answer) {
      error = answer.error().message;
      return false;
    }
    const auto& a = answer->at("uid-cdi");
    error = a.error;
    if (!error.empty()) return false;
    ids.clear();
    for (const auto& d : a.devices) ids.insert(ids.end(), d.cdi_device_ids.begin(), d.cdi_device_ids.end());
    return true;
  };
  ASSERT_TRUE(eventually(prepared, 20s)) << error << diagnostics(*plugin);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids[0], "k8s.gpu.nvidia.com/claim=uid-cdi-" + device);

  expect_refused_as_no_device_node(check({cdi_dir}, ids, false), work.path());

  const auto r = check({cdi_dir}, ids, true);
  ASSERT_EQ(r.rc, 0) << r.describe();
  EXPECT_FALSE(r.spec_errors()) << r.describe();
  EXPECT_TRUE(r.known().count(ids[0])) << r.describe();
  EXPECT_TRUE(r.known().count("k8s.device-plugin.nvidia.com/gpu=all")) << r.describe();
  EXPECT_EQ(r.gpu_nodes(), std::set<std::string>{"/dev/nvidia" + std::to_string(minor)}) << r.describe();
  const auto env = r.env();
  EXPECT_NE(std::find(env.begin(), env.end(), "NVIDIA_VISIBLE_DEVICES=" + uuid), env.end()) << r.describe();
  EXPECT_EQ(std::count_if(env.begin(), env.end(), [](const std::string& e) { return e.rfind("NVIDIA_VISIBLE_DEVICES=", 0) == 0; }), 1)
      << r.describe();
  expect_cgroup_rules(r);
  expect_driver_files(r);  // issue 29, item 1
}

// The checker can fail: a spec with a broken device is reported with the library's message (and
// its good neighbour still loads), a spec field the CDI schema lacks is refused (the library parses
// strictly), a name nothing defines does not resolve, and an annotation naming no qualified name
// is refused.
TEST_F(CdiInteropE2E, CheckerReportsBrokenSpecsAndUnknownNames) {
  const std::string broken = work.write("bad/broken.json", R"({
  "cdiVersion": "0.5.0",
  "kind": "example.com/gpu",
  "devices": [
    {"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/gpu0", "type": "x"}]}}
  ]
})");
  const std::string misspelt = work.write("bad/misspelt.json", R"({
  "cdiVersion": "0.5.0",
  "kind": "example.com/other",
  "devices": [{"name": "0", "containerEdits": {"deviceNode": [{"path": "/dev/gpu0"}]}}]
})");
  work.write("bad/good.json", R"({
  "cdiVersion": "0.5.0",
  "kind": "example.com/fine",
  "devices": [{"name": "0", "containerEdits": {"env": ["FINE=1"]}}]
})");
  const auto r = check({work.file("bad")}, {}, false);
  EXPECT_EQ(r.rc, 1) << r.describe();
  const auto errors = r.report.value("specErrors", json::object());
  ASSERT_TRUE(errors.contains(broken)) << r.describe();
  EXPECT_TRUE(contains(errors[broken].dump(), "invalid type \\\"x\\\"")) << r.describe();
  ASSERT_TRUE(errors.contains(misspelt)) << r.describe();
  EXPECT_TRUE(contains(errors[misspelt].dump(), "deviceNode")) << r.describe();
  EXPECT_EQ(r.known(), std::set<std::string>{"example.com/fine=0"}) << r.describe();

  const auto unknown = check({work.file("bad")}, {"example.com/fine=0", "example.com/fine=1"}, false);
  EXPECT_EQ(unknown.rc, 1) << unknown.describe();  // the spec errors come first
  EXPECT_EQ(unknown.report.value("unresolved", json::array()), json::array({"example.com/fine=1"})) << unknown.describe();
  EXPECT_TRUE(contains(unknown.report.value("injectError", ""), "unresolvable CDI devices")) << unknown.describe();

  // An annotation naming something that is no qualified CDI name.
  const auto annotated = check({work.file("bad")}, {}, false, {"cdi.k8s.io/kgpu_0123=fine"});
  EXPECT_TRUE(contains(annotated.report.value("annotationErrors", json::array()).dump(), "invalid CDI device name"))
      << annotated.describe();

  fs::remove(broken);
  fs::remove(misspelt);
  const auto alone = check({work.file("bad")}, {"example.com/fine=1"}, false);
  EXPECT_EQ(alone.rc, 2) << alone.describe();
  const auto bad_annotation = check({work.file("bad")}, {}, false, {"cdi.k8s.io/kgpu_0123=fine"});
  EXPECT_EQ(bad_annotation.rc, 2) << bad_annotation.describe();
  const auto fine = check({work.file("bad")}, {"example.com/fine=0"}, false);
  EXPECT_EQ(fine.rc, 0) << fine.describe();
  EXPECT_EQ(fine.env(), std::vector<std::string>{"FINE=1"}) << fine.describe();
}

// Where the host node is real, the library takes type and numbers from it, so what the checker
// stands in for on fixtures is exactly that stat: /dev/null is c 1:3.
TEST_F(CdiInteropE2E, DeviceNumbersComeFromTheHostNode) {
  work.write("real/real.json", R"({
  "cdiVersion": "0.5.0",
  "kind": "example.com/gpu",
  "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/gpu0", "hostPath": "/dev/null", "permissions": "rw"}]}}]
})");
  const auto r = check({work.file("real")}, {"example.com/gpu=0"}, true);
  ASSERT_EQ(r.rc, 0) << r.describe();
  const auto devices = r.devices();
  ASSERT_TRUE(devices.count("/dev/gpu0")) << r.describe();
  EXPECT_EQ(devices.at("/dev/gpu0").value("type", ""), "c");
  EXPECT_EQ(devices.at("/dev/gpu0").value("major", int64_t{0}), 1);
  EXPECT_EQ(devices.at("/dev/gpu0").value("minor", int64_t{0}), 3);
  EXPECT_FALSE(r.report["hostNodes"][0].value("standIn", true)) << r.describe();
  expect_cgroup_rules(r);
}

}  // namespace
}  // namespace kgpu::test
