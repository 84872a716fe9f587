#pragma once
// Health events and their effect on an Inventory, as pure functions: the monitor (I/O) produces
// events, the daemon applies them to its current Inventory and re-plans. Replicas are not handled
// here: planning maps a GPU's health onto every replica it advertises.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"

namespace kgpu {

struct HealthEvent {
  enum class Kind { Xid, EccDoubleBit, Lost, Recovered };
  std::string gpu_uuid;  // the physical GPU ("GPU-...")
  Kind kind = Kind::Xid;
  uint64_t xid = 0;      // Kind::Xid only
  // The MIG instance the event names; both absent for a GPU-wide event.
  std::optional<int> gpu_instance_id;
  std::optional<int> compute_instance_id;
  std::string detail;    // extra cause text (e.g. the NVML error for Lost); may be empty
  bool operator==(const HealthEvent&) const = default;
};

const char* to_string(HealthEvent::Kind kind);

// The action the policy takes for an event (Recovered -> MarkUnhealthy is never returned; it is
// reported as Ignore since it marks nothing).
XidAction event_action(const HealthConfig& config, const HealthEvent& event);

// The cause as it appears in HealthState::reason and logs: "XID 79 (GPU has fallen off the bus)",
// "double-bit ECC error", "GPU is lost (...)".
std::string event_cause(const HealthEvent& event);

// One device whose health changed.
struct HealthChange {
  std::string device;  // GPU or MIG uuid
  std::string cause;
  bool healthy = false;  // the new state
  // Marked by a MarkUnhealthyUntilReset action: only a GPU reset and a kgpu restart bring it back.
  bool until_reset = false;
  // "GPU-x: unhealthy: XID 79 (GPU has fallen off the bus) (until GPU reset; restart kgpu after the reset)"
  std::string describe() const;
  bool operator==(const HealthChange&) const = default;
};

struct HealthUpdate {
  Inventory inventory;
  std::vector<HealthChange> changes;  // empty: no health changed (ignored event, unknown GPU, same state)
  // An XID the policy ignores was recorded as a device's informational_xid (no health change).
  bool informational_changed = false;
  bool changed() const { return !changes.empty() || informational_changed; }
};

// Applies one event. Unhealthy events mark the GPU itself when the event names no instance (and all
// its MIG devices, which share the GPU), or only the MIG device whose GI/CI ids match, keeping the
// XID (48 for double-bit ECC). Recovered marks the same set healthy again (and forgets informational
// XIDs). An XID the policy ignores (with XID checks on) is only noted as the healthy devices'
// informational_xid; other ignored events (per `config`) change nothing.
HealthUpdate apply_health_event(const Inventory& inventory, const HealthEvent& event, const HealthConfig& config);

// Re-discovery (SIGHUP, a config change, a per-node label switch) builds a fresh Inventory in which
// NVML reports every answering GPU healthy: it knows nothing of XIDs. Health marks of NVIDIA GPUs
// and MIG devices present in both are carried over from `previous`, so a config edit never
// resurrects a failed GPU; only the health monitor's Recovered event (or a daemon restart after the
// GPU was reset) brings one back. Devices found failing by the new discovery keep that state.
// NVIDIA GPUs missing from `next` (a lost GPU has no NVML handle) are kept, Unhealthy with reason
// kNotRediscovered, until a later discovery finds them answering again.
// A mark that only says "the GPU did not answer" (is_lost_mark) is lifted by any proof that it
// answers again, whichever path noticed the loss: the monitor's probes or a re-discovery that finds
// it. Everything else (XID, ECC) is carried over.
// sysfs-backed devices are left alone: their health is their presence, which discovery sees.
extern const char* const kNotRediscovered;
Inventory carry_over_health(const Inventory& previous, Inventory next);

// True for the marks that mean "the GPU did not answer": the monitor's Lost events (at event
// registration, after a wait error) and re-discovery's kNotRediscovered.
bool is_lost_mark(const HealthState& health);
// The NVIDIA GPUs of `inventory` whose mark is a lost mark, sorted.
std::vector<std::string> lost_gpus(const Inventory& inventory);

}  // namespace kgpu
