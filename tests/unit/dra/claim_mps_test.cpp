// A DRA claim's MPS daemon, the plugin's side (ClaimMps) against the real supervisor half
// (MpsSupervisor following the request folder, with the fake nvidia-cuda-mps-control): prepare
// waits for the daemon, fails with the supervisor's reason or a deadline naming `kgpu mps-daemon`,
// stops waiting at shutdown, and unprepare takes the daemon away.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "dra/sharing/claim_mps.h"
#include "mps/claim_request_folder.h"
#include "mps/readiness.h"
#include "mps/supervisor.h"
#include "plan/mps_paths.h"
#include "support/mounts.h"
#include "support/test_folder.h"

namespace kgpu::dra {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kUid = "7a6b5c4d-0000-4000-8000-000000000001";

MpsClaimRequest request() { return MpsClaimRequest{kUid, {"GPU-00000000-0000-4000-8000-00000000000a"}, 50, {}}; }

class ClaimMpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_test_folder("kgpu-claim-mps");
    ASSERT_EQ(::pipe2(stop_, O_CLOEXEC), 0);
  }
  void TearDown() override {
    stop_supervisor();
    ::close(stop_[0]);
    ::close(stop_[1]);
    test::unmount_all_under(root_.string());  // a claim still requested keeps its shared memory
    fs::remove_all(root_);
  }
  void start_supervisor() {
    auto folder = MpsClaimRequestFolder::open(root());
    ASSERT_TRUE(folder.ok()) << folder.error().message;
    folder_ = std::make_unique<MpsClaimRequestFolder>(std::move(*folder));
    MpsSupervisorOptions options;
    options.control_binary = std::string(KGPU_FIXTURES_DIR) + "/mps/nvidia-cuda-mps-control";
    options.initial_backoff = 10s;  // a refused start stays refused for the whole test
    supervisor_ = std::make_unique<MpsSupervisor>(std::vector<MpsDaemonSpec>{}, options);
    thread_ = std::thread([this] { (void)supervisor_->run(stop_[0], -1, {folder_.get()}); });
  }
  void stop_supervisor() {
    if (!thread_.joinable()) return;
    ASSERT_EQ(::write(stop_[1], "x", 1), 1);
    thread_.join();
  }
  ClaimMps mps(std::chrono::milliseconds timeout = 10s, int cancel_fd = -1) const {
    return ClaimMps({root(), timeout, cancel_fd});
  }
  std::string root() const { return root_.string(); }
  std::string request_file() const { return mps_claim_request_file(root(), kUid); }
  std::string marker() const { return mps_ready_marker(root(), mps_claim_resource(kUid)); }

  fs::path root_;
  int stop_[2] = {-1, -1};
  std::unique_ptr<MpsClaimRequestFolder> folder_;
  std::unique_ptr<MpsSupervisor> supervisor_;
  std::thread thread_;
};

TEST_F(ClaimMpsTest, PrepareReturnsOnceTheDaemonRunsAndUnprepareTakesItAway) {
  if (!test::can_mount_tmpfs()) GTEST_SKIP() << test::kNoMountsReason;
  start_supervisor();
  ASSERT_TRUE(mps().start(request()).ok());
  EXPECT_TRUE(mps_marker_live(marker()));  // returned only once the daemon was ready
  EXPECT_TRUE(fs::exists(request_file()));
  ASSERT_TRUE(mps().start(request()).ok());  // the kubelet's repeated prepare: same daemon
  ASSERT_TRUE(mps().stop(kUid).ok());
  EXPECT_FALSE(fs::exists(request_file()));
  EXPECT_TRUE(mps().stop(kUid).ok());  // the kubelet's retry of an unprepare
}

TEST_F(ClaimMpsTest, WithoutASupervisorTheDeadlineSaysWhatToCheckAndWithdrawsTheRequest) {
  auto failed = mps(300ms).start(request());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, Error::Code::Unavailable);
  EXPECT_NE(failed.error().message.find("not ready within 300 ms: is `kgpu mps-daemon` running with the same mpsRoot (" +
                                        root() + ")?"),
            std::string::npos)
      << failed.error().message;
  EXPECT_FALSE(fs::exists(request_file()));
}

TEST_F(ClaimMpsTest, ShutdownEndsTheWaitAtOnce) {
  const int cancel = ::eventfd(1, EFD_CLOEXEC);
  ASSERT_GE(cancel, 0);
  const auto start = std::chrono::steady_clock::now();
  auto cancelled = mps(60s, cancel).start(request());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);  // not the 60 s deadline
  ASSERT_FALSE(cancelled.ok());
  EXPECT_NE(cancelled.error().message.find("kgpu is stopping"), std::string::npos);
  ::close(cancel);
}

TEST_F(ClaimMpsTest, ASupervisorThatCannotStartTheDaemonFailsThePrepareWithItsReason) {
  if (!test::can_mount_tmpfs()) GTEST_SKIP() << test::kNoMountsReason;
  const fs::path refuse = root_ / "refuse";
  std::ofstream(refuse) << "";
  ::setenv("FAKE_MPS_REFUSE_START", refuse.c_str(), 1);
  start_supervisor();
  auto failed = mps(30s).start(request());
  stop_supervisor();  // before the environment changes: the supervisor's thread spawns processes
  ::unsetenv("FAKE_MPS_REFUSE_START");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, Error::Code::FailedPrecondition);
  EXPECT_NE(failed.error().message.find("could not start: " + std::string(KGPU_FIXTURES_DIR) +
                                        "/mps/nvidia-cuda-mps-control -d exited with status 1"),
            std::string::npos)
      << failed.error().message;
  EXPECT_FALSE(fs::exists(request_file()));
}

}  // namespace
}  // namespace kgpu::dra
