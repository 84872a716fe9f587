#pragma once
// `kgpu plugin --dra`: kgpu as the DRA driver for the node's GPUs, next to (or instead of) the
// device-plugin API, from the same inventory, health and CDI code:
//  - the GPUs DRA owns (--dra-gpus, default all) leave the device-plugin plan, so no GPU is ever
//    handed out by both APIs;
//  - after every applied plan (discovery, health, config) the DRA pools are rebuilt and published
//    as ResourceSlices (SlicePublisher writes only what changed) and handed to the claim store;
//  - the kubelet plugin (registration + DRA node service) prepares claims through the claim store
//    (API-server fetch, CDI spec per claim, checkpoint).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"
#include "core/result.h"

namespace kgpu::server {
class Daemon;
}

namespace kgpu::cli {

struct DraArgs {
  bool enabled = false;              // --dra
  bool device_plugin = true;         // --device-plugin=false: DRA only
  std::vector<std::string> gpus;     // --dra-gpus: indexes or UUIDs DRA owns; empty: every GPU
  std::string driver = "gpu.nvidia.com";
};

// Positions in inventory.gpus that DRA owns. Error naming an entry that matches no GPU.
Result<std::vector<bool>> dra_owned_gpus(const Inventory& inventory, const std::vector<std::string>& selection);
// The device-plugin share: `plan` without the devices of owned GPUs (and resources left empty). Pure.
ResourcePlan without_owned(ResourcePlan plan, const std::vector<bool>& owned);

class DraWiring {
 public:
  // Error when DRA is on but cannot run (no API server, no node name, a bad --dra-gpus entry).
  static Result<std::unique_ptr<DraWiring>> create(const DraArgs& args, const Config& config,
                                                   const std::map<std::string, std::string>& env);
  ~DraWiring();
  // The share function for DaemonOptions::api_share.
  std::function<ResourcePlan(const Inventory&, ResourcePlan)> api_share();
  // Serves the kubelet plugin on the daemon's transport and starts publishing.
  Status start(server::Daemon& daemon);
  void on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan);
  void stop();

  struct Impl;

 private:
  explicit DraWiring(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kgpu::cli
