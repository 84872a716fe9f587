// Fleet YAML -> Fleet, with every error naming file, line, column and field.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "fleet.h"
#include "mig_profiles.h"
#include "telemetry_values.h"
#include "fleet_parser_detail.h"

namespace kgpu::fake_nvml {
namespace {

using detail::FleetError;
using detail::Layered;

std::string trim_upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

const std::map<std::string, nvmlBrandType_t>& brand_names() {
  static const std::map<std::string, nvmlBrandType_t> names = {
      {"unknown", NVML_BRAND_UNKNOWN}, {"quadro", NVML_BRAND_QUADRO}, {"tesla", NVML_BRAND_TESLA},
      {"nvs", NVML_BRAND_NVS}, {"grid", NVML_BRAND_GRID}, {"geforce", NVML_BRAND_GEFORCE},
      {"titan", NVML_BRAND_TITAN}, {"quadro_rtx", NVML_BRAND_QUADRO_RTX}, {"nvidia_rtx", NVML_BRAND_NVIDIA_RTX},
      {"nvidia", NVML_BRAND_NVIDIA}, {"geforce_rtx", NVML_BRAND_GEFORCE_RTX}, {"titan_rtx", NVML_BRAND_TITAN_RTX}};
  return names;
}

const std::map<std::string, nvmlDeviceArchitecture_t>& architecture_names() {
  static const std::map<std::string, nvmlDeviceArchitecture_t> names = {
      {"kepler", NVML_DEVICE_ARCH_KEPLER}, {"maxwell", NVML_DEVICE_ARCH_MAXWELL}, {"pascal", NVML_DEVICE_ARCH_PASCAL},
      {"volta", NVML_DEVICE_ARCH_VOLTA},   {"turing", NVML_DEVICE_ARCH_TURING},   {"ampere", NVML_DEVICE_ARCH_AMPERE},
      {"ada", NVML_DEVICE_ARCH_ADA},       {"hopper", NVML_DEVICE_ARCH_HOPPER},   {"blackwell", NVML_DEVICE_ARCH_BLACKWELL}};
  return names;
}

const std::map<std::string, unsigned long long>& event_names() {
  static const std::map<std::string, unsigned long long> names = {
      {"xid", nvmlEventTypeXidCriticalError}, {"ecc_single", nvmlEventTypeSingleBitEccError},
      {"ecc_double", nvmlEventTypeDoubleBitEccError}, {"pstate", nvmlEventTypePState},
      {"clock", nvmlEventTypeClock}, {"power_source", nvmlEventTypePowerSourceChange},
      {"mig_config", nvmlEventMigConfigChange}};
  return names;
}

const std::map<std::string, nvmlGpuTopologyLevel_t>& level_names() {
  static const std::map<std::string, nvmlGpuTopologyLevel_t> names = {
      {"internal", NVML_TOPOLOGY_INTERNAL}, {"single", NVML_TOPOLOGY_SINGLE}, {"multiple", NVML_TOPOLOGY_MULTIPLE},
      {"hostbridge", NVML_TOPOLOGY_HOSTBRIDGE}, {"node", NVML_TOPOLOGY_NODE}, {"system", NVML_TOPOLOGY_SYSTEM}};
  return names;
}

template <typename T>
T from_table(const detail::Field& f, const std::map<std::string, T>& table, const char* what) {
  std::string text = f.str();
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = table.find(text);
  if (it != table.end()) return it->second;
  std::string known;
  for (const auto& [name, value] : table) known += (known.empty() ? "" : ", ") + name;
  throw f.error(std::string("unknown ") + what + " '" + f.str() + "' (known: " + known + ")");
}

nvmlReturn_t return_code(const detail::Field& f) {
  auto code = parse_return_code(f.str());
  if (!code) throw f.error("unknown NVML return code '" + f.str() + "' (use e.g. NVML_ERROR_UNKNOWN or 999)");
  return *code;
}

// Deterministic MIG uuid for a compute instance the fleet leaves unnamed.
std::string derived_mig_uuid(const std::string& gpu_uuid, unsigned gi, unsigned ci) {
  unsigned long long h = 1469598103934665603ULL;
  for (char c : gpu_uuid) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h = (h ^ (gi * 131u + ci + 1u)) * 1099511628211ULL;
  unsigned long long h2 = (h ^ 0x9e3779b97f4a7c15ULL) * 1099511628211ULL;
  char buf[64];
  std::snprintf(buf, sizeof buf, "MIG-%08llx-%04llx-4%03llx-a%03llx-%012llx", h & 0xffffffffULL, (h >> 32) & 0xffffULL,
                (h >> 48) & 0xfffULL, h2 & 0xfffULL, (h2 >> 12) & 0xffffffffffffULL);
  return buf;
}

std::vector<ComputeInstance> parse_compute_instances(const Layered& gi_node, const GpuInstance& gi,
                                                     const std::string& gpu_uuid) {
  std::vector<ComputeInstance> cis;
  auto list = gi_node.get("compute_instances");
  unsigned gi_slices = gi.profile.compute_slices;
  if (!list) {
    ComputeInstance ci;
    ci.id = 0;
    ci.slices = gi_slices;
    auto uuid = gi_node.get("uuid");
    ci.uuid = uuid ? uuid->str() : derived_mig_uuid(gpu_uuid, gi.id, 0);
    cis.push_back(ci);
    return cis;
  }
  std::vector<bool> used(gi_slices, false);
  std::set<unsigned> ids;
  for (auto& entry : list->sequence()) {
    Layered ci_node = entry.as_map({"slices", "id", "placement", "uuid"});
    ComputeInstance ci;
    auto slices = ci_node.get("slices");
    ci.slices = slices ? slices->uint() : gi_slices;
    if (!compute_profile_index(ci.slices) || ci.slices > gi_slices)
      throw (slices ? *slices : entry).error("a compute instance of " + std::to_string(ci.slices) +
                                             " slices does not fit GPU instance " + gi.profile.name);
    auto id = ci_node.get("id");
    ci.id = id ? id->uint() : static_cast<unsigned>(cis.size());
    if (!ids.insert(ci.id).second) throw (id ? *id : entry).error("duplicate compute instance id " + std::to_string(ci.id));
    auto placement = ci_node.get("placement");
    if (placement) {
      ci.placement = placement->uint();
    } else {
      unsigned start = 0;
      while (start + ci.slices <= gi_slices &&
             std::any_of(used.begin() + start, used.begin() + start + ci.slices, [](bool b) { return b; }))
        start += ci.slices;
      ci.placement = start;
    }
    if (ci.placement % ci.slices != 0 || ci.placement + ci.slices > gi_slices ||
        std::any_of(used.begin() + ci.placement, used.begin() + ci.placement + ci.slices, [](bool b) { return b; }))
      throw (placement ? *placement : entry).error("compute instance placement " + std::to_string(ci.placement) +
                                                   " is invalid or overlaps another in " + gi.profile.name);
    std::fill(used.begin() + ci.placement, used.begin() + ci.placement + ci.slices, true);
    auto uuid = ci_node.get("uuid");
    ci.uuid = uuid ? uuid->str() : derived_mig_uuid(gpu_uuid, gi.id, ci.id);
    cis.push_back(ci);
  }
  if (cis.empty()) throw list->error("a GPU instance needs at least one compute instance");
  return cis;
}

Mig parse_mig(const Layered& node, const std::string& gpu_uuid) {
  Mig mig;
  auto capable = node.get("capable");
  mig.capable = capable ? capable->boolean() : true;
  if (!mig.capable) return mig;
  auto mode_name = [](const detail::Field& f) {
    std::string m = f.str();
    if (m == "enabled" || m == "1" || m == "true") return static_cast<unsigned>(NVML_DEVICE_MIG_ENABLE);
    if (m == "disabled" || m == "0" || m == "false") return static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE);
    throw f.error("MIG mode must be 'enabled' or 'disabled', not '" + m + "'");
  };
  auto mode = node.get("mode");
  mig.mode = mode ? mode_name(*mode) : NVML_DEVICE_MIG_DISABLE;
  auto pending = node.get("pending");
  mig.pending = pending ? mode_name(*pending) : mig.mode;
  auto table = node.require("profiles");
  mig.table = builtin_mig_table(table.str());
  if (!mig.table)
    throw table.error("unknown MIG profile table '" + table.str() + "' (known: " + builtin_mig_table_names() + ")");
  auto instances = node.get("instances");
  if (!instances) return mig;
  if (mig.mode != NVML_DEVICE_MIG_ENABLE && !instances->sequence().empty())
    throw instances->error("GPU instances are listed but MIG mode is not enabled");
  std::vector<bool> used(mig.table->memory_slice_count, false);
  std::set<unsigned> ids;
  for (auto& entry : instances->sequence()) {
    Layered gi_node = entry.as_map({"profile", "placement", "id", "uuid", "compute_instances"});
    auto profile_field = gi_node.require("profile");
    auto profile = std::find_if(mig.table->profiles.begin(), mig.table->profiles.end(),
                                [&](const GiProfile& p) { return p.name == profile_field.str(); });
    if (profile == mig.table->profiles.end()) {
      std::string known;
      for (const auto& p : mig.table->profiles) known += (known.empty() ? "" : ", ") + p.name;
      throw profile_field.error("profile '" + profile_field.str() + "' is not in table " + mig.table->name +
                                " (known: " + known + ")");
    }
    GpuInstance gi;
    gi.profile = *profile;
    auto fits = [&](unsigned start) {
      if (std::find(profile->placements.begin(), profile->placements.end(), start) == profile->placements.end())
        return false;
      return std::none_of(used.begin() + start, used.begin() + start + profile->memory_slices, [](bool b) { return b; });
    };
    auto placement = gi_node.get("placement");
    if (placement) {
      gi.placement = placement->uint();
      if (!fits(gi.placement))
        throw placement->error("placement " + std::to_string(gi.placement) + " of " + profile->name +
                               " is not a valid start slice or overlaps another instance");
    } else {
      auto free_start = std::find_if(profile->placements.begin(), profile->placements.end(), fits);
      if (free_start == profile->placements.end())
        throw profile_field.error("no free placement left for " + profile->name);
      gi.placement = *free_start;
    }
    std::fill(used.begin() + gi.placement, used.begin() + gi.placement + profile->memory_slices, true);
    auto id = gi_node.get("id");
    gi.id = id ? id->uint() : default_gpu_instance_id(*profile, gi.placement);
    if (!ids.insert(gi.id).second) throw (id ? *id : entry).error("duplicate GPU instance id " + std::to_string(gi.id));
    gi.compute_instances = parse_compute_instances(gi_node, gi, gpu_uuid);
    mig.instances.push_back(std::move(gi));
  }
  return mig;
}

Fabric parse_fabric(const Layered& node) {
  Fabric fabric;
  if (auto uuid = node.get("cluster_uuid")) {
    std::string hex;
    for (char c : uuid->str())
      if (c != '-') hex += c;
    if (hex.size() != 2 * NVML_GPU_FABRIC_UUID_LEN) throw uuid->error("cluster_uuid must be 16 bytes of hex");
    for (unsigned i = 0; i < NVML_GPU_FABRIC_UUID_LEN; ++i) {
      unsigned byte = 0;
      auto [ptr, ec] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, byte, 16);
      if (ec != std::errc() || ptr != hex.data() + 2 * i + 2) throw uuid->error("cluster_uuid is not hexadecimal");
      fabric.cluster_uuid[i] = static_cast<unsigned char>(byte);
    }
  }
  if (auto clique = node.get("clique_id")) fabric.clique_id = clique->uint();
  if (auto state = node.get("state")) {
    static const std::map<std::string, nvmlGpuFabricState_t> states = {
        {"not_supported", NVML_GPU_FABRIC_STATE_NOT_SUPPORTED}, {"not_started", NVML_GPU_FABRIC_STATE_NOT_STARTED},
        {"in_progress", NVML_GPU_FABRIC_STATE_IN_PROGRESS}, {"completed", NVML_GPU_FABRIC_STATE_COMPLETED}};
    fabric.state = from_table(*state, states, "fabric state");
  }
  if (auto status = node.get("status")) fabric.status = return_code(*status);
  if (auto mask = node.get("health_mask")) fabric.health_mask = mask->uint();
  return fabric;
}

