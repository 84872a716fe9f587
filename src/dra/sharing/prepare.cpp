// prepare_claim(): allocation results -> inventory devices -> CDI spec + kubelet answer + sharing.
#include "dra/sharing/prepare.h"

#include "dra/model/publication.h"
#include "dra/sharing/memory_shares.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "cdi/spec_builder.h"
#include "core/resource_plan.h"
#include "core/strings.h"
#include "plan/device_edits.h"
#include "plan/device_ids.h"
#include "plan/mps_paths.h"
#include "plan/nvidia_edits_cdi.h"
#include "plan/nvidia_edits_nodes.h"

namespace kgpu::dra {

namespace {

using nlohmann::json;

// One distinct device of the claim (several results may name it: requests sharing it, or
// consumable-capacity shares with their own share IDs).
struct ClaimDevice {
  const DraDevice* published = nullptr;
  BackingDevice backing;
  const Gpu* gpu = nullptr;
  const MigDevice* mig = nullptr;
  DeviceSharing sharing;
  const OpaqueConfig* config = nullptr;  // where `sharing` came from; null: none applies
  // A memory share of a full GPU (published with allowMultipleAllocations): what the claim's
  // shares of it consume together, each share ID counted once.
  bool shared = false;
  uint64_t share_memory = 0;
  std::optional<uint64_t> share_multiprocessors;
  std::vector<std::string> share_ids;
};

std::optional<BackingDevice> locate(const Inventory& inventory, const std::string& uuid) {
  for (size_t g = 0; g < inventory.gpus.size(); ++g) {
    const Gpu& gpu = inventory.gpus[g];
    if (gpu.uuid == uuid) return BackingDevice{g, std::nullopt};
    for (size_t m = 0; m < gpu.mig_devices.size(); ++m)
      if (gpu.mig_devices[m].uuid == uuid) return BackingDevice{g, m};
  }
  return std::nullopt;
}

json cdi_edits(const ContainerEdits& e) {
  json out = json::object();
  if (!e.envs.empty()) {
    json env = json::array();
    for (const auto& [k, v] : e.envs) env.push_back(k + "=" + v);
    out["env"] = env;
  }
  if (!e.devices.empty()) {
    json nodes = json::array();
    for (const auto& d : e.devices)
      nodes.push_back({{"path", d.container_path}, {"hostPath", d.host_path}, {"permissions", d.permissions}});
    out["deviceNodes"] = nodes;
  }
  if (!e.mounts.empty()) {
    json mounts = json::array();
    for (const auto& m : e.mounts)
      mounts.push_back({{"hostPath", m.host_path},
                        {"containerPath", m.container_path},
                        {"options", json::array({m.read_only ? "ro" : "rw", "nosuid", "nodev", "bind"})}});
    out["mounts"] = mounts;
  }
  return out;
}

// Appends `extra` (cdi_edits form) to `edits`: lists are concatenated.
void append_edits(json& edits, const json& extra) {
  for (const char* key : {"env", "deviceNodes", "mounts", "hooks"}) {
    auto it = extra.find(key);
    if (it == extra.end()) continue;
    json& list = edits[key];
    if (!list.is_array()) list = json::array();
    for (const auto& item : *it) list.push_back(item);
  }
}

class Preparer {
 public:
  Preparer(const ResourceClaim& claim, const PrepareInputs& in)
      : claim_(claim), in_(in), who_("ResourceClaim " + claim.ref.ns + "/" + claim.ref.name + " (" + claim.ref.uid + ")") {}

  Result<Preparation> run() {
    if (!is_safe_claim_uid(claim_.ref.uid))
      return Error::invalid("claim UID " + quote_text(claim_.ref.uid) + " is not 1 to 128 letters, digits and dashes");
    auto results = results_for(claim_, in_.pool.driver, in_.pool.pool);
    if (!results) return results.error();
    for (const auto& r : *results)
      if (auto e = add_result(r)) return *e;

    Preparation out;
    out.claim.ref = claim_.ref;
    out.claim.driver = in_.pool.driver;
    out.claim.cdi_spec_file = claim_cdi_spec_file(in_.pool.driver, claim_.ref.uid);
    out.claim.devices = std::move(answer_);
    if (auto e = add_sharing(out.claim)) return *e;
    out.cdi_spec = spec(out.claim);
    return out;
  }

