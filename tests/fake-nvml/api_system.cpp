// Initialisation, error strings, system queries and device lookup.
#include <type_traits>

#include "api_helpers.h"

using namespace kgpu::fake_nvml;

KGPU_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) { return init_library(0); }
KGPU_NVML_EXPORT nvmlReturn_t nvmlInit(void) { return init_library(0); }
KGPU_NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { return init_library(flags); }
KGPU_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) { return shutdown_library(); }

KGPU_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_ENABLED: return "ECC is not enabled for the vGPU operation";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Ran out of critical resources, other than memory";
    case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    case NVML_ERROR_NOT_READY: return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
    case NVML_ERROR_INVALID_STATE: return "Invalid state";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
  }
  return "Unknown Error";
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return system_call([&](Simulator& sim) { return copy_string(sim.fleet().driver_version, version, length); });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  return system_call([&](Simulator& sim) {
    if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = sim.fleet().cuda_driver_version;
    return NVML_SUCCESS;
  });
}
KGPU_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return system_call([&](Simulator& sim) {
    if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = static_cast<unsigned>(sim.gpu_count());
    return NVML_SUCCESS;
  });
}
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) { return nvmlDeviceGetCount_v2(deviceCount); }

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return system_call([&](Simulator& sim) {
    if (device == nullptr || index >= sim.gpu_count()) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = sim.handle_gate(index); rc != NVML_SUCCESS) return rc;
    *device = sim.gpu_handle(index);
    return NVML_SUCCESS;
  });
}
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  return system_call([&](Simulator& sim) {
    if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlDevice_st* found = sim.find_uuid(uuid);
    if (found == nullptr) return NVML_ERROR_NOT_FOUND;
    if (nvmlReturn_t rc = sim.handle_gate(found->gpu); rc != NVML_SUCCESS) return rc;
    *device = found;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  return system_call([&](Simulator& sim) {
    if (pciBusId == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    auto address = parse_bus_id(pciBusId);
    if (!address) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlDevice_st* found = sim.find_bus(*address);
    if (found == nullptr) return NVML_ERROR_NOT_FOUND;
    if (nvmlReturn_t rc = sim.handle_gate(found->gpu); rc != NVML_SUCCESS) return rc;
    *device = found;
    return NVML_SUCCESS;
  });
}
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* pciBusId, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

// The exported signatures must be exactly those the binding's dlsym table expects.
static_assert(std::is_same_v<decltype(&nvmlInit_v2), nvmlInit_fn>);
static_assert(std::is_same_v<decltype(&nvmlInitWithFlags), nvmlInitWithFlags_fn>);
static_assert(std::is_same_v<decltype(&nvmlShutdown), nvmlShutdown_fn>);
static_assert(std::is_same_v<decltype(&nvmlErrorString), nvmlErrorString_fn>);
static_assert(std::is_same_v<decltype(&nvmlSystemGetDriverVersion), nvmlSystemGetDriverVersion_fn>);
static_assert(std::is_same_v<decltype(&nvmlSystemGetCudaDriverVersion), nvmlSystemGetCudaDriverVersion_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetCount_v2), nvmlDeviceGetCount_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetHandleByIndex_v2), nvmlDeviceGetHandleByIndex_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetHandleByUUID), nvmlDeviceGetHandleByUUID_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetHandleByPciBusId_v2), nvmlDeviceGetHandleByPciBusId_fn>);
