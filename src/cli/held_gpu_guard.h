#pragma once
// Keeps GPUs that running pods hold under a previous config's IDs out of the plan the daemon
// serves (see podresources/held_gpus.h), wired in as the daemon's plan filter: when a new plan no
// longer advertises IDs that were served, it asks the kubelet's PodResources API who holds them.
// While GPUs are held it re-plans every `recheck` (and only then: no wake-ups otherwise), so they
// come back as soon as their pods are gone.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/resource_plan.h"
#include "podresources/held_gpus.h"

namespace kgpu::cli {

class HeldGpuGuard {
 public:
  explicit HeldGpuGuard(std::string pod_resources_socket,
                        std::chrono::milliseconds recheck = std::chrono::milliseconds(1000));
  ~HeldGpuGuard();  // stop()
  HeldGpuGuard(const HeldGpuGuard&) = delete;
  HeldGpuGuard& operator=(const HeldGpuGuard&) = delete;

  // The plan filter; called on the daemon's loop thread only.
  ResourcePlan filter(ResourcePlan plan);
  // Re-plan every `recheck` also while `on` (another owner of held GPUs waits for pods: DRA's
  // split, dra_wiring.h); thread-safe.
  void keep_rechecking(bool on);
  // Starts the re-check thread; `replan` asks the daemon to plan again (thread-safe).
  void start(std::function<void()> replan);
  void stop();

 private:
  void run(const std::function<void()>& replan);

  const std::string socket_;
  const std::chrono::milliseconds recheck_;
  podresources::HeldGpus held_;                  // loop thread only
  std::vector<podresources::Hold> last_holds_;   // loop thread only
  bool warned_unavailable_ = false;              // loop thread only

  std::mutex mu_;
  std::condition_variable cv_;
  bool holding_ = false;       // this guard's own holds
  bool others_holding_ = false;  // keep_rechecking(true)
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kgpu::cli
