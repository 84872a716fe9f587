#pragma once
// The one slice input that needs I/O: each GPU's PCIe root complex, read from sysfs the way the
// Kubernetes deviceattribute package does (the "pci<domain>:<bus>" element of the device's path
// under /sys/devices), for the standard resource.kubernetes.io/pcieRoot attribute.
#include <map>
#include <string>

#include "core/inventory.h"

namespace kgpu::dra {

// Keyed by normalize_pci_bus_id(). A GPU whose <sysfs_root>/bus/pci/devices/<bdf> link is missing or
// does not lead through a root complex (virtual buses) is left out: it publishes no pcieRoot.
std::map<std::string, std::string> read_pcie_roots(const std::string& sysfs_root, const Inventory& inventory);

}  // namespace kgpu::dra
