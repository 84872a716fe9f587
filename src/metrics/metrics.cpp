#include "metrics/metrics.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

namespace kgpu {

// ---- ResourceMetrics --------------------------------------------------------------------------

void ResourceMetrics::set_devices(uint64_t healthy, uint64_t unhealthy) noexcept {
  healthy_.store(healthy, std::memory_order_relaxed);
  unhealthy_.store(unhealthy, std::memory_order_relaxed);
}
void ResourceMetrics::set_registered(bool registered) noexcept {
  registered_.store(registered, std::memory_order_relaxed);
}
void ResourceMetrics::observe_allocate(double seconds) noexcept { allocate_latency_.observe(seconds); }
void ResourceMetrics::observe_preferred(double seconds) noexcept { preferred_latency_.observe(seconds); }
void ResourceMetrics::count_allocation(uint64_t devices) noexcept {
  allocations_.fetch_add(1, std::memory_order_relaxed);
  allocated_devices_.fetch_add(devices, std::memory_order_relaxed);
}
void ResourceMetrics::count_allocate_error() noexcept {
  allocate_errors_.fetch_add(1, std::memory_order_relaxed);
}
void ResourceMetrics::count_registration() noexcept {
  registrations_.fetch_add(1, std::memory_order_relaxed);
}
void ResourceMetrics::count_registration_error() noexcept {
  registration_errors_.fetch_add(1, std::memory_order_relaxed);
}

// ---- Metrics ----------------------------------------------------------------------------------

Metrics::Metrics(std::string version)
    : version_(std::move(version)),
      start_time_seconds_(std::chrono::duration<double>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count()) {}

ResourceMetrics& Metrics::resource(std::string_view name) {
  {
    std::shared_lock lock(resources_mutex_);
    if (auto it = resources_.find(name); it != resources_.end()) {
      it->second->active_.store(true, std::memory_order_relaxed);
      return *it->second;
    }
  }
  std::unique_lock lock(resources_mutex_);
  auto [it, inserted] = resources_.try_emplace(std::string(name), nullptr);
  if (inserted) it->second = std::make_unique<ResourceMetrics>();
  it->second->active_.store(true, std::memory_order_relaxed);
  return *it->second;
}

void Metrics::retire_resource(std::string_view name) {
  std::shared_lock lock(resources_mutex_);
  if (auto it = resources_.find(name); it != resources_.end()) {
    it->second->active_.store(false, std::memory_order_relaxed);
    it->second->set_registered(false);
  }
}

void Metrics::set_devices(std::string_view r, uint64_t healthy, uint64_t unhealthy) {
  resource(r).set_devices(healthy, unhealthy);
}
void Metrics::set_registered(std::string_view r, bool registered) { resource(r).set_registered(registered); }
void Metrics::observe_allocate(std::string_view r, double seconds) { resource(r).observe_allocate(seconds); }
void Metrics::observe_preferred(std::string_view r, double seconds) { resource(r).observe_preferred(seconds); }
void Metrics::count_allocation(std::string_view r, uint64_t devices) { resource(r).count_allocation(devices); }
void Metrics::count_allocate_error(std::string_view r) { resource(r).count_allocate_error(); }
void Metrics::count_registration(std::string_view r) { resource(r).count_registration(); }
void Metrics::count_registration_error(std::string_view r) { resource(r).count_registration_error(); }

void Metrics::count_xid(uint64_t xid, std::string_view gpu_uuid) {
  std::lock_guard lock(xids_mutex_);
  ++xids_[{std::string(gpu_uuid), xid}];
  if (gpu_uuid.empty()) return;
  if (auto it = last_xids_.find(gpu_uuid); it != last_xids_.end()) {
    it->second = xid;
  } else {
    last_xids_.emplace(std::string(gpu_uuid), xid);
  }
}

std::optional<uint64_t> Metrics::last_xid(std::string_view gpu_uuid) const {
  std::lock_guard lock(xids_mutex_);
  if (auto it = last_xids_.find(gpu_uuid); it != last_xids_.end()) return it->second;
  return std::nullopt;
}

void Metrics::add_exposition(Exposition exposition) {
  std::lock_guard lock(expositions_mutex_);
  expositions_.push_back(std::make_shared<const Exposition>(std::move(exposition)));
}

void Metrics::count_reload(bool ok) noexcept {
  (ok ? reloads_ok_ : reloads_failed_).fetch_add(1, std::memory_order_relaxed);
  config_invalid_.store(!ok, std::memory_order_relaxed);
}

std::vector<std::string> Metrics::active_resources() const {
  std::vector<std::string> names;
  std::shared_lock lock(resources_mutex_);
  for (const auto& [name, r] : resources_) {
    if (r->active_.load(std::memory_order_relaxed)) names.push_back(name);
  }
  return names;
}

void Metrics::mark_planned() noexcept { planned_.store(true, std::memory_order_release); }

bool Metrics::all_registered() const {
  if (!planned_.load(std::memory_order_acquire)) return false;
  std::shared_lock lock(resources_mutex_);
  for (const auto& [name, r] : resources_) {
    if (r->active_.load(std::memory_order_relaxed) && !r->registered_.load(std::memory_order_relaxed)) {
      return false;
    }
  }
  return true;
}

void Metrics::set_withheld(std::map<std::string, std::string> why) {
  std::lock_guard lock(plan_state_mutex_);
  withheld_ = std::move(why);
}

void Metrics::set_unhealthy_devices(std::vector<DeviceCause> causes) {
  std::lock_guard lock(plan_state_mutex_);
  unhealthy_ = std::move(causes);
}

std::string Metrics::not_ready_reason() const {
  if (!planned_.load(std::memory_order_acquire)) return "not ready: no device plan applied yet\n";
  std::string why;
  if (config_invalid_.load(std::memory_order_relaxed))
    why += "not ready: the configuration file on disk is invalid; the last valid one is still served (the log's "
           "\"reload:\" lines say why; kgpu config validate FILE)\n";
  {
    std::lock_guard lock(plan_state_mutex_);
    for (const auto& [name, reason] : withheld_) why += "not ready: " + name + " is withheld: " + reason + "\n";
  }
  std::shared_lock lock(resources_mutex_);
  for (const auto& [name, r] : resources_)
    if (r->active_.load(std::memory_order_relaxed) && !r->registered_.load(std::memory_order_relaxed))
      why += "not ready: " + name + " is not registered with the kubelet\n";
  return why;
}

// ---- exposition -------------------------------------------------------------------------------

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string escape_help(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// Shortest round-trip text for a sample value; Prometheus parses Go's float syntax, which %.17g
// output always is (and integers print without an exponent up to 1e17).
std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Prefer the short form when it round-trips, so "0.1" is not printed as "0.10000000000000001".
  for (int precision = 1; precision < 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

std::string format_value(uint64_t v) { return std::to_string(v); }

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += escape_help(help);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// One sample line: name{k="v",...} value. Labels are (key, value) pairs; values get escaped.
void sample(std::string& out, std::string_view name,
            std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
            const std::string& value) {
  out += name;
  if (labels.size() > 0) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out += ',';
      first = false;
      out += k;
      out += "=\"";
      out += escape_label_value(v);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

void histogram(std::string& out, std::string_view name, std::string_view resource,
               const LatencyHistogram::Snapshot& s) {
  const std::string bucket = std::string(name) + "_bucket";
  for (std::size_t i = 0; i < LatencyHistogram::kBounds.size(); ++i) {
    sample(out, bucket, {{"resource", resource}, {"le", format_value(LatencyHistogram::kBounds[i])}},
           format_value(s.cumulative[i]));
  }
  sample(out, bucket, {{"resource", resource}, {"le", "+Inf"}}, format_value(s.count));
  sample(out, std::string(name) + "_sum", {{"resource", resource}}, format_value(s.sum_seconds));
  sample(out, std::string(name) + "_count", {{"resource", resource}}, format_value(s.count));
}

}  // namespace

std::string Metrics::render() const {
  std::string out;
  out.reserve(8192);

  family(out, "kgpu_build_info", "gauge", "kgpu build information; the value is always 1.");
  sample(out, "kgpu_build_info", {{"version", version_}}, "1");
  family(out, "kgpu_start_time_seconds", "gauge", "Unix time at which the kgpu daemon started.");
  sample(out, "kgpu_start_time_seconds", {}, format_value(start_time_seconds_));

  // Take the resource list once; the records themselves are read lock-free.
  std::vector<std::pair<std::string_view, const ResourceMetrics*>> resources;
  {
    std::shared_lock lock(resources_mutex_);
    for (const auto& [name, r] : resources_) {
      if (r->active_.load(std::memory_order_relaxed)) resources.emplace_back(name, r.get());
    }
  }
  // The names stay valid after unlocking: entries are never erased.

  family(out, "kgpu_devices", "gauge", "Device IDs advertised to the kubelet, by resource and health.");
  for (const auto& [name, r] : resources) {
    sample(out, "kgpu_devices", {{"resource", name}, {"health", "healthy"}},
           format_value(r->healthy_.load(std::memory_order_relaxed)));
    sample(out, "kgpu_devices", {{"resource", name}, {"health", "unhealthy"}},
           format_value(r->unhealthy_.load(std::memory_order_relaxed)));
  }
  family(out, "kgpu_resource_registered", "gauge",
         "1 while the resource is registered with the kubelet, else 0.");
  for (const auto& [name, r] : resources) {
    sample(out, "kgpu_resource_registered", {{"resource", name}},
           r->registered_.load(std::memory_order_relaxed) ? "1" : "0");
  }

  struct Counter {
    const char* name;
    const char* help;
    std::atomic<uint64_t> ResourceMetrics::*field;
  };
  static constexpr Counter kCounters[] = {
      {"kgpu_allocations_total", "Container allocations answered by Allocate.",
       &ResourceMetrics::allocations_},
      {"kgpu_allocated_devices_total", "Device IDs handed out by Allocate.",
       &ResourceMetrics::allocated_devices_},
      {"kgpu_allocate_errors_total", "Allocate requests refused.", &ResourceMetrics::allocate_errors_},
      {"kgpu_kubelet_registrations_total",
       "Successful registrations with the kubelet; more than one means re-registration.",
       &ResourceMetrics::registrations_},
      {"kgpu_kubelet_registration_errors_total", "Failed registration attempts with the kubelet.",
       &ResourceMetrics::registration_errors_},
  };
  for (const auto& c : kCounters) {
    family(out, c.name, "counter", c.help);
    for (const auto& [name, r] : resources) {
      sample(out, c.name, {{"resource", name}}, format_value((r->*c.field).load(std::memory_order_relaxed)));
    }
  }

  family(out, "kgpu_allocate_duration_seconds", "histogram", "Latency of Allocate RPCs.");
  for (const auto& [name, r] : resources) {
    histogram(out, "kgpu_allocate_duration_seconds", name, r->allocate_latency_.snapshot());
  }
  family(out, "kgpu_preferred_allocation_duration_seconds", "histogram",
         "Latency of GetPreferredAllocation RPCs.");
  for (const auto& [name, r] : resources) {
    histogram(out, "kgpu_preferred_allocation_duration_seconds", name, r->preferred_latency_.snapshot());
  }

  family(out, "kgpu_health_xid_events_total", "counter",
         "XID events reported by the driver, including ones the health policy ignores.");
  {
    std::lock_guard lock(xids_mutex_);
    for (const auto& [key, n] : xids_) {
      const auto& [gpu, xid] = key;
      if (gpu.empty())
        sample(out, "kgpu_health_xid_events_total", {{"xid", std::to_string(xid)}}, format_value(n));
      else
        sample(out, "kgpu_health_xid_events_total", {{"gpu", gpu}, {"xid", std::to_string(xid)}}, format_value(n));
    }
  }

  {
    std::lock_guard lock(plan_state_mutex_);
    family(out, "kgpu_resource_withheld", "gauge",
           "1 for each configured resource held back from the kubelet, with the reason.");
    for (const auto& [name, reason] : withheld_)
      sample(out, "kgpu_resource_withheld", {{"resource", name}, {"reason", reason}}, "1");
    family(out, "kgpu_device_unhealthy", "gauge", "1 for each device ID advertised Unhealthy, with the cause.");
    for (const auto& c : unhealthy_)
      sample(out, "kgpu_device_unhealthy", {{"resource", c.resource}, {"device", c.device}, {"reason", c.reason}},
             "1");
  }

  family(out, "kgpu_config_reloads_total", "counter", "Configuration reloads, by result.");
  sample(out, "kgpu_config_reloads_total", {{"result", "success"}},
         format_value(reloads_ok_.load(std::memory_order_relaxed)));
  sample(out, "kgpu_config_reloads_total", {{"result", "error"}},
         format_value(reloads_failed_.load(std::memory_order_relaxed)));
  family(out, "kgpu_config_invalid", "gauge",
         "1 while the configuration file on disk is invalid and the last valid one is served, else 0.");
  sample(out, "kgpu_config_invalid", {}, config_invalid_.load(std::memory_order_relaxed) ? "1" : "0");

  // Copy the list, then render unlocked: a slow exporter must not block add_exposition.
  std::vector<std::shared_ptr<const Exposition>> expositions;
  {
    std::lock_guard lock(expositions_mutex_);
    expositions = expositions_;
  }
  for (const auto& e : expositions) (*e)(out);
  return out;
}

}  // namespace kgpu