 private:
  std::optional<Error> add_result(const AllocationResult& r) {
    auto it = std::find_if(in_.pool.devices.begin(), in_.pool.devices.end(),
                           [&](const DraDevice& d) { return d.name == r.device; });
    if (it == in_.pool.devices.end())
      return Error::invalid(who_ + ": device " + quote_text(r.device) + " (request " + quote_text(r.request) +
                            ") is not published by this node in pool " + quote_text(in_.pool.pool) +
                            " (unhealthy, removed, or never one of kgpu's devices)");
    // A share ID outside a device published as shareable would let two claims of different
    // namespaces through the conflict check with one whole device (issue 28, item 4).
    if (r.share_id && !it->allow_multiple_allocations)
      return Error::invalid(who_ + ": device " + r.device + " (request " + quote_text(r.request) +
                            ") is allocated as share " + quote_text(*r.share_id) +
                            ", but this node does not publish it with allowMultipleAllocations");
    // Every allocation of a device published for memory shares carries a share ID: one without is
    // from a scheduler that saw the device whole (an older slice) and would take the GPU from under
    // the shares prepared on it, or hand it out whole beside them later.
    if (!r.share_id && it->allow_multiple_allocations && !r.admin_access)
      return Error::invalid(who_ + ": device " + r.device + " (request " + quote_text(r.request) +
                            ") is published for memory shares (allowMultipleAllocations) but was allocated without a "
                            "shareID: a claim cannot hold a shared GPU whole (request a share of it, or leave the GPU "
                            "out of kgpu.dra.sharing.memory.gpus)");
    const AttributeValue* uuid = it->attribute("uuid");
    const std::string* uuid_text = uuid ? std::get_if<std::string>(uuid) : nullptr;
    auto backing = uuid_text ? locate(in_.inventory, *uuid_text) : std::nullopt;
    if (!backing)
      return Error::internal(who_ + ": published device " + r.device + " is missing from the inventory");

    ClaimDevice d;
    d.published = &*it;
    d.backing = *backing;
    d.gpu = &in_.inventory.gpus[backing->gpu];
    d.mig = backing->mig ? &d.gpu->mig_devices[*backing->mig] : nullptr;
    if (auto e = choose_config(d, r)) return *e;
    d.shared = r.share_id.has_value();
    if (d.shared && d.sharing.strategy != DeviceSharing::Strategy::Exclusive)
      return Error::invalid(who_ + ": device " + r.device + " (request " + quote_text(r.request) +
                            ") is a memory share, an MPS client of the GPU's own control daemon; it takes no sharing "
                            "config (its GpuConfig asks for " +
                            (d.sharing.strategy == DeviceSharing::Strategy::Mps ? "MPS" : "TimeSlicing") + ")");

    // One device may serve several requests (same device, same share): one answer entry.
    size_t index = devices_.size();
    for (size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i].published == d.published) index = i;
    if (index == devices_.size()) {
      devices_.push_back(d);
    } else if (devices_[index].sharing != d.sharing || devices_[index].shared != d.shared) {
      return Error::invalid(who_ + ": device " + r.device + " is configured for two different kinds of sharing");
    }
    if (d.shared)
      if (auto e = add_share(devices_[index], r)) return *e;
    auto entry = std::find_if(answer_.begin(), answer_.end(), [&](const PreparedDevice& p) {
      return p.device == r.device && p.share_id == r.share_id;
    });
    if (entry == answer_.end()) {
      PreparedDevice p;
      p.pool = r.pool;
      p.device = r.device;
      p.share_id = r.share_id;
      p.gpu_uuid = d.gpu->uuid;
      p.whole_gpu = d.mig == nullptr;
      p.cdi_device_ids = {qualified_cdi_name(claim_cdi_kind(in_.pool.driver), cdi_device_name(r.device))};
      answer_.push_back(std::move(p));
      entry = answer_.end() - 1;
    }
    entry->admin_access = entry->admin_access || r.admin_access;
    const std::string base = r.base_request();
    if (std::find(entry->requests.begin(), entry->requests.end(), base) == entry->requests.end())
      entry->requests.push_back(base);
    return std::nullopt;
  }

