// Intel backend: DRM cards with PCI vendor 0x8086 driven by i915 or xe, the way Intel's GPU plugin
// finds them (card nodes under /sys/class/drm, SR-IOV PFs with VFs skipped).
#include <cctype>
#include <cstdio>
#include <algorithm>

#include "sysfs/backends.h"
#include "sysfs/fs_util.h"

namespace kgpu {
namespace {

using sysfs::fs::path;

bool is_card_name(const std::string& n) {
  if (n.size() <= 4 || n.rfind("card", 0) != 0) return false;
  for (size_t i = 4; i < n.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(n[i]))) return false;
  return true;
}

bool is_intel(const path& card) {
  auto v = sysfs::read_trimmed(card / "device" / "vendor");
  return v && sysfs::parse_u64(*v, 0) == 0x8086u;
}

std::string hex4(uint64_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04llx", static_cast<unsigned long long>(v));
  return buf;
}

// Device-local memory in bytes, where the driver exposes it: i915 (DG1/DG2 and later kernels)
// `lmem_total_bytes` on the card; xe per tile `device/tile*/physical_vram_size_bytes`.
std::optional<uint64_t> local_memory(const path& card, const std::string& driver) {
  if (driver == "i915") {
    if (auto t = sysfs::read_trimmed(card / "lmem_total_bytes")) return sysfs::parse_u64(*t);
    return std::nullopt;
  }
  uint64_t total = 0;
  bool any = false;
  for (const auto& n : sysfs::list_dir(card / "device"))
    if (n.rfind("tile", 0) == 0)
      if (auto t = sysfs::read_trimmed(card / "device" / n / "physical_vram_size_bytes"))
        if (auto v = sysfs::parse_u64(*t)) {
          total += *v;
          any = true;
        }
  return any ? std::optional<uint64_t>(total) : std::nullopt;
}

int tile_count(const path& card, const std::string& driver) {
  int tiles = 0;
  if (driver == "i915") {
    for (const auto& n : sysfs::list_dir(card / "gt"))
      if (n.rfind("gt", 0) == 0) ++tiles;
  } else {
    for (const auto& n : sysfs::list_dir(card / "device"))
      if (n.rfind("tile", 0) == 0) ++tiles;
  }
  return tiles == 0 ? 1 : tiles;
}

// Names for common discrete parts; data-centre ones also carry NFD's family/product label values.
struct IntelPart {
  uint32_t id;
  const char* product;
  const char* family;        // gpu.intel.com/family, "" when NFD gives none
  const char* product_label; // gpu.intel.com/product
};
constexpr IntelPart kParts[] = {
    {0x56c0, "Intel Data Center GPU Flex 170", "Flex_Series", "Flex_170"},
    {0x56c1, "Intel Data Center GPU Flex 140", "Flex_Series", "Flex_140"},
    {0x0bd5, "Intel Data Center GPU Max 1550", "Max_Series", "Max_1550"},
    {0x0bda, "Intel Data Center GPU Max 1100", "Max_Series", "Max_1100"},
    {0x56a0, "Intel Arc A770", "", ""},
    {0x56a1, "Intel Arc A750", "", ""},
    {0xe20b, "Intel Arc B580", "", ""},
    {0xe20c, "Intel Arc B570", "", ""},
};

const IntelPart* find_part(uint64_t id) {
  for (const auto& p : kParts)
    if (p.id == id) return &p;
  return nullptr;
}

}  // namespace

bool intel_present(const SysfsRoots& roots) {
  path drm = sysfs::join(roots.sys, "/class/drm");
  for (const auto& n : sysfs::list_dir(drm))
    if (is_card_name(n) && is_intel(drm / n)) return true;
  return false;
}

