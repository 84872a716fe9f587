// Per-device identity and readings: name, UUID, PCI, memory, capability, power, temperature.
#include <cstdio>
#include <type_traits>

#include "api_helpers.h"

namespace kgpu::fake_nvml {

nvmlPciInfo_t pci_record(const Gpu& gpu) {
  nvmlPciInfo_t pci{};
  std::snprintf(pci.busIdLegacy, sizeof pci.busIdLegacy, "%s", legacy_bus_id_string(gpu.pci).c_str());
  std::snprintf(pci.busId, sizeof pci.busId, "%s", bus_id_string(gpu.pci).c_str());
  pci.domain = gpu.pci.domain;
  pci.bus = gpu.pci.bus;
  pci.device = gpu.pci.device;
  pci.pciDeviceId = (gpu.pci_device_id << 16) | kPciVendorNvidia;
  pci.pciSubSystemId = gpu.pci_subsystem_id;
  return pci;
}

nvmlPciInfo_t pci_record(const Fleet& fleet, const NvLinkPeer& peer) {
  if (!peer.to_switch) return pci_record(fleet.gpus[peer.gpu]);
  nvmlPciInfo_t pci{};
  PciAddress address = parse_bus_id(peer.remote_bus_id).value_or(PciAddress{});
  std::snprintf(pci.busIdLegacy, sizeof pci.busIdLegacy, "%s", legacy_bus_id_string(address).c_str());
  std::snprintf(pci.busId, sizeof pci.busId, "%s", bus_id_string(address).c_str());
  pci.domain = address.domain;
  pci.bus = address.bus;
  pci.device = address.device;
  pci.pciDeviceId = (peer.remote_device_id << 16) | kPciVendorNvidia;
  return pci;
}

PciInfoV1 to_v1(const nvmlPciInfo_t& pci) {
  PciInfoV1 v1{};
  std::memcpy(v1.busId, pci.busIdLegacy, sizeof v1.busId);
  v1.domain = pci.domain;
  v1.bus = pci.bus;
  v1.device = pci.device;
  v1.pciDeviceId = pci.pciDeviceId;
  v1.pciSubSystemId = pci.pciSubSystemId;
  return v1;
}

namespace {

std::string mig_device_name(const Simulator& sim, const nvmlDevice_st& d) {
  const GpuInstance& gi = sim.gpu_instance(d);
  const ComputeInstance& ci = sim.compute_instance(d);
  std::string profile = gi.profile.name;
  if (ci.slices != gi.profile.compute_slices) profile = std::to_string(ci.slices) + "c." + profile;
  return sim.gpu(d).name + " MIG " + profile;
}

// Reads a plain number from the GPU itself (MIG handles read their parent's).
template <typename T>
nvmlReturn_t read_value(nvmlDevice_t device, const char* call, T* out, T (*pick)(const Simulator&, const nvmlDevice_st&)) {
  return device_call(device, call, [&](Simulator& sim, nvmlDevice_st& d) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *out = pick(sim, d);
    return NVML_SUCCESS;
  });
}

}  // namespace
}  // namespace kgpu::fake_nvml