Gpu parse_gpu(const Layered& node, unsigned position) {
  Gpu gpu;
  gpu.index = position;
  if (auto index = node.get("index"); index && index->uint() != position)
    throw index->error("index " + std::to_string(index->uint()) + " does not match the GPU's position " +
                       std::to_string(position) + " in the list");
  gpu.uuid = node.require("uuid").str();
  if (gpu.uuid.rfind("GPU-", 0) != 0) throw node.require("uuid").error("a GPU uuid starts with 'GPU-'");
  gpu.name = node.require("name").str();
  if (auto brand = node.get("brand")) gpu.brand = from_table(*brand, brand_names(), "brand");
  if (auto mode = node.get("addressing_mode")) {
    static const std::map<std::string, unsigned> modes = {{"none", NVML_DEVICE_ADDRESSING_MODE_NONE},
                                                          {"hmm", NVML_DEVICE_ADDRESSING_MODE_HMM},
                                                          {"ats", NVML_DEVICE_ADDRESSING_MODE_ATS}};
    gpu.addressing_mode = from_table(*mode, modes, "addressing_mode");
  }
  gpu.architecture = from_table(node.require("architecture"), architecture_names(), "architecture");
  {
    auto cc = node.require("compute_capability");
    int major = 0, minor = 0;
    if (std::sscanf(cc.str().c_str(), "%d.%d", &major, &minor) != 2 || major <= 0 || minor < 0)
      throw cc.error("compute_capability must look like \"8.0\"");
    gpu.cc_major = major;
    gpu.cc_minor = minor;
  }
  if (auto serial = node.get("serial")) gpu.serial = serial->str();
  gpu.minor = node.get("minor") ? node.get("minor")->uint() : position;
  gpu.numa_node = node.get("numa_node") ? node.get("numa_node")->integer() : 0;
  {
    Layered memory = node.child("memory", {"total_mib", "used_mib"});
    gpu.memory_total_mib = memory.require("total_mib").uint64();
    if (auto used = memory.get("used_mib")) gpu.memory_used_mib = used->uint64();
    if (gpu.memory_used_mib > gpu.memory_total_mib)
      throw memory.require("used_mib").error("used_mib exceeds total_mib");
  }
  {
    Layered pci = node.child("pci", {"bus_id", "device_id", "subsystem_id", "class"});
    auto bus = pci.require("bus_id");
    auto address = parse_bus_id(bus.str());
    if (!address) throw bus.error("'" + bus.str() + "' is not a PCI bus id like 0000:07:00.0");
    gpu.pci = *address;
    gpu.pci_device_id = pci.require("device_id").uint();
    if (gpu.pci_device_id > 0xFFFF) throw pci.require("device_id").error("device_id is a 16-bit PCI device id");
    if (auto sub = pci.get("subsystem_id")) gpu.pci_subsystem_id = sub->uint();
    if (auto cls = pci.get("class")) gpu.pci_class = cls->uint();
  }
  if (auto sms = node.get("sm_count")) gpu.sm_count = sms->uint();
  if (auto links = node.get("nvlinks")) {
    gpu.nvlink_ports = links->uint();
    if (gpu.nvlink_ports > NVML_NVLINK_MAX_LINKS)
      throw links->error("at most " + std::to_string(NVML_NVLINK_MAX_LINKS) + " NVLink ports");
  }
  gpu.nvlinks.resize(gpu.nvlink_ports);
  if (auto v = node.get("power_mw")) gpu.power_mw = v->uint();
  if (auto v = node.get("power_limit_mw")) gpu.power_limit_mw = v->uint();
  if (auto v = node.get("temperature_c")) gpu.temperature_c = v->uint();
  if (node.get("telemetry")) {
    const auto& keys = telemetry_keys();
    Layered telemetry = node.child("telemetry", std::set<std::string>(keys.begin(), keys.end()));
    for (const auto& key : keys)
      if (auto v = telemetry.get(key)) gpu.telemetry[key] = v->uint64();
  }
  if (auto fabric = node.get("fabric"); fabric)
    gpu.fabric = parse_fabric(node.child("fabric", {"cluster_uuid", "clique_id", "state", "status", "health_mask"}));
  if (node.get("mig"))
    gpu.mig = parse_mig(node.child("mig", {"capable", "mode", "pending", "profiles", "instances"}), gpu.uuid);
  if (auto events = node.get("supported_events")) {
    for (auto& e : events->sequence()) gpu.supported_events |= from_table(e, event_names(), "event type");
  } else {
    gpu.supported_events = nvmlEventTypeXidCriticalError | nvmlEventTypeSingleBitEccError |
                           nvmlEventTypeDoubleBitEccError | nvmlEventTypePState | nvmlEventTypeClock;
    if (gpu.mig.capable) gpu.supported_events |= nvmlEventMigConfigChange;
  }
  if (auto lost = node.get("lost")) gpu.lost = lost->boolean();
  if (node.get("fail")) {
    Layered fail = node.child("fail", {"handle", "calls"});
    if (auto handle = fail.get("handle")) gpu.handle_failure = return_code(*handle);
    if (auto calls = fail.get("calls"))
      for (auto& [name, code] : calls->entries()) {
        if (name.str().rfind("nvml", 0) != 0) throw name.error("a call name starts with 'nvml'");
        gpu.call_failures.push_back({name.str(), return_code(code)});
      }
  }
  return gpu;
}

