// PCIe topology, NVLink and fabric queries.
#include <type_traits>

#include "api_helpers.h"

using namespace kgpu::fake_nvml;

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                                  nvmlGpuTopologyLevel_t* pathInfo) {
  return device_call(device1, "nvmlDeviceGetTopologyCommonAncestor", [&](Simulator& sim, nvmlDevice_st& a) {
    if (pathInfo == nullptr || !sim.valid(device2)) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = sim.gate(*device2, "nvmlDeviceGetTopologyCommonAncestor"); rc != NVML_SUCCESS) return rc;
    if (a.is_mig() || device2->is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *pathInfo = sim.fleet().ancestry[a.gpu][device2->gpu];
    return NVML_SUCCESS;
  });
}

namespace {
// The peer behind an NVLink port, or the NVML error for a port that has none.
nvmlReturn_t link_peer(Simulator& sim, const nvmlDevice_st& d, unsigned link, const NvLinkPeer** peer) {
  if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if (d.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
  const Gpu& gpu = sim.gpu(d);
  if (link >= gpu.nvlink_ports) return NVML_ERROR_NOT_SUPPORTED;
  *peer = gpu.nvlinks[link] ? &*gpu.nvlinks[link] : nullptr;
  return NVML_SUCCESS;
}
}  // namespace

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive) {
  return device_call(device, "nvmlDeviceGetNvLinkState", [&](Simulator& sim, nvmlDevice_st& d) {
    if (isActive == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const NvLinkPeer* peer = nullptr;
    if (nvmlReturn_t rc = link_peer(sim, d, link, &peer); rc != NVML_SUCCESS) return rc;
    *isActive = peer ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci) {
  return device_call(device, "nvmlDeviceGetNvLinkRemotePciInfo_v2", [&](Simulator& sim, nvmlDevice_st& d) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const NvLinkPeer* peer = nullptr;
    if (nvmlReturn_t rc = link_peer(sim, d, link, &peer); rc != NVML_SUCCESS) return rc;
    if (peer == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *pci = pci_record(sim.fleet(), *peer);
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link, PciInfoV1* pci) {
  return device_call(device, "nvmlDeviceGetNvLinkRemotePciInfo", [&](Simulator& sim, nvmlDevice_st& d) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const NvLinkPeer* peer = nullptr;
    if (nvmlReturn_t rc = link_peer(sim, d, link, &peer); rc != NVML_SUCCESS) return rc;
    if (peer == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *pci = to_v1(pci_record(sim.fleet(), *peer));
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                                  nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType) {
  return device_call(device, "nvmlDeviceGetNvLinkRemoteDeviceType", [&](Simulator& sim, nvmlDevice_st& d) {
    if (pNvLinkDeviceType == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const NvLinkPeer* peer = nullptr;
    if (nvmlReturn_t rc = link_peer(sim, d, link, &peer); rc != NVML_SUCCESS) return rc;
    *pNvLinkDeviceType = peer == nullptr    ? NVML_NVLINK_DEVICE_TYPE_UNKNOWN
                         : peer->to_switch ? NVML_NVLINK_DEVICE_TYPE_SWITCH
                                           : NVML_NVLINK_DEVICE_TYPE_GPU;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t* gpuFabricInfo) {
  return device_call(device, "nvmlDeviceGetGpuFabricInfo", [&](Simulator& sim, nvmlDevice_st& d) {
    if (gpuFabricInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& fabric = sim.gpu(d).fabric;
    if (!fabric) return NVML_ERROR_NOT_SUPPORTED;
    nvmlGpuFabricInfo_t out{};
    std::memcpy(out.clusterUuid, fabric->cluster_uuid, sizeof out.clusterUuid);
    out.status = fabric->status;
    out.cliqueId = fabric->clique_id;
    out.state = fabric->state;
    *gpuFabricInfo = out;
    return NVML_SUCCESS;
  });
}

namespace {
// nvmlGpuFabricInfo_v1_t is the v2 record without healthMask.
constexpr unsigned kFabricInfoV1Size = offsetof(nvmlGpuFabricInfoV_t, healthMask);
constexpr unsigned kFabricInfoV1 = kFabricInfoV1Size | (1u << 24);
}  // namespace

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t* gpuFabricInfo) {
  return device_call(device, "nvmlDeviceGetGpuFabricInfoV", [&](Simulator& sim, nvmlDevice_st& d) {
    if (gpuFabricInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned version = gpuFabricInfo->version;
    if (version != nvmlGpuFabricInfo_v2 && version != kFabricInfoV1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const auto& fabric = sim.gpu(d).fabric;
    if (!fabric) return NVML_ERROR_NOT_SUPPORTED;
    std::memcpy(gpuFabricInfo->clusterUuid, fabric->cluster_uuid, sizeof gpuFabricInfo->clusterUuid);
    gpuFabricInfo->status = fabric->status;
    gpuFabricInfo->cliqueId = fabric->clique_id;
    gpuFabricInfo->state = fabric->state;
    if (version == nvmlGpuFabricInfo_v2) gpuFabricInfo->healthMask = fabric->health_mask;
    return NVML_SUCCESS;
  });
}

static_assert(std::is_same_v<decltype(&nvmlDeviceGetTopologyCommonAncestor), nvmlDeviceGetTopologyCommonAncestor_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetNvLinkState), nvmlDeviceGetNvLinkState_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetNvLinkRemotePciInfo_v2), nvmlDeviceGetNvLinkRemotePciInfo_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetNvLinkRemoteDeviceType), nvmlDeviceGetNvLinkRemoteDeviceType_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuFabricInfo), nvmlDeviceGetGpuFabricInfo_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuFabricInfoV), nvmlDeviceGetGpuFabricInfoV_fn>);
