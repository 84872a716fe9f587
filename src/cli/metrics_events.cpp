#include "cli/metrics_events.h"



namespace kgpu::cli {

void MetricsEvents::allocated(const std::string& resource, double seconds, const std::vector<size_t>& devices) {
  auto& r = metrics_.resource(resource);
  r.observe_allocate(seconds);
  for (size_t n : devices) r.count_allocation(n);
}

void MetricsEvents::allocate_refused(const std::string& resource, double seconds) {
  auto& r = metrics_.resource(resource);
  r.observe_allocate(seconds);
  r.count_allocate_error();
}

void MetricsEvents::preferred(const std::string& resource, double seconds) {
  metrics_.resource(resource).observe_preferred(seconds);
}

void MetricsEvents::registration(const std::string& resource, bool ok) {
  auto& r = metrics_.resource(resource);
  if (ok) {
    r.count_registration();
    r.set_registered(true);
  } else {
    r.count_registration_error();
  }
}

void MetricsEvents::unregistered(const std::string& resource) { metrics_.resource(resource).set_registered(false); }

void MetricsEvents::config_reloaded(bool ok) { metrics_.count_reload(ok); }

}  // namespace kgpu::cli
