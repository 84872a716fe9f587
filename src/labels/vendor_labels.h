#pragma once
// Node labels for AMD and Intel GPUs, in the names their own labellers use, so existing node
// selectors keep working. Pure: computed from the Inventory only.
//  AMD (k8s-node-labeller): amd.com/gpu.{family,device-id,product-name,vram,cu-count,simd-count}
//    when every GPU agrees, beta.amd.com/gpu.<name>.<value> = count (legacy form, works on mixed
//    nodes), amd.com/{compute,memory}-partitioning-supported, amd.com/compute-memory-partition.
//    Partitions of one GPU count once; their CU/SIMD counts are the first partition's, as the
//    labeller (which matches the card's render node) reports them.
//  Intel (NFD rules + GPU plugin hook): gpu.intel.com/device-id.<class>-<id>.{present,count},
//    gpu.intel.com/{millicores,memory.max,tiles,gpu-numbers[N],numa-gpu-map}, and family/product
//    for known data-centre parts on homogeneous nodes.
#include <map>
#include <string>

#include "core/inventory.h"

namespace kgpu {

std::map<std::string, std::string> vendor_labels(const Inventory& inventory);

// A valid Kubernetes label value: at most 63 characters of [A-Za-z0-9-_.], starting and ending
// alphanumeric; other characters become '_'. "" stays "".
std::string label_value(const std::string& raw);

}  // namespace kgpu
