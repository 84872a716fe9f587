#pragma once
// Gathering a LabelContext: the only label inputs that need I/O, kept out of node_labels().
#include <cstdint>
#include <optional>

#include "config/config.h"
#include "core/inventory.h"
#include "labels/labels.h"

namespace kgpu {

// Reads Config::gfd_machine_type_file (missing or unreadable: "" which labels as "unknown") and
// each NVIDIA GPU's PCI class from <sysfs_root>/bus/pci/devices/<bdf>/class (missing: left out,
// which labels gpu.mode=unknown). `now`: the timestamp to label (GFD takes it once per start).
LabelContext read_label_context(const Config& config, const Inventory& inventory, std::optional<int64_t> now);

}  // namespace kgpu
