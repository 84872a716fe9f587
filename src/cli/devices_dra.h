#pragma once
// `kgpu devices -o dra`: the ResourceSlices kgpu would publish as a DRA driver for this node.
#include <memory>
#include <optional>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "dra/claims/claim_checkpoint.h"

namespace kgpu {
class NvmlLibrary;
}

namespace kgpu::cli {

// Prints a v1 List of ResourceSlices (pool = NODE_NAME, else the host name) on stdout and what was
// left out ("note: ...") on stderr. Returns the exit code: 1 when the node name is unusable.
// kgpu.dra.mig.dynamic: `nvml` is asked for the named GPUs' MIG profiles; each dynamic GPU is
// noted with its devices and counter set, and each named GPU that is not dynamic is a warning
// saying why. Counter sets go out in the combined layout (each in its GPU's slice, as Kubernetes
// before 1.35 reads them; the daemon splits them for 1.35 and later).
// `live_instances` (`--live`: the running plugin's checkpoint records): the instances kgpu made are
// its own, as the daemon counts them, and a note per instance and per dynamic GPU says what each
// claim made and how many placements are free. Without it every instance counts as foreign.
int print_dra_slices(const Config& config, const Inventory& inventory, const std::shared_ptr<NvmlLibrary>& nvml,
                     const std::optional<std::vector<dra::MigInstanceRecord>>& live_instances = std::nullopt);

}  // namespace kgpu::cli
