#pragma once
// `kgpu devices -o dra`: the ResourceSlices kgpu would publish as a DRA driver for this node.
#include "config/config.h"
#include "core/inventory.h"

namespace kgpu::cli {

// Prints a v1 List of ResourceSlices (pool = NODE_NAME, else the host name) on stdout and what was
// left out ("note: ...") on stderr. Returns the exit code: 1 when the node name is unusable.
int print_dra_slices(const Config& config, const Inventory& inventory);

}  // namespace kgpu::cli
