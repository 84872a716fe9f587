// node_labels: the node-level GFD labels, then the per-resource ones (gpu_labels.cpp), then the
// AMD / Intel labellers' (vendor_labels.cpp). See labels.h for the layout and the kgpu rules.
#include "labels/labels.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <vector>

#include "labels/gpu_labels.h"
#include "labels/sanitize.h"
#include "labels/vendor_labels.h"

namespace kgpu {
namespace {

using labels::k8s_label_value;

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const auto pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

// "550.54.15" or "550.54": the old and new spellings; anything else only .full (GFD errors out).
void put_driver_version(const std::string& version, Labels& out) {
  if (version.empty()) return;
  out["nvidia.com/cuda.driver-version.full"] = k8s_label_value(version);
  const auto parts = split(version, '.');
  if ((parts.size() != 2 && parts.size() != 3) || !std::all_of(parts.begin(), parts.end(), all_digits)) return;
  const std::string rev = parts.size() == 3 ? parts[2] : "";
  out["nvidia.com/cuda.driver.major"] = parts[0];
  out["nvidia.com/cuda.driver.minor"] = parts[1];
  out["nvidia.com/cuda.driver.rev"] = rev;
  out["nvidia.com/cuda.driver-version.major"] = parts[0];
  out["nvidia.com/cuda.driver-version.minor"] = parts[1];
  out["nvidia.com/cuda.driver-version.revision"] = rev;
}

void put_cuda_version(int version, Labels& out) {
  if (version <= 0) return;
  const auto major = std::to_string(version / 1000), minor = std::to_string((version % 1000) / 10);
  out["nvidia.com/cuda.runtime.major"] = major;
  out["nvidia.com/cuda.runtime.minor"] = minor;
  out["nvidia.com/cuda.runtime-version.major"] = major;
  out["nvidia.com/cuda.runtime-version.minor"] = minor;
  out["nvidia.com/cuda.runtime-version.full"] = major + "." + minor;
}

std::optional<uint32_t> parse_class(const std::string& text) {
  std::string_view s = text;
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  uint32_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  // Intel's backend stores the 16-bit class ("0300"); sysfs gives 24 bits ("0x030200").
  return s.size() <= 4 ? v << 8 : v;
}

// compute when every GPU is a 3D controller (MIG mode counts as compute), graphics when every GPU
// is a VGA controller, unknown otherwise or when a class is missing.
std::string gpu_mode(const std::vector<const Gpu*>& gpus, const LabelContext& ctx) {
  std::set<std::string> modes;
  for (const Gpu* g : gpus) {
    std::optional<uint32_t> cls;
    if (auto it = ctx.pci_class.find(g->pci_bus_id); it != ctx.pci_class.end()) cls = it->second;
    else if (auto a = g->attributes.find("pci-class"); a != g->attributes.end()) cls = parse_class(a->second);
    if (g->mig_enabled) modes.insert("compute");
    else if (cls && (*cls >> 8) == 0x0302) modes.insert("compute");
    else if (cls && (*cls >> 8) == 0x0300) modes.insert("graphics");
    else modes.insert("unknown");
  }
  return modes.size() == 1 ? *modes.begin() : "unknown";
}

// <clusterUUID>.<cliqueID> when every fabric-attached GPU agrees.
void put_clique(const std::vector<const Gpu*>& gpus, Labels& out) {
  std::set<std::string> cliques;
  for (const Gpu* g : gpus)
    if (!g->fabric_cluster_uuid.empty() && g->fabric_clique)
      cliques.insert(g->fabric_cluster_uuid + "." + std::to_string(*g->fabric_clique));
  if (cliques.size() == 1) out["nvidia.com/gpu.clique"] = k8s_label_value(*cliques.begin());
}

const char* bool_text(bool b) { return b ? "true" : "false"; }

}  // namespace

Labels node_labels(const Config& config, const Inventory& inventory, const ResourcePlan& plan,
                   const LabelContext& context) {
  Labels out;
  std::vector<const Gpu*> nvidia;
  for (const auto& g : inventory.gpus)
    if (g.vendor == Vendor::Nvidia) nvidia.push_back(&g);
  // GFD's labels appear on NVIDIA nodes and, like GFD's null manager, on nodes with no GPU at all.
  const bool nvidia_node = !nvidia.empty() || inventory.gpus.empty();
  if (nvidia_node) {
    if (context.timestamp && !config.gfd_no_timestamp)
      out["nvidia.com/gfd.timestamp"] = std::to_string(*context.timestamp);
    out["nvidia.com/vgpu.present"] = "false";  // kgpu does not serve vGPU
  }
  if (!nvidia.empty()) {
    put_driver_version(inventory.driver_version, out);
    put_cuda_version(inventory.cuda_driver_version, out);
    const auto machine = k8s_label_value(context.machine_type);
    out["nvidia.com/gpu.machine"] = machine.empty() ? "unknown" : machine;
    out["nvidia.com/mig.capable"] =
        bool_text(std::any_of(nvidia.begin(), nvidia.end(), [](const Gpu* g) { return g->mig_capable; }));
    // True only when the plan really serves a resource through MPS (GFD: the config asks for it,
    // and crash-loops when MIG is on; the planner refuses MPS on MIG and says why instead).
    out["nvidia.com/mps.capable"] = bool_text(std::any_of(
        plan.resources.begin(), plan.resources.end(), [](const Resource& r) { return r.sharing == SharingKind::Mps; }));
    if (config.mig_strategy == MigStrategy::Single) out["nvidia.com/mig.strategy"] = "single";
    if (config.mig_strategy == MigStrategy::Mixed) out["nvidia.com/mig.strategy"] = "mixed";
    out["nvidia.com/gpu.mode"] = gpu_mode(nvidia, context);
    put_clique(nvidia, out);
    labels::add_gpu_resource_labels(config, inventory, plan, out);
  }
  for (auto& [key, value] : vendor_labels(inventory)) out.emplace(key, value);
  return out;
}

}  // namespace kgpu
