#pragma once
// GPU telemetry on /metrics (DCGM exporter's series, src/telemetry) plugged into `kgpu plugin`:
// registers its exposition with the metrics registry, builds the NVML collector at the first plan
// (when discovery has loaded NVML) and hands it every new inventory. Reads happen only when
// /metrics is scraped. Off with KGPU_GPU_TELEMETRY=false (Helm: metrics.gpuTelemetry).
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "config/config.h"
#include "core/inventory.h"
#include "metrics/metrics.h"
#include "nvml/nvml_library.h"
#include "telemetry/collector.h"

namespace kgpu::cli {

class TelemetryWiring {
 public:
  // Null when telemetry is switched off by the environment.
  static std::unique_ptr<TelemetryWiring> start(Metrics& metrics, const Config& config,
                                                const std::map<std::string, std::string>& env);

  // From the daemon's plan callback: the inventory to read from now on.
  void on_plan(const Inventory& inventory, std::shared_ptr<NvmlLibrary> nvml);

 private:
  TelemetryWiring(Metrics& metrics, Config config, std::string hostname);
  void append(std::string& out);

  Metrics& metrics_;
  const Config config_;
  const std::string hostname_;
  std::mutex mu_;
  std::shared_ptr<telemetry::Collector> collector_;
};

// The pods holding devices of the resources kgpu serves, from the kubelet's PodResources API.
// Null when this build has no PodResources client.
telemetry::AssignmentSource pod_resources_source(const Config& config, const Metrics& metrics);

}  // namespace kgpu::cli
