#include "cli/held_gpu_guard.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "core/thread_name.h"
#include "podresources/client.h"

namespace kgpu::cli {

HeldGpuGuard::HeldGpuGuard(std::string pod_resources_socket, std::chrono::milliseconds recheck)
    : socket_(std::move(pod_resources_socket)), recheck_(recheck) {}

HeldGpuGuard::~HeldGpuGuard() { stop(); }

ResourcePlan HeldGpuGuard::filter(ResourcePlan plan) {
  std::vector<podresources::Hold> holds;
  if (held_.needs_check(plan)) {
    auto pods = podresources::list(socket_, std::chrono::seconds(1));
    if (pods) {
      plan = held_.withhold(std::move(plan), *pods);
      holds = held_.holds();
      warned_unavailable_ = false;
    } else {
      if (!warned_unavailable_)
        spdlog::warn("held GPUs: cannot ask the kubelet which pods hold devices ({}); GPUs that running pods got "
                     "under IDs this config no longer advertises may be handed out again",
                     pods.error().message);
      warned_unavailable_ = true;
      held_ = podresources::HeldGpus{};  // nothing can be known: start afresh from this plan
    }
  }
  for (const auto& h : last_holds_)
    if (std::find(holds.begin(), holds.end(), h) == holds.end())
      spdlog::info("held GPUs: GPU {} released: pod {} no longer holds {} {}", h.gpu, h.pod, h.resource, h.id);
  last_holds_ = holds;
  held_.served(plan);
  {
    std::lock_guard lock(mu_);
    holding_ = !holds.empty();
  }
  cv_.notify_all();
  return plan;
}

void HeldGpuGuard::keep_rechecking(bool on) {
  {
    std::lock_guard lock(mu_);
    others_holding_ = on;
  }
  cv_.notify_all();
}

void HeldGpuGuard::start(std::function<void()> replan) {
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this, replan = std::move(replan)] {
    name_this_thread("kgpu-held-gpus");  // waits for pods to release GPUs a config switch dropped
    run(replan);
  });
}

void HeldGpuGuard::run(const std::function<void()>& replan) {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (!holding_ && !others_holding_) {
      cv_.wait(lock, [this] { return stopping_ || holding_ || others_holding_; });
      continue;
    }
    if (cv_.wait_for(lock, recheck_, [this] { return stopping_; })) break;
    lock.unlock();
    replan();
    lock.lock();
  }
}

void HeldGpuGuard::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kgpu::cli
