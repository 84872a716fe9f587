// Chaos, bounded: the real `kgpu plugin` under many kubelet restarts with allocations in flight,
// hundreds of config reloads with XIDs injected, kill -9 mid-stream and a restart, and SIGTERM
// while ListAndWatch readers are stuck. Each test ends with the state checked exactly; each
// stays well under a minute on a loaded machine.
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "e2e/sim_fixture.h"
#include "fake-nvml/fake_nvml_control.h"
#include "support/stuck_grpc_peer.h"

namespace kgpu::test {
namespace {

const std::string kGpu = "nvidia.com/gpu";

void replace_file(const std::string& path, const std::string& content) {
  std::string tmp = path + ".new";
  std::ofstream(tmp) << content;
  std::filesystem::rename(tmp, path);
}

// Reads what a growing log file gained since the last call (no re-reading of the whole file).
class LogTail {
 public:
  explicit LogTail(std::string path) : path_(std::move(path)) {}
  // True once `needle` appeared in the text added since the last call that returned true.
  bool saw(const std::string& needle) {
    std::ifstream in(path_);
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string more((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    pending_ += more;
    offset_ += more.size();
    auto at = pending_.find(needle);
    if (at == std::string::npos) return false;
    pending_.erase(0, at + needle.size());
    return true;
  }

 private:
  std::string path_;
  size_t offset_ = 0;
  std::string pending_;
};

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

class ChaosE2E : public SimE2E {};

TEST_F(ChaosE2E, HundredKubeletRestartsWhileAllocating) {
  auto plugin = start();
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  const auto ids = sim->snapshot().find(kGpu)->device_ids();
  std::atomic<bool> done{false};
  std::atomic<int> allocated{0}, refused{0};
  // Allocations in flight throughout; between a restart and the re-registration the allocator
  // waits for the stream (on the simulator's condition variable) instead of spinning on refusals.
  auto streaming = [](const sim::Snapshot& s) { return s.find(kGpu) && s.find(kGpu)->connected; };
  std::thread allocator([&] {
    for (size_t i = 0; !done; ++i) {
      if (!sim->wait_for(streaming, 100ms)) continue;
      (sim->allocate(kGpu, {ids[i % ids.size()]}).ok() ? allocated : refused)++;
    }
  });
  constexpr int kRestarts = 100;
  for (int i = 1; i <= kRestarts; ++i) {
    ASSERT_TRUE(sim->restart().ok());
    ASSERT_TRUE(wait_healthy(kGpu, 8, i + 1)) << "restart " << i << "\n" << diagnostics(*plugin);
  }
  done = true;
  allocator.join();
  auto snap = sim->snapshot();
  const auto* r = snap.find(kGpu);
  // One registration per restart. (A Register racing the kubelet.sock swap may be repeated; the
  // kubelet accepts that, so allow a few, but never one per event.)
  EXPECT_GE(r->registrations, kRestarts + 1);
  EXPECT_LE(r->registrations, kRestarts + 5);
  EXPECT_EQ(r->device_ids(), ids);
  EXPECT_EQ(r->healthy_count(), 8u);
  EXPECT_GT(allocated.load(), 0);
  EXPECT_TRUE(sim->allocate(kGpu, {ids[0]}).ok());
  EXPECT_TRUE(plugin->running());
  const std::string log = plugin->stderr_text();
  EXPECT_LE(count_of(log, "kubelet restart seen"), static_cast<size_t>(kRestarts));  // each restart said once
  std::cout << "[figure] " << kRestarts << " kubelet restarts: " << r->registrations << " registrations, "
            << allocated.load() << " allocations answered, " << refused.load() << " refused mid-restart\n";
}

// Plain, time-slicing, MIG (mixed) and invalid configs in turn, 200 reloads, with XIDs injected
// along the way (a fatal one on the GPU without MIG). Each valid reload is waited for in the
// kubelet's view; each invalid one in the log.
TEST_F(ChaosE2E, TwoHundredReloadsWithXids) {
  fake_nvml::Control control(work.file("nvml.control"));
  const std::string plain = "version: v1\n";
  const std::string sliced =
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n";
  const std::string mig = "version: v1\nflags:\n  migStrategy: mixed\n";
  const std::string invalid =
      "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 0\n";
  std::string config = work.write("cfg/config.yaml", plain);
  PluginOptions options;
  options.fleet_file = "a100-mig-mixed.yaml";
  options.config_file = config;
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 4, 1, 4)) << diagnostics(*plugin);
  LogTail log(plugin->stderr_path());
  ASSERT_TRUE(wait_until([&] { return log.saw("health: watching"); }, 20s)) << diagnostics(*plugin);
  const std::string full_gpu = "GPU-e88edd50-5042-4947-984d-bd487b982ff1";  // GPU 3: MIG disabled
  std::string gpu3;
  for (const auto& id : sim->snapshot().find(kGpu)->device_ids())
    if (id.rfind(full_gpu, 0) == 0) gpu3 = id;

