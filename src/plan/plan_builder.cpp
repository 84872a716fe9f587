#include "plan/plan_builder.h"

#include "plan/device_ids.h"

namespace kgpu::planner {

namespace {
std::vector<int64_t> numa_of(const Gpu& gpu) {
  if (!gpu.numa_node || *gpu.numa_node < 0) return {};
  return {*gpu.numa_node};
}
}  // namespace

AdvertisedDevice gpu_device(const Inventory& inventory, size_t gpu) {
  const Gpu& g = inventory.gpus[gpu];
  AdvertisedDevice d;
  d.id = advertised_gpu_id(g);  // stable whatever deviceIDStrategy says (device_ids.h)
  d.healthy = g.health.healthy;
  d.numa_nodes = numa_of(g);
  d.gpu = gpu;
  return d;
}

AdvertisedDevice mig_device(const Inventory& inventory, size_t gpu, size_t mig) {
  const Gpu& g = inventory.gpus[gpu];
  const MigDevice& m = g.mig_devices[mig];
  AdvertisedDevice d;
  d.id = advertised_mig_id(g, m);
  // A MIG device cannot be healthier than the GPU it lives on (an XID on the parent hits all of it).
  d.healthy = m.health.healthy && g.health.healthy;
  d.numa_nodes = numa_of(g);
  d.gpu = gpu;
  d.mig = mig;
  return d;
}

void add_device(ResourceMap& resources, const std::string& name, Vendor vendor, AdvertisedDevice device) {
  auto [it, inserted] = resources.try_emplace(name);
  if (inserted) {
    it->second.name = name;
    it->second.vendor = vendor;
  }
  it->second.devices.push_back(std::move(device));
}

std::string describe_gpu(const Gpu& gpu) {
  std::string s = "GPU " + std::to_string(gpu.index);
  if (!gpu.uuid.empty()) s += " (" + gpu.uuid + ")";
  return s;
}

}  // namespace kgpu::planner
