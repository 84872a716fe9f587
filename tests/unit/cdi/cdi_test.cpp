// CDI: the driver-root scan against a fixture, the spec parsed back and checked edit by edit
// against the inventory and the fixture, and the atomic writer.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cdi/cdi.h"
#include "cdi/driver_files.h"
#include "cdi/spec_builder.h"
#include "cdi/spec_writer.h"
#include "unit/edits/inventories.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kDriverRoot = std::string(KGPU_FIXTURES_DIR) + "/driver-root";
const std::string kVersion = "550.54.15";

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kgpu-cdi-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(DriverFiles, FindsTheFilesOfTheDriverVersion) {
  auto files = find_driver_files(kDriverRoot, kDriverRoot, kVersion);
  ASSERT_TRUE(files.ok()) << files.error().message;
  EXPECT_EQ(files->library_dir, "/usr/lib/x86_64-linux-gnu");
  EXPECT_EQ(files->libraries, (std::vector<std::string>{
                                  "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15",
                                  "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15",
                                  "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.550.54.15",
                                  "/usr/lib/x86_64-linux-gnu/vdpau/libvdpau_nvidia.so.550.54.15",
                              }));
  EXPECT_EQ(files->binaries, (std::vector<std::string>{"/usr/bin/nvidia-smi", "/usr/bin/nvidia-persistenced",
                                                       "/usr/bin/nvidia-cuda-mps-control"}));
  EXPECT_EQ(files->firmware, (std::vector<std::string>{"/lib/firmware/nvidia/550.54.15/gsp_ga10x.bin",
                                                       "/lib/firmware/nvidia/550.54.15/gsp_tu10x.bin"}));
  EXPECT_EQ(files->ipc_sockets, std::vector<std::string>{"/run/nvidia-persistenced/socket"});
  EXPECT_EQ(files->control_nodes,
            (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}));
}

TEST(DriverFiles, MissingDriverVersionIsAnError) {
  auto files = find_driver_files(kDriverRoot, kDriverRoot, "999.1");
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.error().code, Error::Code::NotFound);
  EXPECT_NE(files.error().message.find("libcuda.so.999.1 not found"), std::string::npos);
  EXPECT_FALSE(find_driver_files(kDriverRoot, kDriverRoot, "").ok());
}

