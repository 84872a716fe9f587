// AMD backend: amdgpu devices from the PCI tree, cross-checked with the KFD topology (which is what
// the ROCm runtime enumerates). Reads only under SysfsRoots.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "sysfs/amd_info.h"
#include "sysfs/backends.h"
#include "sysfs/fs_util.h"

namespace kgpu {
namespace {

using sysfs::fs::path;

constexpr const char* kDriverDirs[] = {"/bus/pci/drivers/amdgpu", "/module/amdgpu/drivers/pci:amdgpu"};
constexpr const char* kKfdNodes = "/class/kfd/kfd/topology/nodes";

std::optional<path> driver_dir(const SysfsRoots& roots) {
  for (const char* d : kDriverDirs) {
    path p = sysfs::join(roots.sys, d);
    if (sysfs::is_dir(p)) return p;
  }
  return std::nullopt;
}

struct KfdNode {
  std::string dir;
  std::map<std::string, uint64_t> props;
  uint64_t get(const std::string& key) const {
    auto it = props.find(key);
    return it == props.end() ? 0 : it->second;
  }
  bool has(const std::string& key) const { return props.count(key) != 0; }
};

// Render minors that more than one KFD GPU node names, with the reason to give each device built
// from such a node. Two devices on one /dev/dri/renderD node would hand the same node (and so the
// same GPU or partition) to two containers; which node is right cannot be told, so neither is
// served healthy.
std::map<uint64_t, std::string> render_minor_conflicts(const std::map<std::string, std::vector<KfdNode>>& by_bdf,
                                                       std::vector<std::string>& warnings) {
  std::map<uint64_t, std::vector<std::string>> claimants;
  for (const auto& [bdf, list] : by_bdf)
    for (const auto& node : list)
      if (node.has("drm_render_minor")) claimants[node.get("drm_render_minor")].push_back(node.dir);
  std::map<uint64_t, std::string> conflicts;
  for (const auto& [minor, dirs] : claimants) {
    if (dirs.size() < 2) continue;
    std::string names;
    for (const auto& d : dirs) names += (names.empty() ? "" : ", ") + d;
    std::string why = "KFD nodes " + names + " all name renderD" + std::to_string(minor);
    warnings.push_back("AMD: " + why + "; the devices built from them are marked unhealthy (not served)");
    conflicts[minor] = why;
  }
  return conflicts;
}

// GPU nodes of the KFD topology grouped by PCI address; several per address when partitioned.
std::map<std::string, std::vector<KfdNode>> read_kfd(const SysfsRoots& roots, std::vector<std::string>& warnings) {
  std::map<std::string, std::vector<KfdNode>> by_bdf;
  path nodes = sysfs::join(roots.sys, kKfdNodes);
  if (!sysfs::is_dir(nodes)) {
    warnings.push_back("AMD: KFD topology " + nodes.string() +
                       " is missing (amdgpu loaded without KFD?): AMD GPUs are reported unhealthy");
    return by_bdf;
  }
  for (const auto& name : sysfs::list_dir(nodes)) {
    path file = nodes / name / "properties";
    auto text = sysfs::read_trimmed(file);
    if (!text) {
      warnings.push_back("AMD: cannot read " + file.string() + "; KFD node ignored");
      continue;
    }
    auto props = amd::parse_kfd_properties(*text);
    if (!props) {
      warnings.push_back("AMD: malformed " + file.string() + " (" + props.error().message + "); KFD node ignored");
      continue;
    }
    KfdNode node{(nodes / name).string(), std::move(*props)};
    if (node.get("simd_count") == 0) continue;  // a CPU node
    by_bdf[amd::pci_address(node.get("domain"), node.get("location_id"))].push_back(std::move(node));
  }
  for (auto& [bdf, list] : by_bdf)
    std::sort(list.begin(), list.end(), [](const KfdNode& a, const KfdNode& b) {
      return a.get("drm_render_minor") < b.get("drm_render_minor");
    });
  return by_bdf;
}

// Render minor -> card name for MI300 partition devices (/sys/devices/platform/amdgpu_xcp_*/drm).
std::map<uint64_t, std::string> partition_cards(const SysfsRoots& roots) {
  std::map<uint64_t, std::string> out;
  for (const auto& xcp : sysfs::glob(roots.sys, "/devices/platform/amdgpu_xcp_*")) {
    std::optional<uint64_t> minor;
    std::string card;
    for (const auto& n : sysfs::list_dir(sysfs::join(roots.sys, xcp + "/drm"))) {
      if (n.rfind("renderD", 0) == 0) minor = sysfs::parse_u64(n.substr(7));
      else if (n.rfind("card", 0) == 0) card = n;
    }
    if (minor && !card.empty()) out[*minor] = card;
  }
  return out;
}

struct Reading {
  std::string bdf;
  path dir;
  std::vector<std::string>& warnings;
  bool failed = false;

