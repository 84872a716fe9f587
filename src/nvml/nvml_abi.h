/* The subset of NVML's C ABI that kgpu uses and that tests/fake-nvml implements: types, enum values,
 * struct layouts and function signatures, written for kgpu from NVML's public API documentation.
 * Both sides include this one header so the binding and the simulated library cannot drift apart.
 * It must stay plain C (the fake exports these with C linkage) and must match the real ABI exactly. */
#ifndef KGPU_NVML_ABI_H
#define KGPU_NVML_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st* nvmlComputeInstance_t;

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_ENABLED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef enum nvmlEnableState_enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 } nvmlEnableState_t;

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE 30
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_GPU_FABRIC_UUID_LEN 16

#define NVML_INIT_FLAG_NO_GPUS 1
#define NVML_INIT_FLAG_NO_ATTACH 2

/* nvmlPciInfo_t as of the _v3 entry points (busIdLegacy first, then the 32-byte busId). */
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;    /* (device id << 16) | vendor id */
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef enum nvmlGpuLevel_enum {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50
} nvmlGpuTopologyLevel_t;

typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_KEPLER 2
#define NVML_DEVICE_ARCH_MAXWELL 3
#define NVML_DEVICE_ARCH_PASCAL 4
#define NVML_DEVICE_ARCH_VOLTA 5
#define NVML_DEVICE_ARCH_TURING 6
#define NVML_DEVICE_ARCH_AMPERE 7
#define NVML_DEVICE_ARCH_ADA 8
#define NVML_DEVICE_ARCH_HOPPER 9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffff

typedef enum nvmlBrandType_enum {
  NVML_BRAND_UNKNOWN = 0,
  NVML_BRAND_QUADRO = 1,
  NVML_BRAND_TESLA = 2,
  NVML_BRAND_NVS = 3,
  NVML_BRAND_GRID = 4,
  NVML_BRAND_GEFORCE = 5,
  NVML_BRAND_TITAN = 6,
  NVML_BRAND_NVIDIA_VAPPS = 7,
  NVML_BRAND_NVIDIA_VPC = 8,
  NVML_BRAND_NVIDIA_VCS = 9,
  NVML_BRAND_NVIDIA_VWS = 10,
  NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
  NVML_BRAND_QUADRO_RTX = 12,
  NVML_BRAND_NVIDIA_RTX = 13,
  NVML_BRAND_NVIDIA = 14,
  NVML_BRAND_GEFORCE_RTX = 15,
  NVML_BRAND_TITAN_RTX = 16
} nvmlBrandType_t;

/* Event types (bit mask). */
#define nvmlEventTypeSingleBitEccError 0x0000000000000001LL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002LL
#define nvmlEventTypePState 0x0000000000000004LL
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL
#define nvmlEventTypeClock 0x0000000000000010LL
#define nvmlEventTypePowerSourceChange 0x0000000000000080LL
#define nvmlEventMigConfigChange 0x0000000000000100LL
#define nvmlEventTypeNone 0x0000000000000000LL

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;   /* the XID for XID events */
  unsigned int gpuInstanceId;     /* 0xFFFFFFFF when the event is not instance-specific */
  unsigned int computeInstanceId;
} nvmlEventData_t;

/* MIG */
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9
// Newer drivers' profiles (Blackwell and later); they only name suffixes here (mig_profile_name),
// so COUNT stays the older headers' (the simulated NVML knows the profiles below it).
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX 0xA
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX 0xB
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX 0xC
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME 0xD
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME 0xE
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0xF
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0xA

#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x8

#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT 0x1

