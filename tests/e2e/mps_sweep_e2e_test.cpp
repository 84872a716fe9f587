// End to end, issue 38 item 2: `kgpu mps-daemon` killed (SIGKILL) again and again, each time with a
// claim's daemon running, whose request is withdrawn (the claim unprepared) while no supervisor
// runs. Before the fix each kill left the claim's control daemon running, its /dev/shm tmpfs
// mounted and its folder in place, for good; now the next start sweeps them. The test counts what
// is left after all the kills.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e/sim_fixture.h"
#include "mps/claim_request.h"
#include "mps/readiness.h"
#include "plan/mps_paths.h"
#include "support/eventually.h"
#include "support/mounts.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class MpsSweepE2E : public SimE2E {};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Alive and not a zombie.
bool running(int pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  return !stat.empty() && stat.find(") Z ") == std::string::npos;
}

TEST_F(MpsSweepE2E, ClaimsUnpreparedWhileTheSupervisorWasKilledLeaveNothingBehind) {
  if (!can_mount_tmpfs()) GTEST_SKIP() << kNoMountsReason;
  const std::string root = work.file("mps");
  ProcessOptions options;
  options.argv = {kgpu_binary(), "mps-daemon", "--mps-root", root, "--mps-control-binary",
                  std::string(KGPU_FIXTURES_DIR) + "/mps/nvidia-cuda-mps-control", "--claim-shm-size", "4Mi",
                  "--restart-backoff-ms", "50"};
  constexpr int kKills = 20;  // as issue 38 counted leftovers
  std::vector<int> daemons;  // the fake control daemons the killed supervisors left
  // Whatever a failing run leaves: its mounts and the fake daemons it started.
  struct Cleanup {
    const std::string& root;
    const std::vector<int>& daemons;
    ~Cleanup() {
      for (int pid : daemons)
        if (running(pid)) ::kill(pid, SIGKILL);
      unmount_all_under(root);
    }
  } cleanup{root, daemons};
  for (int i = 0; i < kKills; ++i) {
    ChildProcess supervisor(options, work.path(), "mps-daemon-" + std::to_string(i));
    char uid[64];
    std::snprintf(uid, sizeof uid, "3838aaaa-0000-4000-8000-%012d", i);
    const MpsClaimRequest request{uid, {"GPU-00000000-0000-4000-8000-000000000001"}, std::nullopt, {}};
    fs::create_directories(mps_claim_requests_dir(root));
    std::ofstream(mps_claim_request_file(root, uid)) << render_mps_claim_request(request);
    const std::string resource = mps_claim_resource(uid);
    ASSERT_TRUE(eventually([&] { return mps_marker_live(mps_ready_marker(root, resource)); }, 20s))
        << supervisor.stderr_text();
    const int pid = std::atoi(slurp(mps_log_dir(root, resource) + "/fake-daemon.pid").c_str());
    ASSERT_GT(pid, 0);
    daemons.push_back(pid);
    supervisor.signal(SIGKILL);
    ASSERT_TRUE(supervisor.wait_exit(10s).has_value());
    fs::remove(mps_claim_request_file(root, uid));  // unprepared while no supervisor runs
  }
  ChildProcess last(options, work.path(), "mps-daemon-last");
  const fs::path claims = fs::path(mps_resource_dir(root, mps_claim_resource("x"))).parent_path();
  auto folders = [&] {
    size_t n = 0;
    std::error_code ec;
    for (fs::directory_iterator it(claims, ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
  };
  EXPECT_TRUE(eventually([&] { return folders() == 0; }, 30s)) << last.stderr_text();
  size_t alive = 0;
  for (int pid : daemons) alive += running(pid);
  const size_t mounts = mounts_under(claims.string()).size();
  std::printf("after %d SIGKILLs of kgpu mps-daemon with a claim unprepared meanwhile: %zu claim folders, %zu "
              "tmpfs mounts, %zu control daemons left\n",
              kKills, folders(), mounts, alive);
  EXPECT_EQ(folders(), 0u);
  EXPECT_EQ(mounts, 0u);
  EXPECT_EQ(alive, 0u);
  last.signal(SIGTERM);
  EXPECT_EQ(last.wait_exit(20s), 0) << last.stderr_text();
}

}  // namespace
}  // namespace kgpu::test