  // What one share result consumes, from its consumedCapacity, or where the scheduler recorded none
  // what Kubernetes consumes by default: the policy's default, or the whole capacity without one.
  std::optional<Error> add_share(ClaimDevice& d, const AllocationResult& r) {
    if (std::find(d.share_ids.begin(), d.share_ids.end(), *r.share_id) != d.share_ids.end()) return std::nullopt;
    d.share_ids.push_back(*r.share_id);
    auto consumed = [&](std::string_view name) -> std::optional<uint64_t> {
      if (auto it = r.consumed_capacity.find(std::string(name)); it != r.consumed_capacity.end()) return it->second;
      for (const auto& c : d.published->capacity)
        if (c.name == name) return c.request_policy ? c.request_policy->default_value : c.value;
      return std::nullopt;
    };
    const auto memory = consumed("memory");
    if (!memory || *memory == 0)
      return Error::invalid(who_ + ": share " + quote_text(*r.share_id) + " of device " + r.device +
                            " consumes no memory; a memory share needs consumedCapacity.memory");
    if (auto e = within_policy(d, r, "memory", *memory)) return *e;
    d.share_memory += *memory;
    const uint64_t* total = d.published->capacity_of("memory");
    if (total && d.share_memory > *total)
      return Error::invalid(who_ + ": its shares of device " + r.device + " consume " + binary_si_quantity(d.share_memory) +
                            ", more than the GPU's " + binary_si_quantity(*total));
    if (d.published->capacity_of("multiprocessors"))
      if (auto sms = consumed("multiprocessors")) {
        if (auto e = within_policy(d, r, "multiprocessors", *sms)) return *e;
        d.share_multiprocessors = d.share_multiprocessors.value_or(0) + *sms;
      }
    return std::nullopt;
  }

  // A share's consumed amount of `name`, checked rather than trusted (issue 38, item 5): the
  // scheduler only hands out what the published request policy allows (at least its minimum, the
  // minimum plus whole steps) and at most the device's capacity; anything else was not allocated
  // by it, and would give the share a limit nobody asked for (a 1-byte share became a 1 MiB MPS
  // limit under a 1Gi minimum).
  std::optional<Error> within_policy(const ClaimDevice& d, const AllocationResult& r, std::string_view name,
                                     uint64_t amount) const {
    const Capacity* cap = nullptr;
    for (const auto& c : d.published->capacity)
      if (c.name == name) cap = &c;
    if (!cap) return std::nullopt;
    const std::string what = who_ + ": share " + quote_text(*r.share_id) + " of device " + r.device + " consumes " +
                             std::string(name) + " " + amount_text(name, amount);
    if (amount > cap->value)
      return Error::invalid(what + ", more than the device's " + amount_text(name, cap->value));
    if (!cap->request_policy) return std::nullopt;
    const CapacityRequestPolicy& p = *cap->request_policy;
    if (amount < p.min)
      return Error::invalid(what + ", below the minimum " + amount_text(name, p.min) +
                            " of the device's request policy (the scheduler allocates no less)");
    if (p.step > 0 && (amount - p.min) % p.step != 0)
      return Error::invalid(what + ", not the policy's minimum " + amount_text(name, p.min) + " plus whole steps of " +
                            amount_text(name, p.step) + " (the scheduler rounds a request up to one)");
    return std::nullopt;
  }
  static std::string amount_text(std::string_view name, uint64_t amount) {
    return name == "memory" ? binary_si_quantity(amount) + " (" + std::to_string(amount) + " bytes)"
                            : std::to_string(amount);
  }

