#include "api_state.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "control_channel.h"
#include "mig_state.h"

namespace kgpu::fake_nvml {
namespace {

struct LibraryState {
  std::mutex mutex;
  int refcount = 0;
  std::unique_ptr<Simulator> live;
  // Simulators of earlier init/shutdown cycles stay allocated so a stale handle a consumer still
  // holds is rejected by lookup instead of pointing at freed memory.
  std::vector<std::unique_ptr<Simulator>> retired;
  std::unique_ptr<ControlChannel> channel;

  ~LibraryState() {
    // dlclose or process exit without nvmlShutdown: stop the watcher thread before the code unmaps.
    channel.reset();
  }
};

LibraryState& state() {
  static LibraryState s;
  return s;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::mutex& api_mutex() { return state().mutex; }

Simulator* live_simulator() { return state().live.get(); }

nvmlReturn_t init_library(unsigned /*flags*/) {
  LibraryState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.refcount > 0) {
    ++s.refcount;
    return NVML_SUCCESS;
  }
  const std::string fleet_path = env("KGPU_FAKE_NVML_FLEET");
  if (fleet_path.empty()) {
    std::fprintf(stderr, "fake-nvml: KGPU_FAKE_NVML_FLEET is not set; behaving as a node without a driver\n");
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  auto fleet = load_fleet(fleet_path);
  if (!fleet) {
    std::fprintf(stderr, "fake-nvml: %s\n", fleet.error().message.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  if (fleet->init_failure) return *fleet->init_failure;
  load_mig_state(*fleet);  // instances an earlier process made (KGPU_FAKE_NVML_MIG_STATE)
  const std::string control_path = env("KGPU_FAKE_NVML_CONTROL");
  s.live = std::make_unique<Simulator>(std::move(fleet).value(), control_path.empty() ? "" : control_path + ".ack");
  s.refcount = 1;
  if (!control_path.empty()) {
    s.channel = std::make_unique<ControlChannel>(control_path);
    // Replay what is already there, so state (lost GPUs, failures) holds from the first call.
    for (const auto& line : s.channel->read_new_lines()) s.live->apply_command(line);
    // The thread only takes the mutex when lines arrive, so starting it under the lock is safe.
    s.channel->start([](const std::vector<std::string>& lines) {
      std::lock_guard thread_lock(api_mutex());
      if (Simulator* sim = live_simulator())
        for (const auto& line : lines) sim->apply_command(line);
    });
  }
  return NVML_SUCCESS;
}

nvmlReturn_t shutdown_library() {
  LibraryState& s = state();
  std::unique_ptr<ControlChannel> channel;
  {
    std::lock_guard lock(s.mutex);
    if (s.refcount == 0) return NVML_ERROR_UNINITIALIZED;
    if (--s.refcount > 0) return NVML_SUCCESS;
    s.live->deactivate();
    s.retired.push_back(std::move(s.live));
    channel = std::move(s.channel);
  }
  // Joined outside the lock: the watcher thread takes the same mutex.
  channel.reset();
  return NVML_SUCCESS;
}

}  // namespace kgpu::fake_nvml
