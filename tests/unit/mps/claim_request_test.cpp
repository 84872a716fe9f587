// DRA claims' MPS daemons, the supervisor's side: the request format (strict, every path derived
// from mpsRoot and the UID), the request folder, and a supervisor that follows the folder with the
// fake nvidia-cuda-mps-control (tests/fixtures/mps). Waits are inotify-driven with deadlines.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/safe_file.h"
#include "mps/claim_request.h"
#include "mps/claim_request_folder.h"
#include "mps/claim_shm.h"
#include "mps/readiness.h"
#include "mps/supervisor.h"
#include "plan/mps_paths.h"
#include "support/folder_wait.h"
#include "support/mounts.h"
#include "support/test_folder.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kUid = "0f1e2d3c-0000-4000-8000-00000000abcd";
const std::string kGpuA = "GPU-00000000-0000-4000-8000-00000000000a";
const std::string kGpuB = "GPU-00000000-0000-4000-8000-00000000000b";

MpsClaimRequest request() { return MpsClaimRequest{kUid, {kGpuA, kGpuB}, 25, {{1, 2048}}}; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(MpsClaimRequest, RoundTripsAndBuildsTheDaemonFromMpsRootAndUidOnly) {
  const auto text = render_mps_claim_request(request());
  auto parsed = parse_mps_claim_request(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(*parsed, request());

  const MpsDaemonSpec spec = mps_claim_daemon_spec("/run/mps", *parsed, 8u << 20);
  EXPECT_EQ(spec.resource, "dra/" + kUid);
  EXPECT_EQ(spec.shm_dir, "/run/mps/dra/" + kUid + "/shm");
  EXPECT_EQ(spec.shm_bytes, 8u << 20);
  EXPECT_EQ(spec.pipe_dir, "/run/mps/dra/" + kUid + "/pipe");
  EXPECT_EQ(spec.log_dir, "/run/mps/dra/" + kUid + "/log");
  EXPECT_EQ(spec.ready_marker, "/run/mps/dra/" + kUid + "/.ready");
  EXPECT_EQ(spec.failure_note, "/run/mps/dra/" + kUid + "/.failed");
  EXPECT_EQ(spec.visible_devices, kGpuA + "," + kGpuB);
  EXPECT_EQ(spec.commands, (std::vector<std::string>{"set_default_device_pinned_mem_limit 1 2048M",
                                                     "set_default_active_thread_percentage 25"}));
  EXPECT_EQ(mps_claim_request_file("/run/mps", kUid), "/run/mps/dra-requests/" + kUid + ".json");
  EXPECT_EQ(claim_uid_of_request_file(kUid + ".json"), kUid);
  EXPECT_FALSE(claim_uid_of_request_file(kUid + ".json.tmp"));
  EXPECT_FALSE(claim_uid_of_request_file("../x.json"));
  EXPECT_FALSE(claim_uid_of_request_file(".json"));
}

TEST(MpsClaimRequest, EveryBadFieldIsRefusedByName) {
  auto refused = [](const std::function<void(nlohmann::json&)>& edit) {
    auto doc = nlohmann::json::parse(render_mps_claim_request(request()));
    edit(doc);
    auto parsed = parse_mps_claim_request(doc.dump());
    return parsed.ok() ? std::string("accepted") : parsed.error().message;
  };
  using nlohmann::json;
  EXPECT_NE(refused([](json& d) { d["kind"] = "Other"; }).find("not kgpu.io/v1 MpsClaimDaemon"), std::string::npos);
  EXPECT_NE(refused([](json& d) { d["pipeDir"] = "/etc"; }).find("unknown field \"pipeDir\""), std::string::npos);
  EXPECT_NE(refused([](json& d) { d["claimUID"] = "../../etc"; }).find("claimUID"), std::string::npos);
  EXPECT_NE(refused([](json& d) { d["visibleDevices"] = json::array(); }).find("visibleDevices"), std::string::npos);
  EXPECT_NE(refused([](json& d) { d["visibleDevices"] = {"GPU-1,GPU-2"}; }).find("letters, digits and dashes"),
            std::string::npos);
  EXPECT_NE(refused([](json& d) { d["visibleDevices"] = {"GPU-1", "GPU-1"}; }).find("twice"), std::string::npos);
  EXPECT_NE(refused([](json& d) { d["activeThreadPercentage"] = 101; }).find("0 to 100"), std::string::npos);
  EXPECT_NE(refused([](json& d) { d["activeThreadPercentage"] = -1; }).find("0 to 100"), std::string::npos);
  EXPECT_NE(refused([](json& d) { d["activeThreadPercentage"] = "50"; }).find("0 to 100"), std::string::npos);
  // 0 is NVIDIA's defaultActiveThreadPercentage 0, passed on to MPS as it is.
  EXPECT_EQ(refused([](json& d) { d["activeThreadPercentage"] = 0; }), "accepted");
  EXPECT_NE(refused([](json& d) { d["pinnedDeviceMemoryLimitsMiB"] = {{"2", 10}}; }).find("not an ordinal"),
            std::string::npos);
  EXPECT_NE(refused([](json& d) { d["pinnedDeviceMemoryLimitsMiB"] = {{"0", 0}}; }).find("1 to"), std::string::npos);
  EXPECT_NE(refused([](json& d) { d["pinnedDeviceMemoryLimitsMiB"] = {{"0", -5}}; }).find("1 to"), std::string::npos);
  EXPECT_FALSE(parse_mps_claim_request("{").ok());
  EXPECT_FALSE(parse_mps_claim_request("[]").ok());
  EXPECT_FALSE(parse_mps_claim_request(std::string(kMpsClaimRequestMaxBytes + 1, ' ')).ok());
}

// Waits until cond() holds, woken by changes in `dir` (created if missing), at most `limit`.
bool wait_until(const fs::path& dir, const std::function<bool()>& cond, std::chrono::milliseconds limit = 10s) {
  return test::wait_in_folders({dir}, cond, limit);
}

class ClaimRequestFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_test_folder("kgpu-mps-claims");
    ASSERT_EQ(::pipe2(stop_, O_CLOEXEC), 0);
  }
  void TearDown() override {
    stop();
    ::close(stop_[0]);
    ::close(stop_[1]);
    test::unmount_all_under(root_.string());  // a claim still requested keeps its shared memory
    fs::remove_all(root_);
  }
  void launch(MpsClaimRequestFolder& folder) {
    MpsSupervisorOptions options;
    options.control_binary = std::string(KGPU_FIXTURES_DIR) + "/mps/nvidia-cuda-mps-control";
    options.initial_backoff = 20ms;
    supervisor_ = std::make_unique<MpsSupervisor>(std::vector<MpsDaemonSpec>{}, options);
    thread_ = std::thread([this, &folder] { result_ = supervisor_->run(stop_[0], -1, {&folder}); });
  }
  void stop() {
    if (!thread_.joinable()) return;
    ASSERT_EQ(::write(stop_[1], "x", 1), 1);
    thread_.join();
  }
  void write_request(const MpsClaimRequest& r) {
    ASSERT_TRUE(write_file_atomically(mps_claim_request_file(root(), r.claim_uid), render_mps_claim_request(r), 0644).ok());
  }
  std::string root() const { return root_.string(); }
  fs::path claim_dir() const { return mps_resource_dir(root(), mps_claim_resource(kUid)); }
  std::string log() const { return slurp(claim_dir() / "log/fake-control.log"); }

  fs::path root_;
  int stop_[2] = {-1, -1};
  std::unique_ptr<MpsSupervisor> supervisor_;
  std::thread thread_;
  Status result_ = ok_status();
};

