// Which devices each DRA driver publishes, with NVIDIA DRA driver attribute names and types.
#include "dra/model/publication.h"

#include <algorithm>

#include "dra/model/device_names.h"
#include "dra/model/slice_limits.h"

namespace kgpu::dra {

namespace {

// DeviceAttributeMaxValueLength: longer strings and versions are refused by the API server.
constexpr size_t kMaxAttributeValueLength = 64;

bool is_valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

void sort_by_name(Attributes& a) {
  std::sort(a.begin(), a.end(), [](const Attribute& x, const Attribute& y) { return x.name < y.name; });
}

class Builder {
 public:
  Builder(const Inventory& inventory, const SliceOptions& options)
      : inv_(inventory), options_(options), islands_(nvlink_islands(inventory)) {
    for (const auto& layout : options.dynamic_mig) dynamic_[layout.gpu_uuid] = &layout;
  }

  Publication build() {
    Publication out;
    add_pool(Vendor::Nvidia, options_.drivers.nvidia, out);
    add_pool(Vendor::Amd, options_.drivers.amd, out);
    add_pool(Vendor::Intel, options_.drivers.intel, out);
    for (const auto& g : inv_.gpus)
      if (g.vendor == Vendor::Generic)
        notes_.push_back(g.uuid + ": generic devices have no DRA driver; not published");
    out.notes = std::move(notes_);
    out.warnings = std::move(warnings_);
    return out;
  }

 private:
  void add_pool(Vendor vendor, const std::string& driver, Publication& out) {
    DriverPool pool{driver, options_.node_name, {}};
    bool any = false;
    ids_.clear();
    for (size_t i = 0; i < inv_.gpus.size(); ++i) {
      const Gpu& g = inv_.gpus[i];
      if (g.vendor != vendor) continue;
      any = true;
      if (!g.health.healthy && vendor != Vendor::Nvidia) {
        notes_.push_back(g.uuid + ": unhealthy (" + g.health.reason + "); not published");
        continue;
      }
      auto shared = gpu_attributes(g, i);
      if (auto dynamic = dynamic_.find(g.uuid); vendor == Vendor::Nvidia && dynamic != dynamic_.end()) {
        add_dynamic(g, *dynamic->second, shared, pool);
        continue;
      }
      if (vendor == Vendor::Nvidia && g.mig_enabled) {
        if (g.mig_devices.empty()) notes_.push_back(g.uuid + ": MIG enabled without MIG devices; nothing to publish");
        for (const auto& m : g.mig_devices) add_mig(g, m, shared, pool);
        continue;
      }
      DraDevice d{gpu_device_name(g), std::move(shared), {}, {{"memory", g.memory_bytes}}};
      d.attributes = {{"index", int64_t{g.index}},
                      {"type", std::string(vendor == Vendor::Amd ? "amdgpu" : kWholeGpuType)},
                      {"uuid", g.uuid}};
      if (g.minor >= 0) d.attributes.push_back({"minor", int64_t{g.minor}});
      d.taints = taints(g.health, driver, g.uuid);
      if (vendor == Vendor::Nvidia && options_.memory_shared_gpus.contains(g.uuid)) make_shareable(d, g);
      add_device(std::move(d), g.uuid, pool);
    }
    drop_duplicate_names(pool);
    if (any) out.pools.push_back(std::move(pool));
  }

  void add_mig(const Gpu& parent, const MigDevice& m, const std::shared_ptr<const Attributes>& shared,
               DriverPool& pool) {
    DraDevice d{mig_device_name(parent, m), shared, {}, {}};
    // A GPU-wide mark (a lost GPU at discovery) holds for every MIG device on it.
    const HealthState& health = (!m.health.healthy || parent.health.healthy) ? m.health : parent.health;
    d.taints = taints(health, pool.driver, m.uuid);
    d.attributes = {{"parentIndex", int64_t{parent.index}},
                    {"parentUUID", parent.uuid},
                    {"profile", m.profile},
                    {"type", std::string("mig")},
                    {"uuid", m.uuid}};
    if (parent.minor >= 0) d.attributes.push_back({"parentMinor", int64_t{parent.minor}});
    // Sorted by name, as DraDevice requires.
    d.capacity = {{"computeInstanceSlices", static_cast<uint64_t>(m.compute_instance_slices)},
                  {"copyEngines", static_cast<uint64_t>(m.copy_engines)},
                  {"decoders", static_cast<uint64_t>(m.decoders)},
                  {"encoders", static_cast<uint64_t>(m.encoders)},
                  {"gpuInstanceSlices", static_cast<uint64_t>(m.gpu_instance_slices)},
                  {"jpegEngines", static_cast<uint64_t>(m.jpeg_engines)},
                  {"memory", m.memory_bytes},
                  {"multiprocessors", static_cast<uint64_t>(m.multiprocessors)},
                  {"ofaEngines", static_cast<uint64_t>(m.ofa_engines)}};
    add_memory_slices(m, d);
    add_device(std::move(d), m.uuid, pool);
  }

