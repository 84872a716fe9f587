/* The NVML entry points of dynamic MIG (issue 42): creating and destroying GPU and compute
 * instances, and switching MIG mode. Their own header, beside nvml_abi.h, so that only the code
 * that creates instances (and the fake NVML) depends on them. Signatures as in nvml.h. */
#pragma once
#include "nvml/nvml_abi.h"

typedef nvmlReturn_t (*nvmlDeviceSetMigMode_fn)(nvmlDevice_t device, unsigned int mode, nvmlReturn_t* activationStatus);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceRemainingCapacity_fn)(nvmlDevice_t device, unsigned int profileId,
                                                                     unsigned int* count);
typedef nvmlReturn_t (*nvmlDeviceCreateGpuInstance_fn)(nvmlDevice_t device, unsigned int profileId,
                                                       nvmlGpuInstance_t* gpuInstance);
typedef nvmlReturn_t (*nvmlDeviceCreateGpuInstanceWithPlacement_fn)(nvmlDevice_t device, unsigned int profileId,
                                                                    const nvmlGpuInstancePlacement_t* placement,
                                                                    nvmlGpuInstance_t* gpuInstance);
typedef nvmlReturn_t (*nvmlGpuInstanceCreateComputeInstance_fn)(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                                nvmlComputeInstance_t* computeInstance);
typedef nvmlReturn_t (*nvmlGpuInstanceDestroy_fn)(nvmlGpuInstance_t gpuInstance);
typedef nvmlReturn_t (*nvmlComputeInstanceDestroy_fn)(nvmlComputeInstance_t computeInstance);