TEST_F(ClaimRequestFolderTest, BadFilesAreNamedInTheClaimsFailureNoteAndOthersStillServed) {
  auto folder = MpsClaimRequestFolder::open(root());
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  const std::string dir = mps_claim_requests_dir(root());
  std::ofstream(dir + "/" + kUid + ".json") << R"({"apiVersion": "kgpu.io/v1", "kind": "MpsClaimDaemon"})";
  std::ofstream(dir + "/notes.txt") << "hello";
  std::ofstream(dir + "/.tmp-file") << "partial";
  MpsClaimRequest other = request();
  other.claim_uid = "other-claim";
  write_request(other);
  const auto specs = folder->read();
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].resource, "dra/other-claim");
  auto note = read_regular_file(mps_claim_failure_note(root(), kUid), 4096);
  ASSERT_TRUE(note.ok());
  EXPECT_NE(note->find("claimUID is missing"), std::string::npos) << *note;

  // A file whose content names another claim is refused too: names and content must agree.
  MpsClaimRequest lying = request();
  lying.claim_uid = "someone-else";
  ASSERT_TRUE(write_file_atomically(dir + "/" + kUid + ".json", render_mps_claim_request(lying), 0644).ok());
  EXPECT_EQ(folder->read().size(), 1u);
  EXPECT_NE(read_regular_file(mps_claim_failure_note(root(), kUid), 4096)->find("names claim someone-else"),
            std::string::npos);
}