  // A dynamic MIG GPU (issue 42): its full device and every placement, each consuming its counter
  // set. Attributes as NVIDIA's DynamicMIG (type, uuid / parentUUID, profile) plus kgpu's index and
  // minor extras; the placements have no uuid until prepare creates their instance.
  void add_dynamic(const Gpu& g, const DynamicMigLayout& layout, const std::shared_ptr<const Attributes>& shared,
                   DriverPool& pool) {
    if (layout.counters.empty() || layout.devices.empty()) {
      notes_.push_back(g.uuid + ": dynamic MIG layout without placements; nothing to publish");
      return;
    }
    pool.counter_sets.push_back({layout.counter_set, layout.counters});
    for (const auto& d : layout.devices) {
      DraDevice device{d.name, shared, {}, {}};
      const bool full = d.profile.empty();
      if (full) {
        device.attributes = {{"index", int64_t{g.index}}, {"type", std::string(kWholeGpuType)}, {"uuid", g.uuid}};
        if (g.minor >= 0) device.attributes.push_back({"minor", int64_t{g.minor}});
      } else {
        device.attributes = {{"parentIndex", int64_t{g.index}},
                             {"parentUUID", g.uuid},
                             {"profile", d.profile},
                             {"type", std::string("mig")}};
        if (g.minor >= 0) device.attributes.push_back({"parentMinor", int64_t{g.minor}});
      }
      for (const auto& c : d.capacity) {
        const std::string_view name = dynamic_capacity_name(c.name);
        if (name.empty()) {
          notes_.push_back(g.uuid + ": " + d.name + ": capacity " + c.name + " is not in kgpu's vocabulary; left out");
          continue;
        }
        device.capacity.push_back({name, c.value});
      }
      std::sort(device.capacity.begin(), device.capacity.end(),
                [](const Capacity& a, const Capacity& b) { return a.name < b.name; });
      device.consumes_counters = {{layout.counter_set, d.consumes}};
      device.taints = taints(dynamic_health(g, d, full), pool.driver, full ? g.uuid : g.uuid + " " + d.name);
      add_device(std::move(device), g.uuid, pool);
    }
  }

  // A GPU-wide mark holds for every device of the GPU; otherwise a placement carries the health of
  // the instance kgpu created at it (an XID there taints exactly that device), the full GPU its own.
  static const HealthState& dynamic_health(const Gpu& g, const DynamicMigDevice& d, bool full) {
    if (!g.health.healthy || full) return g.health;
    for (const auto& m : g.mig_devices)
      if (m.gi_profile_id == static_cast<int>(d.profile_id) && m.placement_start == static_cast<int>(d.placement_start))
        return m.health;
    return g.health;
  }

  // The layout's capacity names as literals of the vocabulary (Capacity::name is a string_view).
  static std::string_view dynamic_capacity_name(const std::string& name) {
    static constexpr std::string_view kNames[] = {"copyEngines", "decoders",        "encoders",  "jpegEngines",
                                                  "memory",      "multiprocessors", "ofaEngines"};
    for (std::string_view n : kNames)
      if (n == name) return n;
    return {};
  }

