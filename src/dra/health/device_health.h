#pragma once
// What the kubelet's DRAResourceHealth stream carries for each device kgpu publishes, as plain
// values: the health the DRA slices show as taints (dra/model/publication.h) turned into Healthy /
// Unhealthy and a message for the people who read `kubectl describe pod` (the event, its meaning,
// what to do). Pure: from the published pool, the inventory it was built from and the health
// policy; the streams (health_streams.h) send it.
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "dra/model/dra_device.h"

namespace kgpu::dra::health {

// v1alpha1.HealthStatus, in its numbering.
enum class DeviceHealthStatus { Unknown = 0, Healthy = 1, Unhealthy = 2 };
const char* to_string(DeviceHealthStatus status);  // "Unknown", "Healthy", "Unhealthy" (as pod status shows it)

struct DeviceHealthReport {
  std::string pool;    // the ResourceSlice pool: the node's name
  std::string device;  // the device's name in it ("gpu-0", "gpu-0-mig-1g5gb-13-0")
  DeviceHealthStatus health = DeviceHealthStatus::Healthy;
  std::string message;  // empty for a healthy device with nothing to tell; at most kMaxMessage
  bool operator==(const DeviceHealthReport&) const = default;
};

// The kubelet cuts longer messages to 1021 characters and "..."; kgpu does the same, so what the
// pod shows is what kgpu logged.
inline constexpr size_t kMaxMessage = 1024;
std::string fit_message(std::string message);

// The taint key kgpu puts on a GPU with memory shares whose MPS control daemon is not ready
// ("<driver>/mps-daemon"; cli/dra_wiring.cpp).
inline constexpr std::string_view kMpsDaemonTaintKey = "mps-daemon";

// Every device of `pool`, in its order. A device's health follows its taints (an XID or a lost GPU:
// Unhealthy; the MPS daemon of its memory shares not ready: Unhealthy; an XID the policy ignores,
// a None taint: Healthy with a note); the message's words come from the inventory's health mark of
// the device (found by the device's `uuid` attribute; a MIG device takes its GPU's mark when the
// GPU as a whole is marked) and from `policy` (whether the device comes back by itself).
std::vector<DeviceHealthReport> pool_health(const DriverPool& pool, const Inventory& inventory,
                                            const HealthConfig& policy);

}  // namespace kgpu::dra::health