  int mig_registrations = 0;
  bool xid_sent = false;
  constexpr int kReloads = 200;
  for (int i = 0; i < kReloads; ++i) {
    if (i == kReloads / 2) {
      // Double-bit ECC on GPU 3: unhealthy until reset. The current plan (MIG, kept by the invalid
      // config before) serves GPU 3 alone as nvidia.com/gpu. Sent again while not yet seen, in
      // case it raced the health monitor re-arming after the last reload.
      ASSERT_FALSE(gpu3.empty());
      auto unhealthy = [&](const sim::Snapshot& s) { return s.find(kGpu) && s.find(kGpu)->healthy_count() == 0; };
      ASSERT_TRUE(wait_until([&] { return control.inject_xid(gpu3, 48) && sim->wait_for(unhealthy, 500ms); }, 20s))
          << diagnostics(*plugin);
      xid_sent = true;
    }
    if (i % 10 == 5) {
      for (const auto& id : sim->snapshot().find(kGpu)->device_ids())
        control.inject_xid(id.substr(0, id.find("::")), 13);  // an application error: ignored
    }
    const size_t healthy_full = xid_sent ? 0 : 1;  // GPU 3 is healthy until the fatal XID
    switch (i % 4) {
      case 0:
        replace_file(config, plain);
        ASSERT_TRUE(sim->wait_for(
            [&](const sim::Snapshot& s) {
              const auto* r = s.find(kGpu);
              return r && r->connected && r->devices.size() == 4 && r->healthy_count() == 3 + healthy_full;
            },
            20s))
            << "reload " << i << "\n" << diagnostics(*plugin);
        break;
      case 1:
        replace_file(config, sliced);
        ASSERT_TRUE(sim->wait_for(
            [&](const sim::Snapshot& s) {
              const auto* r = s.find(kGpu);
              return r && r->connected && r->devices.size() == 8 && r->healthy_count() == 6 + 2 * healthy_full;
            },
            20s))
            << "reload " << i << "\n" << diagnostics(*plugin);
        break;
      case 2:
        replace_file(config, mig);
        ++mig_registrations;
        ASSERT_TRUE(sim->wait_for(
            [&](const sim::Snapshot& s) {
              const auto* g = s.find(kGpu);
              const auto* m = s.find("nvidia.com/mig-1g.5gb");
              return g && g->connected && g->devices.size() == 1 && g->healthy_count() == healthy_full && m &&
                     m->connected && m->registrations == mig_registrations && m->healthy_count() == 9;
            },
            20s))
            << "reload " << i << "\n" << diagnostics(*plugin);
        break;
      case 3:
        replace_file(config, invalid);
        ASSERT_TRUE(wait_until([&] { return log.saw("keeping the current plan"); }, 20s))
            << "reload " << i << "\n" << diagnostics(*plugin);
        break;
    }
  }
  // Final state: the MIG plan of the last valid config, GPU 3 still unhealthy, every MIG device
  // healthy (the ignored XIDs changed nothing), and the daemon still allocates.
  // The MIG reload's wait above looks at two of its four resources; the other two may still be
  // registering when the last (invalid) reload is logged: wait for all four.
  ASSERT_TRUE(sim->wait_for(
      [](const sim::Snapshot& s) {
        for (const char* name : {"nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb", "nvidia.com/mig-3g.20gb", "nvidia.com/gpu"})
          if (!s.find(name) || !s.find(name)->connected) return false;
        return true;
      },
      20s))
      << diagnostics(*plugin);
  auto snap = sim->snapshot();
  EXPECT_EQ(snap.find("nvidia.com/mig-1g.5gb")->healthy_count(), 9u);
  EXPECT_EQ(snap.find("nvidia.com/mig-2g.10gb")->healthy_count(), 4u);
  EXPECT_EQ(snap.find("nvidia.com/mig-3g.20gb")->healthy_count(), 1u);
  EXPECT_EQ(snap.find(kGpu)->healthy_count(), 0u);
  auto mig_id = snap.find("nvidia.com/mig-1g.5gb")->device_ids()[0];
  EXPECT_TRUE(sim->allocate("nvidia.com/mig-1g.5gb", {mig_id}).ok());
  EXPECT_TRUE(plugin->running());
}

// kill -9 while the kubelet streams and allocates; a new process serves the same devices and
// writes the same CDI spec and labels (the killed one could clean nothing up).
TEST_F(ChaosE2E, KillNineMidStreamThenRestartIsConsistent) {
  const std::string spec_dir = work.file("cdi");
  const std::string labels = work.file("features.d/kgpu");
  std::filesystem::create_directories(work.file("features.d"));
  PluginOptions options;
  options.extra_args = {"--device-list-strategy", "cdi-annotations", "--cdi-spec-dir", spec_dir,
                        "--container-driver-root", std::string(KGPU_FIXTURES_DIR) + "/driver-root",
                        "--labels", "--output-file", labels};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("cdi: wrote") != std::string::npos; }, 20s));
  ASSERT_TRUE(wait_until([&] { return read_file(labels).find("nvidia.com/gpu.count=8") != std::string::npos; }, 20s));
  // The harness generates each process's fake /dev tree under node-<name>: the same node to kgpu.
  auto read_specs = [&] {
    std::map<std::string, std::string> specs;
    for (const auto& e : std::filesystem::directory_iterator(spec_dir)) {
      std::string text = read_file(e.path());
      for (size_t at; (at = text.find("/node-plugin2/")) != std::string::npos;) text.replace(at, 14, "/node-plugin/");
      specs[e.path().filename()] = text;
    }
    return specs;
  };
  // Labels other than the time stamp of the writer's start.
  auto stable_labels = [&] {
    std::string out, line;
    std::istringstream in(read_file(labels));
    while (std::getline(in, line))
      if (line.find("timestamp") == std::string::npos) out += line + "\n";
    return out;
  };
  const auto ids = sim->snapshot().find(kGpu)->device_ids();
  const auto specs = read_specs();
  const auto label_text = stable_labels();

  std::atomic<bool> done{false};
  auto streaming = [](const sim::Snapshot& s) { return s.find(kGpu) && s.find(kGpu)->connected; };
  std::thread allocator([&] {
    for (size_t i = 0; !done; ++i)
      if (sim->wait_for(streaming, 100ms)) (void)sim->allocate(kGpu, {ids[i % ids.size()]});
  });
  plugin->signal(SIGKILL);
  ASSERT_TRUE(plugin->wait_exit(10s).has_value());
  PluginOptions again = options;
  again.name = "plugin2";
  auto second = start(again);
  ASSERT_TRUE(wait_healthy(kGpu, 8, 2)) << diagnostics(*second);
  done = true;
  allocator.join();
  EXPECT_EQ(sim->snapshot().find(kGpu)->device_ids(), ids);
  auto describe = [](const std::map<std::string, std::string>& m) {
    std::string out;
    for (const auto& [name, text] : m) out += name + " (" + std::to_string(text.size()) + " bytes)\n" + text + "\n";
    return out;
  };
  ASSERT_TRUE(wait_until([&] { return read_specs() == specs; }, 20s))
      << "before:\n" << describe(specs) << "after:\n" << describe(read_specs()) << diagnostics(*second);
  ASSERT_TRUE(wait_until([&] { return stable_labels() == label_text; }, 20s)) << read_file(labels);
  auto edits = sim->allocate(kGpu, {ids[3]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->annotations.begin()->second, "k8s.device-plugin.nvidia.com/gpu=" + ids[3]);
}