  // NVIDIA's memorySlice<i> capacities, one per memory slice the GPU instance covers: selectors and
  // partitioning constraints written for NVIDIA's driver match on them.
  void add_memory_slices(const MigDevice& m, DraDevice& d) {
    static constexpr std::string_view kNames[] = {
        "memorySlice0",  "memorySlice1",  "memorySlice2",  "memorySlice3",  "memorySlice4",  "memorySlice5",
        "memorySlice6",  "memorySlice7",  "memorySlice8",  "memorySlice9",  "memorySlice10", "memorySlice11",
        "memorySlice12", "memorySlice13", "memorySlice14", "memorySlice15"};
    if (m.placement_start < 0 || m.placement_size <= 0) return;
    const auto end = static_cast<size_t>(m.placement_start) + static_cast<size_t>(m.placement_size);
    if (end > std::size(kNames)) {
      notes_.push_back(m.uuid + ": placement " + std::to_string(m.placement_start) + "+" +
                       std::to_string(m.placement_size) + " beyond 16 memory slices; memorySlice capacities left out");
      return;
    }
    for (size_t i = static_cast<size_t>(m.placement_start); i < end; ++i) d.capacity.push_back({kNames[i], 1});
    std::sort(d.capacity.begin(), d.capacity.end(), [](const Capacity& a, const Capacity& b) { return a.name < b.name; });
  }

  // A full GPU of kgpu.dra.sharing.memory.gpus: consumable capacity (see SliceOptions).
  void make_shareable(DraDevice& d, const Gpu& g) {
    const CapacityRequestPolicy& policy = options_.memory_policy;
    if (g.memory_bytes < policy.min || g.memory_bytes < policy.default_value) {
      notes_.push_back(g.uuid + ": " + std::to_string(g.memory_bytes) +
                       " bytes of memory, less than one memory share; published whole");
      return;
    }
    d.allow_multiple_allocations = true;
    set_device_type(d, kShareableGpuType);
    for (auto& c : d.capacity)
      if (c.name == "memory") c.request_policy = policy;
    const uint64_t sms = static_cast<uint64_t>(std::max(g.multiprocessors, 0));
    if (options_.multiprocessors_default == 0) return;
    if (sms == 0 || options_.multiprocessors_default > sms) {
      notes_.push_back(g.uuid + ": multiprocessors not published (NVML gave " + std::to_string(sms) +
                       " SMs; a share takes " + std::to_string(options_.multiprocessors_default) + " by default)");
      return;
    }
    d.capacity.push_back({"multiprocessors", sms, CapacityRequestPolicy{options_.multiprocessors_default, 1, 1}});
    std::sort(d.capacity.begin(), d.capacity.end(), [](const Capacity& a, const Capacity& b) { return a.name < b.name; });
  }

  // The device's health as taints (see kXidTaintKey); a note for each unhealthy one.
  std::vector<DeviceTaint> taints(const HealthState& health, const std::string& driver, const std::string& id) {
    if (health.healthy) {
      if (health.informational_xid == 0) return {};
      return {{driver + "/" + std::string(kXidTaintKey), std::to_string(health.informational_xid), kTaintNone}};
    }
    notes_.push_back(id + ": unhealthy (" + health.reason + "); published with a taint");
    if (health.xid == 0) return {{driver + "/" + std::string(kGpuLostTaintKey), "", kTaintNoSchedule}};
    const auto& opted = options_.no_execute_xids;
    const bool evict = std::find(opted.begin(), opted.end(), health.xid) != opted.end();
    return {{driver + "/" + std::string(kXidTaintKey), std::to_string(health.xid),
             evict ? kTaintNoExecute : kTaintNoSchedule}};
  }

  void add_device(DraDevice d, const std::string& id, DriverPool& pool) {
    drop_unpublishable_values(d.attributes, id);
    sort_by_name(d.attributes);
    for (auto& note : fit_device_to_api_limits(d)) warnings_.push_back(id + ": " + std::move(note));
    if (attribute_and_capacity_count(d) > kMaxAttributesAndCapacitiesPerDevice) {
      // The API server refuses a slice for one device over the limit: every device of the node would go.
      warnings_.push_back(id + ": device " + d.name + " has " + std::to_string(attribute_and_capacity_count(d)) +
                       " attributes and capacities with kgpu's extras left out, over the API's " +
                       std::to_string(kMaxAttributesAndCapacitiesPerDevice) + "; not published");
      return;
    }
    ids_.push_back(&id);
    pool.devices.push_back(std::move(d));
  }