typedef struct nvmlDeviceAttributes_st {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start;
  unsigned int size;
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct nvmlComputeInstancePlacement_st {
  unsigned int start;
  unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct nvmlComputeInstanceInfo_st {
  nvmlDevice_t device;
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

/* Fabric (NVLink multi-node / NVSwitch) */
typedef unsigned char nvmlGpuFabricState_t;
#define NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0
#define NVML_GPU_FABRIC_STATE_NOT_STARTED 1
#define NVML_GPU_FABRIC_STATE_IN_PROGRESS 2
#define NVML_GPU_FABRIC_STATE_COMPLETED 3

typedef struct nvmlGpuFabricInfo_st {
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
} nvmlGpuFabricInfo_t;

typedef struct nvmlGpuFabricInfo_v2_st {
  unsigned int version;
  unsigned char clusterUuid[NVML_GPU_FABRIC_UUID_LEN];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
  unsigned int healthMask;
} nvmlGpuFabricInfoV_t;
#define nvmlGpuFabricInfo_v2 (unsigned int)(sizeof(nvmlGpuFabricInfoV_t) | (2 << 24U))

/* Function signatures, as typedefs the binding uses for its dlsym table. */
typedef nvmlReturn_t (*nvmlInit_fn)(void);
typedef nvmlReturn_t (*nvmlInitWithFlags_fn)(unsigned int flags);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char* version, unsigned int length);
typedef nvmlReturn_t (*nvmlSystemGetCudaDriverVersion_fn)(int* cudaDriverVersion);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int* deviceCount);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int index, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByUUID_fn)(const char* uuid, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByPciBusId_fn)(const char* pciBusId, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t device, char* name, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t device, char* uuid, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetSerial_fn)(nvmlDevice_t device, char* serial, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetMinorNumber_fn)(nvmlDevice_t device, unsigned int* minorNumber);
typedef nvmlReturn_t (*nvmlDeviceGetIndex_fn)(nvmlDevice_t device, unsigned int* index);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t device, nvmlPciInfo_t* pci);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t device, nvmlMemory_t* memory);
typedef nvmlReturn_t (*nvmlDeviceGetCudaComputeCapability_fn)(nvmlDevice_t device, int* major, int* minor);
typedef nvmlReturn_t (*nvmlDeviceGetArchitecture_fn)(nvmlDevice_t device, nvmlDeviceArchitecture_t* arch);
typedef nvmlReturn_t (*nvmlDeviceGetBrand_fn)(nvmlDevice_t device, nvmlBrandType_t* type);
/* Memory addressing mode on coherent-memory systems (NVML 12.9 / driver 575+). */
typedef struct nvmlDeviceAddressingMode_st {
  unsigned int version; /* sizeof | 1 << 24 */
  unsigned int value;   /* NVML_DEVICE_ADDRESSING_MODE_* */
} nvmlDeviceAddressingMode_t;
#define NVML_DEVICE_ADDRESSING_MODE_NONE 0
#define NVML_DEVICE_ADDRESSING_MODE_HMM 1
#define NVML_DEVICE_ADDRESSING_MODE_ATS 2
typedef nvmlReturn_t (*nvmlDeviceGetAddressingMode_fn)(nvmlDevice_t device, nvmlDeviceAddressingMode_t* mode);
typedef nvmlReturn_t (*nvmlDeviceGetNumGpuCores_fn)(nvmlDevice_t device, unsigned int* numCores);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode);
typedef nvmlReturn_t (*nvmlDeviceGetMaxMigDeviceCount_fn)(nvmlDevice_t device, unsigned int* count);
typedef nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex_fn)(nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice);
typedef nvmlReturn_t (*nvmlDeviceIsMigDeviceHandle_fn)(nvmlDevice_t device, unsigned int* isMigDevice);
typedef nvmlReturn_t (*nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn)(nvmlDevice_t migDevice, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceId_fn)(nvmlDevice_t device, unsigned int* id);
typedef nvmlReturn_t (*nvmlDeviceGetComputeInstanceId_fn)(nvmlDevice_t device, unsigned int* id);
typedef nvmlReturn_t (*nvmlDeviceGetAttributes_fn)(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceProfileInfo_fn)(nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t* info);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstanceById_fn)(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gpuInstance);
typedef nvmlReturn_t (*nvmlGpuInstanceGetInfo_fn)(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info);
typedef nvmlReturn_t (*nvmlGpuInstanceGetComputeInstanceById_fn)(nvmlGpuInstance_t gpuInstance, unsigned int id, nvmlComputeInstance_t* computeInstance);
typedef nvmlReturn_t (*nvmlGpuInstanceGetComputeInstanceProfileInfo_fn)(nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile, nvmlComputeInstanceProfileInfo_t* info);
typedef nvmlReturn_t (*nvmlComputeInstanceGetInfo_fn)(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t* info);
typedef nvmlReturn_t (*nvmlDeviceGetTopologyCommonAncestor_fn)(nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuTopologyLevel_t* pathInfo);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_fn)(nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_fn)(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfo_fn)(nvmlDevice_t device, nvmlGpuFabricInfo_t* gpuFabricInfo);
typedef nvmlReturn_t (*nvmlDeviceGetGpuFabricInfoV_fn)(nvmlDevice_t device, nvmlGpuFabricInfoV_t* gpuFabricInfo);
typedef nvmlReturn_t (*nvmlDeviceGetSupportedEventTypes_fn)(nvmlDevice_t device, unsigned long long* eventTypes);
typedef nvmlReturn_t (*nvmlEventSetCreate_fn)(nvmlEventSet_t* set);
typedef nvmlReturn_t (*nvmlDeviceRegisterEvents_fn)(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set);
typedef nvmlReturn_t (*nvmlEventSetWait_fn)(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
typedef nvmlReturn_t (*nvmlEventSetFree_fn)(nvmlEventSet_t set);

/* Further entry points the simulated NVML also exports (added for tests/fake-nvml). */
typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0, NVML_TEMPERATURE_COUNT } nvmlTemperatureSensors_t;