// SIGTERM while ListAndWatch streams of a large list are open: one read by the kubelet, one whose
// gRPC reader never calls Read (the HTTP/2 window fills), two raw peers that never read their
// socket (gRPC's own write blocks). The daemon must exit, cleanly, in under a second.
TEST_F(ChaosE2E, SigtermWithStuckListAndWatchReadersExitsWithinOneSecond) {
  std::string config = work.write("cfg/config.yaml",
                                  "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                                  "      replicas: 2000\n");
  PluginOptions options;
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 16000)) << diagnostics(*plugin);
  const std::string socket = plugin_dir + "/" + socket_name(kGpu);
  StuckPeer stuck1(socket), stuck2(socket);
  ASSERT_TRUE(stuck1.connected() && stuck2.connected());
  auto stub = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto unread = stub->ListAndWatch(&ctx, v1beta1::Empty());
  v1beta1::ListAndWatchResponse first;
  ASSERT_TRUE(unread->Read(&first));  // open and served once; never read again
  EXPECT_EQ(first.devices_size(), 16000);
  // New lists for every stream (a config change): the stuck ones cannot take them.
  replace_file(config, "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                       "      replicas: 2001\n");
  ASSERT_TRUE(wait_healthy(kGpu, 16008)) << diagnostics(*plugin);

  auto t0 = std::chrono::steady_clock::now();
  plugin->signal(SIGTERM);
  auto rc = plugin->wait_exit(20s);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  ASSERT_TRUE(rc.has_value()) << diagnostics(*plugin);
  EXPECT_EQ(*rc, 0) << diagnostics(*plugin);
  EXPECT_LT(took, 1000ms) << diagnostics(*plugin);
  EXPECT_FALSE(path_exists(socket));
  std::cout << "[figure] SIGTERM -> exit with stuck ListAndWatch readers (16,008 devices): " << took.count()
            << " ms\n";
  ctx.TryCancel();
}

