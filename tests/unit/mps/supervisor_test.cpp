// MpsSupervisor against the fake nvidia-cuda-mps-control in tests/fixtures/mps: start, limits,
// readiness, restart after a crash, backoff after refused starts, and a clean stop.
// Waiting is event-driven (inotify on the watched directories) with a deadline; no sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/inotify.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "mps/supervisor.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kFake = std::string(KGPU_FIXTURES_DIR) + "/mps/nvidia-cuda-mps-control";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count_lines_starting(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) ++n;
  return n;
}

// Waits until cond() holds, waking on any change in `dirs` (which must exist), at most `limit`.
bool wait_until(const std::vector<fs::path>& dirs, const std::function<bool()>& cond,
                std::chrono::milliseconds limit = 10s) {
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  for (const auto& d : dirs)
    inotify_add_watch(fd, d.c_str(), IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool ok = cond();
  while (!ok) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) > 0) {
      char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    }
    ok = cond();
  }
  ::close(fd);
  return ok;
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("kgpu-mps-" + std::to_string(::getpid()) + "-" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    spec_.resource = "nvidia.com/gpu";
    spec_.pipe_dir = (root_ / "nvidia.com/gpu/pipe").string();
    spec_.log_dir = (root_ / "nvidia.com/gpu/log").string();
    spec_.ready_marker = (root_ / "nvidia.com/gpu/.ready").string();
    spec_.commands = {"set_default_device_pinned_mem_limit 0 10240M", "set_default_active_thread_percentage 25"};
    // Created up front so the test can watch them before the supervisor writes there.
    fs::create_directories(spec_.pipe_dir);
    fs::create_directories(spec_.log_dir);
    ASSERT_EQ(::pipe2(stop_, O_CLOEXEC), 0);
    options_.control_binary = kFake;
    options_.initial_backoff = 20ms;
    options_.max_backoff = 200ms;
  }
  void TearDown() override {
    stop();
    ::close(stop_[0]);
    ::close(stop_[1]);
    fs::remove_all(root_);
  }
  void launch() {
    supervisor_ = std::make_unique<MpsSupervisor>(std::vector<MpsDaemonSpec>{spec_}, options_);
    thread_ = std::thread([this] { result_ = supervisor_->run(stop_[0]); });
  }
  void stop() {
    if (!thread_.joinable()) return;
    ASSERT_EQ(::write(stop_[1], "x", 1), 1);
    thread_.join();
  }
  fs::path dir() const { return root_ / "nvidia.com/gpu"; }
  fs::path log() const { return fs::path(spec_.log_dir) / "fake-control.log"; }
  bool ready() const { return fs::exists(spec_.ready_marker); }
  int daemon_pid() const {
    std::ifstream in(fs::path(spec_.pipe_dir) / "nvidia-cuda-mps-control.pid");
    int pid = -1;
    in >> pid;
    return pid;
  }

  fs::path root_;
  MpsDaemonSpec spec_;
  MpsSupervisorOptions options_;
  int stop_[2] = {-1, -1};
  std::unique_ptr<MpsSupervisor> supervisor_;
  std::thread thread_;
  Status result_ = ok_status();
};

TEST_F(SupervisorTest, StartsSetsLimitsAndMarksReady) {
  launch();
  ASSERT_TRUE(wait_until({dir()}, [&] { return ready(); })) << slurp(log());
  const std::string calls = slurp(log());
  EXPECT_EQ(count_lines_starting(calls, "start "), 1u) << calls;
  EXPECT_THAT(calls, ::testing::HasSubstr("command set_default_device_pinned_mem_limit 0 10240M\n"
                                          "command set_default_active_thread_percentage 25\n"));
  EXPECT_EQ(std::stoi(slurp(spec_.ready_marker)), daemon_pid());
}

TEST_F(SupervisorTest, RestartsADaemonThatDies) {
  launch();
  ASSERT_TRUE(wait_until({dir()}, [&] { return ready(); }));
  const int first = daemon_pid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(wait_until({dir(), spec_.log_dir}, [&] {
    return count_lines_starting(slurp(log()), "start ") == 2 && ready();
  })) << slurp(log());
  EXPECT_NE(daemon_pid(), first);
  EXPECT_EQ(count_lines_starting(slurp(log()), "command set_default_active_thread_percentage"), 2u);
}

TEST_F(SupervisorTest, RetriesARefusedStartWithBackoff) {
  const fs::path refuse = root_ / "refuse";
  std::ofstream(refuse) << "1";
  ASSERT_EQ(::setenv("FAKE_MPS_REFUSE_START", refuse.c_str(), 1), 0);
  launch();
  ASSERT_TRUE(wait_until({spec_.log_dir}, [&] { return count_lines_starting(slurp(log()), "refused") >= 3; }));
  EXPECT_FALSE(ready());
  fs::remove(refuse);
  ASSERT_TRUE(wait_until({dir()}, [&] { return ready(); })) << slurp(log());
  stop();
  ::unsetenv("FAKE_MPS_REFUSE_START");
  EXPECT_EQ(count_lines_starting(slurp(log()), "start "), 1u);
}

TEST_F(SupervisorTest, StopQuitsTheDaemonAndWithdrawsReadiness) {
  launch();
  ASSERT_TRUE(wait_until({dir()}, [&] { return ready(); }));
  stop();
  EXPECT_TRUE(result_.ok());
  EXPECT_FALSE(ready());
  EXPECT_THAT(slurp(log()), ::testing::HasSubstr("command quit\n"));
  EXPECT_FALSE(fs::exists(fs::path(spec_.pipe_dir) / "nvidia-cuda-mps-control.pid"));
}

TEST_F(SupervisorTest, MissingBinaryIsRetriedNotFatal) {
  options_.control_binary = (root_ / "no-such-binary").string();
  launch();
  stop();  // returns promptly even though nothing ever started
  EXPECT_TRUE(result_.ok());
  EXPECT_FALSE(ready());
}

}  // namespace
}  // namespace kgpu
