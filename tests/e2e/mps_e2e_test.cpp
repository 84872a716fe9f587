// End to end: an MPS resource is advertised only while a live `kgpu mps-daemon` holds its
// readiness marker. A supervisor killed with SIGKILL leaves the marker behind; the plugin must
// withdraw the resource anyway (issue 20 item 8). The real `kgpu mps-daemon` (with the fake
// nvidia-cuda-mps-control) and the plugin follow one config file together: a change to the MPS
// resource restarts its daemon with the new limits, an unrelated edit leaves it running.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "e2e/sim_fixture.h"
#include "mps/readiness.h"

namespace kgpu::test {
namespace {

const std::string kGpu = "nvidia.com/gpu";

class MpsE2E : public SimE2E {};

TEST_F(MpsE2E, ResourceIsWithdrawnWhenItsSupervisorIsKilled) {
  std::string mps_root = work.file("mps");
  std::string config = work.write("mps.yaml", "version: v1\nflags:\n  mpsRoot: " + mps_root + R"(
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
)");
  PluginOptions options;
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("withheld until its MPS control daemon") != std::string::npos; },
                         20s))
      << diagnostics(*plugin);

  // A stand-in for `kgpu mps-daemon`: writes the marker and holds its flock until it is killed.
  const std::string marker = mps_root + "/nvidia.com/gpu/.ready";
  std::filesystem::create_directories(std::filesystem::path(marker).parent_path());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t supervisor = ::fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) {  // only async-signal-safe calls in the child of a threaded process
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0 || ::write(fd, "1\n", 2) != 2) ::_exit(1);
    if (::write(ready[1], "x", 1) != 1) ::_exit(1);
    for (;;) ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_TRUE(wait_healthy(kGpu, 32)) << diagnostics(*plugin);

  ::kill(supervisor, SIGKILL);
  ::waitpid(supervisor, nullptr, 0);
  ASSERT_TRUE(std::filesystem::exists(marker));  // SIGKILL left no time to remove it
  EXPECT_TRUE(wait_until(
      [&] { return plugin->stderr_text().find(kGpu + ": no longer advertised") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

TEST_F(MpsE2E, TheMpsDaemonFollowsAConfigChangeWithThePlugin) {
  const std::string mps_root = work.file("mps");
  auto config_text = [&](int replicas, const std::string& extra = "") {
    return "version: v1\nflags:\n  mpsRoot: " + mps_root + "\nsharing:\n  mps:\n    resources:\n" +
           "    - name: nvidia.com/gpu\n      replicas: " + std::to_string(replicas) + "\n" + extra;
  };
  const std::string config = work.write("mps.yaml", config_text(4));
  const FakeNode node = make_fake_node("dgx-a100.yaml", work.file("node-mps"));
  ProcessOptions daemon_options;
  daemon_options.argv = {kgpu_binary(), "mps-daemon", "--config-file", config, "--sysfs-root", node.sysfs_root,
                         "--proc-root", node.proc_root, "--dev-root", node.dev_root, "--mps-control-binary",
                         std::string(KGPU_FIXTURES_DIR) + "/mps/nvidia-cuda-mps-control"};
  daemon_options.env = fake_nvml_env(node);
  ChildProcess daemon(daemon_options, work.path(), "mps-daemon");
  PluginOptions options;
  options.config_file = config;
  auto plugin = start(options);
  const std::string control_log = mps_root + "/nvidia.com/gpu/log/fake-control.log";
  ASSERT_TRUE(wait_healthy(kGpu, 32)) << diagnostics(*plugin) << daemon.stderr_text();
  EXPECT_EQ(count_of(read_file(control_log), "command set_default_active_thread_percentage 25"), 1u);

  // Half the replicas: the plugin advertises 16, the daemon restarts with twice the share.
  auto rewrite = [&](const std::string& text) {
    const std::string next = work.write("mps.yaml.next", text);
    std::filesystem::rename(next, config);  // as an editor or the kubelet's ConfigMap update: whole
  };
  rewrite(config_text(2));
  ASSERT_TRUE(wait_healthy(kGpu, 16)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return read_file(control_log).find("percentage 50") != std::string::npos; }, 20s))
      << daemon.stderr_text();
  ASSERT_TRUE(wait_until([&] { return mps_marker_live(mps_root + "/nvidia.com/gpu/.ready"); }, 20s))
      << daemon.stderr_text();
  EXPECT_EQ(count_of(read_file(control_log), "start "), 2u) << read_file(control_log);

  // An edit that does not change the MPS resource is re-planned and leaves the daemon running: the
  // next real change (five replicas) is the third start, not the fourth (the daemon handles changes
  // one after another, so the edit's re-plan is complete by then).
  rewrite(config_text(2, "# reviewed by the GPU team\n"));
  ASSERT_TRUE(wait_until([&] { return count_of(daemon.stderr_text(), "config file changed") == 2; }, 20s))
      << daemon.stderr_text();
  rewrite(config_text(5, "# reviewed by the GPU team\n"));
  ASSERT_TRUE(wait_until([&] { return read_file(control_log).find("percentage 20") != std::string::npos; }, 20s))
      << daemon.stderr_text();
  EXPECT_EQ(count_of(read_file(control_log), "start "), 3u) << read_file(control_log);
  EXPECT_TRUE(wait_healthy(kGpu, 40)) << diagnostics(*plugin);

  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(20s), 0) << daemon.stderr_text();
}

