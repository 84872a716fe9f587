// Which devices each DRA driver publishes, with NVIDIA DRA driver attribute names and types.
#include "dra/slice_builder.h"

#include <set>

#include "dra/device_names.h"

namespace kgpu::dra {

namespace {

// DeviceAttributeMaxValueLength: longer strings and versions are refused by the API server.
constexpr size_t kMaxAttributeValueLength = 64;

// Facts every device of one GPU shares (a MIG device carries its parent's).
struct GpuFacts {
  std::map<std::string, AttributeValue> attributes;
};

class Builder {
 public:
  Builder(const Inventory& inventory, const SliceOptions& options)
      : inv_(inventory), options_(options), islands_(nvlink_islands(inventory)) {}

  Publication build() {
    Publication out;
    add_pool(Vendor::Nvidia, options_.drivers.nvidia, out);
    add_pool(Vendor::Amd, options_.drivers.amd, out);
    add_pool(Vendor::Intel, options_.drivers.intel, out);
    for (const auto& g : inv_.gpus)
      if (g.vendor == Vendor::Generic)
        notes_.push_back(g.uuid + ": generic devices have no DRA driver; not published");
    out.notes = std::move(notes_);
    return out;
  }

 private:
  void add_pool(Vendor vendor, const std::string& driver, Publication& out) {
    DriverPool pool{driver, options_.node_name, {}};
    bool any = false;
    names_.clear();
    for (size_t i = 0; i < inv_.gpus.size(); ++i) {
      const Gpu& g = inv_.gpus[i];
      if (g.vendor != vendor) continue;
      any = true;
      if (!g.health.healthy) {
        notes_.push_back(g.uuid + ": unhealthy (" + g.health.reason + "); not published");
        continue;
      }
      const GpuFacts facts = gpu_facts(g, i);
      if (vendor == Vendor::Nvidia && g.mig_enabled) {
        if (g.mig_devices.empty()) notes_.push_back(g.uuid + ": MIG enabled without MIG devices; nothing to publish");
        for (const auto& m : g.mig_devices) add_mig(g, m, facts, pool);
        continue;
      }
      DraDevice d{gpu_device_name(g), facts.attributes, {{"memory", g.memory_bytes}}};
      d.attributes["type"] = std::string(vendor == Vendor::Amd ? "amdgpu" : "gpu");
      d.attributes["uuid"] = g.uuid;
      d.attributes["index"] = int64_t{g.index};
      if (g.minor >= 0) d.attributes["minor"] = int64_t{g.minor};
      add_device(std::move(d), g.uuid, pool);
    }
    if (any) out.pools.push_back(std::move(pool));
  }

  void add_mig(const Gpu& parent, const MigDevice& m, const GpuFacts& facts, DriverPool& pool) {
    if (!m.health.healthy) {
      notes_.push_back(m.uuid + ": unhealthy (" + m.health.reason + "); not published");
      return;
    }
    DraDevice d{mig_device_name(parent, m), facts.attributes, {}};
    d.attributes["type"] = std::string("mig");
    d.attributes["uuid"] = m.uuid;
    d.attributes["parentUUID"] = parent.uuid;
    d.attributes["profile"] = m.profile;
    d.attributes["parentIndex"] = int64_t{parent.index};
    if (parent.minor >= 0) d.attributes["parentMinor"] = int64_t{parent.minor};
    d.capacity = {{"memory", m.memory_bytes},
                  {"multiprocessors", static_cast<uint64_t>(m.multiprocessors)},
                  {"copyEngines", static_cast<uint64_t>(m.copy_engines)},
                  {"decoders", static_cast<uint64_t>(m.decoders)},
                  {"encoders", static_cast<uint64_t>(m.encoders)},
                  {"jpegEngines", static_cast<uint64_t>(m.jpeg_engines)},
                  {"ofaEngines", static_cast<uint64_t>(m.ofa_engines)},
                  {"gpuInstanceSlices", static_cast<uint64_t>(m.gpu_instance_slices)},
                  {"computeInstanceSlices", static_cast<uint64_t>(m.compute_instance_slices)}};
    add_device(std::move(d), m.uuid, pool);
  }

  void add_device(DraDevice d, const std::string& id, DriverPool& pool) {
    if (!names_.insert(d.name).second) {
      notes_.push_back(id + ": device name " + d.name + " already used in pool of " + pool.driver + "; not published");
      return;
    }
    for (auto it = d.attributes.begin(); it != d.attributes.end();) {
      const std::string* text = std::get_if<std::string>(&it->second);
      if (text && text->size() > kMaxAttributeValueLength) {
        notes_.push_back(id + ": attribute " + it->first + " longer than 64 characters; left out");
        it = d.attributes.erase(it);
      } else {
        ++it;
      }
    }
    pool.devices.push_back(std::move(d));
  }

  void add_version(std::map<std::string, AttributeValue>& a, const std::string& name, const std::string& text,
                   const std::string& id) {
    if (auto v = to_semver(text)) {
      a[name] = VersionString{*v};
    } else {
      notes_.push_back(id + ": " + name + " \"" + text + "\" is not a version; left out");
    }
  }

  GpuFacts gpu_facts(const Gpu& g, size_t position) {
    GpuFacts f;
    auto& a = f.attributes;
    a["productName"] = g.product;
    const std::string bus = normalize_pci_bus_id(g.pci_bus_id);
    if (!bus.empty()) a[kPciBusIdAttribute] = bus;
    if (auto root = options_.pcie_roots.find(bus); root != options_.pcie_roots.end())
      a[kPcieRootAttribute] = root->second;
    a[kNvlinkIslandAttribute] = islands_[position];
    if (g.vendor != Vendor::Nvidia) return f;
    a["brand"] = g.brand;
    a["architecture"] = g.architecture;
    if (!bus.empty()) a["pcieBusID"] = bus;  // NVIDIA's name before resource.kubernetes.io/pciBusID
    add_version(a, "cudaComputeCapability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor), g.uuid);
    add_version(a, "driverVersion", inv_.driver_version, g.uuid);
    const int cuda = inv_.cuda_driver_version;  // 12040 -> 12.4
    add_version(a, "cudaDriverVersion", std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10), g.uuid);
    return f;
  }

  const Inventory& inv_;
  const SliceOptions& options_;
  const std::vector<std::string> islands_;
  std::set<std::string> names_;
  std::vector<std::string> notes_;
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
