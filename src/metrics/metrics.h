#pragma once
// The daemon's Prometheus metrics registry. One `Metrics` object lives as long as the daemon;
// servers, the registrar, the health watcher and the config reloader record into it, and
// MetricsServer renders it for /metrics.
//
// Hot paths (Allocate, GetPreferredAllocation) should hold on to the `ResourceMetrics&` returned
// by `resource()`: it stays valid for the registry's lifetime, and recording through it is a few
// relaxed atomic operations, with no lock and no allocation. The by-name convenience methods do one
// map lookup under a shared lock (no allocation once the resource exists).
//
// Families (all prefixed kgpu_):
//   kgpu_build_info{version}                          gauge, always 1
//   kgpu_start_time_seconds                           gauge, Unix time the registry was created
//   kgpu_devices{resource,health="healthy|unhealthy"} gauge, advertised device IDs
//   kgpu_resource_registered{resource}                gauge, 1 while registered with the kubelet
//   kgpu_allocations_total{resource}                  counter, container allocations answered
//   kgpu_allocated_devices_total{resource}            counter, device IDs handed out
//   kgpu_allocate_errors_total{resource}              counter, Allocate requests refused
//   kgpu_allocate_duration_seconds{resource}          histogram, Allocate RPC latency
//   kgpu_preferred_allocation_duration_seconds{resource} histogram, GetPreferredAllocation latency
//   kgpu_kubelet_registrations_total{resource}        counter, successful (re-)registrations
//   kgpu_kubelet_registration_errors_total{resource}  counter, failed registration attempts
//   kgpu_health_xid_events_total{gpu,xid}             counter, XID events seen (ignored ones too), per GPU
//                                                     UUID (gpu left out when the event named none)
//   kgpu_config_reloads_total{result="success|error"} counter
//   kgpu_resource_withheld{resource,reason}           gauge, 1 per configured resource held back
//                                                     (an MPS resource whose control daemon is not ready)
//   kgpu_device_unhealthy{resource,device,reason}     gauge, 1 per device ID advertised Unhealthy, with
//                                                     why (the XID, lost GPU, held by a pod); what
//                                                     `kgpu devices --live` shows as each device's cause
// Other exporters (GPU telemetry under DCGM exporter's names) append their families through
// add_exposition(); they are rendered after kgpu's own, on the scraping thread.
#include <atomic>
#include <functional>
#include <optional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/histogram.h"

namespace kgpu {

// Everything recorded about one advertised resource (e.g. "nvidia.com/gpu"). Thread-safe.
class ResourceMetrics {
 public:
  void set_devices(uint64_t healthy, uint64_t unhealthy) noexcept;
  void set_registered(bool registered) noexcept;
  void observe_allocate(double seconds) noexcept;
  void observe_preferred(double seconds) noexcept;
  // One container allocation (one ContainerAllocateRequest) that handed out `devices` IDs.
  void count_allocation(uint64_t devices) noexcept;
  void count_allocate_error() noexcept;
  // Every successful registration counts, so a value above 1 means the kubelet restarted.
  void count_registration() noexcept;
  void count_registration_error() noexcept;

 private:
  friend class Metrics;
  std::atomic<bool> active_{true};  // false: retired, hidden from render until used again
  std::atomic<uint64_t> healthy_{0};
  std::atomic<uint64_t> unhealthy_{0};
  std::atomic<bool> registered_{false};
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> allocated_devices_{0};
  std::atomic<uint64_t> allocate_errors_{0};
  std::atomic<uint64_t> registrations_{0};
  std::atomic<uint64_t> registration_errors_{0};
  LatencyHistogram allocate_latency_;
  LatencyHistogram preferred_latency_;
};

// One device ID advertised Unhealthy and why (kgpu_device_unhealthy).
struct DeviceCause {
  std::string resource;
  std::string device;
  std::string reason;
  bool operator==(const DeviceCause&) const = default;
};

class Metrics {
 public:
  explicit Metrics(std::string version = "unknown");
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The resource's record, created on first use. The reference stays valid as long as `*this`.
  // Calling it marks a retired resource active again.
  ResourceMetrics& resource(std::string_view name);
  // Hides a resource the daemon no longer serves from /metrics (its series disappear, as
  // Prometheus expects for a vanished target). References to it stay valid.
  void retire_resource(std::string_view name);