  // NVIDIA's choice: the highest-precedence config that fits the device. One for every request
  // (a DeviceClass's, typically) whose kind is for the other device type is passed over; one that
  // names this request must fit.
  std::optional<Error> choose_config(ClaimDevice& d, const AllocationResult& r) {
    const std::string where = who_ + ": config for request " + quote_text(r.request) + ": ";
    const auto candidates = configs_for(claim_, in_.pool.driver, r);
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
      const OpaqueConfig& config = **it;
      if (d.gpu->vendor != Vendor::Nvidia)
        return Error::invalid(where + "driver " + in_.pool.driver + " takes no opaque configuration");
      auto decoded = parse_device_config(config.parameters);
      if (!decoded) return Error::invalid(where + decoded.error().message);
      const bool fits = (decoded->kind == DeviceConfig::Kind::Mig) == (d.mig != nullptr);
      if (!fits && config.requests.empty()) continue;
      if (decoded->kind == DeviceConfig::Kind::Gpu && d.mig)
        return Error::invalid(where + "GpuConfig cannot configure MIG device " + r.device + " (use MigDeviceConfig)");
      if (decoded->kind == DeviceConfig::Kind::Mig && !d.mig)
        return Error::invalid(where + "MigDeviceConfig cannot configure full GPU " + r.device + " (use GpuConfig)");
      d.config = &config;
      d.sharing = decoded->sharing;
      return std::nullopt;
    }
    return std::nullopt;
  }

  std::string cdi_device_name(const std::string& device) const { return claim_.ref.uid + "-" + device; }

  // The claim's memory shares: one GpuShare per shared device, and the GPU's control daemon
  // (shared with the GPU's other shares), whose GPU runs EXCLUSIVE_PROCESS while it runs.
  std::optional<Error> add_shares(PreparedClaim& out) {
    for (const auto& d : devices_) {
      if (!d.shared) continue;
      if (in_.config.mps_root.empty())
        return Error::invalid(who_ + ": device " + d.published->name +
                              " is a memory share (an MPS client), but kgpu runs without --mps-root");
      if (!is_cuda_device_id(d.gpu->uuid))
        return Error::invalid(who_ + ": GPU UUID " + quote_text(d.gpu->uuid) + " cannot name the GPU to an MPS daemon");
      GpuShare share{d.published->name, d.gpu->uuid, d.share_memory, d.share_multiprocessors, std::nullopt};
      const uint64_t* sms = d.published->capacity_of("multiprocessors");
      if (d.share_multiprocessors && sms)
        share.active_thread_percentage = thread_percentage_for(*d.share_multiprocessors, *sms);
      else if (const uint64_t pct = in_.config.dra.memory_sharing.active_thread_percentage; pct > 0)
        share.active_thread_percentage = static_cast<int>(std::min<uint64_t>(pct, 100));
      out.shares.push_back(share);
      MpsClaimRequest daemon;
      daemon.claim_uid = share_daemon_name(d.gpu->uuid);
      daemon.visible_devices = {d.gpu->uuid};
      out.share_daemons.push_back(std::move(daemon));
      if (std::find(out.exclusive_gpus.begin(), out.exclusive_gpus.end(), d.gpu->uuid) == out.exclusive_gpus.end())
        out.exclusive_gpus.push_back(d.gpu->uuid);
    }
    return std::nullopt;
  }