TEST_F(ClaimRequestFolderTest, TheSupervisorStartsRestartsAndQuitsClaimDaemonsAsRequestsComeAndGo) {
  if (!test::can_mount_tmpfs()) GTEST_SKIP() << test::kNoMountsReason;
  auto folder = MpsClaimRequestFolder::open(root());
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  launch(*folder);
  write_request(request());
  const std::string marker = mps_ready_marker(root(), mps_claim_resource(kUid));
  ASSERT_TRUE(wait_until(claim_dir(), [&] { return mps_marker_live(marker); })) << log();
  EXPECT_NE(log().find("visible " + kGpuA + "," + kGpuB), std::string::npos) << log();
  EXPECT_NE(log().find("command set_default_device_pinned_mem_limit 1 2048M"), std::string::npos) << log();
  EXPECT_NE(log().find("command set_default_active_thread_percentage 25"), std::string::npos) << log();

  // A changed request restarts the daemon with the new limits.
  MpsClaimRequest changed = request();
  changed.active_thread_percentage = 60;
  write_request(changed);
  // The marker is renamed into the claim's folder after the commands ran: that event ends the wait.
  ASSERT_TRUE(wait_until(claim_dir(), [&] {
    return log().find("command set_default_active_thread_percentage 60") != std::string::npos && mps_marker_live(marker);
  })) << log();
  EXPECT_NE(log().find("command quit"), std::string::npos) << log();

  // A withdrawn request quits the daemon and removes the claim's folder.
  fs::remove(mps_claim_request_file(root(), kUid));
  ASSERT_TRUE(wait_until(claim_dir().parent_path(), [&] { return !fs::exists(claim_dir()); }));
  stop();
  EXPECT_TRUE(result_.ok());
}

// Issue 38, item 2: a claim unprepared while `kgpu mps-daemon` was down (killed) left its control
// daemon running, its tmpfs mounted and its folder in place; the next supervisor sweeps them at
// start, and leaves alone a claim whose request is there.
TEST_F(ClaimRequestFolderTest, AStartingSupervisorSweepsWhatNoRequestNames) {
  if (!test::can_mount_tmpfs()) GTEST_SKIP() << test::kNoMountsReason;
  auto folder = MpsClaimRequestFolder::open(root(), 4u << 20);
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  // What a killed supervisor leaves of a claim: its daemon (the fake's), its tmpfs, its folder.
  const MpsDaemonSpec orphan = mps_claim_daemon_spec(root(), request(), 4u << 20);
  fs::create_directories(orphan.pipe_dir);
  fs::create_directories(orphan.log_dir);
  ASSERT_TRUE(mount_claim_shm(orphan.shm_dir, 4u << 20).ok());
  const std::string start = "CUDA_MPS_PIPE_DIRECTORY=" + orphan.pipe_dir + " CUDA_MPS_LOG_DIRECTORY=" +
                            orphan.log_dir + " " + KGPU_FIXTURES_DIR + "/mps/nvidia-cuda-mps-control -d";
  ASSERT_EQ(std::system(start.c_str()), 0);
  const std::string pid_text = slurp(orphan.log_dir + "/fake-daemon.pid");
  const int pid = std::atoi(pid_text.c_str());
  ASSERT_GT(pid, 0) << pid_text;
  // Another claim, still requested, whose daemon the supervisor starts as usual.
  MpsClaimRequest kept = request();
  kept.claim_uid = "kept-claim";
  write_request(kept);

  launch(*folder);
  const fs::path kept_dir = mps_resource_dir(root(), mps_claim_resource("kept-claim"));
  ASSERT_TRUE(test::wait_in_folders({claim_dir().parent_path(), kept_dir}, [&] {
    return !fs::exists(claim_dir()) && mps_marker_live(mps_ready_marker(root(), mps_claim_resource("kept-claim")));
  }));
  EXPECT_TRUE(test::mounts_under(claim_dir().string()).empty());
  EXPECT_TRUE(is_tmpfs_mount_point(mps_claim_shm_dir(root(), "kept-claim")));
  // The orphaned daemon got its quit (the fake ends it): gone, or a zombie nobody reaped yet.
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  EXPECT_TRUE(stat.empty() || stat.find(") Z ") != std::string::npos) << stat;
  stop();
  EXPECT_TRUE(result_.ok());
}