using namespace kgpu::fake_nvml;

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return device_call(device, "nvmlDeviceGetName", [&](Simulator& sim, nvmlDevice_st& d) {
    return copy_string(d.is_mig() ? mig_device_name(sim, d) : sim.gpu(d).name, name, length);
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return device_call(device, "nvmlDeviceGetUUID", [&](Simulator& sim, nvmlDevice_st& d) {
    return copy_string(d.is_mig() ? sim.compute_instance(d).uuid : sim.gpu(d).uuid, uuid, length);
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  return device_call(device, "nvmlDeviceGetSerial", [&](Simulator& sim, nvmlDevice_st& d) {
    if (sim.gpu(d).serial.empty()) return NVML_ERROR_NOT_SUPPORTED;
    return copy_string(sim.gpu(d).serial, serial, length);
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  return device_call(device, "nvmlDeviceGetMinorNumber", [&](Simulator& sim, nvmlDevice_st& d) {
    // MIG devices have no /dev/nvidia<N> of their own (they use nvidia-caps).
    if (d.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    if (minorNumber == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minorNumber = sim.gpu(d).minor;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return device_call(device, "nvmlDeviceGetIndex", [&](Simulator& sim, nvmlDevice_st& d) {
    if (d.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *index = sim.gpu(d).index;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return device_call(device, "nvmlDeviceGetPciInfo_v3", [&](Simulator& sim, nvmlDevice_st& d) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pci = pci_record(sim.gpu(d));
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return device_call(device, "nvmlDeviceGetPciInfo_v2", [&](Simulator& sim, nvmlDevice_st& d) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pci = pci_record(sim.gpu(d));
    return NVML_SUCCESS;
  });
}

// The unversioned entry point writes the original, smaller record.
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, PciInfoV1* pci) {
  return device_call(device, "nvmlDeviceGetPciInfo", [&](Simulator& sim, nvmlDevice_st& d) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pci = to_v1(pci_record(sim.gpu(d)));
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return device_call(device, "nvmlDeviceGetMemoryInfo", [&](Simulator& sim, nvmlDevice_st& d) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    constexpr unsigned long long kMiB = 1024ULL * 1024ULL;
    const Gpu& gpu = sim.gpu(d);
    unsigned long long total = d.is_mig() ? sim.gpu_instance(d).profile.memory_mib * kMiB : gpu.memory_total_mib * kMiB;
    unsigned long long used = d.is_mig() ? 0 : gpu.memory_used_mib * kMiB;
    *memory = nvmlMemory_t{total, total - used, used};
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  return device_call(device, "nvmlDeviceGetCudaComputeCapability", [&](Simulator& sim, nvmlDevice_st& d) {
    if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *major = sim.gpu(d).cc_major;
    *minor = sim.gpu(d).cc_minor;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t* arch) {
  return read_value<nvmlDeviceArchitecture_t>(device, "nvmlDeviceGetArchitecture", arch,
                                              [](const Simulator& sim, const nvmlDevice_st& d) { return sim.gpu(d).architecture; });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t* type) {
  return read_value<nvmlBrandType_t>(device, "nvmlDeviceGetBrand", type,
                                     [](const Simulator& sim, const nvmlDevice_st& d) { return sim.gpu(d).brand; });
}

// CUDA cores: the fleet's SM count times the cores per SM of its compute capability (CUDA's table;
// the fake's own copy, so kgpu's derivation is checked against it). NOT_SUPPORTED without an SM
// count, as NVMLs before 12 answer.
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int* cores) {
  return device_call(device, "nvmlDeviceGetNumGpuCores", [&](Simulator& sim, nvmlDevice_st& d) {
    if (cores == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    const Gpu& gpu = sim.gpu(d);
    const int cc = gpu.cc_major * 10 + gpu.cc_minor;
    const unsigned per_sm = cc == 60 || (cc >= 70 && cc <= 80) ? 64 : cc >= 50 ? 128 : 192;
    if (gpu.sm_count == 0) return NVML_ERROR_NOT_SUPPORTED;
    *cores = gpu.sm_count * per_sm;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAddressingMode(nvmlDevice_t device, nvmlDeviceAddressingMode_t* mode) {
  return device_call(device, "nvmlDeviceGetAddressingMode", [&](Simulator& sim, nvmlDevice_st& d) {
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // The versioned struct of NVML 12.9: a caller built for another layout is refused, as NVML does.
    if (mode->version != (static_cast<unsigned>(sizeof(nvmlDeviceAddressingMode_t)) | (1U << 24U)))
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!sim.gpu(d).addressing_mode) return NVML_ERROR_NOT_SUPPORTED;
    mode->value = *sim.gpu(d).addressing_mode;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return device_call(device, "nvmlDeviceGetNumaNodeId", [&](Simulator& sim, nvmlDevice_st& d) {
    if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (sim.gpu(d).numa_node < 0) return NVML_ERROR_NOT_SUPPORTED;
    *node = static_cast<unsigned>(sim.gpu(d).numa_node);
    return NVML_SUCCESS;
  });
}

namespace {
nvmlReturn_t optional_reading(nvmlDevice_t device, const char* call, unsigned int* out,
                              std::optional<unsigned> kgpu::fake_nvml::Gpu::*field) {
  return device_call(device, call, [&](Simulator& sim, nvmlDevice_st& d) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& value = sim.gpu(d).*field;
    if (!value || d.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *out = *value;
    return NVML_SUCCESS;
  });
}
}  // namespace

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return optional_reading(device, "nvmlDeviceGetPowerUsage", power, &Gpu::power_mw);
}
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit) {
  return optional_reading(device, "nvmlDeviceGetPowerManagementLimit", limit, &Gpu::power_limit_mw);
}
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  return optional_reading(device, "nvmlDeviceGetEnforcedPowerLimit", limit, &Gpu::power_limit_mw);
}
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                       unsigned int* temp) {
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return optional_reading(device, "nvmlDeviceGetTemperature", temp, &Gpu::temperature_c);
}

static_assert(std::is_same_v<decltype(&nvmlDeviceGetName), nvmlDeviceGetName_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetUUID), nvmlDeviceGetUUID_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetSerial), nvmlDeviceGetSerial_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMinorNumber), nvmlDeviceGetMinorNumber_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetIndex), nvmlDeviceGetIndex_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPciInfo_v3), nvmlDeviceGetPciInfo_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMemoryInfo), nvmlDeviceGetMemoryInfo_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetCudaComputeCapability), nvmlDeviceGetCudaComputeCapability_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetArchitecture), nvmlDeviceGetArchitecture_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetBrand), nvmlDeviceGetBrand_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetAddressingMode), nvmlDeviceGetAddressingMode_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetNumGpuCores), nvmlDeviceGetNumGpuCores_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetNumaNodeId), nvmlDeviceGetNumaNodeId_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPowerUsage), nvmlDeviceGetPowerUsage_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTemperature), nvmlDeviceGetTemperature_fn>);
static_assert(sizeof(PciInfoV1) == 52, "the v1 nvmlPciInfo_t is 52 bytes");