std::vector<unsigned> gpu_list(const detail::Field& f, size_t gpu_count) {
  std::vector<unsigned> gpus;
  for (auto& g : f.sequence()) {
    unsigned index = g.uint();
    if (index >= gpu_count) throw g.error("GPU index " + std::to_string(index) + " does not exist");
    if (std::find(gpus.begin(), gpus.end(), index) != gpus.end()) throw g.error("GPU listed twice");
    gpus.push_back(index);
  }
  if (gpus.size() < 2) throw f.error("name at least two GPUs");
  return gpus;
}

void parse_topology(const Layered& node, Fleet& fleet) {
  const size_t n = fleet.gpus.size();
  fleet.ancestry.assign(n, std::vector<nvmlGpuTopologyLevel_t>(n, NVML_TOPOLOGY_SYSTEM));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      fleet.ancestry[i][j] = i == j ? NVML_TOPOLOGY_INTERNAL
                             : fleet.gpus[i].numa_node == fleet.gpus[j].numa_node ? NVML_TOPOLOGY_NODE
                                                                                  : NVML_TOPOLOGY_SYSTEM;
  if (auto pcie = node.get("pcie")) {
    for (auto& entry : pcie->sequence()) {
      Layered group = entry.as_map({"gpus", "level"});
      auto gpus = gpu_list(group.require("gpus"), n);
      auto level = from_table(group.require("level"), level_names(), "topology level");
      for (unsigned a : gpus)
        for (unsigned b : gpus)
          if (a != b) fleet.ancestry[a][b] = level;
    }
  }
  auto nvswitch = node.get("nvswitch");
  auto nvlink = node.get("nvlink");
  if (nvswitch && nvlink) throw nvlink->error("use either nvswitch or nvlink pairs, not both");
  if (nvswitch) {
    Layered sw = node.child("nvswitch", {"links_per_gpu", "switches", "switch_device_id"});
    std::vector<std::string> switches;
    if (auto list = sw.get("switches")) {
      for (auto& s : list->sequence()) {
        auto address = parse_bus_id(s.str());
        if (!address) throw s.error("'" + s.str() + "' is not a PCI bus id");
        switches.push_back(bus_id_string(*address));
      }
    } else {
      for (unsigned i = 0; i < 6; ++i) switches.push_back(bus_id_string({0, 0xC4 + i, 0, 0}));
    }
    if (switches.empty()) throw sw.require("switches").error("list at least one NVSwitch");
    unsigned device_id = sw.get("switch_device_id") ? sw.get("switch_device_id")->uint() : 0x1AF1;
    for (auto& gpu : fleet.gpus) {
      unsigned links = sw.get("links_per_gpu") ? sw.get("links_per_gpu")->uint() : gpu.nvlink_ports;
      if (links > gpu.nvlink_ports)
        throw sw.require("links_per_gpu").error(gpu.uuid + " has only " + std::to_string(gpu.nvlink_ports) +
                                                " NVLink ports (set nvlinks on the GPU)");
      for (unsigned l = 0; l < links; ++l)
        gpu.nvlinks[l] = NvLinkPeer{true, 0, switches[l % switches.size()], device_id};
    }
  }
  if (nvlink) {
    for (auto& entry : nvlink->sequence()) {
      Layered pair = entry.as_map({"gpus", "links"});
      auto gpus_field = pair.require("gpus");
      auto gpus = gpu_list(gpus_field, n);
      if (gpus.size() != 2) throw gpus_field.error("an nvlink entry joins exactly two GPUs");
      unsigned links = pair.get("links") ? pair.get("links")->uint() : 1;
      for (int side = 0; side < 2; ++side) {
        Gpu& gpu = fleet.gpus[gpus[side]];
        const Gpu& peer = fleet.gpus[gpus[1 - side]];
        unsigned placed = 0;
        for (auto& port : gpu.nvlinks)
          if (!port && placed < links) {
            port = NvLinkPeer{false, peer.index, bus_id_string(peer.pci), peer.pci_device_id};
            ++placed;
          }
        if (placed < links)
          throw gpus_field.error(gpu.uuid + " has not enough free NVLink ports (nvlinks: " +
                                 std::to_string(gpu.nvlink_ports) + ")");
      }
    }
  }
}