TEST_F(ClaimRequestFolderTest, AClaimDaemonThatCannotStartLeavesItsReasonForThePrepare) {
  if (!test::can_mount_tmpfs()) GTEST_SKIP() << test::kNoMountsReason;
  auto folder = MpsClaimRequestFolder::open(root());
  ASSERT_TRUE(folder.ok());
  const fs::path refuse = root_ / "refuse";
  std::ofstream(refuse) << "";
  ::setenv("FAKE_MPS_REFUSE_START", refuse.c_str(), 1);
  launch(*folder);
  write_request(request());
  const std::string note = mps_claim_failure_note(root(), kUid);
  // Read when seen: the next retry (20 ms backoff) removes the note again before it starts.
  std::string reason;
  const bool noted = wait_until(claim_dir(), [&] { return !(reason = slurp(note)).empty(); });
  EXPECT_TRUE(noted);
  if (noted) {
    EXPECT_NE(reason.find("exited with status 1"), std::string::npos) << reason;
    // The retry (backoff) starts it once the cause is gone, and takes the note away.
    fs::remove(refuse);
    EXPECT_TRUE(wait_until(claim_dir(), [&] {
      return mps_marker_live(mps_ready_marker(root(), mps_claim_resource(kUid))) && !fs::exists(note);
    }));
  }
  stop();  // before the environment changes: the supervisor's thread spawns processes
  ::unsetenv("FAKE_MPS_REFUSE_START");
}

// Issue 28, item 5: each claim's daemon shares memory with that claim's containers only, on a tmpfs
// of the configured size; a supervisor restart keeps it (a restarted daemon and the running
// clients still agree), and the claim's end unmounts it.
TEST_F(ClaimRequestFolderTest, EachClaimHasItsOwnSizeLimitedSharedMemoryWhichOutlivesASupervisorRestart) {
  if (!test::can_mount_tmpfs()) GTEST_SKIP() << test::kNoMountsReason;
  constexpr uint64_t kShmBytes = 8u << 20;
  auto folder = MpsClaimRequestFolder::open(root(), kShmBytes);
  ASSERT_TRUE(folder.ok()) << folder.error().message;
  launch(*folder);
  MpsClaimRequest other = request();
  other.claim_uid = "other-claim";
  write_request(request());
  write_request(other);
  const auto ready = [&](const std::string& uid) {
    return mps_marker_live(mps_ready_marker(root(), mps_claim_resource(uid)));
  };
  const fs::path other_dir = mps_resource_dir(root(), mps_claim_resource("other-claim"));
  ASSERT_TRUE(test::wait_in_folders({claim_dir(), other_dir}, [&] { return ready(kUid) && ready("other-claim"); }))
      << log();
  const std::string shm = mps_claim_shm_dir(root(), kUid);
  const std::string other_shm = mps_claim_shm_dir(root(), "other-claim");
  ASSERT_TRUE(is_tmpfs_mount_point(shm));
  ASSERT_TRUE(is_tmpfs_mount_point(other_shm));
  struct statfs size {};
  ASSERT_EQ(::statfs(shm.c_str(), &size), 0);
  EXPECT_EQ(static_cast<uint64_t>(size.f_blocks) * size.f_bsize, kShmBytes);
  // The daemon's /dev/shm is its claim's tmpfs, and the two claims' are not the same.
  struct stat mine {}, theirs {};
  ASSERT_EQ(::stat(shm.c_str(), &mine), 0);
  ASSERT_EQ(::stat(other_shm.c_str(), &theirs), 0);
  EXPECT_NE(mine.st_dev, theirs.st_dev);
  EXPECT_NE(log().find("shm-device " + std::to_string(mine.st_dev) + "\n"), std::string::npos) << log();
  const std::string other_log = slurp(other_dir / "log/fake-control.log");
  EXPECT_NE(other_log.find("shm-device " + std::to_string(theirs.st_dev) + "\n"), std::string::npos) << other_log;

  // A supervisor restart with the claim still prepared: the same tmpfs, what clients wrote kept.
  std::ofstream(shm + "/segment") << "client data";
  stop();
  ASSERT_TRUE(is_tmpfs_mount_point(shm));
  char stop_byte;
  ASSERT_EQ(::read(stop_[0], &stop_byte, 1), 1);  // the next run must not see the last stop
  launch(*folder);
  ASSERT_TRUE(wait_until(claim_dir(), [&] { return ready(kUid); })) << log();
  EXPECT_EQ(slurp(shm + "/segment"), "client data");
  struct stat again {};
  ASSERT_EQ(::stat(shm.c_str(), &again), 0);
  EXPECT_EQ(again.st_dev, mine.st_dev);

  // The claim's end: its tmpfs is unmounted with its folder; the other claim's stays.
  fs::remove(mps_claim_request_file(root(), kUid));
  ASSERT_TRUE(wait_until(claim_dir().parent_path(), [&] { return !fs::exists(claim_dir()); }));
  EXPECT_TRUE(test::mounts_under(claim_dir().string()).empty());
  EXPECT_TRUE(is_tmpfs_mount_point(other_shm));
  stop();
  EXPECT_TRUE(result_.ok());
}

