#include "cli/telemetry_wiring.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "telemetry/nvml_reader.h"

// The PodResources client (src/podresources) arrives with another branch; until it is part of the
// build, telemetry goes without pod labels.
#if __has_include("podresources/client.h")
#include "podresources/client.h"
#define KGPU_HAVE_PODRESOURCES 1
#endif

namespace kgpu::cli {

namespace {

// dcgm-exporter's Hostname label: NODE_NAME (the Helm chart sets it), else the host name.
std::string node_hostname(const std::map<std::string, std::string>& env) {
  if (auto it = env.find("NODE_NAME"); it != env.end() && !it->second.empty()) return it->second;
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) == 0) return buf;
  return {};
}

}  // namespace

telemetry::AssignmentSource pod_resources_source(const Config& config, const Metrics& metrics) {
#ifdef KGPU_HAVE_PODRESOURCES
  return [socket = podresources::socket_for(config.kubelet_socket),
          &metrics]() -> Result<std::vector<telemetry::ContainerDevices>> {
    // Short timeout: a scrape must not hang on a kubelet that does not answer.
    auto pods = podresources::list(socket, std::chrono::seconds(1));
    if (!pods) return pods.error();
    const auto served = metrics.active_resources();  // sorted
    std::vector<telemetry::ContainerDevices> out;
    for (auto& c : *pods) {
      if (!std::binary_search(served.begin(), served.end(), c.resource)) continue;
      out.push_back({std::move(c.pod_namespace), std::move(c.pod_name), std::move(c.container),
                     std::move(c.resource), std::move(c.device_ids)});
    }
    return out;
  };
#else
  static_cast<void>(config);
  static_cast<void>(metrics);
  return nullptr;
#endif
}

std::unique_ptr<TelemetryWiring> TelemetryWiring::start(Metrics& metrics, const Config& config,
                                                        const std::map<std::string, std::string>& env) {
  // kgpu.gpuTelemetry (KGPU_GPU_TELEMETRY, --gpu-telemetry): validated with the rest of the config,
  // so a value that is not a boolean stops the start instead of leaving the series on.
  if (!config.gpu_telemetry) {
    spdlog::info("telemetry: GPU series off (kgpu.gpuTelemetry / KGPU_GPU_TELEMETRY)");
    return nullptr;
  }
  std::unique_ptr<TelemetryWiring> w(new TelemetryWiring(metrics, config, node_hostname(env)));
  metrics.add_exposition([raw = w.get()](std::string& out) { raw->append(out); });
  return w;
}

TelemetryWiring::TelemetryWiring(Metrics& metrics, Config config, std::string hostname)
    : metrics_(metrics), config_(std::move(config)), hostname_(std::move(hostname)) {}

void TelemetryWiring::on_plan(const Inventory& inventory, std::shared_ptr<NvmlLibrary> nvml) {
  std::lock_guard lock(mu_);
  if (!collector_) {
    if (!nvml) return;  // no NVIDIA GPUs on this node (or NVML did not load): nothing to read
    telemetry::CollectorOptions options;
    options.hostname = hostname_;
    options.pods = pod_resources_source(config_, metrics_);
    options.xids = [&m = metrics_](const std::string& uuid) { return m.last_xid(uuid); };
    const bool attributed = options.pods != nullptr;
    collector_ = std::make_shared<telemetry::Collector>(std::make_unique<telemetry::NvmlReader>(std::move(nvml)),
                                                        std::move(options));
    spdlog::info("telemetry: GPU series on /metrics (DCGM exporter names){}",
                 attributed ? "" : "; no PodResources client in this build, so no pod labels");
  }
  collector_->set_inventory(inventory);
}

void TelemetryWiring::append(std::string& out) {
  std::shared_ptr<telemetry::Collector> c;
  {
    std::lock_guard lock(mu_);
    c = collector_;
  }
  if (c) c->append(out);
}

}  // namespace kgpu::cli