void check_unique(const Fleet& fleet, const std::vector<Layered>& gpu_nodes) {
  std::set<std::string> uuids, buses;
  std::set<unsigned> minors;
  for (size_t i = 0; i < fleet.gpus.size(); ++i) {
    const Gpu& gpu = fleet.gpus[i];
    if (!uuids.insert(gpu.uuid).second) throw gpu_nodes[i].require("uuid").error("duplicate uuid " + gpu.uuid);
    if (!buses.insert(bus_id_string(gpu.pci)).second)
      throw gpu_nodes[i].child("pci", {"bus_id", "device_id", "subsystem_id", "class"}).require("bus_id").error(
          "duplicate PCI bus id");
    if (!minors.insert(gpu.minor).second)
      throw (gpu_nodes[i].get("minor") ? *gpu_nodes[i].get("minor") : gpu_nodes[i].require("uuid"))
          .error("duplicate minor number " + std::to_string(gpu.minor));
    for (const auto& gi : gpu.mig.instances)
      for (const auto& ci : gi.compute_instances)
        if (!uuids.insert(ci.uuid).second) throw gpu_nodes[i].require("uuid").error("duplicate MIG uuid " + ci.uuid);
  }
}

Fleet parse_document(const YAML::Node& root, const std::string& path) {
  detail::Context ctx{path};
  Layered top = Layered::root(ctx, root, {"node", "failures", "topology", "defaults", "gpus"});
  Fleet fleet;
  fleet.path = path;
  Layered node = top.child("node", {"driver_version", "cuda_driver_version", "product_name"});
  fleet.driver_version = node.require("driver_version").str();
  fleet.cuda_driver_version = node.require("cuda_driver_version").integer();
  if (auto product = node.get("product_name")) fleet.product_name = product->str();
  if (top.get("failures")) {
    Layered failures = top.child("failures", {"init"});
    if (auto init = failures.get("init")) fleet.init_failure = return_code(*init);
  }
  static const std::set<std::string> gpu_keys = {
      "index", "uuid", "name", "brand", "addressing_mode", "architecture", "compute_capability", "serial", "minor", "numa_node",
      "memory", "pci", "sm_count", "nvlinks", "power_mw", "power_limit_mw", "temperature_c", "supported_events",
      "fabric", "mig", "lost", "fail", "telemetry"};
  std::optional<detail::Field> defaults = top.get("defaults");
  std::vector<Layered> gpu_nodes;
  if (auto gpus = top.get("gpus")) {
    for (auto& entry : gpus->sequence()) {
      gpu_nodes.push_back(defaults ? entry.as_map_over(*defaults, gpu_keys) : entry.as_map(gpu_keys));
      fleet.gpus.push_back(parse_gpu(gpu_nodes.back(), static_cast<unsigned>(fleet.gpus.size())));
    }
  }
  check_unique(fleet, gpu_nodes);
  parse_topology(top.child("topology", {"nvswitch", "nvlink", "pcie"}), fleet);
  return fleet;
}