  void fail(const std::string& why) {
    warnings.push_back("AMD GPU " + bdf + ": " + why + "; device skipped");
    failed = true;
  }
  // Required file: missing or malformed skips the device.
  std::optional<uint64_t> required_number(const char* file, int base) {
    path p = dir / file;
    auto text = sysfs::read_trimmed(p);
    if (!text) {
      fail("cannot read " + p.string());
      return std::nullopt;
    }
    auto v = sysfs::parse_u64(*text, base);
    if (!v) fail("malformed " + p.string() + ": \"" + *text + "\"");
    return v;
  }
  // Optional file: missing is fine, present-but-malformed skips the device.
  std::optional<uint64_t> optional_number(const char* file, int base) {
    path p = dir / file;
    auto text = sysfs::read_trimmed(p);
    if (!text) return std::nullopt;
    auto v = sysfs::parse_u64(*text, base);
    if (!v) fail("malformed " + p.string() + ": \"" + *text + "\"");
    return v;
  }
  std::string optional_text(const char* file) { return sysfs::read_trimmed(dir / file).value_or(""); }
};

std::string hex4(uint64_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Fills KFD-derived attributes of one Gpu (one whole GPU or one partition).
void apply_kfd(Gpu& g, const KfdNode& n, const std::map<uint64_t, std::string>& conflicts) {
  if (n.has("drm_render_minor"))
    if (auto it = conflicts.find(n.get("drm_render_minor")); it != conflicts.end()) g.health = {false, it->second};
  const uint64_t simd = n.get("simd_count"), per_cu = n.get("simd_per_cu");
  const uint64_t gfx = n.get("gfx_target_version");
  g.attributes["simd-count"] = std::to_string(simd);
  if (per_cu) g.attributes["cu-count"] = std::to_string(simd / per_cu);
  if (gfx) {
    g.attributes["gfx-target"] = amd::gfx_target_name(gfx);
    g.architecture = g.attributes["gfx-target"];
    std::string fam = amd::family_name(gfx, n.get("cpu_cores_count") > 0);
    if (!fam.empty()) g.attributes["family"] = fam;
  }
  if (n.get("unique_id")) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(n.get("unique_id")));
    g.attributes["kfd-unique-id"] = buf;
  }
}

// One amdgpu PCI function -> one Gpu, or one per compute partition.
std::vector<Gpu> read_device(const SysfsRoots& roots, const path& dir, const std::string& bdf,
                             const std::vector<KfdNode>* kfd, const std::map<uint64_t, std::string>& xcp_cards,
                             const std::map<uint64_t, std::string>& conflicts, std::vector<std::string>& warnings) {
  Reading r{bdf, dir, warnings};
  auto vendor = r.required_number("vendor", 0);
  if (r.failed) return {};
  if (*vendor != 0x1002) {
    r.fail("PCI vendor in " + (dir / "vendor").string() + " is not AMD (0x1002)");
    return {};
  }
  auto device = r.required_number("device", 0);
  // A PCI device id is 16 bits; a wider value is a broken file, not something to truncate.
  if (device && *device > 0xffff) r.fail("PCI device id in " + (dir / "device").string() + " is not a 16-bit value");
  auto vram = r.optional_number("mem_info_vram_total", 10);
  std::optional<int> numa;
  if (auto t = sysfs::read_trimmed(dir / "numa_node")) {
    if (!sysfs::parse_i64(*t)) r.fail("malformed " + (dir / "numa_node").string() + ": \"" + *t + "\"");
    numa = sysfs::parse_numa(*t);
  }
  if (r.failed) return {};

  std::string card, render;
  for (const auto& n : sysfs::list_dir(dir / "drm")) {
    if (n.rfind("renderD", 0) == 0 && render.empty()) render = n;
    else if (n.rfind("card", 0) == 0 && card.empty()) card = n;
  }
  if (render.empty()) {
    r.fail((dir / "drm").string() + " has no renderD node");
    return {};
  }

  Gpu base;
  base.vendor = Vendor::Amd;
  base.pci_bus_id = bdf;
  base.pci_device_id = static_cast<uint32_t>((*device << 16) | *vendor);
  base.numa_node = numa;
  std::string product = r.optional_text("product_name");
  if (product.empty()) product = amd::product_for_device_id(static_cast<uint32_t>(*device)).value_or("AMD GPU 0x" + hex4(*device));
  base.product = product;
  base.attributes["device-id"] = hex4(*device);
  base.attributes["product-name"] = product;
  const std::string cpart = r.optional_text("current_compute_partition");
  const std::string mpart = r.optional_text("current_memory_partition");
  if (!cpart.empty()) base.attributes["compute-partition"] = lower(cpart);
  if (!mpart.empty()) base.attributes["memory-partition"] = lower(mpart);
  if (auto a = r.optional_text("available_compute_partition"); !a.empty())
    base.attributes["available-compute-partitions"] = lower(a);
  if (auto a = r.optional_text("available_memory_partition"); !a.empty())
    base.attributes["available-memory-partitions"] = lower(a);

  auto nodes_ok = [&](Gpu& g, const std::string& what) {
    for (const auto& n : g.device_nodes)
      if (!sysfs::exists(sysfs::join(roots.dev, n.path))) {
        warnings.push_back("AMD GPU " + bdf + ": device node " + sysfs::join(roots.dev, n.path) + " of " + what +
                           " is missing; skipped");
        return false;
      }
    return true;
  };

  std::vector<Gpu> out;
  if (kfd == nullptr || kfd->size() <= 1) {
    Gpu g = base;
    g.uuid = bdf;
    if (vram) {
      g.memory_bytes = *vram;
      g.attributes["vram"] = amd::vram_label(*vram);
    }
    if (!card.empty()) g.device_nodes.push_back({"/dev/dri/" + card});
    g.device_nodes.push_back({"/dev/dri/" + render});
    if (kfd != nullptr) {
      apply_kfd(g, kfd->front(), conflicts);
    } else {
      // The GPU is bound to amdgpu but the compute stack does not see it: serve it as unhealthy so
      // it shows up (and recovers on a rescan) instead of vanishing silently.
      g.health = {false, "no KFD topology node for " + bdf};
    }
    if (nodes_ok(g, "the GPU")) out.push_back(std::move(g));
    return out;
  }

  // Partitioned (CPX/DPX/QPX): one KFD node per partition, all at the same PCI address. The first
  // partition uses the PCI function's own DRM nodes; the others live under amdgpu_xcp_* devices.
  const uint64_t parts = kfd->size();
  for (size_t k = 0; k < kfd->size(); ++k) {
    const KfdNode& n = (*kfd)[k];
    const uint64_t minor = n.get("drm_render_minor");
    Gpu g = base;
    g.uuid = bdf + "-xcp" + std::to_string(k);
    g.attributes["partition-index"] = std::to_string(k);
    g.attributes["partitions"] = std::to_string(parts);
    if (vram) {
      g.memory_bytes = *vram / parts;
      g.attributes["vram"] = amd::vram_label(*vram);  // the labeller labels the physical GPU's VRAM
    }
    std::string pcard = card;
    if ("renderD" + std::to_string(minor) != render) {
      auto it = xcp_cards.find(minor);
      pcard = it == xcp_cards.end() ? "" : it->second;
    }
    if (!pcard.empty()) g.device_nodes.push_back({"/dev/dri/" + pcard});
    g.device_nodes.push_back({"/dev/dri/renderD" + std::to_string(minor)});
    apply_kfd(g, n, conflicts);
    if (nodes_ok(g, "partition " + std::to_string(k))) out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

bool amd_present(const SysfsRoots& roots) {
  auto dir = driver_dir(roots);
  if (!dir) return false;
  for (const auto& n : sysfs::list_dir(*dir))
    if (sysfs::is_pci_address(n)) return true;
  return false;
}

Result<Inventory> discover_amd(const SysfsRoots& roots) {
  auto dir = driver_dir(roots);
  if (!dir)
    return Error::unavailable("amdgpu driver not loaded: neither " + sysfs::join(roots.sys, kDriverDirs[0]) +
                              " nor " + sysfs::join(roots.sys, kDriverDirs[1]) + " exists");
  Inventory inv;
  auto kfd = read_kfd(roots, inv.warnings);
  auto xcp_cards = partition_cards(roots);
  auto conflicts = render_minor_conflicts(kfd, inv.warnings);
  if (!sysfs::exists(sysfs::join(roots.dev, "/dev/kfd")))
    inv.warnings.push_back("AMD: " + sysfs::join(roots.dev, "/dev/kfd") +
                           " is missing: containers will not be able to run ROCm compute");
  for (const auto& name : sysfs::list_dir(*dir)) {
    if (!sysfs::is_pci_address(name)) continue;  // bind, unbind, new_id, module ...
    auto it = kfd.find(name);
    for (auto& g : read_device(roots, *dir / name, name, it == kfd.end() ? nullptr : &it->second, xcp_cards,
                               conflicts, inv.warnings)) {
      g.index = static_cast<int>(inv.gpus.size());
      inv.gpus.push_back(std::move(g));
    }
  }
  return inv;
}

}  // namespace kgpu
