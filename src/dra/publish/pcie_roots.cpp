#include "dra/publish/pcie_roots.h"

#include <filesystem>
#include <regex>

#include "dra/model/publication.h"

namespace kgpu::dra {

std::map<std::string, std::string> read_pcie_roots(const std::string& sysfs_root, const Inventory& inventory) {
  namespace fs = std::filesystem;
  static const std::regex kRootComplex("pci[0-9a-f]{4}:[0-9a-f]{2}");
  std::map<std::string, std::string> roots;
  std::error_code root_ec;
  const fs::path root = fs::canonical(sysfs_root, root_ec);
  if (root_ec) return roots;
  for (const auto& g : inventory.gpus) {
    const std::string bus = normalize_pci_bus_id(g.pci_bus_id);
    if (bus.empty()) continue;
    std::error_code ec;
    const fs::path device = fs::canonical(fs::path(sysfs_root) / "bus" / "pci" / "devices" / bus, ec);
    if (ec) continue;
    // devices/pci0000:00/0000:00:01.0/0000:07:00.0 under the sysfs root: the root complex comes first.
    const fs::path relative = device.lexically_relative(root);
    if (relative.empty() || *relative.begin() != "devices") continue;
    for (const auto& element : relative) {
      if (std::regex_match(element.string(), kRootComplex)) {
        roots[bus] = element.string();
        break;
      }
    }
  }
  return roots;
}

}  // namespace kgpu::dra
