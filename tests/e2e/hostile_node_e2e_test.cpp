// End to end on a hostile node (issue 20, issue 13 item 4): one plugin run that meets symlinks
// planted at the names it writes, a driver file whose name is not UTF-8, a labels folder that
// appears late (already holding planted links), a config folder removed and recreated, a FIFO, a
// directory and /dev/zero at the config path, a /dev folder that vanishes and comes back, and a
// feature file deleted behind its back. It must keep serving what is valid, write nothing outside
// its own files (the links' targets keep their content and mode), and exit cleanly.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "e2e/sim_fixture.h"

namespace kgpu::test {
namespace {

namespace fs = std::filesystem;

const std::string kGpu = "nvidia.com/gpu";
const std::string kAmd = "amd.com/gpu";
const std::string kAmdId = "0000:c1:00.0";
const std::string kDriverVersion = "535.161.08";  // pcie-t4x2.yaml
const std::string kSecret = "secret: not kgpu's\n";
const std::string kSpecName = "kgpu-k8s.device-plugin.nvidia.com-gpu.json";

mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode;
}

// Replaces a file the way editors and ConfigMap updates do: write a new file, rename it over.
void replace_file(const std::string& path, const std::string& content) {
  std::ofstream(path + ".new") << content;
  fs::rename(path + ".new", path);
}

class HostileNodeE2E : public SimE2E {
 protected:
  // A file a planted link points at: it must keep this content and mode 0600.
  std::string victim(const std::string& name) {
    const std::string path = work.write("victims/" + name, kSecret);
    ::chmod(path.c_str(), 0600);
    return path;
  }
  void expect_untouched(const std::string& path) {
    EXPECT_EQ(read_file(path), kSecret) << path;
    EXPECT_EQ(mode_of(path) & 07777, 0600u) << path;
  }
  // Applies `change` and waits until the daemon refuses a reload for the reason `why` (a part of
  // the error), once more than before the change.
  template <typename Change>
  bool refused(const ChildProcess& plugin, const std::string& why, Change change) {
    const std::string line = "keeping the current plan";
    auto refusals = [&] {
      size_t n = 0;
      std::string log = plugin.stderr_text();
      // The refusal's line, then its first diagnostic on the next one (issue 30, item 7).
      for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) {
        const size_t first_end = log.find('\n', at);
        const size_t end = first_end == std::string::npos ? first_end : log.find('\n', first_end + 1);
        n += log.substr(at, end == std::string::npos ? std::string::npos : end - at).find(why) != std::string::npos;
      }
      return n;
    };
    const size_t before = refusals();
    change();
    return wait_until([&] { return refusals() > before; }, 20s);
  }
  bool serving_gpus(size_t n) {
    auto snap = sim->snapshot();
    const auto* r = snap.find(kGpu);
    return r && r->connected && r->devices.size() == n && r->healthy_count() == n;
  }
};

