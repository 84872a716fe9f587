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

void set_health(HealthState& state, bool healthy, const std::string& cause, const std::string& device,
                std::vector<HealthChange>& changes) {
  HealthState next{healthy, healthy ? std::string() : cause};
  if (state == next) return;
  // A device already unhealthy keeps its first cause: the first failure is the one to act on.
  if (!healthy && !state.healthy) return;
  state = next;
  changes.push_back({device, cause, healthy});
}

}  // namespace

HealthUpdate apply_health_event(const Inventory& inventory, const HealthEvent& event, const HealthConfig& config) {
  HealthUpdate out{inventory, {}};
  const bool recovered = event.kind == HealthEvent::Kind::Recovered;
  if (!recovered && event_action(config, event) == XidAction::Ignore) return out;

  Gpu* gpu = nullptr;
  for (auto& g : out.inventory.gpus)
    if (g.uuid == event.gpu_uuid) gpu = &g;
  if (!gpu) return out;

  const bool healthy = recovered;
  const std::string cause = event_cause(event);
  const bool names_instance = event.gpu_instance_id.has_value() || event.compute_instance_id.has_value();

  bool matched_instance = false;
  if (names_instance) {
    for (auto& m : gpu->mig_devices) {
      if (!instance_matches(m, event)) continue;
      matched_instance = true;
      set_health(m.health, healthy, cause, m.uuid, out.changes);
    }
  }
  if (!names_instance || !matched_instance) {
    // GPU-wide (or an instance we do not know, which still says the GPU is in trouble): the GPU and
    // every MIG device on it.
    set_health(gpu->health, healthy, cause, gpu->uuid, out.changes);
    for (auto& m : gpu->mig_devices) set_health(m.health, healthy, cause, m.uuid, out.changes);
  }
  if (!recovered && event_action(config, event) == XidAction::MarkUnhealthyUntilReset)
    for (auto& change : out.changes) change.until_reset = true;
  return out;
}

const char* const kNotRediscovered = "not found on re-discovery (lost or removed)";

Inventory carry_over_health(const Inventory& previous, Inventory next) {
  for (auto& gpu : next.gpus) {
    if (gpu.vendor != Vendor::Nvidia) continue;
    const Gpu* before = previous.find_by_uuid(gpu.uuid);
    if (!before) continue;
    // A GPU that only did not answer answers again: that is the recovery its mark was waiting for,
    // whether re-discovery or the health monitor noticed the loss.
    const bool was_missing = is_lost_mark(before->health);
    if (gpu.health.healthy && !before->health.healthy && !was_missing) gpu.health = before->health;
    for (auto& mig : gpu.mig_devices) {
      auto it = std::find_if(before->mig_devices.begin(), before->mig_devices.end(),
                             [&](const MigDevice& m) { return m.uuid == mig.uuid; });
      if (it != before->mig_devices.end() && mig.health.healthy && !it->health.healthy && !was_missing)
        mig.health = it->health;
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
