#pragma once
// The fixture most e2e tests share: a temp dir, a device-plugin dir in it and the in-process
// kubelet simulator serving that dir. Plugins started through start() register with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "e2e/harness.h"
#include "sim/kubelet_sim.h"

namespace kgpu::test {

class SimE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_dir = work.path() + "/dp";
    std::filesystem::create_directories(plugin_dir);
    sim = std::make_unique<sim::KubeletSim>(plugin_dir);
    ASSERT_TRUE(sim->start().ok());
  }

  std::unique_ptr<ChildProcess> start(PluginOptions options = {}) {
    options.plugin_dir = plugin_dir;
    return start_plugin(options, work.path());
  }

  // Waits until the simulator streams `healthy` healthy devices (of `total`, when given) for
  // `resource`, after at least `min_registrations` registrations.
  bool wait_healthy(const std::string& resource, size_t healthy, int min_registrations = 1,
                    std::optional<size_t> total = std::nullopt) {
    return sim->wait_for(
        [&](const sim::Snapshot& s) {
          const auto* r = s.find(resource);
          return r && r->connected && r->registrations >= min_registrations && r->healthy_count() == healthy &&
                 (!total || r->devices.size() == *total);
        },
        std::chrono::seconds(20));
  }

  // Waits until the simulator shows device `id` of `resource` with `health` ("Healthy"/"Unhealthy").
  bool wait_health(const std::string& resource, const std::string& id, const std::string& health) {
    return sim->wait_for(
        [&](const sim::Snapshot& s) {
          const auto* r = s.find(resource);
          if (!r) return false;
          return std::any_of(r->devices.begin(), r->devices.end(),
                             [&](const sim::SimDevice& d) { return d.id == id && d.health == health; });
        },
        std::chrono::seconds(20));
  }

  std::string health_of(const std::string& resource, const std::string& id) const {
    auto snap = sim->snapshot();
    const auto* r = snap.find(resource);
    if (!r) return "<no resource>";
    for (const auto& d : r->devices)
      if (d.id == id) return d.health;
    return "<no device>";
  }

  static std::string diagnostics(const ChildProcess& p) { return "plugin stderr:\n" + p.stderr_text(); }

  TempDir work{"kgpu-e2e"};
  std::string plugin_dir;
  std::unique_ptr<sim::KubeletSim> sim;
};

}  // namespace kgpu::test