  // Values the API server would refuse (too long), or that cannot be JSON at all (not UTF-8: NVML
  // strings are bytes), are left out with a note rather than failing the whole pool.
  // Device names must be unique in a pool (two GPUs reporting one minor): the first keeps it. One
  // sort of indices instead of a set of names on every device, as this runs on each health event.
  void drop_duplicate_names(DriverPool& pool) {
    const auto& devices = pool.devices;
    std::vector<size_t> order(devices.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return devices[a].name < devices[b].name; });
    std::vector<bool> drop(devices.size(), false);
    bool any = false;
    for (size_t k = 1; k < order.size(); ++k)
      if (devices[order[k]].name == devices[order[k - 1]].name) drop[order[k]] = any = true;
    if (!any) return;
    std::vector<DraDevice> kept;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (!drop[i]) {
        kept.push_back(std::move(pool.devices[i]));
        continue;
      }
      notes_.push_back(*ids_[i] + ": device name " + pool.devices[i].name + " already used in pool of " +
                       pool.driver + "; not published");
    }
    pool.devices = std::move(kept);
  }

  void drop_unpublishable_values(Attributes& a, const std::string& id) {
    std::erase_if(a, [&](const Attribute& attr) {
      const std::string* text = std::get_if<std::string>(&attr.value);
      if (!text) return false;
      const char* why = text->size() > kMaxAttributeValueLength ? "is longer than 64 characters"
                        : !is_valid_utf8(*text)                  ? "is not UTF-8"
                                                                 : nullptr;
      if (!why) return false;
      notes_.push_back(id + ": attribute " + std::string(attr.name) + " " + why + "; left out");
      return true;
    });
  }

  void add_version(Attributes& a, std::string_view name, const std::string& text, const std::string& id) {
    if (auto v = to_semver(text)) {
      a.push_back({name, VersionString{*v}});
    } else {
      notes_.push_back(id + ": " + std::string(name) + " \"" + text + "\" is not a version; left out");
    }
  }

  // What every device of this GPU carries (a MIG device its parent's), built once per GPU.
  std::shared_ptr<const Attributes> gpu_attributes(const Gpu& g, size_t position) {
    Attributes a;
    a.reserve(12);
    a.push_back({"productName", g.product});
    const std::string bus = normalize_pci_bus_id(g.pci_bus_id);
    if (!bus.empty()) a.push_back({kPciBusIdAttribute, bus});
    if (auto root = options_.pcie_roots.find(bus); root != options_.pcie_roots.end())
      a.push_back({kPcieRootAttribute, root->second});
    a.push_back({kNvlinkIslandAttribute, islands_[position]});
    if (g.vendor == Vendor::Nvidia) {
      a.push_back({"brand", nvidia_dra_brand(g.brand)});
      a.push_back({"architecture", nvidia_dra_architecture(g.architecture)});
      if (!g.addressing_mode.empty()) a.push_back({"addressingMode", g.addressing_mode});
      if (!bus.empty()) a.push_back({"pcieBusID", bus});  // NVIDIA's name before resource.kubernetes.io/pciBusID
      add_version(a, "cudaComputeCapability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor), g.uuid);
      add_version(a, "driverVersion", inv_.driver_version, g.uuid);
      const int cuda = inv_.cuda_driver_version;  // 12040 -> 12.4
      add_version(a, "cudaDriverVersion", std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10),
                  g.uuid);
    }
    drop_unpublishable_values(a, g.uuid);
    sort_by_name(a);
    return std::make_shared<const Attributes>(std::move(a));
  }

  const Inventory& inv_;
  const SliceOptions& options_;
  const std::vector<std::string> islands_;
  std::map<std::string, const DynamicMigLayout*> dynamic_;  // options_.dynamic_mig by GPU uuid
  std::vector<const std::string*> ids_;  // the inventory ID of each device of the pool being built
  std::vector<std::string> notes_;
  std::vector<std::string> warnings_;
};

}  // namespace

Result<Publication> build_publication(const Inventory& inventory, const SliceOptions& options) {
  if (!is_dns_subdomain(options.node_name))
    return Error::invalid("DRA: node name \"" + options.node_name + "\" is not a DNS subdomain (pool names need one)");
  for (const auto* driver : {&options.drivers.nvidia, &options.drivers.amd, &options.drivers.intel}) {
    if (!is_dns_subdomain(*driver) || driver->size() > 63)
      return Error::invalid("DRA: driver name \"" + *driver + "\" is not a DNS subdomain of at most 63 characters");
    if (!is_dns_subdomain(options.node_name + "-" + *driver + "-0"))
      return Error::invalid("DRA: ResourceSlice name for node \"" + options.node_name + "\" and driver \"" + *driver +
                            "\" is longer than 253 characters");
  }
  return Builder(inventory, options).build();
}

}  // namespace kgpu::dra
