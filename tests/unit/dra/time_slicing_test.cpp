// Claims' time-slice intervals: what a prepare runs, what an unprepare puts back, conflicts between
// claims sharing a GPU (pure), and ClaimSharing driving a recorded runner (no process, no GPU).
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "dra/claims/claim_checkpoint.h"
#include "dra/claims/claim_store.h"
#include "dra/sharing/claim_sharing.h"
#include "dra/sharing/time_slicing.h"

namespace kgpu::dra {
namespace {

namespace fs = std::filesystem;
const std::string kGpu0 = "GPU-00000000-0000-4000-8000-000000000000";
const std::string kGpu1 = "GPU-00000000-0000-4000-8000-000000000001";

PreparedClaim claim(const std::string& uid, std::vector<TimeSliceSetting> slices) {
  PreparedClaim c;
  c.ref.uid = uid;
  c.time_slicing = std::move(slices);
  return c;
}

TEST(TimeSlicing, APrepareAppliesEveryIntervalOfTheClaim) {
  const auto c = claim("a", {{kGpu0, TimeSliceInterval::Long}, {kGpu1, TimeSliceInterval::Short}});
  auto settings = time_slices_to_apply({c}, c);  // the claim itself is among the prepared ones
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  EXPECT_EQ(*settings, c.time_slicing);
  EXPECT_EQ(set_timeslice_argv("/usr/bin/nvidia-smi", c.time_slicing[0]),
            (std::vector<std::string>{"/usr/bin/nvidia-smi", "compute-policy", "-i", kGpu0, "--set-timeslice", "3"}));
  EXPECT_EQ(set_timeslice_argv("nvidia-smi", c.time_slicing[1]).back(), "1");
}

TEST(TimeSlicing, AnotherIntervalOnAGpuAClaimAlreadyTimeSlicesIsRefusedByName) {
  const auto held = claim("a", {{kGpu0, TimeSliceInterval::Long}});
  const auto same = claim("b", {{kGpu0, TimeSliceInterval::Long}});
  const auto other = claim("c", {{kGpu1, TimeSliceInterval::Medium}, {kGpu0, TimeSliceInterval::Short}});
  EXPECT_TRUE(time_slices_to_apply({held, same}, same).ok());
  auto refused = time_slices_to_apply({held, other}, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Error::Code::FailedPrecondition);
  EXPECT_EQ(refused.error().message,
            "claim c asks for time-slice interval Short on " + kGpu0 + ", which runs Long for claim a");
}

TEST(TimeSlicing, AnUnprepareResetsOnlyGpusNoOtherClaimTimeSlices) {
  const auto a = claim("a", {{kGpu0, TimeSliceInterval::Long}, {kGpu1, TimeSliceInterval::Long}});
  const auto b = claim("b", {{kGpu1, TimeSliceInterval::Long}});
  EXPECT_EQ(time_slices_to_reset({b}, a), (std::vector<TimeSliceSetting>{{kGpu0, TimeSliceInterval::Default}}));
  EXPECT_EQ(time_slices_to_reset({}, b), (std::vector<TimeSliceSetting>{{kGpu1, TimeSliceInterval::Default}}));
  EXPECT_TRUE(time_slices_to_reset({a}, claim("none", {})).empty());
}

struct Recorder {
  std::vector<std::vector<std::string>> runs;
  std::map<std::string, std::string> env;
  bool fail = false;
  CommandRunner runner() {
    return [this](const std::vector<std::string>& argv, const std::map<std::string, std::string>& e) -> Status {
      runs.push_back(argv);
      env = e;
      if (fail) return Error::unavailable("exited with status 6");
      return ok_status();
    };
  }
};

// Issue 29, item 7: an MPS claim's GPUs run EXCLUSIVE_PROCESS; its unprepare resets them unless
// another claim still holds them so.
TEST(TimeSlicing, AnMpsClaimsGpusRunExclusiveProcessAndAreResetAfterTheLastOne) {
  auto a = claim("a", {});
  a.exclusive_gpus = {kGpu0};
  auto b = claim("b", {});
  b.exclusive_gpus = {kGpu0};
  EXPECT_TRUE(time_slices_to_reset({a, b}, a).empty());
  EXPECT_EQ(time_slices_to_reset({a}, a), (std::vector<TimeSliceSetting>{{kGpu0, TimeSliceInterval::Default}}));
  EXPECT_TRUE(sets_gpu(a, kGpu0));
  EXPECT_FALSE(sets_gpu(a, kGpu1));
  Recorder rec;
  ClaimSharing sharing({"nvidia-smi", {}}, rec.runner(), ClaimMps({}));
  auto c = claim("c", {});
  c.exclusive_gpus = {kGpu1};
  ASSERT_TRUE(sharing.apply({c}, c).ok());  // no MPS request here: the compute mode only
  ASSERT_EQ(rec.runs.size(), 1u);
  EXPECT_EQ(rec.runs[0], (std::vector<std::string>{"nvidia-smi", "-i", kGpu1, "-c", "EXCLUSIVE_PROCESS"}));
}

TEST(ClaimSharing, TimeSlicesAreSetOnPrepare) {
  Recorder rec;
  ClaimSharing sharing({"/drv/nvidia-smi", {{"LD_PRELOAD", "/drv/libnvidia-ml.so.1"}}}, rec.runner(), ClaimMps({}));
  const auto a = claim("a", {{kGpu0, TimeSliceInterval::Medium}});
  ASSERT_TRUE(sharing.apply({a}, a).ok());
  ASSERT_TRUE(sharing.undo(a, [] { return std::vector<PreparedClaim>{}; }).ok()) << "no MPS daemon to stop; the reset is the store's (pending)";
  ASSERT_EQ(rec.runs.size(), 2u);
  EXPECT_EQ(rec.runs[0], set_compute_mode_argv("/drv/nvidia-smi", kGpu0, "DEFAULT")) << "as NVIDIA's driver";
  EXPECT_EQ(rec.runs[0], (std::vector<std::string>{"/drv/nvidia-smi", "-i", kGpu0, "-c", "DEFAULT"}));
  EXPECT_EQ(rec.runs[1], set_timeslice_argv("/drv/nvidia-smi", {kGpu0, TimeSliceInterval::Medium}));
  EXPECT_EQ(rec.env.at("LD_PRELOAD"), "/drv/libnvidia-ml.so.1");
}

// The resets a store keeps pending (here: found in its checkpoint at start) are run; one that
// fails stays pending for the next call, one that succeeds is forgotten there too.
TEST(ClaimSharing, PendingResetsRunUntilTheySucceed) {
  const fs::path root = fs::temp_directory_path() / ("kgpu-resets-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "plugin");
  const ClaimStoreOptions options{"gpu.nvidia.com", (root / "plugin/claims.json").string(), (root / "cdi").string(),
                                  "boot-1"};
  std::ofstream(options.checkpoint_path)
      << checkpoint_text({"boot-1", {}, {{kGpu0, TimeSliceInterval::Default}, {kGpu1, TimeSliceInterval::Default}}});
  const ClaimFetch no_fetch = [](const std::string&, const std::string&) -> Result<std::string> {
    return Error::not_found("no API server in this test");
  };
  ClaimStore store(options, no_fetch);
  ASSERT_EQ(store.pending_resets().size(), 2u);

  Recorder rec;
  ClaimSharing sharing({"nvidia-smi", {}}, rec.runner(), ClaimMps({}));
  rec.fail = true;
  auto failed = sharing.run_pending_resets(pending_resets_of(store));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "cannot set compute mode DEFAULT on " + kGpu0 + ": exited with status 6");
  EXPECT_EQ(rec.runs.size(), 2u) << "every pending reset is tried, not only up to the first failure";
  EXPECT_EQ(store.pending_resets().size(), 2u);

  rec.fail = false;
  ASSERT_TRUE(sharing.run_pending_resets(pending_resets_of(store)).ok());
  ASSERT_EQ(rec.runs.size(), 6u);
  EXPECT_EQ(rec.runs[2], set_compute_mode_argv("nvidia-smi", kGpu0, "DEFAULT"));
  EXPECT_EQ(rec.runs[3], set_timeslice_argv("nvidia-smi", {kGpu0, TimeSliceInterval::Default}));
  EXPECT_EQ(rec.runs[5], set_timeslice_argv("nvidia-smi", {kGpu1, TimeSliceInterval::Default}));
  EXPECT_TRUE(store.pending_resets().empty());
  EXPECT_TRUE(ClaimStore(options, no_fetch).pending_resets().empty()) << "forgotten in the checkpoint";
  ASSERT_TRUE(sharing.run_pending_resets(pending_resets_of(store)).ok());
  EXPECT_EQ(rec.runs.size(), 6u) << "nothing pending: nothing run";
  fs::remove_all(root);
}

TEST(ClaimSharing, AFailedTimeSliceIsAnErrorThatSaysWhatAndStartsNoMpsDaemon) {
  Recorder rec;
  const fs::path root = fs::temp_directory_path() / ("kgpu-sharing-" + std::to_string(::getpid()));
  fs::remove_all(root);
  ClaimSharing sharing({"nvidia-smi", {}}, rec.runner(), ClaimMps({root.string()}));
  rec.fail = true;
  auto a = claim("a", {{kGpu0, TimeSliceInterval::Long}});
  a.mps = MpsClaimRequest{"a", {kGpu0}, 50, {}};
  auto failed = sharing.apply({a}, a);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "cannot set compute mode DEFAULT on " + kGpu0 + ": exited with status 6");
  EXPECT_FALSE(fs::exists(mps_claim_request_file(root.string(), "a")));  // no daemon asked for
  fs::remove_all(root);
}

TEST(ClaimSharing, ProcessRunnerReportsExitStatusAndIsCancelledAtShutdown) {
  using namespace std::chrono_literals;
  const auto run = process_runner(10s);
  EXPECT_TRUE(run({"/bin/sh", "-c", "test \"$KGPU_X\" = y"}, {{"KGPU_X", "y"}}).ok());
  const auto failed = run({"/bin/sh", "-c", "exit 6"}, {});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "/bin/sh -c exit 6: exited with status 6");
  // Shutdown has begun (the eventfd is readable): a program that would run for a minute is killed
  // at once instead of holding the DRA worker, and so the daemon's exit, for its whole timeout.
  const int cancel = ::eventfd(1, EFD_CLOEXEC);
  ASSERT_GE(cancel, 0);
  const auto start = std::chrono::steady_clock::now();
  const auto cancelled = process_runner(60s, cancel)({"/bin/sleep", "60"}, {});
  EXPECT_FALSE(cancelled.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  ::close(cancel);
}

TEST(ClaimSharing, NvidiaSmiOfTheDriverRootWithItsNvmlPreloaded) {
  const fs::path root = fs::temp_directory_path() / ("kgpu-nvsmi-" + std::to_string(::getpid()));
  fs::remove_all(root);
  Config config;
  config.nvidia_driver_root = root.string();
  EXPECT_EQ(find_nvidia_smi(config).path, "nvidia-smi");  // nothing there: PATH
  EXPECT_TRUE(find_nvidia_smi(config).env.empty());
  fs::create_directories(root / "usr/bin");
  std::ofstream(root / "usr/bin/nvidia-smi") << "#!/bin/sh\n";
  fs::create_directories(root / "usr/lib/x86_64-linux-gnu");
  std::ofstream(root / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1") << "";
  const auto found = find_nvidia_smi(config);
  EXPECT_EQ(found.path, (root / "usr/bin/nvidia-smi").string());
  EXPECT_EQ(found.env.at("LD_PRELOAD"), (root / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1").string());
  config.dra.nvidia_smi_path = "/opt/nvidia-smi";
  EXPECT_EQ(find_nvidia_smi(config).path, "/opt/nvidia-smi");
  config.nvidia_driver_root = "/";
  EXPECT_TRUE(find_nvidia_smi(config).env.empty());  // the host's own loader finds NVML
  fs::remove_all(root);
}

}  // namespace
}  // namespace kgpu::dra
