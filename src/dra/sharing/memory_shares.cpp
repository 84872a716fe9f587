#include "dra/sharing/memory_shares.h"

#include <algorithm>

#include "core/quantity.h"
#include "dra/sharing/prepare.h"

namespace kgpu::dra {

namespace {

// The request policy, or a note: the config check refuses bad quantities before the daemon
// starts, but `kgpu devices` and a config reload reach here too.
std::optional<CapacityRequestPolicy> policy_of(const DraMemorySharing& config, std::vector<std::string>& notes) {
  auto def = parse_quantity_bytes(config.default_share);
  auto min = parse_quantity_bytes(config.min_share);
  auto step = parse_quantity_bytes(config.share_step);
  for (const auto* r : {&def, &min, &step})
    if (!*r) {
      notes.push_back("kgpu.dra.sharing.memory.requestPolicy: " + r->error().message + "; no GPU is shared");
      return std::nullopt;
    }
  if (*step == 0 || *min == 0 || *def < *min || (*def - *min) % *step != 0) {
    notes.push_back("kgpu.dra.sharing.memory.requestPolicy: default " + config.default_share +
                    " is not the minimum plus whole steps; no GPU is shared");
    return std::nullopt;
  }
  return CapacityRequestPolicy{*def, *min, *step};
}

}  // namespace

MemoryShareOptions memory_share_options(const Inventory& inventory, const DraMemorySharing& config,
                                        const std::vector<bool>& owned) {
  MemoryShareOptions out;
  if (config.gpus.empty()) return out;
  auto policy = policy_of(config, out.notes);
  if (!policy) return out;
  out.memory_policy = *policy;
  out.multiprocessors_default = config.multiprocessors_default;
  const bool all = std::find(config.gpus.begin(), config.gpus.end(), "all") != config.gpus.end();
  std::set<std::string> matched;
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    const Gpu& g = inventory.gpus[i];
    if (g.vendor != Vendor::Nvidia || (!owned.empty() && (i >= owned.size() || !owned[i]))) continue;
    const std::string index = std::to_string(g.index);
    const bool named = all || std::find_if(config.gpus.begin(), config.gpus.end(), [&](const std::string& e) {
                                return e == index || e == g.uuid;
                              }) != config.gpus.end();
    if (!named) continue;
    matched.insert(index);
    matched.insert(g.uuid);
    if (g.mig_enabled) {
      out.notes.push_back(g.uuid + ": MIG mode is on; its MIG devices are published whole, not as memory shares");
      continue;
    }
    out.gpus.insert(g.uuid);
  }
  if (!all)
    for (const auto& entry : config.gpus)
      if (!matched.contains(entry))
        out.notes.push_back("kgpu.dra.sharing.memory.gpus entry \"" + entry +
                            "\" names no NVIDIA GPU that DRA serves on this node");
  return out;
}

int thread_percentage_for(uint64_t consumed, uint64_t total) {
  if (total == 0) return 100;
  const uint64_t percent = (std::min(consumed, total) * 100 + total - 1) / total;
  return static_cast<int>(std::clamp<uint64_t>(percent, 1, 100));
}

std::string pinned_limit_for(const std::string& uuid, uint64_t memory_bytes) {
  return uuid + "=" + std::to_string(std::max<uint64_t>(1, memory_bytes >> 20)) + "M";
}

std::string share_daemon_name(const std::string& gpu_uuid) { return "gpushare-" + gpu_uuid; }

std::set<std::string> share_daemon_gpus(const std::vector<PreparedClaim>& prepared) {
  std::set<std::string> gpus;
  for (const auto& c : prepared)
    for (const auto& d : c.share_daemons) gpus.insert(d.visible_devices.front());
  return gpus;
}

std::vector<std::string> taint_gpus_without_share_daemon(std::vector<DriverPool>& pools,
                                                         const std::set<std::string>& gpus_without_daemon) {
  std::vector<std::string> tainted;
  if (gpus_without_daemon.empty()) return tainted;
  for (auto& pool : pools)
    for (auto& d : pool.devices) {
      const auto* id = d.attribute("uuid");
      if (!id || !std::holds_alternative<std::string>(*id) || !gpus_without_daemon.contains(std::get<std::string>(*id)))
        continue;
      const DeviceTaint taint{pool.driver + "/mps-daemon", "not-ready", kTaintNoSchedule};
      if (std::find(d.taints.begin(), d.taints.end(), taint) != d.taints.end()) continue;
      d.taints.push_back(taint);
      std::sort(d.taints.begin(), d.taints.end(), [](const DeviceTaint& a, const DeviceTaint& b) { return a.key < b.key; });
      tainted.push_back(d.name + " (" + std::get<std::string>(*id) + ")");
    }
  return tainted;
}

}  // namespace kgpu::dra
