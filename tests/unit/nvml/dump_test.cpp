#include <iostream>
#include "unit/nvml/fake_fleet.h"
namespace kgpu {
TEST(Dump, All) {
  for (auto f : {"dgx-a100.yaml", "a100-mig-mixed.yaml", "pcie-t4x2.yaml", "hgx-h100.yaml", "pcie-l4x4-pairs.yaml"}) {
    testing::FakeNode node(testing::fleet_path(f));
    ASSERT_TRUE(node.ready()) << node.problem();
    auto inv = discover_nvidia(node.nvml(), node.options());
    ASSERT_TRUE(inv) << inv.error().message;
    std::cout << "== " << f << " driver " << inv->driver_version << " cuda " << inv->cuda_driver_version << " nvswitch " << inv->topology.nvswitch << "\n";
    for (auto& w : inv->warnings) std::cout << "  W " << w << "\n";
    for (auto& g : inv->gpus) {
      std::cout << "  " << g.index << " " << g.uuid << " " << g.product << " mem=" << g.memory_bytes << " bus=" << g.pci_bus_id << std::hex << " dev=0x" << g.pci_device_id << std::dec
                << " minor=" << g.minor << " numa=" << (g.numa_node ? *g.numa_node : -9) << " cc=" << g.cc_major << "." << g.cc_minor << " " << g.architecture << " brand=" << g.brand
                << " serial=" << g.serial << " mig=" << g.mig_capable << g.mig_enabled << " fabric=" << g.fabric_cluster_uuid << "/" << (g.fabric_clique ? int(*g.fabric_clique) : -1)
                << " health=" << g.health.healthy << "\n";
      for (auto& m : g.mig_devices) {
        std::cout << "     " << m.index << " " << m.uuid << " gi=" << m.gpu_instance_id << " ci=" << m.compute_instance_id << " " << m.profile << " sm=" << m.multiprocessors << " mem=" << m.memory_bytes;
        for (auto& c : m.capability_nodes) std::cout << " " << c.path;
        std::cout << "\n";
      }
    }
    for (size_t a = 0; a < inv->topology.links.size(); ++a) {
      std::cout << "   ";
      for (size_t b = 0; b < inv->topology.links.size(); ++b) std::cout << " " << inv->topology.links[a][b].nvlinks << "/" << int(inv->topology.links[a][b].pcie);
      std::cout << "\n";
    }
  }
}
}
