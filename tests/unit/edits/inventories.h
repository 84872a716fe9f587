#pragma once
// Two small nodes built in code for the edits and CDI tests: two whole GPUs, and a MIG node.
#include "core/inventory.h"

namespace kgpu::testing {

inline Gpu make_gpu(int index, const std::string& uuid, int minor) {
  Gpu g;
  g.index = index;
  g.uuid = uuid;
  g.product = "NVIDIA A100-SXM4-40GB";
  g.minor = minor;
  g.device_nodes = {{"/dev/nvidia" + std::to_string(minor)}};
  return g;
}

inline Inventory two_gpu_node() {
  Inventory inv;
  inv.driver_version = "550.54.15";
  inv.gpus = {make_gpu(0, "GPU-11111111-1111-1111-1111-111111111111", 0),
              make_gpu(1, "GPU-22222222-2222-2222-2222-222222222222", 1)};
  return inv;
}

inline MigDevice make_mig(int index, const std::string& uuid, int gi, int gi_cap, int ci_cap) {
  MigDevice m;
  m.index = index;
  m.uuid = uuid;
  m.gpu_instance_id = gi;
  m.profile = "3g.20gb";
  m.capability_nodes = {{"/dev/nvidia-caps/nvidia-cap" + std::to_string(gi_cap)},
                        {"/dev/nvidia-caps/nvidia-cap" + std::to_string(ci_cap)}};
  return m;
}

// GPU 0 is MIG-enabled with two 3g.20gb instances; GPU 1 (minor 3) is a whole GPU. All four control
// nodes are present.
inline Inventory mig_node() {
  Inventory inv;
  inv.driver_version = "550.54.15";
  Gpu mig_parent = make_gpu(0, "GPU-aaaaaaaa-0000-0000-0000-000000000000", 2);
  mig_parent.mig_capable = mig_parent.mig_enabled = true;
  mig_parent.mig_devices = {make_mig(0, "MIG-bbbbbbbb-0000-0000-0000-000000000000", 1, 12, 13),
                            make_mig(1, "MIG-cccccccc-0000-0000-0000-000000000000", 2, 21, 22)};
  inv.gpus = {mig_parent, make_gpu(1, "GPU-dddddddd-0000-0000-0000-000000000000", 3)};
  inv.control_nodes = {{"/dev/nvidiactl"}, {"/dev/nvidia-uvm"}, {"/dev/nvidia-uvm-tools"}, {"/dev/nvidia-modeset"}};
  return inv;
}

}  // namespace kgpu::testing
