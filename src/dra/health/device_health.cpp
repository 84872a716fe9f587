#include "dra/health/device_health.h"

#include <charconv>
#include <map>
#include <variant>

#include "config/xid_policy.h"

namespace kgpu::dra::health {

namespace {

// The words every unhealthy message ends with: kgpu only tells, the owner decides.
constexpr const char* kNoEviction =
    " The pods using it keep running: kgpu does not evict them; their owner (a person or a controller) "
    "decides whether to move the work.";

// The health mark behind each NVIDIA device UUID of the inventory (GPUs and MIG devices; a MIG
// device takes its GPU's mark when the GPU as a whole is marked, as the slice builder does).
std::map<std::string, const HealthState*> marks_by_uuid(const Inventory& inventory) {
  std::map<std::string, const HealthState*> out;
  for (const auto& g : inventory.gpus) {
    out[g.uuid] = &g.health;
    for (const auto& m : g.mig_devices)
      out[m.uuid] = (!m.health.healthy || g.health.healthy) ? &m.health : &g.health;
  }
  return out;
}

// The XID of a taint's value (kgpu writes it with std::to_string); 0 if it is not a number.
uint64_t xid_of(const std::string& value) {
  uint64_t xid = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), xid);
  return ec == std::errc() && end == value.data() + value.size() ? xid : 0;
}

std::string uuid_of(const DraDevice& d) {
  const auto* v = d.attribute("uuid");
  if (v && std::holds_alternative<std::string>(*v)) return std::get<std::string>(*v);
  return {};
}

bool until_reset(const HealthState& h, const HealthConfig& policy) {
  if (xid_action(policy, h.xid) == XidAction::MarkUnhealthyUntilReset) return true;
  // A double-bit ECC event is marked as XID 48 under its own switch.
  return h.xid == 48 && ecc_double_bit_action(policy) == XidAction::MarkUnhealthyUntilReset;
}

std::string xid_message(const HealthState& h, const std::string& uuid, const HealthConfig& policy) {
  std::string cause = h.reason.empty() ? describe_xid(h.xid) : h.reason;
  std::string out = cause + " on " + uuid + ": unhealthy";
  if (until_reset(h, policy)) {
    out += " until the GPU is reset. What to do: move the work to another GPU, drain the node, reset the GPU "
           "(nvidia-smi -r, or reboot the node) and restart kgpu.";
  } else if (policy.recovery_enabled) {
    out += "; kgpu marks it healthy again once the GPU answers without errors for " +
           std::to_string(policy.recovery_quiet_period_ms / 1000) +
           " s. What to do: retry failed work; if the XID comes back, drain the node and have the GPU checked "
           "(nvidia-smi -q, the kernel log).";
  } else {
    out += " until kgpu restarts (kgpu.health.recovery is off). What to do: check the GPU (nvidia-smi -q, the kernel "
           "log), then restart kgpu.";
  }
  return out + kNoEviction;
}

std::string lost_message(const HealthState& h, const std::string& uuid) {
  std::string cause = h.reason.empty() ? "the GPU does not answer" : h.reason;
  return uuid + ": " + cause +
         ": unhealthy; kgpu marks it healthy again once the GPU answers. What to do: check the node's kernel log and "
         "nvidia-smi; a GPU that stays lost needs a reset or a reboot." +
         kNoEviction;
}

std::string mps_message() {
  return std::string(
             "The MPS control daemon serving this GPU's memory shares is not ready (dead or restarting): containers "
             "holding a share cannot run CUDA work until it is back. kgpu restarts it and prepares no new share "
             "meanwhile. What to do: if it stays down, read kgpu's log on this node (mps-daemon).") +
         kNoEviction;
}

}  // namespace

const char* to_string(DeviceHealthStatus status) {
  switch (status) {
    case DeviceHealthStatus::Unknown: return "Unknown";
    case DeviceHealthStatus::Healthy: return "Healthy";
    case DeviceHealthStatus::Unhealthy: return "Unhealthy";
  }
  return "Unknown";
}

std::string fit_message(std::string message) {
  if (message.size() <= kMaxMessage) return message;
  message.resize(kMaxMessage - 3);
  return message + "...";
}

std::vector<DeviceHealthReport> pool_health(const DriverPool& pool, const Inventory& inventory,
                                            const HealthConfig& policy) {
  const auto marks = marks_by_uuid(inventory);
  const std::string mps_key = pool.driver + "/" + std::string(kMpsDaemonTaintKey);
  std::vector<DeviceHealthReport> out;
  out.reserve(pool.devices.size());
  for (const auto& d : pool.devices) {
    DeviceHealthReport r{pool.pool, d.name, DeviceHealthStatus::Healthy, {}};
    const std::string uuid = uuid_of(d);
    auto it = marks.find(uuid);
    const HealthState* mark = it == marks.end() ? nullptr : it->second;
    std::vector<std::string> parts;
    for (const auto& t : d.taints) {
      if (t.key == mps_key) {
        r.health = DeviceHealthStatus::Unhealthy;
        parts.push_back(mps_message());
        continue;
      }
      if (t.effect == kTaintNone) {  // an XID the policy does not count against the GPU
        parts.push_back("Healthy; the latest " + describe_xid(xid_of(t.value)) +
                        " is counted as the application's error, not the GPU's (kgpu.health): nothing to do for "
                        "the device.");
        continue;
      }
      r.health = DeviceHealthStatus::Unhealthy;
      if (mark && !mark->healthy) {
        parts.push_back(mark->xid != 0 ? xid_message(*mark, uuid, policy) : lost_message(*mark, uuid));
      } else {
        // The taint without its mark (not expected): its key and value still say what happened.
        parts.push_back(t.key + (t.value.empty() ? "" : "=" + t.value) + ": unhealthy." + kNoEviction);
      }
    }
    for (size_t i = 0; i < parts.size(); ++i) r.message += (i ? " | " : "") + parts[i];
    r.message = fit_message(std::move(r.message));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kgpu::dra::health