TEST(ClaimShm, HalfTheNodesMemoryByDefaultAndTheFallbackWhenMemInfoIsUnreadable) {
  EXPECT_EQ(default_claim_shm_bytes("MemFree: 10 kB\nMemTotal:       16303412 kB\n"), (16303412ull << 10) / 2);
  EXPECT_EQ(default_claim_shm_bytes(""), kClaimShmFallbackBytes);
  EXPECT_EQ(default_claim_shm_bytes("MemTotal: lots kB\n"), kClaimShmFallbackBytes);
  EXPECT_EQ(default_claim_shm_bytes("MemTotal: 1024 MB\n"), kClaimShmFallbackBytes);
  EXPECT_EQ(default_claim_shm_bytes("MemTotal: 0 kB\n"), kClaimShmFallbackBytes);
  EXPECT_EQ(default_claim_shm_bytes("MemTotal: 99999999999999999999999 kB\n"), kClaimShmFallbackBytes);
  EXPECT_EQ(default_claim_shm_bytes("MemTotal: 1 kB\n"), kClaimShmMinBytes);
}

// Issue 38, item 5: --claim-shm-size 1Ei was accepted. Bounded by the node's memory (or 16 TiB
// when unknown) and 1 MiB, the value named in the error.
TEST(ClaimShm, TheFlagsSizeIsBoundedByTheNodesMemory) {
  const std::string meminfo = "MemTotal:       16777216 kB\n";  // 16 GiB
  EXPECT_TRUE(check_claim_shm_bytes("8Gi", uint64_t{8} << 30, meminfo).ok());
  EXPECT_TRUE(check_claim_shm_bytes("16Gi", uint64_t{16} << 30, meminfo).ok());
  auto huge = check_claim_shm_bytes("1Ei", uint64_t{1} << 60, meminfo);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().code, Error::Code::InvalidArgument);
  EXPECT_NE(huge.error().message.find("--claim-shm-size 1Ei (1152921504606846976 bytes) is more than the node's "
                                      "memory (16384 MiB)"),
            std::string::npos)
      << huge.error().message;
  EXPECT_FALSE(check_claim_shm_bytes("17Gi", uint64_t{17} << 30, meminfo).ok());
  auto unknown = check_claim_shm_bytes("1Ei", uint64_t{1} << 60, "");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("is more than 16777216 MiB"), std::string::npos) << unknown.error().message;
  EXPECT_TRUE(check_claim_shm_bytes("1Ti", uint64_t{1} << 40, "").ok());
  auto tiny = check_claim_shm_bytes("1k", 1000, meminfo);
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().message.find("--claim-shm-size 1k (1000 bytes) is below"), std::string::npos);
}

TEST(ClaimShm, AFolderOnATmpfsIsNotAMountPointAndUnmountingNothingIsFine) {
  const auto dir = test::fresh_test_folder("kgpu-claim-shm");
  EXPECT_FALSE(is_tmpfs_mount_point(dir.string()));
  EXPECT_FALSE(is_tmpfs_mount_point((dir / "missing").string()));
  EXPECT_TRUE(unmount_claim_shm(dir.string()).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kgpu
