// MpsSupervisor against the fake nvidia-cuda-mps-control in tests/fixtures/mps: start, limits,
// readiness, restart after a crash, backoff after refused starts, and a clean stop.
// Waiting is event-driven (inotify on the watched directories) with a deadline; no sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "mps/process.h"
#include "mps/readiness.h"
#include "mps/supervisor.h"
#include "support/folder_wait.h"
#include "support/test_folder.h"

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

// Waits until cond() holds, waking on any change in `dirs`, at most `limit`.
bool wait_until(const std::vector<fs::path>& dirs, const std::function<bool()>& cond,
                std::chrono::milliseconds limit = 10s) {
  return test::wait_in_folders(dirs, cond, limit);
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_test_folder("kgpu-mps");
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

// A process that is not ours (not a child, not a descendant): what a stale or planted PID names.
struct Victim {
  Victim() {
    // Reparented to an ancestor, not to this test process, even after a supervisor made it a
    // subreaper.
    ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    FILE* p = ::popen("sleep 1000 </dev/null >/dev/null 2>&1 & echo $!", "r");
    if (p == nullptr) return;
    if (std::fscanf(p, "%d", &pid) != 1) pid = -1;
    ::pclose(p);
    if (pid > 0) {
      auto fd = mps::open_pidfd(pid);
      if (fd) pidfd.reset(*fd);
    }
  }
  ~Victim() {
    if (pidfd.valid()) mps::signal_pidfd(pidfd.get(), SIGKILL);
  }
  bool alive() const { return pidfd.valid() && !mps::wait_readable(pidfd.get(), 0ms); }
  int pid = -1;
  UniqueFd pidfd;
};

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

// Issue 20 item 2: a stale PID file naming an unrelated process, and a control daemon that exits
// without writing one: the supervisor used to read the stale PID and SIGKILL that process at stop.
TEST_F(SupervisorTest, NeverSignalsAProcessNamedByAStalePidFile) {
  Victim victim;
  ASSERT_TRUE(victim.alive());
  std::ofstream(fs::path(spec_.pipe_dir) / "nvidia-cuda-mps-control.pid") << victim.pid << "\n";
  ScopedEnv no_pid("FAKE_MPS_NO_PIDFILE", "1");
  options_.stop_timeout = 200ms;
  launch();
  ASSERT_TRUE(wait_until({spec_.log_dir}, [&] { return count_lines_starting(slurp(log()), "start nopid") >= 2; }))
      << slurp(log());
  stop();
  EXPECT_FALSE(ready());
  EXPECT_TRUE(victim.alive());
}

// The same with the PID planted while the daemon starts (after the supervisor cleared the file):
// a PID that is not a child of the supervisor is never tracked, so never signalled.
TEST_F(SupervisorTest, NeverTracksAPlantedPidThatIsNotItsChild) {
  Victim victim;
  ASSERT_TRUE(victim.alive());
  ScopedEnv planted("FAKE_MPS_WRITE_PID", std::to_string(victim.pid));
  options_.stop_timeout = 200ms;
  launch();
  ASSERT_TRUE(wait_until({spec_.log_dir}, [&] { return count_lines_starting(slurp(log()), "start planted") >= 2; }))
      << slurp(log());
  EXPECT_FALSE(ready());
  stop();
  EXPECT_TRUE(victim.alive());
}

// Issue 20 item 8: the supervisor (PID 1 of its container) reaps the daemons it outlives.
TEST_F(SupervisorTest, ReapsADaemonThatDied) {
  launch();
  ASSERT_TRUE(wait_until({dir()}, [&] { return ready(); }));
  int subreaper = 0;
  ASSERT_EQ(::prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0), 0);
  EXPECT_EQ(subreaper, 1) << "a daemon that forks away must stay the supervisor's child";
  const int first = daemon_pid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(wait_until({dir(), spec_.log_dir}, [&] {
    return count_lines_starting(slurp(log()), "start ") == 2 && ready();
  })) << slurp(log());
  // Reaped, not a zombie: no /proc entry left (the PID is not reused this fast).
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(first)));
}

