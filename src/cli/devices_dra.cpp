#include "cli/devices_dra.h"

#include "cli/dynamic_mig_facts.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <iostream>

#include "dra/api_share.h"
#include "dra/claims/dynamic_mig_use.h"
#include "dra/model/publication.h"
#include "dra/publish/pcie_roots.h"
#include "dra/publish/slice_objects.h"
#include "dra/sharing/memory_shares.h"

namespace kgpu::cli {

namespace {

// The DaemonSet passes the node name through the downward API; outside a pod the host name is the
// best guess (kubelets default to it, lower-cased).
std::string node_name() {
  if (const char* env = std::getenv("NODE_NAME"); env && *env) return env;
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "";
  std::string name = host;
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace

int print_dra_slices(const Config& config, const Inventory& inventory, const std::shared_ptr<NvmlLibrary>& nvml,
                     const std::optional<std::vector<dra::MigInstanceRecord>>& live_instances) {
  // As the daemon would publish them under this config's kgpu.dra.* (vendors, gpus, driver names),
  // whether or not kgpu.dra.enabled is set yet.
  dra::SliceOptions options;
  options.node_name = node_name();
  options.drivers = dra::driver_names(config.dra);
  options.pcie_roots = dra::read_pcie_roots(config.sysfs_root, inventory);
  options.no_execute_xids = config.dra.no_execute_xids;
  const auto share = dra::dra_share(inventory, config.dra);
  // Shareable GPUs with their request policy (kgpu.dra.sharing.memory), as an API server that
  // keeps consumable capacity gets them.
  auto memory_shares = dra::memory_share_options(inventory, config.dra.memory_sharing, share.owned);
  options.memory_shared_gpus = std::move(memory_shares.gpus);
  options.memory_policy = memory_shares.memory_policy;
  options.multiprocessors_default = memory_shares.multiprocessors_default;
  // Instances kgpu created are known from the running daemon's checkpoint only (--live): without it
  // every instance on a named GPU counts as foreign (the GPU is shown static, the warning says so).
  const auto dynamic = DynamicMigFacts().select(config, inventory, nvml,
                                                live_instances ? dra::made_mig_uuids(*live_instances)
                                                               : std::set<std::string>{});
  options.dynamic_mig = dra::dynamic_mig_layouts(dynamic);
  auto publication = dra::build_publication(inventory, options);
  if (!publication) {
    std::cerr << publication.error().message << " (set NODE_NAME)\n";
    return 1;
  }
  for (const auto& w : dynamic.warnings) publication->warnings.push_back(w);
  for (const auto& layout : options.dynamic_mig)
    publication->notes.push_back(layout.gpu_uuid + ": dynamic MIG (kgpu.dra.mig.dynamic): " +
                                 std::to_string(layout.devices.size()) + " devices (" +
                                 (!layout.devices.empty() && layout.devices.front().profile.empty() ? "the full GPU and " : "") +
                                 "every placement) consuming counter set " + layout.counter_set + " (" +
                                 std::to_string(layout.counters.size()) + " counters)");
  if (live_instances)
    for (auto& line : dra::dynamic_mig_use(options.dynamic_mig, *live_instances))
      publication->notes.push_back("live: dynamic MIG: " + std::move(line));
  for (auto& note : memory_shares.notes) publication->notes.push_back(std::move(note));
  nlohmann::json list{{"apiVersion", "v1"}, {"kind", "List"}, {"items", nlohmann::json::array()}};
  for (const auto& entry : share.unmatched)
    publication->notes.push_back("kgpu.dra.gpus entry \"" + entry + "\" names no NVIDIA GPU of this node");
  for (const auto& pool : dra::served_pools(std::move(publication->pools), inventory, config.dra, share.owned))
    for (auto& slice : dra::resource_slices(pool, options, 1, dra::SliceApi::V1)) list["items"].push_back(slice);
  std::cout << list.dump(2) << "\n";
  for (const auto& note : publication->notes) std::cerr << "note: " << note << "\n";
  for (const auto& warning : publication->warnings) std::cerr << "warning: " << warning << "\n";
  return 0;
}

}  // namespace kgpu::cli
