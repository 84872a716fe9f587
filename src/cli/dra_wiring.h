#pragma once
// `kgpu plugin --dra`: kgpu as the DRA driver for the node's GPUs, next to (or instead of) the
// device-plugin API, from the same inventory, health and CDI code:
//  - the GPUs DRA owns (kgpu.dra.gpus / --dra-gpus, default all; dra/api_share.h) leave the
//    device-plugin plan, so no GPU is ever handed out by both APIs;
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

namespace kgpu {
class NvmlLibrary;
}

namespace kgpu::server {
class Daemon;
}

namespace kgpu::cli {

class DraWiring {
 public:
  // Error when DRA is on but cannot run (no API server, no node name).
  static Result<std::unique_ptr<DraWiring>> create(const Config& config,
                                                   const std::map<std::string, std::string>& env);
  ~DraWiring();
  // The share function for DaemonOptions::api_share.
  std::function<ResourcePlan(const Inventory&, ResourcePlan)> api_share();
  // Serves the kubelet plugin on the daemon's transport and starts publishing.
  Status start(server::Daemon& daemon);
  void on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan);
  // The NVML library discovery loaded (null until it has one), before each on_plan: the plans ask it
  // for the MIG profiles of the GPUs kgpu.dra.mig.dynamic names, and the first one is handed to the
  // NVIDIA driver's claim store for dynamic MIG instances, whose restart clean-up then runs.
  void use_nvml(const std::shared_ptr<NvmlLibrary>& nvml, const Config& config);
  // Called with true while pods hold GPUs the configuration gives DRA (the daemon should plan
  // again now and then, so they move once the pods are gone), false once none does. Before start().
  void on_pod_holds(std::function<void(bool)> listener);
  // kgpu_dra_gpu_memory_shared_bytes and kgpu_dra_gpu_memory_shares of the shared GPUs (/metrics;
  // called on the scraping thread).
  void append_share_metrics(std::string& out) const;
  void stop();

  struct Impl;

 private:
  explicit DraWiring(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kgpu::cli
