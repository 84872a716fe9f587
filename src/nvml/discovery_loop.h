#pragma once
// Finding NVIDIA GPUs when the driver may not be there yet: a one-shot load + discover, and a loop
// that retries it with capped exponential backoff (the daemon runs it when failOnInitError=false,
// so a driver installed later is picked up without a restart). The loop also wakes at once when a
// device node appears under <dev_root>/dev or a file appears in the driver root's library folders
// (inotify), and logs once per change of failure, not once per try.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/inventory.h"
#include "core/result.h"
#include "nvml/discovery.h"
#include "nvml/nvml_library.h"

namespace kgpu {

struct NvidiaDiscovery {
  std::shared_ptr<NvmlLibrary> nvml;  // keep it for the health monitor
  Inventory inventory;
};

// Loads NVML from `driver_root` and discovers the node once.
Result<NvidiaDiscovery> load_and_discover(const std::string& driver_root, const NvidiaDiscoveryOptions& options);

struct DiscoveryLoopOptions {
  std::string driver_root = "/";
  NvidiaDiscoveryOptions discovery;
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{60000};
};

class NvidiaDiscoveryLoop {
 public:
  // Called once, on the loop's thread, with the first successful discovery; the loop then ends.
  using Callback = std::function<void(NvidiaDiscovery)>;

  NvidiaDiscoveryLoop(DiscoveryLoopOptions options, Callback on_found);
  ~NvidiaDiscoveryLoop();
  NvidiaDiscoveryLoop(const NvidiaDiscoveryLoop&) = delete;
  NvidiaDiscoveryLoop& operator=(const NvidiaDiscoveryLoop&) = delete;

  Status start();
  void stop();        // interrupts a wait at once; joins the thread
  void retry_now();   // skip the current backoff (e.g. on SIGHUP)
  int attempts() const;
  std::string last_error() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace kgpu