  // A share's client edits: its GPU daemon's pipe and shared memory, its memory as the pinned
  // limit (enforced by MPS: an allocation past it fails in the container), its thread percentage.
  ContainerEdits share_edits(const GpuShare& share) const {
    ContainerEdits edits;
    const std::string resource = mps_claim_resource(share_daemon_name(share.gpu_uuid));
    const std::string pipe = mps_container_pipe_dir(resource);
    edits.envs["CUDA_MPS_PIPE_DIRECTORY"] = pipe;
    edits.envs["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = pinned_limit_for(share.gpu_uuid, share.memory_bytes);
    if (share.active_thread_percentage)
      edits.envs["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(*share.active_thread_percentage);
    edits.mounts.push_back({pipe, mps_pipe_dir(in_.config.mps_root, resource), false});
    edits.mounts.push_back(
        {"/dev/shm", mps_claim_shm_dir(in_.config.mps_root, share_daemon_name(share.gpu_uuid)), false});
    return edits;
  }

  // Time-slice settings for the caller to apply, and the claim's MPS daemon and client edits.
  std::optional<Error> add_sharing(PreparedClaim& out) {
    if (auto e = add_shares(out)) return *e;
    std::vector<const ClaimDevice*> mps;
    for (const auto& d : devices_) {
      if (d.sharing.strategy == DeviceSharing::Strategy::TimeSlicing && !d.mig) {
        const TimeSliceSetting s{d.gpu->uuid, d.sharing.interval};
        if (std::find(out.time_slicing.begin(), out.time_slicing.end(), s) == out.time_slicing.end())
          out.time_slicing.push_back(s);
      }
      if (d.sharing.strategy == DeviceSharing::Strategy::Mps) mps.push_back(&d);
    }
    if (mps.empty()) return std::nullopt;
    if (in_.config.mps_root.empty())
      return Error::invalid(who_ + " asks for MPS sharing, but kgpu runs without --mps-root");
    auto limits = mps_limits(mps);
    if (!limits) return limits.error();
    auto request = mps_request(*limits);
    if (!request) return request.error();
    out.mps = std::move(*request);
    for (const ClaimDevice* d : mps)
      if (!d->mig && std::find(out.exclusive_gpus.begin(), out.exclusive_gpus.end(), d->gpu->uuid) == out.exclusive_gpus.end())
        out.exclusive_gpus.push_back(d->gpu->uuid);
    return std::nullopt;
  }

  // The one thread percentage and the pinned memory per device that the claim's MPS configs ask for.
  struct MpsLimits {
    std::optional<int> percentage;
    std::map<std::string, uint64_t> pinned;  // by device UUID (a GPU's, or a MIG device's)
  };

  // What CUDA and MPS name the device by: the MIG device's own UUID for a MIG device.
  static const std::string& uuid_of(const ClaimDevice& d) { return d.mig ? d.mig->uuid : d.gpu->uuid; }
  static uint64_t memory_of(const ClaimDevice& d) { return d.mig ? d.mig->memory_bytes : d.gpu->memory_bytes; }
  Result<MpsLimits> mps_limits(const std::vector<const ClaimDevice*>& mps) const {
    MpsLimits out;
    for (const ClaimDevice* d : mps) {
      const MpsConfig& c = d->sharing.mps;
      if (c.active_thread_percentage) {
        if (out.percentage && *out.percentage != *c.active_thread_percentage)
          return Error::invalid(who_ + " asks for two MPS active thread percentages (" + std::to_string(*out.percentage) +
                                " and " + std::to_string(*c.active_thread_percentage) + "); one claim has one MPS daemon");
        out.percentage = c.active_thread_percentage;
      }
    }
    // As NVIDIA's driver: a config's limits apply to the devices that chose it (its group), and a
    // defaultPerDevicePinnedMemoryLimit key names one of them by UUID or by index in UUID order.
    std::vector<const OpaqueConfig*> groups;
    for (const ClaimDevice* d : mps)
      if (std::find(groups.begin(), groups.end(), d->config) == groups.end()) groups.push_back(d->config);
    for (const OpaqueConfig* config : groups) {
      std::vector<std::string> uuids;
      const MpsConfig* settings = nullptr;
      for (const ClaimDevice* d : mps)
        if (d->config == config) {
          uuids.push_back(uuid_of(*d));
          settings = &d->sharing.mps;
        }
      auto limits = mps_pinned_limits(*settings, uuids);
      if (!limits) {
        std::string requests;
        for (const auto& r : config ? config->requests : std::vector<std::string>{})
          requests += (requests.empty() ? "" : ", ") + quote_text(r);
        return Error::invalid(who_ + ": MPS config for " + (requests.empty() ? "every request" : "request(s) " + requests) +
                              ": " + limits.error().message);
      }
      for (const ClaimDevice* d : mps)
        if (auto it = limits->find(uuid_of(*d)); d->config == config && it != limits->end())
          out.pinned[uuid_of(*d)] = it->second;
    }
    for (const ClaimDevice* d : mps) {
      auto it = out.pinned.find(uuid_of(*d));
      if (it != out.pinned.end() && memory_of(*d) != 0 && it->second > memory_of(*d))
        return Error::invalid(who_ + ": MPS pinned memory limit of " + std::to_string(it->second) + " bytes for " +
                              uuid_of(*d) + " exceeds its " + std::to_string(memory_of(*d)) + " bytes");
    }
    return out;
  }

  // What `kgpu mps-daemon` is asked to run, and the clients' edits. The daemon sees the claim's full
  // GPUs only, in the order CUDA inside the container enumerates them (PCI bus order), so one
  // ordinal means the same GPU to the daemon's limits and to the clients' CUDA_MPS_PINNED_DEVICE_MEM_LIMIT.
  Result<MpsClaimRequest> mps_request(const MpsLimits& limits) {
    // The devices of the MPS config(s) only: a time-sliced request of the same claim keeps its
    // GPUs out of the daemon (and its containers are no MPS clients: spec()).
    // MIG devices (MPS on MIG, as NVIDIA's driver allows) by their parent's PCI order, then their
    // own index on it: the order CUDA enumerates them in.
    std::vector<const ClaimDevice*> order;
    for (const auto& d : devices_)
      if (d.gpu->vendor == Vendor::Nvidia && d.sharing.strategy == DeviceSharing::Strategy::Mps) order.push_back(&d);
    auto key = [](const ClaimDevice* d) {
      return std::make_tuple(d->gpu->pci_bus_id, d->gpu->index, d->mig ? d->mig->index : -1);
    };
    std::sort(order.begin(), order.end(), [&](const ClaimDevice* a, const ClaimDevice* b) { return key(a) < key(b); });
    order.erase(std::unique(order.begin(), order.end(),
                            [&](const ClaimDevice* a, const ClaimDevice* b) { return uuid_of(*a) == uuid_of(*b); }),
                order.end());
    MpsClaimRequest daemon;
    daemon.claim_uid = claim_.ref.uid;
    daemon.active_thread_percentage = limits.percentage;
    std::vector<std::string> client_limits;
    for (size_t ordinal = 0; ordinal < order.size(); ++ordinal) {
      const std::string& uuid = uuid_of(*order[ordinal]);
      if (!is_cuda_device_id(uuid))
        return Error::invalid(who_ + ": GPU UUID " + quote_text(uuid) +
                              " cannot name the GPU to an MPS daemon (CUDA_VISIBLE_DEVICES takes letters, digits "
                              "and dashes)");
      daemon.visible_devices.push_back(uuid);
      if (auto it = limits.pinned.find(uuid); it != limits.pinned.end()) {
        // Whole MiB, rounded down as NVIDIA's driver does (1G -> 953M); decoding refused limits
        // under 1 MiB, so none becomes 0, "no limit".
        const uint64_t mib = std::max<uint64_t>(1, it->second >> 20);
        daemon.pinned_mib[static_cast<int>(ordinal)] = mib;
        client_limits.push_back(std::to_string(ordinal) + "=" + std::to_string(mib) + "M");
      }
    }
    // The client side: the pipe, the claim's own shared memory (the tmpfs its daemon sees at
    // /dev/shm; no other tenant's containers get it), the limits.
    const std::string resource = mps_claim_resource(claim_.ref.uid);
    const std::string pipe = mps_container_pipe_dir(resource);
    mps_edits_.envs["CUDA_MPS_PIPE_DIRECTORY"] = pipe;
    mps_edits_.mounts.push_back({pipe, mps_pipe_dir(in_.config.mps_root, resource), false});
    mps_edits_.mounts.push_back({"/dev/shm", mps_claim_shm_dir(in_.config.mps_root, claim_.ref.uid), false});
    // The daemon's default already binds every client; a client's own setting can only lower it.
    // NVIDIA's driver sets none; 0 (which its daemon gets as is) is left to the daemon alone.
    if (limits.percentage && *limits.percentage > 0)
      mps_edits_.envs["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(*limits.percentage);
    if (!client_limits.empty()) mps_edits_.envs["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = join(client_limits, ",");
    return daemon;
  }

  // The base request names a device serves (its kubelet answer entry in `claim`).
  static const std::vector<std::string>& requests_of(const PreparedClaim& claim, const ClaimDevice& d) {
    static const std::vector<std::string> kNone;
    for (const auto& a : claim.devices)
      if (a.device == d.published->name) return a.requests;
    return kNone;
  }

  // NVIDIA_VISIBLE_DEVICES for the containers that use `d`: the NVIDIA devices of the requests `d`
  // serves, so a container sees its own request's devices only (NVIDIA's driver scopes edits per
  // device, too). Devices of one request carry the same value, so a container using several of them
  // gets one consistent variable.
  std::string visible_for(const PreparedClaim& claim, const ClaimDevice& d) const {
    const auto& mine = requests_of(claim, d);
    std::vector<std::string> visible;
    for (const auto& e : devices_) {
      if (e.gpu->vendor != Vendor::Nvidia) continue;
      const auto& theirs = requests_of(claim, e);
      const bool shared = &e == &d || std::any_of(mine.begin(), mine.end(), [&](const std::string& r) {
                            return std::find(theirs.begin(), theirs.end(), r) != theirs.end();
                          });
      if (shared)
        visible.push_back(e.mig ? mig_device_id(in_.config, *e.gpu, *e.mig) : gpu_device_id(in_.config, *e.gpu));
    }
    return join(visible, ",");
  }

  json spec(const PreparedClaim& claim) const {
    const Config& config = in_.config;
    json devices = json::array();
    std::vector<BackingDevice> others;
    bool any_nvidia = false;
    for (const auto& d : devices_) {
      ContainerEdits own;
      if (d.gpu->vendor == Vendor::Nvidia) {
        any_nvidia = true;
        for (const auto& path : d.mig ? nvidia_mig_node_paths(*d.gpu, *d.mig) : nvidia_gpu_node_paths(*d.gpu))
          own.devices.push_back({path, host_path_under(config.dev_root(), path), "rw"});
        own.envs["NVIDIA_VISIBLE_DEVICES"] = visible_for(claim, d);
        // Only the MPS request's containers are the daemon's clients.
        if (claim.mps && d.sharing.strategy == DeviceSharing::Strategy::Mps) {
          for (const auto& [k, v] : mps_edits_.envs) own.envs[k] = v;
          own.mounts = mps_edits_.mounts;
        }
        if (d.shared)
          for (const auto& share : claim.shares)
            if (share.device == d.published->name) {
              ContainerEdits client = share_edits(share);
              for (auto& [k, v] : client.envs) own.envs[k] = std::move(v);
              own.mounts = std::move(client.mounts);
            }
      } else {
        others.push_back(d.backing);
        const ContainerEdits vendor = vendor_device_edits(config, in_.inventory, Resource{}, {d.backing});
        own.devices = vendor.devices;
        own.mounts = vendor.mounts;
      }
      devices.push_back({{"name", cdi_device_name(d.published->name)}, {"containerEdits", cdi_edits(own)}});
    }

    json common = json::object();
    if (any_nvidia) {
      if (in_.driver_files) {
        common = nvidia_common_cdi_edits(config, in_.inventory, *in_.driver_files);
        common.erase("env");  // its NVIDIA_VISIBLE_DEVICES=void is for the device-plugin spec
      } else {
        ContainerEdits control;
        for (const auto& path : nvidia_control_node_paths(in_.inventory))
          control.devices.push_back({path, host_path_under(config.dev_root(), path), "rw"});
        common = cdi_edits(control);
      }
    }
    if (!others.empty()) {
      const ContainerEdits vendor = vendor_device_edits(config, in_.inventory, Resource{}, others);
      ContainerEdits env;
      env.envs = vendor.envs;
      append_edits(common, cdi_edits(env));
    }
    // Assigned, not an initializer list, which would copy the (driver-file sized) edits.
    json spec = json::object();
    spec["cdiVersion"] = kCdiSpecVersion;
    spec["kind"] = claim_cdi_kind(claim.driver);
    spec["devices"] = std::move(devices);
    spec["containerEdits"] = std::move(common);
    return spec;
  }

  const ResourceClaim& claim_;
  const PrepareInputs& in_;
  const std::string who_;
  std::vector<ClaimDevice> devices_;
  std::vector<PreparedDevice> answer_;
  ContainerEdits mps_edits_;
};

}  // namespace

Result<Preparation> prepare_claim(const ResourceClaim& claim, const PrepareInputs& inputs) {
  return Preparer(claim, inputs).run();
}

std::string claim_cdi_kind(const std::string& driver) { return "k8s." + driver + "/claim"; }

std::string claim_cdi_spec_file(const std::string& driver, const std::string& claim_uid) {
  return "kgpu-k8s." + driver + "-claim_" + claim_uid + ".json";
}

}  // namespace kgpu::dra