  // By-name conveniences for code that is not on a hot path.
  void set_devices(std::string_view resource, uint64_t healthy, uint64_t unhealthy);
  void set_registered(std::string_view resource, bool registered);
  void observe_allocate(std::string_view resource, double seconds);
  void observe_preferred(std::string_view resource, double seconds);
  void count_allocation(std::string_view resource, uint64_t devices);
  void count_allocate_error(std::string_view resource);
  void count_registration(std::string_view resource);
  void count_registration_error(std::string_view resource);

  // `gpu_uuid` (optional) also records the XID as that GPU's last one (last_xid).
  void count_xid(uint64_t xid, std::string_view gpu_uuid = {});
  // The most recent XID counted for the GPU, nullopt when none was.
  std::optional<uint64_t> last_xid(std::string_view gpu_uuid) const;

  // Adds a renderer whose text render() appends after kgpu's families (e.g. GPU telemetry). It is
  // called on every scrape from the HTTP worker thread(s), concurrently with itself, must be
  // thread-safe and must not throw; it must stay valid as long as the registry renders.
  using Exposition = std::function<void(std::string& out)>;
  void add_exposition(Exposition exposition);
  // Counts a reload; a failed one also marks the configuration on disk invalid (the daemon keeps
  // its last valid plan) until a reload succeeds: kgpu_config_invalid and a /readyz reason.
  void count_reload(bool ok) noexcept;

  // Names of the resources currently shown (not retired), sorted.
  std::vector<std::string> active_resources() const;
  // Called once the daemon has applied its first plan (record_plan does it).
  void mark_planned() noexcept;
  // The /readyz predicate the daemon can use: a plan has been applied and every resource in it
  // is registered with the kubelet (set_registered). A plan with no resources is ready.
  bool all_registered() const;
  // Configured resources the daemon holds back (resource -> why), replaced as a whole on every plan.
  void set_withheld(std::map<std::string, std::string> why);
  // Every device ID advertised Unhealthy now, with its cause; replaced as a whole on every plan.
  void set_unhealthy_devices(std::vector<DeviceCause> causes);
  // The /readyz answer: empty when ready (all_registered, nothing withheld, the configuration on
  // disk valid), otherwise one sentence per reason, so that a probe's failure message says what to
  // look at.
  std::string not_ready_reason() const;

  // Prometheus text exposition format 0.0.4, families and series in a stable order.
  std::string render() const;

 private:
  const std::string version_;
  const double start_time_seconds_;
  std::atomic<uint64_t> reloads_ok_{0};
  std::atomic<uint64_t> reloads_failed_{0};
  std::atomic<bool> config_invalid_{false};
  std::atomic<bool> planned_{false};

  mutable std::shared_mutex resources_mutex_;
  std::map<std::string, std::unique_ptr<ResourceMetrics>, std::less<>> resources_;

  mutable std::mutex xids_mutex_;  // XIDs are rare; a plain lock is cheaper than cleverness
  std::map<std::pair<std::string, uint64_t>, uint64_t> xids_;  // (GPU UUID, XID) -> count; GPUs x XIDs seen
  std::map<std::string, uint64_t, std::less<>> last_xids_;  // bounded by the node's GPUs

  mutable std::mutex plan_state_mutex_;  // set once per plan, read per scrape
  std::map<std::string, std::string> withheld_;
  std::vector<DeviceCause> unhealthy_;

  mutable std::mutex expositions_mutex_;
  std::vector<std::shared_ptr<const Exposition>> expositions_;
};

// Prometheus text-format escaping, exposed for tests and for other exporters.
std::string escape_label_value(std::string_view value);  // \ " and newline
std::string escape_help(std::string_view text);          // \ and newline

}  // namespace kgpu
