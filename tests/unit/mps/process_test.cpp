// Process helpers behind the MPS supervisor: exit codes, stdin, environment, deadlines, pidfds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "mps/process.h"
#include "support/eventually.h"
#include "support/mounts.h"
#include "support/test_folder.h"

namespace kgpu::mps {
namespace {

using namespace std::chrono_literals;

TEST(RunProgram, ReportsExitStatus) {
  auto ok = run_program({"sh", "-c", "exit 0"}, {}, "", 10s);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, 0);
  auto three = run_program({"sh", "-c", "exit 3"}, {}, "", 10s);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(*three, 3);
}

TEST(RunProgram, PassesStdinAndEnvironment) {
  const auto out = std::filesystem::path(::testing::TempDir()) / ("kgpu-run-" + std::to_string(::getpid()));
  auto rc = run_program({"sh", "-c", "read line; echo \"$line $KGPU_TEST_VALUE\" > \"$OUT\""},
                        {{"KGPU_TEST_VALUE", "v42"}, {"OUT", out.string()}}, "hello\n", 10s);
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(*rc, 0);
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "hello v42\n");
  std::filesystem::remove(out);
}

TEST(RunProgram, ChildThatIgnoresStdinDoesNotKillUs) {
  const std::string big(1 << 20, 'x');  // more than a pipe buffer: the write hits EPIPE
  auto rc = run_program({"sh", "-c", "exec 0<&-; exit 0"}, {}, big, 10s);
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(*rc, 0);
}

TEST(RunProgram, MissingProgramIsAnError) {
  auto rc = run_program({"/nonexistent/kgpu-no-such-program"}, {}, "", 10s);
  ASSERT_FALSE(rc.ok());
  EXPECT_THAT(rc.error().message, ::testing::HasSubstr("/nonexistent/kgpu-no-such-program"));
}

// A DRA claim's MPS daemon sees the claim's folder at /dev/shm, and nobody else does.
TEST(RunProgram, APrivateDevShmIsTheGivenFolderForThatProgramOnly) {
  if (!test::can_mount_tmpfs()) GTEST_SKIP() << test::kNoMountsReason;
  const auto dir = test::fresh_test_folder("kgpu-private-shm");
  const std::string name = "kgpu-private-shm-" + std::to_string(::getpid());
  auto rc = run_program({"sh", "-c", "echo segment > /dev/shm/" + name}, {}, "", 10s, -1, dir.string());
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(*rc, 0);
  EXPECT_TRUE(std::filesystem::exists(dir / name));
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + name));  // this process's /dev/shm is untouched
  auto missing = run_program({"kgpu-no-such-program"}, {}, "", 10s, -1, dir.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, ::testing::HasSubstr("kgpu-no-such-program: not found in PATH"));
  std::filesystem::remove_all(dir);
}

// The step that failed between fork and exec comes back with its reason, not as a bare status.
TEST(RunProgram, APrivateDevShmThatCannotBeSetUpNamesTheStepAndTheReason) {
  auto rc = run_program({"sh", "-c", "exit 0"}, {}, "", 10s, -1, "/nonexistent/kgpu-shm");
  ASSERT_FALSE(rc.ok());
  EXPECT_EQ(rc.error().code, Error::Code::Unavailable);
  if (test::can_mount_tmpfs())
    EXPECT_THAT(rc.error().message,
                ::testing::HasSubstr("bind-mounting /nonexistent/kgpu-shm at /dev/shm failed: No such file or directory"));
  else
    EXPECT_THAT(rc.error().message, ::testing::HasSubstr("needs CAP_SYS_ADMIN"));
}

TEST(RunProgram, HangingProgramIsKilledAtTheDeadline) {
  auto rc = run_program({"tail", "-f", "/dev/null"}, {}, "", 50ms);
  ASSERT_FALSE(rc.ok());
  EXPECT_EQ(rc.error().code, Error::Code::Unavailable);
  EXPECT_THAT(rc.error().message, ::testing::HasSubstr("did not finish within 50 ms"));
}