Result<Inventory> discover_intel(const SysfsRoots& roots) {
  path drm = sysfs::join(roots.sys, "/class/drm");
  if (!sysfs::is_dir(drm)) return Error::unavailable("no DRM subsystem: " + drm.string() + " does not exist");
  Inventory inv;
  std::vector<std::string> cards = sysfs::list_dir(drm);
  // Numeric card order (card2 before card10), so indices follow the kernel's numbering.
  std::stable_sort(cards.begin(), cards.end(),
                   [](const std::string& a, const std::string& b) { return a.size() < b.size(); });
  for (const auto& name : cards) {
    if (!is_card_name(name) || !is_intel(drm / name)) continue;
    const path card = drm / name;
    const path dev = card / "device";
    auto skip = [&](const std::string& why) { inv.warnings.push_back("Intel GPU " + name + ": " + why + "; device skipped"); };

    auto driver = sysfs::link_basename(dev / "driver");
    if (!driver) {
      skip("no driver bound (" + (dev / "driver").string() + " is not a link)");
      continue;
    }
    if (*driver != "i915" && *driver != "xe") continue;  // e.g. vfio-pci: not ours to serve
    // SR-IOV: a PF with VFs enabled is not handed out; its VFs are (Intel plugin behaviour).
    if (auto t = sysfs::read_trimmed(dev / "sriov_numvfs")) {
      auto vfs = sysfs::parse_u64(*t);
      if (!vfs) {
        skip("malformed " + (dev / "sriov_numvfs").string() + ": \"" + *t + "\"");
        continue;
      }
      if (*vfs > 0) continue;
    }
    auto bdf = sysfs::link_basename(dev);
    if (!bdf || !sysfs::is_pci_address(*bdf)) {
      skip("cannot resolve the PCI address of " + dev.string());
      continue;
    }
    auto device_text = sysfs::read_trimmed(dev / "device");
    auto device_id = device_text ? sysfs::parse_u64(*device_text, 0) : std::nullopt;
    if (!device_id) {
      skip(device_text ? "malformed " + (dev / "device").string() + ": \"" + *device_text + "\""
                       : "cannot read " + (dev / "device").string());
      continue;
    }
    std::optional<int> numa;
    if (auto t = sysfs::read_trimmed(dev / "numa_node")) {
      if (!sysfs::parse_i64(*t)) {
        skip("malformed " + (dev / "numa_node").string() + ": \"" + *t + "\"");
        continue;
      }
      numa = sysfs::parse_numa(*t);
    }

    Gpu g;
    g.vendor = Vendor::Intel;
    g.uuid = *bdf;
    g.pci_bus_id = *bdf;
    g.pci_device_id = static_cast<uint32_t>((*device_id << 16) | 0x8086u);
    g.numa_node = numa;
    const IntelPart* part = find_part(*device_id);
    g.product = part ? part->product : "Intel GPU " + hex4(*device_id);
    if (part && *part->family) {
      g.attributes["family"] = part->family;
      g.attributes["product-label"] = part->product_label;
    }
    g.attributes["driver"] = *driver;
    g.attributes["device-id"] = hex4(*device_id);
    g.attributes["card"] = name;
    std::string pci_class = "0300";
    if (auto c = sysfs::read_trimmed(dev / "class"))
      if (auto v = sysfs::parse_u64(*c, 0)) pci_class = hex4(*v >> 8);
    g.attributes["pci-class"] = pci_class;
    g.attributes["tiles"] = std::to_string(tile_count(card, *driver));
    if (auto mem = local_memory(card, *driver)) g.memory_bytes = *mem;

    // Every DRM node of the PCI device (card + renderD; controlD is legacy and never handed out).
    const path dev_drm = dev / "drm";
    if (!sysfs::is_dir(dev_drm)) {
      skip(dev_drm.string() + " is missing");
      continue;
    }
    bool missing = false;
    for (const auto& n : sysfs::list_dir(dev_drm)) {
      if (n.rfind("card", 0) != 0 && n.rfind("renderD", 0) != 0) continue;
      const std::string node = "/dev/dri/" + n;
      if (!sysfs::exists(sysfs::join(roots.dev, node))) {
        skip("device node " + sysfs::join(roots.dev, node) + " is missing");
        missing = true;
        break;
      }
      g.device_nodes.push_back({node});
    }
    if (missing) continue;
    if (g.device_nodes.empty()) {
      skip(dev_drm.string() + " has no card or renderD node");
      continue;
    }
    // by-path links that user-mode drivers open; mounted read-only by the edits.
    std::string links;
    for (const char* kind : {"card", "render"}) {
      const std::string link = "pci-" + *bdf + "-" + kind;
      if (sysfs::exists(sysfs::join(roots.dev, "/dev/dri/by-path/" + link)) ||
          sysfs::link_basename(sysfs::join(roots.dev, "/dev/dri/by-path/" + link)))
        links += (links.empty() ? "" : ",") + link;
    }
    if (!links.empty()) g.attributes["by-path-links"] = links;
    g.index = static_cast<int>(inv.gpus.size());
    inv.gpus.push_back(std::move(g));
  }
  return inv;
}

}  // namespace kgpu