// Every host path in the spec must exist in the fixture (files) or be a device node of the
// inventory under the dev root, and every container path must map back to its host path.
TEST(CdiSpec, ParsedBackMatchesInventoryAndDriverRoot) {
  Config config;
  config.nvidia_driver_root = kDriverRoot;
  Inventory inventory = testing::mig_node();
  auto files = find_driver_files(kDriverRoot, kDriverRoot, kVersion);
  ASSERT_TRUE(files.ok());
  const json spec = json::parse(build_cdi_spec(config, inventory, *files).dump());

  EXPECT_EQ(spec.at("cdiVersion"), "0.5.0");
  EXPECT_EQ(spec.at("kind"), "k8s.device-plugin.nvidia.com/gpu");

  std::map<std::string, std::vector<std::string>> nodes_by_device;
  for (const auto& device : spec.at("devices")) {
    std::vector<std::string> paths;
    for (const auto& node : device.at("containerEdits").at("deviceNodes")) {
      const std::string path = node.at("path");
      EXPECT_EQ(node.at("hostPath"), kDriverRoot + path);
      EXPECT_EQ(node.at("permissions"), "rw");
      paths.push_back(path);
    }
    EXPECT_TRUE(nodes_by_device.emplace(device.at("name"), paths).second) << "duplicate " << device.at("name");
  }
  const auto& gpus = inventory.gpus;
  std::map<std::string, std::vector<std::string>> expected = {
      {gpus[0].uuid, {"/dev/nvidia2"}},
      {gpus[0].mig_devices[0].uuid, {"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"}},
      {gpus[0].mig_devices[1].uuid, {"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"}},
      {gpus[1].uuid, {"/dev/nvidia3"}},
      {"all",
       {"/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13",
        "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22", "/dev/nvidia3"}},
  };
  EXPECT_EQ(nodes_by_device, expected);

  const json& common = spec.at("containerEdits");
  EXPECT_EQ(common.at("env"), json::array({"NVIDIA_VISIBLE_DEVICES=void"}));
  std::vector<std::string> control;
  for (const auto& node : common.at("deviceNodes")) control.push_back(node.at("path"));
  // The scan found no nvidia-modeset in the fixture, so it is not in the spec.
  EXPECT_EQ(control, (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}));

  std::set<std::string> mounted;
  for (const auto& mount : common.at("mounts")) {
    const std::string container = mount.at("containerPath");
    const std::string host = mount.at("hostPath");
    EXPECT_EQ(host, kDriverRoot + container);
    EXPECT_TRUE(fs::exists(host)) << host;
    EXPECT_EQ(mount.at("options"), json::array({"ro", "nosuid", "nodev", "bind"}));
    mounted.insert(container);
  }
  EXPECT_TRUE(mounted.count("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"));
  EXPECT_TRUE(mounted.count("/usr/bin/nvidia-smi"));
  EXPECT_TRUE(mounted.count("/run/nvidia-persistenced/socket"));
  EXPECT_TRUE(mounted.count("/lib/firmware/nvidia/550.54.15/gsp_ga10x.bin"));
  EXPECT_FALSE(mounted.count("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
  EXPECT_FALSE(mounted.count("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05"));
  EXPECT_FALSE(mounted.count("/usr/bin/unrelated-tool"));
  EXPECT_EQ(mounted.size(), 4u + 3u + 2u + 1u);

  const json& hooks = common.at("hooks");
  ASSERT_EQ(hooks.size(), 2u);
  for (const auto& h : hooks) {
    EXPECT_EQ(h.at("hookName"), "createContainer");
    EXPECT_EQ(h.at("path"), "/usr/bin/nvidia-ctk");
  }
  EXPECT_EQ(hooks[1].at("args"),
            json::array({"nvidia-ctk", "hook", "update-ldcache", "--folder", "/usr/lib/x86_64-linux-gnu"}));
}

TEST(CdiSpec, DevicesNamedByTheIndexStrategyAndKind) {
  Config config;
  config.device_id_strategy = DeviceIdStrategy::Index;
  config.cdi_kind = "example.com/accel";
  config.nvidia_ctk_path = "/opt/hook";
  json spec = build_cdi_spec(config, testing::mig_node(), DriverFiles{});
  std::vector<std::string> names;
  for (const auto& d : spec.at("devices")) names.push_back(d.at("name"));
  EXPECT_EQ(names, (std::vector<std::string>{"0", "0:0", "0:1", "1", "all"}));
  EXPECT_EQ(spec.at("kind"), "example.com/accel");
  // Nothing scanned: the control nodes come from the inventory (here all four), no hooks.
  EXPECT_EQ(spec.at("containerEdits").at("deviceNodes").size(), 4u);
  EXPECT_TRUE(spec.at("containerEdits").at("hooks").empty());
}

TEST(CdiSpec, NonNvidiaDevicesAreLeftOut) {
  Inventory inventory = testing::two_gpu_node();
  inventory.gpus[1].vendor = Vendor::Amd;
  json spec = build_cdi_spec(Config{}, inventory, DriverFiles{});
  ASSERT_EQ(spec.at("devices").size(), 2u);
  EXPECT_EQ(spec.at("devices")[0].at("name"), inventory.gpus[0].uuid);
  EXPECT_EQ(spec.at("devices")[1].at("name"), "all");
}

TEST(CdiWriter, WritesAtomicallyWithMode0644AndRemovesStaleSpecs) {
  TempDir dir;
  // A spec kgpu wrote for an earlier kind: its kind maps back to its name.
  std::ofstream(dir.path() + "/kgpu-old.example.com-gpu.json")
      << R"({"cdiVersion":"0.5.0","kind":"old.example.com/gpu"})";
  std::ofstream(dir.path() + "/other-vendor.json") << "{}";
  ::umask(077);  // the writer must not depend on the process umask
  auto written = write_cdi_spec(dir.path(), "k8s.device-plugin.nvidia.com/gpu", json{{"kind", "x"}});
  ::umask(022);
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(*written, dir.path() + "/kgpu-k8s.device-plugin.nvidia.com-gpu.json");
  struct stat st {};
  ASSERT_EQ(::stat(written->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  std::ifstream in(*written);
  EXPECT_EQ(json::parse(in), (json{{"kind", "x"}}));
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path())) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"kgpu-k8s.device-plugin.nvidia.com-gpu.json", "other-vendor.json"}));
}

TEST(CdiWriter, UnwritableFolderIsAnError) {
  auto written = write_cdi_spec("/proc/kgpu-cannot-exist", "a.com/b", json::object());
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error().code, Error::Code::Unavailable);
}

TEST(CdiGenerate, ScansTheContainerDriverRootAndWritesTheSpec) {
  TempDir dir;
  Config config;
  config.nvidia_driver_root = "/run/nvidia/driver";
  config.container_driver_root = kDriverRoot;
  config.cdi_spec_dir = dir.path();
  ASSERT_EQ(cdi_scan_root(config), kDriverRoot);
  auto written = generate_cdi_spec(config, testing::two_gpu_node());
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_TRUE(written->warnings.empty());
  std::ifstream in(written->path);
  json spec = json::parse(in);
  // Discovered inside the container, written with host paths.
  EXPECT_EQ(spec.at("containerEdits").at("mounts")[0].at("hostPath"),
            "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15");
  EXPECT_EQ(spec.at("devices")[0].at("containerEdits").at("deviceNodes")[0].at("hostPath"),
            "/run/nvidia/driver/dev/nvidia0");
}

