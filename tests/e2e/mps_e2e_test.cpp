// End to end: an MPS resource is advertised only while a live `kgpu mps-daemon` holds its
// readiness marker. A supervisor killed with SIGKILL leaves the marker behind; the plugin must
// withdraw the resource anyway (issue 20 item 8).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "e2e/sim_fixture.h"

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

}  // namespace
}  // namespace kgpu::test
