#pragma once
// Node labels: GPU Feature Discovery's label names and value formats, computed from what the
// daemon already knows (Config, Inventory, ResourcePlan). Pure: the few facts that need I/O (the
// machine type file, PCI classes, the clock) come in a LabelContext (see context.h to read one).
//
// Layout (NVIDIA GPUs; catalogue in the reference §7):
//  - node:   nvidia.com/gfd.timestamp, cuda.driver.*, cuda.driver-version.*, cuda.runtime.*,
//            cuda.runtime-version.*, gpu.machine, gpu.mode, gpu.clique, mig.capable, mps.capable,
//            mig.strategy, vgpu.present;
//  - R.*:    count, replicas, sharing-strategy, product, memory, family, compute.major/minor for
//            R = nvidia.com/gpu, and per MIG profile nvidia.com/mig-<profile> (mixed) with
//            multiprocessors, slices.gi/ci, engines.copy/decoder/encoder/jpeg/ofa.
// Where GFD fails or panics, kgpu answers with well-defined labels instead:
//  - invalid `single` MIG layouts: nvidia.com/gpu.product=<model>-MIG-INVALID, count/replicas/
//    memory 0, sharing-strategy "" (as GFD);
//  - several GPU models on one node (GFD: the last one wins): nvidia.com/gpu.count is the node
//    total; product, memory, family and compute.* describe the model with the most GPUs (ties: the
//    model of the lowest GPU index); and each model m = 0, 1, ... (in order of first GPU index) gets
//    kgpu.io/gpu-model.<m>.{product,count,memory,family,compute.major,compute.minor};
//  - unparseable driver versions: only cuda.driver-version.full; unknown machine type: "unknown";
//    unknown PCI class: gpu.mode=unknown.
// Every key and value is valid for Kubernetes: values pass GFD's product sanitiser and are then cut
// to 63 characters with a hash suffix (sanitize.h).
// AMD / Intel GPUs get their own labellers' names from vendor_labels() (vendor_labels.h).
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"

namespace kgpu {

using Labels = std::map<std::string, std::string>;

struct LabelContext {
  std::string machine_type;                // contents of Config::gfd_machine_type_file; "" = unknown
  std::optional<int64_t> timestamp;        // unix seconds; absent: no nvidia.com/gfd.timestamp
  std::map<std::string, uint32_t> pci_class;  // Gpu::pci_bus_id -> 24-bit PCI class (0x030200)
};

Labels node_labels(const Config& config, const Inventory& inventory, const ResourcePlan& plan,
                   const LabelContext& context);

}  // namespace kgpu
