// Shared plumbing of the exported entry points: locking, handle validation, the failure gate, and
// copying strings and PCI records into caller buffers the way NVML does.
#pragma once
#include <cstring>
#include <string>

#include "api_state.h"

#define KGPU_NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace kgpu::fake_nvml {

// NVML's string convention: INSUFFICIENT_SIZE unless the text and its terminator fit.
inline nvmlReturn_t copy_string(const std::string& text, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < text.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

// Runs `body(sim, device)` for a valid, initialised, not lost/failing device handle.
template <typename Body>
nvmlReturn_t device_call(nvmlDevice_t device, const char* call, Body&& body) {
  std::lock_guard lock(api_mutex());
  Simulator* sim = live_simulator();
  if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (!sim->valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = sim->gate(*device, call); rc != NVML_SUCCESS) return rc;
  return body(*sim, *device);
}

// Runs `body(sim)` while initialised.
template <typename Body>
nvmlReturn_t system_call(Body&& body) {
  std::lock_guard lock(api_mutex());
  Simulator* sim = live_simulator();
  if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
  return body(*sim);
}

// The NVML PCI record of a GPU (nvmlPciInfo_t as the _v2/_v3 entry points fill it).
nvmlPciInfo_t pci_record(const Gpu& gpu);
// The PCI record of an NVLink's far end.
nvmlPciInfo_t pci_record(const Fleet& fleet, const NvLinkPeer& peer);

// The original (v1) nvmlPciInfo_t: 16-byte busId first, four reserved words at the end.
struct PciInfoV1 {
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  unsigned int reserved0, reserved1, reserved2, reserved3;
};
PciInfoV1 to_v1(const nvmlPciInfo_t& pci);

}  // namespace kgpu::fake_nvml