TEST_F(HostileNodeE2E, KeepsServingWritesNothingOutsideItsFilesAndExitsCleanly) {
  // A private copy of the mixed NVIDIA + AMD node, so the test can take /dev/dri away.
  const std::string node = work.file("node");
  fs::copy(std::string(KGPU_SYSFS_FIXTURES_DIR) + "/mixed-nvidia-amd", node,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  // A driver root for the fleet's driver version, with a library whose name is not UTF-8 (issue
  // 13 item 4: dump() threw on it at every start, a crash loop).
  const std::string driver = work.file("driver");
  fs::copy(std::string(KGPU_FIXTURES_DIR) + "/driver-root", driver,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const std::string libs = driver + "/usr/lib/x86_64-linux-gnu";
  std::ofstream(libs + "/libcuda.so." + kDriverVersion) << "";
  std::ofstream(libs + "/libx\xff.so." + kDriverVersion) << "";
  // The CDI folder holds a file someone else named kgpu-*: not ours to delete.
  const std::string cdi = work.file("cdi");
  const std::string foreign = work.write("cdi/kgpu-operator-notes.json", "{\"note\": \"keep me\"}\n");
  const std::string config = work.write("conf/config.yaml", "version: v1\n");
  const std::string labels_dir = work.file("features.d");  // missing at start (item 9)
  const std::string labels = labels_dir + "/kgpu";
  const std::string labels_victim = victim("labels-victim");
  const std::string cdi_victim = victim("cdi-victim");

  PluginOptions options;
  options.fleet_file = "pcie-t4x2.yaml";
  options.node_dir = node;
  options.config_file = config;
  options.extra_args = {"--labels", "--output-file", labels, "--device-list-strategy", "cdi-annotations",
                        "--cdi-spec-dir", cdi, "--container-driver-root", driver};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 2)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_healthy(kAmd, 1)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("cdi: wrote") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  const std::string spec = read_file(cdi + "/" + kSpecName);
  EXPECT_EQ(spec.find("libx"), std::string::npos) << spec;
  EXPECT_NE(plugin->stderr_text().find("libx\\xff.so." + kDriverVersion), std::string::npos) << diagnostics(*plugin);

  // Item 9 + item 1: the labels folder appears (renamed into place, already holding links at the
  // file's name and at the writer's old pid-derived temporary name). The file is written through
  // neither.
  const std::string pid = std::to_string(plugin->pid());
  fs::create_directories(work.file("staging"));
  fs::create_symlink(labels_victim, work.file("staging/kgpu"));
  fs::create_symlink(labels_victim, work.file("staging/kgpu.tmp." + pid));
  fs::rename(work.file("staging"), labels_dir);
  ASSERT_TRUE(wait_until([&] { return read_file(labels).find("nvidia.com/gpu.count=2\n") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  EXPECT_TRUE(S_ISREG(mode_of(labels)));
  EXPECT_EQ(mode_of(labels) & 07777, 0644u);
  expect_untouched(labels_victim);

  // Item 7 + item 1: the config folder is removed and created again with a config that changes the
  // CDI spec (index names), while a link waits at the CDI writer's old temporary name.
  fs::create_symlink(cdi_victim, cdi + "/." + kSpecName + "." + pid + ".tmp");
  ASSERT_TRUE(refused(*plugin, "No such file", [&] { fs::remove_all(work.file("conf")); })) << diagnostics(*plugin);
  fs::create_directories(work.file("conf"));
  replace_file(config, "version: v1\nflags:\n  plugin:\n    deviceIDStrategy: index\n");
  // The kubelet keeps seeing UUIDs (issue 21); the index strategy shows in the CDI device names.
  ASSERT_TRUE(wait_until([&] { return read_file(cdi + "/" + kSpecName).find("\"name\": \"0\"") != std::string::npos; },
                         20s))
      << diagnostics(*plugin);
  expect_untouched(cdi_victim);
  EXPECT_EQ(mode_of(cdi + "/" + kSpecName) & 07777, 0644u);

  // Items 3 and 4: a FIFO, a directory and /dev/zero at the config path. Each is a reload error;
  // the plan stays (index names, every device), the loop never blocks.
  ASSERT_TRUE(refused(*plugin, "No such file", [&] { fs::remove(config); })) << diagnostics(*plugin);
  ASSERT_TRUE(refused(*plugin, "it is a FIFO, not a regular file", [&] { ::mkfifo(config.c_str(), 0644); }))
      << diagnostics(*plugin);
  ASSERT_TRUE(refused(*plugin, "it is a directory, not a regular file", [&] {
    fs::remove(config);
    fs::create_directory(config);
  })) << diagnostics(*plugin);
  ASSERT_TRUE(refused(*plugin, "it is a character device", [&] {
    fs::remove(config);
    fs::create_symlink("/dev/zero", config);
  })) << diagnostics(*plugin);
  EXPECT_TRUE(serving_gpus(2)) << diagnostics(*plugin);
  EXPECT_NE(read_file(cdi + "/" + kSpecName).find("\"name\": \"0\""), std::string::npos);  // the index plan stays

  // Item 5: /dev/dri vanishes (devtmpfs removes it when the driver unloads) and comes back; a
  // device node removed after that must still be noticed.
  fs::remove_all(node + "/dev/dri");
  ASSERT_TRUE(wait_health(kAmd, kAmdId, "Unhealthy")) << diagnostics(*plugin);
  fs::create_directories(work.file("dri-staging"));
  std::ofstream(work.file("dri-staging/renderD128")).flush();
  std::ofstream(work.file("dri-staging/card1")).flush();
  fs::rename(work.file("dri-staging"), node + "/dev/dri");
  ASSERT_TRUE(wait_health(kAmd, kAmdId, "Healthy")) << diagnostics(*plugin);
  fs::remove(node + "/dev/dri/renderD128");
  ASSERT_TRUE(wait_health(kAmd, kAmdId, "Unhealthy")) << diagnostics(*plugin);
  EXPECT_TRUE(serving_gpus(2)) << diagnostics(*plugin);

  // Item 9: the feature file deleted by someone else is written again, without a plan change.
  fs::remove(labels);
  ASSERT_TRUE(wait_until([&] { return read_file(labels).find("nvidia.com/gpu.count=2\n") != std::string::npos; }, 20s))
      << diagnostics(*plugin);

  // A clean exit: sockets and the feature file removed; the CDI spec stays for running containers.
  plugin->signal(SIGTERM);
  auto rc = plugin->wait_exit(10s);
  ASSERT_TRUE(rc.has_value()) << diagnostics(*plugin);
  EXPECT_EQ(*rc, 0) << diagnostics(*plugin);
  EXPECT_FALSE(path_exists(labels));
  for (const auto& e : fs::directory_iterator(plugin_dir))
    EXPECT_EQ(e.path().filename().string().rfind("kgpu-", 0), std::string::npos) << e.path();
  // Nothing written outside: the victims, the foreign file, no stray temporary files.
  expect_untouched(labels_victim);
  expect_untouched(cdi_victim);
  EXPECT_EQ(read_file(foreign), "{\"note\": \"keep me\"}\n");
  std::vector<std::string> victims;
  for (const auto& e : fs::directory_iterator(work.file("victims"))) victims.push_back(e.path().filename().string());
  std::sort(victims.begin(), victims.end());
  EXPECT_EQ(victims, (std::vector<std::string>{"cdi-victim", "labels-victim"}));
  for (const auto& dir : {labels_dir, cdi})
    for (const auto& e : fs::directory_iterator(dir))
      if (!e.is_symlink()) {
        EXPECT_EQ(e.path().filename().string().find(".kgpu-"), std::string::npos) << e.path();
      }
}

}  // namespace
}  // namespace kgpu::test
