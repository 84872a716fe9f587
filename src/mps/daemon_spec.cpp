#include "mps/daemon_spec.h"

#include <set>

#include "plan/mps_limits.h"
#include "plan/mps_paths.h"

namespace kgpu {

std::vector<MpsDaemonSpec> mps_daemon_specs(const Config& config, const Inventory& inventory,
                                            const ResourcePlan& plan) {
  std::vector<MpsDaemonSpec> out;
  for (const auto& r : plan.resources) {
    if (r.sharing != SharingKind::Mps) continue;
    MpsDaemonSpec s;
    s.resource = r.name;
    s.pipe_dir = mps_pipe_dir(config.mps_root, r.name);
    s.log_dir = mps_log_dir(config.mps_root, r.name);
    s.ready_marker = mps_ready_marker(config.mps_root, r.name);
    std::set<size_t> gpus;
    for (const auto& d : r.devices)
      if (d.gpu < inventory.gpus.size()) gpus.insert(d.gpu);
    for (size_t g : gpus) {
      const Gpu& gpu = inventory.gpus[g];
      const uint64_t mib = mps_memory_limit_mib(gpu.memory_bytes, r.replicas, 1);
      if (mib == 0) continue;
      s.commands.push_back("set_default_device_pinned_mem_limit " + std::to_string(gpu.index) + " " +
                           std::to_string(mib) + "M");
    }
    s.commands.push_back("set_default_active_thread_percentage " +
                         std::to_string(mps_thread_percentage(r.replicas, 1)));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kgpu