typedef enum nvmlIntNvLinkDeviceType_enum {
  NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
  NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
  NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
  NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF
} nvmlIntNvLinkDeviceType_t;

typedef nvmlReturn_t (*nvmlDeviceGetNumaNodeId_fn)(nvmlDevice_t device, unsigned int* node);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t device, unsigned int* power);
typedef nvmlReturn_t (*nvmlDeviceGetPowerManagementLimit_fn)(nvmlDevice_t device, unsigned int* limit);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int* temp);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemoteDeviceType_fn)(nvmlDevice_t device, unsigned int link, nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstances_fn)(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t* gpuInstances, unsigned int* count);
typedef nvmlReturn_t (*nvmlDeviceGetGpuInstancePossiblePlacements_fn)(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t* placements, unsigned int* count);
typedef nvmlReturn_t (*nvmlGpuInstanceGetComputeInstances_fn)(nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t* computeInstances, unsigned int* count);

/* Telemetry (src/telemetry): the readings DCGM exporter's default counters come from. */
typedef struct nvmlUtilization_st {
  unsigned int gpu;    /* percent of time a kernel ran */
  unsigned int memory; /* percent of time device memory was read or written */
} nvmlUtilization_t;

/* nvmlDeviceGetMemoryInfo_v2's record (driver >= 510): adds the driver-reserved memory. */
typedef struct nvmlMemory_v2_st {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
/* nvmlMemory_v2: the struct size | 2 << 24, as C++ spells it without a C cast in nvml_library.cpp. */

typedef enum nvmlClockType_enum {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3
} nvmlClockType_t;

typedef enum nvmlMemoryErrorType_enum {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,   /* single-bit */
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1  /* double-bit */
} nvmlMemoryErrorType_t;

typedef enum nvmlEccCounterType_enum {
  NVML_VOLATILE_ECC = 0,  /* since the last driver load */
  NVML_AGGREGATE_ECC = 1  /* lifetime (inforom) */
} nvmlEccCounterType_t;

typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
} nvmlValueType_t;

typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn; /* per field: check before reading value */
  nvmlValue_t value;
} nvmlFieldValue_t;

#define NVML_FI_DEV_ECC_SBE_VOL_TOTAL 3
#define NVML_FI_DEV_ECC_DBE_VOL_TOTAL 4
#define NVML_FI_DEV_ECC_SBE_AGG_TOTAL 5
#define NVML_FI_DEV_ECC_DBE_AGG_TOTAL 6
#define NVML_FI_DEV_MEMORY_TEMP 82
#define NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION 83 /* mJ since the driver loaded */
#define NVML_FI_DEV_PCIE_REPLAY_COUNTER 94
#define NVML_FI_DEV_REMAPPED_COR 142
#define NVML_FI_DEV_REMAPPED_UNC 143
#define NVML_FI_DEV_REMAPPED_PENDING 144
#define NVML_FI_DEV_REMAPPED_FAILURE 145
/* NVLink data throughput counters in KiB; scopeId = link, or all links with 0xFFFFFFFF. */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139

typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t device, nvmlUtilization_t* utilization);
typedef nvmlReturn_t (*nvmlDeviceGetEncoderUtilization_fn)(nvmlDevice_t device, unsigned int* utilization, unsigned int* samplingPeriodUs);
typedef nvmlReturn_t (*nvmlDeviceGetDecoderUtilization_fn)(nvmlDevice_t device, unsigned int* utilization, unsigned int* samplingPeriodUs);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_v2_fn)(nvmlDevice_t device, nvmlMemory_v2_t* memory);
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t device, unsigned long long* energy);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock);
typedef nvmlReturn_t (*nvmlDeviceGetPcieReplayCounter_fn)(nvmlDevice_t device, unsigned int* value);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t device, nvmlMemoryErrorType_t errorType, nvmlEccCounterType_t counterType, unsigned long long* eccCounts);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows, unsigned int* isPending, unsigned int* failureOccurred);

#ifdef __cplusplus
}
#endif

#endif /* KGPU_NVML_ABI_H */