// Issue 20 item 8: readiness is tied to a live supervisor. Its marker carries an exclusive flock
// for as long as it runs; a marker left by a supervisor killed with SIGKILL is nobody's and stale.
TEST_F(SupervisorTest, ReadinessMarkerIsLiveOnlyWhileTheSupervisorRuns) {
  launch();
  ASSERT_TRUE(wait_until({dir()}, [&] { return ready(); }));
  EXPECT_TRUE(mps_marker_live(spec_.ready_marker));
  stop();
  EXPECT_FALSE(mps_marker_live(spec_.ready_marker));

  // A supervisor process that holds the marker's lock and then dies by SIGKILL.
  const std::string marker = spec_.ready_marker;
  std::ofstream(marker) << "1\n";
  EXPECT_FALSE(mps_marker_live(marker)) << "a marker nobody locks is stale";
  int ready_pipe[2];
  ASSERT_EQ(::pipe(ready_pipe), 0);
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    const int fd = ::open(marker.c_str(), O_RDONLY);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    [[maybe_unused]] auto n = ::write(ready_pipe[1], "x", 1);
    for (;;) ::pause();
  }
  char c = 0;
  ASSERT_EQ(::read(ready_pipe[0], &c, 1), 1);
  EXPECT_TRUE(mps_marker_live(marker));
  Config config;
  config.mps_root = root_.string();
  Resource resource;
  resource.name = "nvidia.com/gpu";
  resource.sharing = SharingKind::Mps;
  EXPECT_TRUE(mps_ready(config, resource));
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  EXPECT_TRUE(fs::exists(marker));
  EXPECT_FALSE(mps_marker_live(marker));
  EXPECT_FALSE(mps_ready(config, resource));
  ::close(ready_pipe[0]);
  ::close(ready_pipe[1]);
}

// Issue 20 item 8: a control daemon left by an earlier run (its supervisor was killed) is quit
// before a new one starts.
TEST_F(SupervisorTest, StartQuitsADaemonLeftByAnEarlierRun) {
  auto started = mps::run_program({kFake, "-d"},
                                  {{"CUDA_MPS_PIPE_DIRECTORY", spec_.pipe_dir}, {"CUDA_MPS_LOG_DIRECTORY", spec_.log_dir}},
                                  "", 10s);
  ASSERT_TRUE(started.ok() && *started == 0);
  const int leftover = daemon_pid();
  ASSERT_GT(leftover, 0);
  auto leftover_fd = mps::open_pidfd(leftover);
  ASSERT_TRUE(leftover_fd.ok());
  UniqueFd watch(*leftover_fd);
  launch();
  ASSERT_TRUE(wait_until({dir()}, [&] { return ready(); })) << slurp(log());
  EXPECT_TRUE(mps::wait_readable(watch.get(), 10s)) << "the earlier daemon is still running\n" << slurp(log());
  EXPECT_NE(daemon_pid(), leftover);
  const std::string calls = slurp(log());
  EXPECT_LT(calls.find("command quit"), calls.rfind("start ")) << calls;
}

// Issue 20 item 8: SIGTERM during a hung control call ends the run at once (it used to wait out
// the 10 s timeout, then 10 s more for the quit).
TEST_F(SupervisorTest, StopInterruptsAHungControlCall) {
  const fs::path hang = root_ / "hang";
  std::ofstream(hang) << "1";
  ScopedEnv hang_env("FAKE_MPS_HANG_CLIENT", hang.string());
  options_.command_timeout = 10s;
  options_.stop_timeout = 300ms;
  launch();
  ASSERT_TRUE(wait_until({spec_.log_dir}, [&] { return slurp(log()).find("hang") != std::string::npos; }))
      << slurp(log());
  const auto t0 = std::chrono::steady_clock::now();
  stop();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, 3s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  RecordProperty("stop_ms", static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_FALSE(ready());
}

// ... and a quit that hangs at stop costs stop_timeout once, after which the daemon is killed.
TEST_F(SupervisorTest, HungQuitAtStopIsBoundedByTheStopTimeout) {
  options_.command_timeout = 10s;
  options_.stop_timeout = 300ms;
  launch();
  ASSERT_TRUE(wait_until({dir()}, [&] { return ready(); }));
  auto fd = mps::open_pidfd(daemon_pid());
  ASSERT_TRUE(fd.ok());
  UniqueFd daemon(*fd);
  const fs::path hang = root_ / "hang";
  std::ofstream(hang) << "1";
  ScopedEnv hang_env("FAKE_MPS_HANG_CLIENT", hang.string());
  const auto t0 = std::chrono::steady_clock::now();
  stop();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, 3s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  RecordProperty("stop_ms", static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_TRUE(mps::wait_readable(daemon.get(), 0ms)) << "the daemon that did not quit is killed";
}

}  // namespace
}  // namespace kgpu