// Issue 13: "the CDI writer deletes any kgpu-* file in whatever folder cdiSpecDir names". Only a
// regular kgpu-*.json holding a CDI spec whose kind maps to its name is ours.
TEST(CdiWriter, LeavesFilesItDidNotWriteAlone) {
  TempDir dir;
  TempDir elsewhere;
  const std::string victim = elsewhere.path() + "/kgpu-victim.example.com-gpu.json";
  std::ofstream(victim) << R"({"cdiVersion":"0.5.0","kind":"victim.example.com/gpu"})";
  const std::set<std::string> foreign = {
      "kgpu-notes.json",                   // not a CDI spec
      "kgpu-settings.yaml",                // kgpu never writes YAML specs
      "kgpu-other.example.com-gpu.json",   // a spec, but of another kind than its name says
      "kgpu-victim.example.com-gpu.json",  // a link to a spec elsewhere
  };
  std::ofstream(dir.path() + "/kgpu-notes.json") << "operator notes";
  std::ofstream(dir.path() + "/kgpu-settings.yaml") << "a: 1";
  std::ofstream(dir.path() + "/kgpu-other.example.com-gpu.json") << R"({"cdiVersion":"0.5.0","kind":"x.com/y"})";
  fs::create_symlink(victim, dir.path() + "/kgpu-victim.example.com-gpu.json");
  ASSERT_TRUE(write_cdi_spec(dir.path(), "a.com/b", json{{"cdiVersion", "0.5.0"}, {"kind", "a.com/b"}}).ok());
  std::set<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path())) left.insert(e.path().filename().string());
  std::set<std::string> expected = foreign;
  expected.insert("kgpu-a.com-b.json");
  EXPECT_EQ(left, expected);
  EXPECT_TRUE(fs::exists(victim));
}

// Issue 20 item 1: a link planted at the writer's old, pid-derived temporary name.
TEST(CdiWriter, LinkAtTheOldTemporaryNameLeavesItsTargetAlone) {
  TempDir dir;
  TempDir elsewhere;
  const std::string victim = elsewhere.path() + "/shadow";
  std::ofstream(victim) << "root:x:0:0\n";
  ::chmod(victim.c_str(), 0600);
  fs::create_symlink(victim, dir.path() + "/.kgpu-a.com-b.json." + std::to_string(::getpid()) + ".tmp");
  auto written = write_cdi_spec(dir.path(), "a.com/b", json{{"kind", "a.com/b"}});
  ASSERT_TRUE(written.ok()) << written.error().message;
  std::ifstream in(victim);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "root:x:0:0");
  struct stat st {};
  ASSERT_EQ(::stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// Issue 13 item 4: a driver file whose name is not UTF-8 made dump() throw: a crash loop at every
// start with a cdi-* strategy on. Such names are skipped with a warning showing the bytes escaped.
TEST(CdiGenerate, DriverFileNameThatIsNotUtf8IsSkippedWithAWarning) {
  TempDir root;
  TempDir out;
  fs::copy(kDriverRoot, root.path(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const std::string lib_dir = root.path() + "/usr/lib/x86_64-linux-gnu";
  std::ofstream(lib_dir + "/libx\xff.so." + kVersion) << "";
  auto files = find_driver_files(root.path(), root.path(), kVersion);
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->warnings.size(), 1u);
  EXPECT_NE(files->warnings[0].find("libx\\xff.so." + kVersion), std::string::npos) << files->warnings[0];
  for (const auto& lib : files->libraries) EXPECT_EQ(lib.find("libx"), std::string::npos) << lib;

  Config config;
  config.nvidia_driver_root = root.path();
  config.cdi_spec_dir = out.path();
  auto written = generate_cdi_spec(config, testing::two_gpu_node());
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(written->warnings, files->warnings);
  std::ifstream in(written->path);
  EXPECT_FALSE(json::parse(in, nullptr, false).is_discarded());
}

TEST(CdiSpec, TextOfAStringThatIsNotUtf8DoesNotThrow) {
  std::string text;
  EXPECT_NO_THROW(text = cdi_spec_text(json{{"hostPath", "/opt/driver\xe9/lib"}}));
  EXPECT_NE(text.find("/opt/driver\xef\xbf\xbd/lib"), std::string::npos) << text;  // U+FFFD
}

}  // namespace
}  // namespace kgpu