// SIGTERM -> exit in each stream state, as figures (health checks off: the health monitor's own
// stop is measured elsewhere): no kubelet (no streams), the kubelet's streams open and read.
TEST_F(ChaosE2E, SigtermExitTimesInEveryStreamState) {
  auto timed_exit = [&](ChildProcess& plugin) {
    auto t0 = std::chrono::steady_clock::now();
    plugin.signal(SIGTERM);
    auto rc = plugin.wait_exit(20s);
    auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
    EXPECT_EQ(rc, std::optional<int>(0)) << diagnostics(plugin);
    return took;
  };
  PluginOptions options;
  options.env["DP_DISABLE_HEALTHCHECKS"] = "all";
  {
    auto plugin = start(options);
    ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
    auto took = timed_exit(*plugin);
    EXPECT_LT(took, 1s);
    std::cout << "[figure] SIGTERM -> exit, kubelet streams open and read: " << took.count() / 1000.0 << " ms\n";
  }
  sim->stop();
  options.name = "alone";
  auto alone = start(options);
  ASSERT_TRUE(wait_until([&] { return path_exists(plugin_dir + "/" + socket_name(kGpu)); }, 20s)) << diagnostics(*alone);
  auto took = timed_exit(*alone);
  EXPECT_LT(took, 1s);
  std::cout << "[figure] SIGTERM -> exit, no streams: " << took.count() / 1000.0 << " ms\n";
}

}  // namespace
}  // namespace kgpu::test
