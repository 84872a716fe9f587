#pragma once
#include <string>
#include <vector>

#include "metrics/metrics.h"
#include "server/server_events.h"

namespace kgpu::cli {

// Server events recorded into the Prometheus registry.
class MetricsEvents final : public server::ServerEvents {
 public:
  explicit MetricsEvents(Metrics& metrics) : metrics_(metrics) {}
  void allocated(const std::string& resource, double seconds, const std::vector<size_t>& devices) override;
  void allocate_refused(const std::string& resource, double seconds) override;
  void preferred(const std::string& resource, double seconds) override;
  void registration(const std::string& resource, bool ok) override;
  void unregistered(const std::string& resource) override;
  void config_reloaded(bool ok) override;

 private:
  Metrics& metrics_;
};

}  // namespace kgpu::cli