TEST(OpenPidfd, FailsForAMissingProcess) {
  EXPECT_FALSE(open_pidfd(0x3fffffff).ok());
  auto self = open_pidfd(::getpid());
  ASSERT_TRUE(self.ok());
  EXPECT_FALSE(wait_readable(*self, 0ms));  // we are alive
  ::close(*self);
}

}  // namespace
}  // namespace kgpu::mps

namespace kgpu::mps {
namespace {

TEST(RunProgram, ChildDoesNotInheritBlockedSignals) {
  // The mps-daemon blocks SIGTERM for its signalfd; a daemon it starts must still die on SIGTERM.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  auto rc = run_program({"sh", "-c", "kill -TERM $$; exit 0"}, {}, "", std::chrono::seconds(10));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(*rc, 128 + SIGTERM);
}

}  // namespace
}  // namespace kgpu::mps

namespace kgpu::mps {
namespace {

// Issue 20 item 8: a control call must honour the stop signal instead of waiting out its timeout.
TEST(RunProgram, CancelFdStopsAHangingProgramAtOnce) {
  int stop[2];
  ASSERT_EQ(::pipe(stop), 0);
  ASSERT_EQ(::write(stop[1], "x", 1), 1);
  const auto t0 = std::chrono::steady_clock::now();
  auto rc = run_program({"tail", "-f", "/dev/null"}, {}, "", 10s, stop[0]);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  ASSERT_FALSE(rc.ok());
  EXPECT_THAT(rc.error().message, ::testing::HasSubstr("stopped"));
  ::close(stop[0]);
  ::close(stop[1]);
}

// Issue 20 item 2: only our own children may be signalled through a pidfd.
TEST(IsOwnChild, TrueForASpawnedChildFalseForAnyOtherProcess) {
  auto child = spawn_program({"tail", "-f", "/dev/null"}, {}, "");
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_TRUE(is_own_child(child->pidfd.get()));
  auto parent = open_pidfd(::getppid());
  ASSERT_TRUE(parent.ok());
  EXPECT_FALSE(is_own_child(*parent));
  ::close(*parent);
  EXPECT_TRUE(signal_pidfd(child->pidfd.get(), SIGKILL));
  auto rc = finish_program(*child, std::chrono::steady_clock::now() + 10s);
  ASSERT_TRUE(rc.ok()) << rc.error().message;
  EXPECT_EQ(*rc, 128 + SIGKILL);
}

}  // namespace
}  // namespace kgpu::mps

namespace kgpu::mps {
namespace {

// A daemon whose intermediate parent has not exited yet is still recognised as ours; a process
// outside our tree never is.
TEST(IsOwnDescendant, GrandchildYesUnrelatedProcessNo) {
  const auto file = std::filesystem::path(::testing::TempDir()) / ("kgpu-grandchild-" + std::to_string(::getpid()));
  auto parent = spawn_program({"sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > \"$OUT\"; wait"},
                              {{"OUT", file.string()}}, "");
  ASSERT_TRUE(parent.ok()) << parent.error().message;
  int grandchild = -1;
  ASSERT_TRUE(test::eventually([&] {
    std::ifstream in(file);
    return static_cast<bool>(in >> grandchild) && grandchild > 0;
  }));
  auto fd = open_pidfd(grandchild);
  ASSERT_TRUE(fd.ok());
  EXPECT_FALSE(is_own_child(*fd));
  EXPECT_TRUE(is_own_descendant(grandchild, *fd));
  auto unrelated = open_pidfd(::getppid());
  ASSERT_TRUE(unrelated.ok());
  EXPECT_FALSE(is_own_descendant(::getppid(), *unrelated));
  ::close(*unrelated);
  signal_pidfd(*fd, SIGKILL);
  ::close(*fd);
  auto rc = finish_program(*parent, std::chrono::steady_clock::now() + 10s);
  EXPECT_TRUE(rc.ok());
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace kgpu::mps