// With DRA owning GPUs 0 and 1, the device-plugin MPS resource has the other six, and so has its
// daemon: no limits for the DRA GPUs (the plugin makes the same split).
TEST_F(MpsE2E, WithDraTheResourcesDaemonCoversOnlyTheDevicePluginsGpus) {
  const std::string mps_root = work.file("mps");
  const std::string config = work.write("mps.yaml", "version: v1\nflags:\n  mpsRoot: " + mps_root +
                                                        "\nsharing:\n  mps:\n    resources:\n"
                                                        "    - name: nvidia.com/gpu\n      replicas: 4\n");
  const FakeNode node = make_fake_node("dgx-a100.yaml", work.file("node-mps"));
  ProcessOptions daemon_options;
  daemon_options.argv = {kgpu_binary(), "mps-daemon", "--config-file", config, "--sysfs-root", node.sysfs_root,
                         "--proc-root", node.proc_root, "--dev-root", node.dev_root, "--mps-control-binary",
                         std::string(KGPU_FIXTURES_DIR) + "/mps/nvidia-cuda-mps-control", "--dra", "--dra-gpus", "0,1"};
  daemon_options.env = fake_nvml_env(node);
  ChildProcess daemon(daemon_options, work.path(), "mps-daemon");
  ASSERT_TRUE(wait_until([&] { return mps_marker_live(mps_root + "/nvidia.com/gpu/.ready"); }, 20s))
      << daemon.stderr_text();
  const std::string control_log = read_file(mps_root + "/nvidia.com/gpu/log/fake-control.log");
  EXPECT_EQ(count_of(control_log, "command set_default_device_pinned_mem_limit "), 6u) << control_log;
  EXPECT_EQ(count_of(control_log, "command set_default_device_pinned_mem_limit 0 "), 0u) << control_log;
  EXPECT_EQ(count_of(control_log, "command set_default_device_pinned_mem_limit 1 "), 0u) << control_log;
  EXPECT_EQ(count_of(control_log, "command set_default_device_pinned_mem_limit 2 "), 1u) << control_log;
}

// --claim-shm-size (issue 28, item 5) is a Kubernetes quantity of at least 1Mi and (issue 38, item
// 5) at most the node's memory: anything else stops the supervisor at start with a message naming
// the flag, before it runs any daemon.
TEST_F(MpsE2E, ABadClaimShmSizeIsRefusedByName) {
  for (const std::string& bad : {std::string("lots"), std::string("512Ki"), std::string("1Ei")}) {
    ProcessOptions options;
    options.argv = {kgpu_binary(), "mps-daemon", "--mps-root", work.file("mps-" + bad), "--claim-shm-size", bad};
    ChildProcess daemon(options, work.path(), "mps-daemon-" + bad);
    auto status = daemon.wait_exit(20s);
    ASSERT_TRUE(status.has_value()) << bad;
    EXPECT_EQ(*status, 2) << daemon.stderr_text();
    EXPECT_NE(daemon.stderr_text().find("--claim-shm-size " + bad), std::string::npos) << daemon.stderr_text();
  }
}

}  // namespace
}  // namespace kgpu::test
