#include "health/health_events.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "config/xid_policy.h"

namespace kgpu {

namespace {
constexpr std::string_view kLostCause = "GPU is lost";
}  // namespace

const char* to_string(HealthEvent::Kind kind) {
  switch (kind) {
    case HealthEvent::Kind::Xid: return "xid";
    case HealthEvent::Kind::EccDoubleBit: return "ecc-double-bit";
    case HealthEvent::Kind::Lost: return "lost";
    case HealthEvent::Kind::Recovered: return "recovered";
  }
  return "unknown";
}

XidAction event_action(const HealthConfig& config, const HealthEvent& event) {
  switch (event.kind) {
    case HealthEvent::Kind::Xid: return xid_action(config, event.xid);
    case HealthEvent::Kind::EccDoubleBit: return ecc_double_bit_action(config);
    // A GPU that no longer answers is unusable whatever the XID policy says; it recovers by answering
    // again (the monitor's probes), so it is not "until reset".
    case HealthEvent::Kind::Lost: return config.enabled ? XidAction::MarkUnhealthy : XidAction::Ignore;
    case HealthEvent::Kind::Recovered: return XidAction::Ignore;
  }
  return XidAction::Ignore;
}

std::string event_cause(const HealthEvent& event) {
  std::string cause;
  switch (event.kind) {
    case HealthEvent::Kind::Xid: cause = describe_xid(event.xid); break;
    case HealthEvent::Kind::EccDoubleBit: cause = "double-bit ECC error"; break;
    case HealthEvent::Kind::Lost: cause = kLostCause; break;
    case HealthEvent::Kind::Recovered: cause = "recovered"; break;
  }
  if (!event.detail.empty()) cause += " (" + event.detail + ")";
  return cause;
}

std::string HealthChange::describe() const {
  return fmt::format("{}: {}: {}{}", device, healthy ? "healthy" : "unhealthy", cause,
                     until_reset ? " (until GPU reset; restart kgpu after the reset)" : "");
}

namespace {

bool instance_matches(const MigDevice& m, const HealthEvent& e) {
  if (e.gpu_instance_id && *e.gpu_instance_id != m.gpu_instance_id) return false;
  if (e.compute_instance_id && *e.compute_instance_id != m.compute_instance_id) return false;
  return true;
}

void set_health(HealthState& state, bool healthy, const std::string& cause, uint64_t xid, const std::string& device,
                std::vector<HealthChange>& changes) {
  HealthState next{healthy, healthy ? std::string() : cause, healthy ? 0 : xid};
  if (state == next) return;
  // A device already unhealthy keeps its first cause: the first failure is the one to act on.
  if (!healthy && !state.healthy) return;
  state = next;
  changes.push_back({device, cause, healthy});
}

// The XID a mark keeps for DRA's taint: the event's, and 48 (its XID) for a double-bit ECC event.
uint64_t marking_xid(const HealthEvent& event) {
  if (event.kind == HealthEvent::Kind::Xid) return event.xid;
  if (event.kind == HealthEvent::Kind::EccDoubleBit) return 48;
  return 0;
}

// An XID the policy ignores (an application's own error) changes no health, yet DRA shows the latest
// one as an informational taint: recorded on the devices it names. True when anything changed.
bool note_informational(Gpu& gpu, const HealthEvent& event, bool names_instance) {
  bool changed = false;
  auto note = [&](HealthState& state) {
    if (!state.healthy || state.informational_xid == event.xid) return;
    state.informational_xid = event.xid;
    changed = true;
  };
  bool matched_instance = false;
  for (auto& m : gpu.mig_devices) {
    if (!names_instance || !instance_matches(m, event)) continue;
    matched_instance = true;
    note(m.health);
  }
  if (!names_instance || !matched_instance) {
    note(gpu.health);
    for (auto& m : gpu.mig_devices) note(m.health);
  }
  return changed;
}

}  // namespace

HealthUpdate apply_health_event(const Inventory& inventory, const HealthEvent& event, const HealthConfig& config) {
  HealthUpdate out{inventory, {}, false};
  const bool recovered = event.kind == HealthEvent::Kind::Recovered;
  const bool ignored = !recovered && event_action(config, event) == XidAction::Ignore;
  const bool informational =
      ignored && event.kind == HealthEvent::Kind::Xid && config.enabled && config.xids_enabled && event.xid != 0;
  if (ignored && !informational) return out;

  Gpu* gpu = nullptr;
  for (auto& g : out.inventory.gpus)
    if (g.uuid == event.gpu_uuid) gpu = &g;
  if (!gpu) return out;

  const bool names_instance = event.gpu_instance_id.has_value() || event.compute_instance_id.has_value();
  if (informational) {
    out.informational_changed = note_informational(*gpu, event, names_instance);
    return out;
  }
  const bool healthy = recovered;
  const std::string cause = event_cause(event);
  const uint64_t xid = marking_xid(event);

  bool matched_instance = false;
  if (names_instance) {
    for (auto& m : gpu->mig_devices) {
      if (!instance_matches(m, event)) continue;
      matched_instance = true;
      set_health(m.health, healthy, cause, xid, m.uuid, out.changes);
    }
  }
  if (!names_instance || !matched_instance) {
    // GPU-wide (or an instance we do not know, which still says the GPU is in trouble): the GPU and
    // every MIG device on it.
    set_health(gpu->health, healthy, cause, xid, gpu->uuid, out.changes);
    for (auto& m : gpu->mig_devices) set_health(m.health, healthy, cause, xid, m.uuid, out.changes);
  }
  if (!recovered && event_action(config, event) == XidAction::MarkUnhealthyUntilReset)
    for (auto& change : out.changes) change.until_reset = true;
  return out;
}

const char* const kNotRediscovered = "not found on re-discovery (lost or removed)";

namespace {

// What re-discovery keeps of a device's earlier state: its mark (unless it only said the GPU did not
// answer, and it answers now), or, healthy both times, its informational XID.
void carry_mark(const HealthState& before, HealthState& now, bool was_missing) {
  if (!now.healthy) return;
  if (!before.healthy && !was_missing) now = before;
  else if (before.healthy) now.informational_xid = before.informational_xid;
}

}  // namespace

Inventory carry_over_health(const Inventory& previous, Inventory next) {
  for (auto& gpu : next.gpus) {
    if (gpu.vendor != Vendor::Nvidia) continue;
    const Gpu* before = previous.find_by_uuid(gpu.uuid);
    if (!before) continue;
    // A GPU that only did not answer answers again: that is the recovery its mark was waiting for,
    // whether re-discovery or the health monitor noticed the loss.
    const bool was_missing = is_lost_mark(before->health);
    carry_mark(before->health, gpu.health, was_missing);
    for (auto& mig : gpu.mig_devices) {
      auto it = std::find_if(before->mig_devices.begin(), before->mig_devices.end(),
                             [&](const MigDevice& m) { return m.uuid == mig.uuid; });
      if (it != before->mig_devices.end()) carry_mark(it->health, mig.health, was_missing);
    }
  }
  // GPUs that vanished (NVML cannot even hand out a handle for a lost GPU) stay advertised as
  // Unhealthy: the kubelet then shows them as capacity that is not allocatable, which is what
  // happened, instead of silently shrinking the node.
  for (const auto& old : previous.gpus) {
    if (old.vendor != Vendor::Nvidia || next.find_by_uuid(old.uuid)) continue;
    Gpu kept = old;
    kept.health = {false, kNotRediscovered};
    for (auto& m : kept.mig_devices) m.health = kept.health;
    next.gpus.push_back(std::move(kept));
    if (!next.topology.empty()) {  // unknown links to the kept GPU keep the matrix square
      for (auto& row : next.topology.links) row.push_back(GpuLink{});
      next.topology.links.emplace_back(next.gpus.size());
    }
  }
  return next;
}

bool is_lost_mark(const HealthState& health) {
  if (health.healthy) return false;
  return health.reason == kNotRediscovered || std::string_view(health.reason).starts_with(kLostCause);
}

std::vector<std::string> lost_gpus(const Inventory& inventory) {
  std::vector<std::string> out;
  for (const auto& g : inventory.gpus)
    if (g.vendor == Vendor::Nvidia && is_lost_mark(g.health)) out.push_back(g.uuid);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kgpu