// Parses with `load` (from a file or from text) and turns every parser exception into an Error.
template <typename Load>
Result<Fleet> parse_with(Load load, const std::string& path) {
  try {
    YAML::Node root = load();
    return parse_document(root, path);
  } catch (const FleetError& e) {
    return Error::invalid(e.what());
  } catch (const YAML::BadFile&) {
    return Error::not_found(path + ": cannot open the fleet file");
  } catch (const YAML::Exception& e) {
    return Error::invalid(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                          ": YAML syntax error: " + e.msg);
  }
}

}  // namespace

Result<Fleet> load_fleet(const std::string& path) {
  return parse_with([&] { return YAML::LoadFile(path); }, path);
}

Result<Fleet> parse_fleet(const std::string& text, const std::string& name) {
  return parse_with([&] { return YAML::Load(text); }, name);
}

std::string bus_id_string(const PciAddress& pci) {
  char buf[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.%X", pci.domain, pci.bus, pci.device, pci.function);
  return buf;
}

std::string legacy_bus_id_string(const PciAddress& pci) {
  char buf[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
  std::snprintf(buf, sizeof buf, "%04X:%02X:%02X.%X", pci.domain & 0xFFFFu, pci.bus, pci.device, pci.function);
  return buf;
}

std::optional<PciAddress> parse_bus_id(const std::string& text) {
  PciAddress a;
  unsigned parts[4] = {0, 0, 0, 0};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%n", &parts[0], &parts[1], &parts[2], &parts[3], &consumed) == 4 &&
      static_cast<size_t>(consumed) == text.size()) {
    a = {parts[0], parts[1], parts[2], parts[3]};
  } else if (std::sscanf(text.c_str(), "%x:%x.%x%n", &parts[1], &parts[2], &parts[3], &consumed) == 3 &&
             static_cast<size_t>(consumed) == text.size()) {
    a = {0, parts[1], parts[2], parts[3]};
  } else {
    return std::nullopt;
  }
  if (a.bus > 0xFF || a.device > 0x1F || a.function > 7) return std::nullopt;
  return a;
}

std::optional<nvmlReturn_t> parse_return_code(const std::string& text) {
  static const std::map<std::string, nvmlReturn_t> names = {
      {"SUCCESS", NVML_SUCCESS}, {"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
      {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT}, {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
      {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION}, {"ALREADY_INITIALIZED", NVML_ERROR_ALREADY_INITIALIZED},
      {"NOT_FOUND", NVML_ERROR_NOT_FOUND}, {"INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
      {"INSUFFICIENT_POWER", NVML_ERROR_INSUFFICIENT_POWER}, {"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
      {"TIMEOUT", NVML_ERROR_TIMEOUT}, {"IRQ_ISSUE", NVML_ERROR_IRQ_ISSUE},
      {"LIBRARY_NOT_FOUND", NVML_ERROR_LIBRARY_NOT_FOUND}, {"FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND},
      {"CORRUPTED_INFOROM", NVML_ERROR_CORRUPTED_INFOROM}, {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
      {"RESET_REQUIRED", NVML_ERROR_RESET_REQUIRED}, {"OPERATING_SYSTEM", NVML_ERROR_OPERATING_SYSTEM},
      {"LIB_RM_VERSION_MISMATCH", NVML_ERROR_LIB_RM_VERSION_MISMATCH}, {"IN_USE", NVML_ERROR_IN_USE},
      {"MEMORY", NVML_ERROR_MEMORY}, {"NO_DATA", NVML_ERROR_NO_DATA},
      {"INSUFFICIENT_RESOURCES", NVML_ERROR_INSUFFICIENT_RESOURCES},
      {"ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH}, {"DEPRECATED", NVML_ERROR_DEPRECATED},
      {"NOT_READY", NVML_ERROR_NOT_READY}, {"GPU_NOT_FOUND", NVML_ERROR_GPU_NOT_FOUND},
      {"INVALID_STATE", NVML_ERROR_INVALID_STATE}, {"UNKNOWN", NVML_ERROR_UNKNOWN}};
  std::string name = trim_upper(text);
  if (name.rfind("NVML_ERROR_", 0) == 0) name = name.substr(11);
  if (name == "NVML_SUCCESS") name = "SUCCESS";
  if (auto it = names.find(name); it != names.end()) return it->second;
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && ptr == text.data() + text.size()) {
    for (const auto& [n, code] : names)
      if (static_cast<unsigned>(code) == value) return code;
  }
  return std::nullopt;
}

}  // namespace kgpu::fake_nvml
