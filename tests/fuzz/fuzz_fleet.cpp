// Fuzz target: the fake NVML's fleet parser (tests/fake-nvml/fleet_parser.cpp), which every test
// and developer feeds hand-written YAML. Any text gives a Fleet or an Error naming the field,
// never an exception or a crash; the PCI bus-ID and return-code parsers likewise.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fleet.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto fleet = kgpu::fake_nvml::parse_fleet(text, "fuzz.yaml");
  if (fleet) {
    for (const auto& gpu : fleet->gpus) (void)kgpu::fake_nvml::bus_id_string(gpu.pci);
  }
  if (size < 64) {
    if (auto pci = kgpu::fake_nvml::parse_bus_id(text)) {
      // A parsed bus ID prints back to a form that parses to the same address.
      auto again = kgpu::fake_nvml::parse_bus_id(kgpu::fake_nvml::bus_id_string(*pci));
      if (!again || again->domain != pci->domain || again->bus != pci->bus || again->device != pci->device || again->function != pci->function)
        __builtin_trap();
    }
    (void)kgpu::fake_nvml::parse_return_code(text);
  }
  return 0;
}
