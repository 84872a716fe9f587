#include "nvml/nvml_library.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace kgpu {

namespace {

constexpr const char* kSoname = "libnvidia-ml.so.1";

// Library folders under a driver root, most specific first (the same places the NVIDIA driver
// installers and container toolkits use).
constexpr const char* kRootLibDirs[] = {
    "usr/lib64", "usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "lib64",
    "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu", "usr/lib", "lib",
};

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string last_dlerror() {
  const char* e = ::dlerror();
  return e ? e : "unknown dlopen error";
}

template <typename Fn>
Fn lookup(void* handle, const char* name) {
  // dlsym returns void*; converting it to a function pointer is what POSIX requires to work.
  return reinterpret_cast<Fn>(::dlsym(handle, name));
}

// First of several names the library exports, so newer versioned entry points win.
template <typename Fn>
Fn lookup_first(void* handle, std::initializer_list<const char*> names, std::string* chosen) {
  for (const char* n : names) {
    if (auto fn = lookup<Fn>(handle, n)) {
      if (chosen) *chosen = n;
      return fn;
    }
  }
  return nullptr;
}

std::string fixed_string(const char* buf, size_t cap) { return std::string(buf, strnlen(buf, cap)); }

std::string format_uuid(const unsigned char (&b)[NVML_GPU_FABRIC_UUID_LEN]) {
  bool all_zero = true;
  for (unsigned char c : b) all_zero = all_zero && c == 0;
  if (all_zero) return {};
  std::string out;
  for (int i = 0; i < NVML_GPU_FABRIC_UUID_LEN; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += fmt::format("{:02x}", b[i]);
  }
  return out;
}

// nvmlPciInfo_t as the pre-_v3 entry points fill it: no busIdLegacy, and a 16-byte busId. Only
// used to call the older GetPciInfo variants, whose output is converted to the _v3 layout.
struct PciInfoV2 {
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  unsigned int reserved[4];
};

}  // namespace

struct NvmlLibrary::Symbols {
  nvmlInit_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;
  nvmlSystemGetCudaDriverVersion_fn cuda_driver_version = nullptr;
  nvmlDeviceGetCount_fn device_count = nullptr;
  nvmlDeviceGetHandleByIndex_fn handle_by_index = nullptr;
  nvmlDeviceGetHandleByUUID_fn handle_by_uuid = nullptr;
  nvmlDeviceGetName_fn name = nullptr;
  nvmlDeviceGetUUID_fn uuid = nullptr;
  nvmlDeviceGetSerial_fn serial = nullptr;
  nvmlDeviceGetMinorNumber_fn minor = nullptr;
  nvmlDeviceGetPciInfo_fn pci_v3 = nullptr;      // _v3 layout (nvmlPciInfo_t)
  nvmlDeviceGetPciInfo_fn pci_old = nullptr;     // _v2 / plain: PciInfoV2 layout
  nvmlDeviceGetMemoryInfo_fn memory = nullptr;
  nvmlDeviceGetCudaComputeCapability_fn cc = nullptr;
  nvmlDeviceGetArchitecture_fn arch = nullptr;
  nvmlDeviceGetBrand_fn brand = nullptr;
  nvmlDeviceGetGpuFabricInfo_fn fabric = nullptr;
  nvmlDeviceGetGpuFabricInfoV_fn fabric_v = nullptr;
  nvmlDeviceGetAddressingMode_fn addressing_mode = nullptr;  // optional: NVML 12.9+
  nvmlDeviceGetNumGpuCores_fn num_gpu_cores = nullptr;       // optional: NVML 12.0+
  nvmlDeviceGetMigMode_fn mig_mode = nullptr;
  nvmlDeviceGetMaxMigDeviceCount_fn max_mig = nullptr;
  nvmlDeviceGetMigDeviceHandleByIndex_fn mig_by_index = nullptr;
  nvmlDeviceGetGpuInstanceId_fn gi_id = nullptr;
  nvmlDeviceGetComputeInstanceId_fn ci_id = nullptr;
  nvmlDeviceGetAttributes_fn attributes = nullptr;
  nvmlDeviceGetGpuInstanceById_fn gi_by_id = nullptr;
  nvmlGpuInstanceGetInfo_fn gi_info = nullptr;
  nvmlDeviceGetGpuInstanceProfileInfo_fn gi_profile = nullptr;
  nvmlDeviceGetTopologyCommonAncestor_fn common_ancestor = nullptr;
  nvmlDeviceGetNvLinkState_fn nvlink_state = nullptr;
  nvmlDeviceGetNvLinkRemotePciInfo_fn nvlink_remote_pci = nullptr;
  nvmlDeviceGetSupportedEventTypes_fn supported_events = nullptr;
  nvmlEventSetCreate_fn event_set_create = nullptr;
  nvmlDeviceRegisterEvents_fn register_events = nullptr;
  nvmlEventSetWait_fn event_set_wait = nullptr;
  nvmlEventSetFree_fn event_set_free = nullptr;
};

struct NvmlLibrary::TelemetrySymbols {
  nvmlDeviceGetUtilizationRates_fn utilization = nullptr;
  nvmlDeviceGetEncoderUtilization_fn encoder = nullptr;
  nvmlDeviceGetDecoderUtilization_fn decoder = nullptr;
  nvmlDeviceGetMemoryInfo_v2_fn memory_v2 = nullptr;
  nvmlDeviceGetMemoryInfo_fn memory = nullptr;
  nvmlDeviceGetTemperature_fn temperature = nullptr;
  nvmlDeviceGetFieldValues_fn field_values = nullptr;
  nvmlDeviceGetPowerUsage_fn power = nullptr;
  nvmlDeviceGetTotalEnergyConsumption_fn energy = nullptr;
  nvmlDeviceGetClockInfo_fn clock = nullptr;
  nvmlDeviceGetPcieReplayCounter_fn pcie_replay = nullptr;
  nvmlDeviceGetTotalEccErrors_fn ecc = nullptr;
  nvmlDeviceGetRemappedRows_fn remapped = nullptr;
};

const NvmlLibrary::TelemetrySymbols& NvmlLibrary::telemetry_symbols() const {
  std::call_once(telemetry_once_, [this] {
    auto t = std::make_unique<TelemetrySymbols>();
    t->utilization = lookup<nvmlDeviceGetUtilizationRates_fn>(handle_, "nvmlDeviceGetUtilizationRates");
    t->encoder = lookup<nvmlDeviceGetEncoderUtilization_fn>(handle_, "nvmlDeviceGetEncoderUtilization");
    t->decoder = lookup<nvmlDeviceGetDecoderUtilization_fn>(handle_, "nvmlDeviceGetDecoderUtilization");
    t->memory_v2 = lookup<nvmlDeviceGetMemoryInfo_v2_fn>(handle_, "nvmlDeviceGetMemoryInfo_v2");
    t->memory = lookup<nvmlDeviceGetMemoryInfo_fn>(handle_, "nvmlDeviceGetMemoryInfo");
    t->temperature = lookup<nvmlDeviceGetTemperature_fn>(handle_, "nvmlDeviceGetTemperature");
    t->field_values = lookup<nvmlDeviceGetFieldValues_fn>(handle_, "nvmlDeviceGetFieldValues");
    t->power = lookup<nvmlDeviceGetPowerUsage_fn>(handle_, "nvmlDeviceGetPowerUsage");
    t->energy = lookup<nvmlDeviceGetTotalEnergyConsumption_fn>(handle_, "nvmlDeviceGetTotalEnergyConsumption");
    t->clock = lookup<nvmlDeviceGetClockInfo_fn>(handle_, "nvmlDeviceGetClockInfo");
    t->pcie_replay = lookup<nvmlDeviceGetPcieReplayCounter_fn>(handle_, "nvmlDeviceGetPcieReplayCounter");
    t->ecc = lookup<nvmlDeviceGetTotalEccErrors_fn>(handle_, "nvmlDeviceGetTotalEccErrors");
    t->remapped = lookup<nvmlDeviceGetRemappedRows_fn>(handle_, "nvmlDeviceGetRemappedRows");
    tel_ = std::move(t);
  });
  return *tel_;
}

std::vector<std::string> NvmlLibrary::candidate_paths(const std::string& driver_root) {
  std::vector<std::string> out;
  if (driver_root.empty() || driver_root == "/") return out;
  std::string root = driver_root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  for (const char* dir : kRootLibDirs) out.push_back(root + "/" + dir + "/" + kSoname);
  return out;
}

Result<std::shared_ptr<NvmlLibrary>> NvmlLibrary::load(const std::string& driver_root) {
  return load(std::vector<std::string>{driver_root});
}

Result<std::shared_ptr<NvmlLibrary>> NvmlLibrary::load(const std::vector<std::string>& driver_roots) {
  std::vector<std::string> tried;
  for (const auto& driver_root : driver_roots)
    for (const auto& candidate : candidate_paths(driver_root)) {
      if (!file_exists(candidate)) {
        tried.push_back(candidate + " (not present)");
        continue;
      }
      auto lib = load_file(candidate);
      if (lib) return lib;
      tried.push_back(candidate + " (" + lib.error().message + ")");
    }
  auto bare = load_file(kSoname);
  if (bare) return bare;
  tried.push_back(std::string(kSoname) + " via the default loader path (" + bare.error().message + ")");
  std::string msg = "cannot load the NVIDIA management library (is the NVIDIA driver installed and "
                    "the driver root right?); tried: ";
  for (size_t i = 0; i < tried.size(); ++i) msg += (i ? "; " : "") + tried[i];
  return Error::unavailable(std::move(msg));
}

Result<std::shared_ptr<NvmlLibrary>> NvmlLibrary::load_file(const std::string& path) {
  ::dlerror();
  // RTLD_LOCAL: NVML's symbols stay out of the global namespace, so nothing else binds to them.
  void* handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!handle) return Error::unavailable(last_dlerror());
  // A bare soname was found through the loader's path: keep the file it resolved to, so that logs
  // and `kgpu devices` say which library answered.
  std::string resolved = path;
  if (path.find('/') == std::string::npos) {
    struct link_map* map = nullptr;
    if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0]) resolved = map->l_name;
  }
  std::shared_ptr<NvmlLibrary> lib(new NvmlLibrary(handle, resolved));
  if (auto st = lib->resolve(); !st) return st.error();
  return lib;
}

NvmlLibrary::NvmlLibrary(void* handle, std::string path)
    : handle_(handle), path_(std::move(path)), sym_(std::make_unique<Symbols>()) {}

NvmlLibrary::~NvmlLibrary() {
  {
    std::lock_guard lock(init_mutex_);
    // A user that forgot its shutdown() must not leave the driver attached after we unload.
    for (; init_count_ > 0 && sym_->shutdown; --init_count_) sym_->shutdown();
  }
  if (handle_) ::dlclose(handle_);
}

Status NvmlLibrary::resolve() {
  Symbols& s = *sym_;
  s.init = lookup_first<nvmlInit_fn>(handle_, {"nvmlInit_v2", "nvmlInit"}, &symbols_.init);
  s.shutdown = lookup<nvmlShutdown_fn>(handle_, "nvmlShutdown");
  s.error_string = lookup<nvmlErrorString_fn>(handle_, "nvmlErrorString");
  s.device_count = lookup_first<nvmlDeviceGetCount_fn>(
      handle_, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, &symbols_.device_count);
  s.handle_by_index = lookup_first<nvmlDeviceGetHandleByIndex_fn>(
      handle_, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, &symbols_.handle_by_index);
  s.uuid = lookup<nvmlDeviceGetUUID_fn>(handle_, "nvmlDeviceGetUUID");

  std::vector<std::string> missing;
  if (!s.init) missing.push_back("nvmlInit_v2/nvmlInit");
  if (!s.shutdown) missing.push_back("nvmlShutdown");
  if (!s.device_count) missing.push_back("nvmlDeviceGetCount_v2/nvmlDeviceGetCount");
  if (!s.handle_by_index) missing.push_back("nvmlDeviceGetHandleByIndex_v2/nvmlDeviceGetHandleByIndex");
  if (!s.uuid) missing.push_back("nvmlDeviceGetUUID");
  if (!missing.empty()) {
    std::string msg = path_ + " is not a usable NVML library: missing ";
    for (size_t i = 0; i < missing.size(); ++i) msg += (i ? ", " : "") + missing[i];
    return Error::precondition(std::move(msg));
  }

  // Everything below is optional: a missing symbol turns its feature off (the wrapper answers
  // NVML_ERROR_FUNCTION_NOT_FOUND), it never fails the load.
  s.driver_version = lookup<nvmlSystemGetDriverVersion_fn>(handle_, "nvmlSystemGetDriverVersion");
  s.cuda_driver_version = lookup_first<nvmlSystemGetCudaDriverVersion_fn>(
      handle_, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"}, nullptr);
  s.handle_by_uuid = lookup<nvmlDeviceGetHandleByUUID_fn>(handle_, "nvmlDeviceGetHandleByUUID");
  s.name = lookup<nvmlDeviceGetName_fn>(handle_, "nvmlDeviceGetName");
  s.serial = lookup<nvmlDeviceGetSerial_fn>(handle_, "nvmlDeviceGetSerial");
  s.minor = lookup<nvmlDeviceGetMinorNumber_fn>(handle_, "nvmlDeviceGetMinorNumber");
  s.pci_v3 = lookup<nvmlDeviceGetPciInfo_fn>(handle_, "nvmlDeviceGetPciInfo_v3");
  if (s.pci_v3) {
    symbols_.pci_info = "nvmlDeviceGetPciInfo_v3";
  } else {
    s.pci_old = lookup_first<nvmlDeviceGetPciInfo_fn>(
        handle_, {"nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"}, &symbols_.pci_info);
  }
  s.memory = lookup<nvmlDeviceGetMemoryInfo_fn>(handle_, "nvmlDeviceGetMemoryInfo");
  s.cc = lookup<nvmlDeviceGetCudaComputeCapability_fn>(handle_, "nvmlDeviceGetCudaComputeCapability");
  s.arch = lookup<nvmlDeviceGetArchitecture_fn>(handle_, "nvmlDeviceGetArchitecture");
  s.brand = lookup<nvmlDeviceGetBrand_fn>(handle_, "nvmlDeviceGetBrand");
  s.fabric = lookup<nvmlDeviceGetGpuFabricInfo_fn>(handle_, "nvmlDeviceGetGpuFabricInfo");
  s.fabric_v = lookup<nvmlDeviceGetGpuFabricInfoV_fn>(handle_, "nvmlDeviceGetGpuFabricInfoV");
  s.addressing_mode = lookup<nvmlDeviceGetAddressingMode_fn>(handle_, "nvmlDeviceGetAddressingMode");
  s.num_gpu_cores = lookup<nvmlDeviceGetNumGpuCores_fn>(handle_, "nvmlDeviceGetNumGpuCores");
  symbols_.fabric_info = s.fabric_v ? "nvmlDeviceGetGpuFabricInfoV" : s.fabric ? "nvmlDeviceGetGpuFabricInfo" : "";
  s.mig_mode = lookup<nvmlDeviceGetMigMode_fn>(handle_, "nvmlDeviceGetMigMode");
  s.max_mig = lookup<nvmlDeviceGetMaxMigDeviceCount_fn>(handle_, "nvmlDeviceGetMaxMigDeviceCount");
  s.mig_by_index = lookup<nvmlDeviceGetMigDeviceHandleByIndex_fn>(handle_, "nvmlDeviceGetMigDeviceHandleByIndex");
  s.gi_id = lookup<nvmlDeviceGetGpuInstanceId_fn>(handle_, "nvmlDeviceGetGpuInstanceId");
  s.ci_id = lookup<nvmlDeviceGetComputeInstanceId_fn>(handle_, "nvmlDeviceGetComputeInstanceId");
  s.attributes = lookup_first<nvmlDeviceGetAttributes_fn>(
      handle_, {"nvmlDeviceGetAttributes_v2", "nvmlDeviceGetAttributes"}, &symbols_.attributes);
  s.gi_by_id = lookup<nvmlDeviceGetGpuInstanceById_fn>(handle_, "nvmlDeviceGetGpuInstanceById");
  s.gi_info = lookup<nvmlGpuInstanceGetInfo_fn>(handle_, "nvmlGpuInstanceGetInfo");
  s.gi_profile = lookup<nvmlDeviceGetGpuInstanceProfileInfo_fn>(handle_, "nvmlDeviceGetGpuInstanceProfileInfo");
  // Resolved for the report only: discovery reads CI facts from the MIG device's attributes.
  static_cast<void>(lookup_first<nvmlComputeInstanceGetInfo_fn>(
      handle_, {"nvmlComputeInstanceGetInfo_v2", "nvmlComputeInstanceGetInfo"}, &symbols_.compute_instance_info));
  s.common_ancestor = lookup<nvmlDeviceGetTopologyCommonAncestor_fn>(handle_, "nvmlDeviceGetTopologyCommonAncestor");
  s.nvlink_state = lookup<nvmlDeviceGetNvLinkState_fn>(handle_, "nvmlDeviceGetNvLinkState");
  // The _v2 name exists only because of the nvmlPciInfo_t layout change; both fill the _v3 layout
  // in drivers that export the _v2 name, and the plain one is the same call in older drivers.
  s.nvlink_remote_pci = lookup_first<nvmlDeviceGetNvLinkRemotePciInfo_fn>(
      handle_, {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"}, nullptr);
  s.supported_events = lookup<nvmlDeviceGetSupportedEventTypes_fn>(handle_, "nvmlDeviceGetSupportedEventTypes");
  s.event_set_create = lookup<nvmlEventSetCreate_fn>(handle_, "nvmlEventSetCreate");
  s.register_events = lookup<nvmlDeviceRegisterEvents_fn>(handle_, "nvmlDeviceRegisterEvents");
  s.event_set_wait = lookup_first<nvmlEventSetWait_fn>(
      handle_, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}, &symbols_.event_set_wait);
  s.event_set_free = lookup<nvmlEventSetFree_fn>(handle_, "nvmlEventSetFree");
  return ok_status();
}

Status NvmlLibrary::init() {
  std::lock_guard lock(init_mutex_);
  if (init_count_ == 0) {
    nvmlReturn_t rc = sym_->init();
    if (rc != NVML_SUCCESS)
      return Error{nvml_error_code(rc), fmt::format("{} failed ({}): {}", symbols_.init, path_, error_string(rc))};
  }
  ++init_count_;
  return ok_status();
}

void NvmlLibrary::shutdown() {
  std::lock_guard lock(init_mutex_);
  if (init_count_ == 0) return;
  if (--init_count_ == 0) sym_->shutdown();
}

int NvmlLibrary::init_count() const {
  std::lock_guard lock(init_mutex_);
  return init_count_;
}

std::string NvmlLibrary::error_string(nvmlReturn_t code) const {
  if (sym_->error_string) {
    if (const char* s = sym_->error_string(code)) return s;
  }
  return fmt::format("NVML error {}", static_cast<int>(code));
}

template <typename T>
NvmlResult<T> NvmlLibrary::fail(const char* call, nvmlReturn_t code) const {
  return NvmlResult<T>(code, Error{nvml_error_code(code), fmt::format("{}: {}", call, error_string(code))});
}

namespace {
// The answer NVML itself would give for a function the loaded library does not export.
constexpr nvmlReturn_t kAbsent = NVML_ERROR_FUNCTION_NOT_FOUND;
}  // namespace

// Each wrapper: absent symbol -> FUNCTION_NOT_FOUND, NVML failure -> error naming the call.
#define KGPU_NVML_CALL(T, fn, name, ...)                            \
  do {                                                              \
    if (!(fn)) return fail<T>(name, kAbsent);                       \
    if (nvmlReturn_t rc_ = (fn)(__VA_ARGS__); rc_ != NVML_SUCCESS)  \
      return fail<T>(name, rc_);                                    \
  } while (0)

NvmlResult<std::string> NvmlLibrary::driver_version() const {
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  KGPU_NVML_CALL(std::string, sym_->driver_version, "nvmlSystemGetDriverVersion", buf, sizeof buf);
  return fixed_string(buf, sizeof buf);
}

NvmlResult<int> NvmlLibrary::cuda_driver_version() const {
  int v = 0;
  KGPU_NVML_CALL(int, sym_->cuda_driver_version, "nvmlSystemGetCudaDriverVersion", &v);
  return v;
}

NvmlResult<unsigned> NvmlLibrary::device_count() const {
  unsigned n = 0;
  KGPU_NVML_CALL(unsigned, sym_->device_count, "nvmlDeviceGetCount", &n);
  return n;
}

NvmlResult<nvmlDevice_t> NvmlLibrary::device_by_index(unsigned index) const {
  nvmlDevice_t d = nullptr;
  KGPU_NVML_CALL(nvmlDevice_t, sym_->handle_by_index, "nvmlDeviceGetHandleByIndex", index, &d);
  return d;
}

NvmlResult<nvmlDevice_t> NvmlLibrary::device_by_uuid(const std::string& id) const {
  nvmlDevice_t d = nullptr;
  KGPU_NVML_CALL(nvmlDevice_t, sym_->handle_by_uuid, "nvmlDeviceGetHandleByUUID", id.c_str(), &d);
  return d;
}

NvmlResult<std::string> NvmlLibrary::name(nvmlDevice_t d) const {
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  KGPU_NVML_CALL(std::string, sym_->name, "nvmlDeviceGetName", d, buf, sizeof buf);
  return fixed_string(buf, sizeof buf);
}

NvmlResult<std::string> NvmlLibrary::uuid(nvmlDevice_t d) const {
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  KGPU_NVML_CALL(std::string, sym_->uuid, "nvmlDeviceGetUUID", d, buf, sizeof buf);
  return fixed_string(buf, sizeof buf);
}

NvmlResult<std::string> NvmlLibrary::serial(nvmlDevice_t d) const {
  char buf[NVML_DEVICE_SERIAL_BUFFER_SIZE] = {};
  KGPU_NVML_CALL(std::string, sym_->serial, "nvmlDeviceGetSerial", d, buf, sizeof buf);
  return fixed_string(buf, sizeof buf);
}

NvmlResult<unsigned> NvmlLibrary::minor_number(nvmlDevice_t d) const {
  unsigned m = 0;
  KGPU_NVML_CALL(unsigned, sym_->minor, "nvmlDeviceGetMinorNumber", d, &m);
  return m;
}

NvmlResult<nvmlPciInfo_t> NvmlLibrary::pci_info(nvmlDevice_t d) const {
  nvmlPciInfo_t pci{};
  if (sym_->pci_v3) {
    KGPU_NVML_CALL(nvmlPciInfo_t, sym_->pci_v3, "nvmlDeviceGetPciInfo_v3", d, &pci);
    return pci;
  }
  // Older layout: convert so callers see one struct whatever the driver's age.
  PciInfoV2 old{};
  KGPU_NVML_CALL(nvmlPciInfo_t, sym_->pci_old, "nvmlDeviceGetPciInfo", d,
                 reinterpret_cast<nvmlPciInfo_t*>(&old));
  std::snprintf(pci.busId, sizeof pci.busId, "%s", fixed_string(old.busId, sizeof old.busId).c_str());
  std::snprintf(pci.busIdLegacy, sizeof pci.busIdLegacy, "%s", fixed_string(old.busId, sizeof old.busId).c_str());
  pci.domain = old.domain;
  pci.bus = old.bus;
  pci.device = old.device;
  pci.pciDeviceId = old.pciDeviceId;
  pci.pciSubSystemId = old.pciSubSystemId;
  return pci;
}

NvmlResult<nvmlMemory_t> NvmlLibrary::memory_info(nvmlDevice_t d) const {
  nvmlMemory_t m{};
  KGPU_NVML_CALL(nvmlMemory_t, sym_->memory, "nvmlDeviceGetMemoryInfo", d, &m);
  return m;
}

NvmlResult<std::pair<int, int>> NvmlLibrary::compute_capability(nvmlDevice_t d) const {
  using Capability = std::pair<int, int>;
  int major = 0, minor = 0;
  KGPU_NVML_CALL(Capability, sym_->cc, "nvmlDeviceGetCudaComputeCapability", d, &major, &minor);
  return std::pair{major, minor};
}

NvmlResult<nvmlDeviceArchitecture_t> NvmlLibrary::architecture(nvmlDevice_t d) const {
  nvmlDeviceArchitecture_t a = NVML_DEVICE_ARCH_UNKNOWN;
  KGPU_NVML_CALL(nvmlDeviceArchitecture_t, sym_->arch, "nvmlDeviceGetArchitecture", d, &a);
  return a;
}

NvmlResult<nvmlBrandType_t> NvmlLibrary::brand(nvmlDevice_t d) const {
  nvmlBrandType_t b = NVML_BRAND_UNKNOWN;
  KGPU_NVML_CALL(nvmlBrandType_t, sym_->brand, "nvmlDeviceGetBrand", d, &b);
  return b;
}

NvmlResult<unsigned> NvmlLibrary::num_gpu_cores(nvmlDevice_t d) const {
  unsigned cores = 0;
  KGPU_NVML_CALL(unsigned, sym_->num_gpu_cores, "nvmlDeviceGetNumGpuCores", d, &cores);
  return cores;
}

NvmlResult<unsigned> NvmlLibrary::addressing_mode(nvmlDevice_t d) const {
  nvmlDeviceAddressingMode_t mode{};
  mode.version = static_cast<unsigned>(sizeof(nvmlDeviceAddressingMode_t)) | (1U << 24U);
  KGPU_NVML_CALL(unsigned, sym_->addressing_mode, "nvmlDeviceGetAddressingMode", d, &mode);
  return mode.value;
}

NvmlResult<FabricInfo> NvmlLibrary::fabric_info(nvmlDevice_t d) const {
  FabricInfo out;
  if (sym_->fabric_v) {
    nvmlGpuFabricInfoV_t info{};
    // nvmlGpuFabricInfo_v2 spelled without the header macro's C cast: struct size | version << 24.
    info.version = static_cast<unsigned>(sizeof(nvmlGpuFabricInfoV_t)) | (2U << 24U);
    KGPU_NVML_CALL(FabricInfo, sym_->fabric_v, "nvmlDeviceGetGpuFabricInfoV", d, &info);
    out.completed = info.state == NVML_GPU_FABRIC_STATE_COMPLETED && info.status == NVML_SUCCESS;
    if (out.completed) {
      out.cluster_uuid = format_uuid(info.clusterUuid);
      out.clique_id = info.cliqueId;
    }
    return out;
  }
  nvmlGpuFabricInfo_t info{};
  KGPU_NVML_CALL(FabricInfo, sym_->fabric, "nvmlDeviceGetGpuFabricInfo", d, &info);
  out.completed = info.state == NVML_GPU_FABRIC_STATE_COMPLETED && info.status == NVML_SUCCESS;
  if (out.completed) {
    out.cluster_uuid = format_uuid(info.clusterUuid);
    out.clique_id = info.cliqueId;
  }
  return out;
}

NvmlResult<MigMode> NvmlLibrary::mig_mode(nvmlDevice_t d) const {
  unsigned current = 0, pending = 0;
  KGPU_NVML_CALL(MigMode, sym_->mig_mode, "nvmlDeviceGetMigMode", d, &current, &pending);
  return MigMode{current == NVML_DEVICE_MIG_ENABLE, pending == NVML_DEVICE_MIG_ENABLE};
}

NvmlResult<unsigned> NvmlLibrary::max_mig_device_count(nvmlDevice_t d) const {
  unsigned n = 0;
  KGPU_NVML_CALL(unsigned, sym_->max_mig, "nvmlDeviceGetMaxMigDeviceCount", d, &n);
  return n;
}

NvmlResult<nvmlDevice_t> NvmlLibrary::mig_device_by_index(nvmlDevice_t d, unsigned index) const {
  nvmlDevice_t mig = nullptr;
  KGPU_NVML_CALL(nvmlDevice_t, sym_->mig_by_index, "nvmlDeviceGetMigDeviceHandleByIndex", d, index, &mig);
  return mig;
}

NvmlResult<unsigned> NvmlLibrary::gpu_instance_id(nvmlDevice_t mig) const {
  unsigned id = 0;
  KGPU_NVML_CALL(unsigned, sym_->gi_id, "nvmlDeviceGetGpuInstanceId", mig, &id);
  return id;
}

NvmlResult<unsigned> NvmlLibrary::compute_instance_id(nvmlDevice_t mig) const {
  unsigned id = 0;
  KGPU_NVML_CALL(unsigned, sym_->ci_id, "nvmlDeviceGetComputeInstanceId", mig, &id);
  return id;
}

NvmlResult<nvmlDeviceAttributes_t> NvmlLibrary::attributes(nvmlDevice_t mig) const {
  nvmlDeviceAttributes_t a{};
  KGPU_NVML_CALL(nvmlDeviceAttributes_t, sym_->attributes, "nvmlDeviceGetAttributes", mig, &a);
  return a;
}

NvmlResult<nvmlGpuInstance_t> NvmlLibrary::gpu_instance_by_id(nvmlDevice_t d, unsigned id) const {
  nvmlGpuInstance_t gi = nullptr;
  KGPU_NVML_CALL(nvmlGpuInstance_t, sym_->gi_by_id, "nvmlDeviceGetGpuInstanceById", d, id, &gi);
  return gi;
}

NvmlResult<nvmlGpuInstanceInfo_t> NvmlLibrary::gpu_instance_info(nvmlGpuInstance_t gi) const {
  nvmlGpuInstanceInfo_t info{};
  KGPU_NVML_CALL(nvmlGpuInstanceInfo_t, sym_->gi_info, "nvmlGpuInstanceGetInfo", gi, &info);
  return info;
}

NvmlResult<nvmlGpuInstanceProfileInfo_t> NvmlLibrary::gpu_instance_profile_info(nvmlDevice_t d,
                                                                             unsigned profile) const {
  nvmlGpuInstanceProfileInfo_t info{};
  KGPU_NVML_CALL(nvmlGpuInstanceProfileInfo_t, sym_->gi_profile, "nvmlDeviceGetGpuInstanceProfileInfo", d,
                 profile, &info);
  return info;
}

NvmlResult<nvmlGpuTopologyLevel_t> NvmlLibrary::common_ancestor(nvmlDevice_t a, nvmlDevice_t b) const {
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
  KGPU_NVML_CALL(nvmlGpuTopologyLevel_t, sym_->common_ancestor, "nvmlDeviceGetTopologyCommonAncestor", a, b,
                 &level);
  return level;
}

NvmlResult<bool> NvmlLibrary::nvlink_active(nvmlDevice_t d, unsigned link) const {
  nvmlEnableState_t state = NVML_FEATURE_DISABLED;
  KGPU_NVML_CALL(bool, sym_->nvlink_state, "nvmlDeviceGetNvLinkState", d, link, &state);
  return state == NVML_FEATURE_ENABLED;
}

NvmlResult<nvmlPciInfo_t> NvmlLibrary::nvlink_remote_pci(nvmlDevice_t d, unsigned link) const {
  nvmlPciInfo_t pci{};
  KGPU_NVML_CALL(nvmlPciInfo_t, sym_->nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo", d, link, &pci);
  return pci;
}

NvmlResult<unsigned long long> NvmlLibrary::supported_event_types(nvmlDevice_t d) const {
  using Mask = unsigned long long;
  Mask types = 0;
  KGPU_NVML_CALL(Mask, sym_->supported_events, "nvmlDeviceGetSupportedEventTypes", d, &types);
  return types;
}

NvmlResult<nvmlEventSet_t> NvmlLibrary::event_set_create() const {
  nvmlEventSet_t set = nullptr;
  KGPU_NVML_CALL(nvmlEventSet_t, sym_->event_set_create, "nvmlEventSetCreate", &set);
  return set;
}

NvmlStatus NvmlLibrary::register_events(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) const {
  KGPU_NVML_CALL(Ok, sym_->register_events, "nvmlDeviceRegisterEvents", d, types, set);
  return Ok{};
}

NvmlResult<nvmlEventData_t> NvmlLibrary::event_set_wait(nvmlEventSet_t set, unsigned timeout_ms) const {
  nvmlEventData_t data{};
  // The unversioned wait fills only device/type/data: pre-set "no instance" so its events are not
  // mistaken for GI 0 / CI 0.
  data.gpuInstanceId = data.computeInstanceId = 0xFFFFFFFFU;
  KGPU_NVML_CALL(nvmlEventData_t, sym_->event_set_wait, "nvmlEventSetWait", set, &data, timeout_ms);
  return data;
}

NvmlStatus NvmlLibrary::event_set_free(nvmlEventSet_t set) const {
  KGPU_NVML_CALL(Ok, sym_->event_set_free, "nvmlEventSetFree", set);
  return Ok{};
}

// --- telemetry ---

NvmlResult<nvmlUtilization_t> NvmlLibrary::utilization(nvmlDevice_t d) const {
  nvmlUtilization_t u{};
  KGPU_NVML_CALL(nvmlUtilization_t, telemetry_symbols().utilization, "nvmlDeviceGetUtilizationRates", d, &u);
  return u;
}

NvmlResult<unsigned> NvmlLibrary::encoder_utilization(nvmlDevice_t d) const {
  unsigned u = 0, period_us = 0;
  KGPU_NVML_CALL(unsigned, telemetry_symbols().encoder, "nvmlDeviceGetEncoderUtilization", d, &u, &period_us);
  return u;
}

NvmlResult<unsigned> NvmlLibrary::decoder_utilization(nvmlDevice_t d) const {
  unsigned u = 0, period_us = 0;
  KGPU_NVML_CALL(unsigned, telemetry_symbols().decoder, "nvmlDeviceGetDecoderUtilization", d, &u, &period_us);
  return u;
}

NvmlResult<MemoryReading> NvmlLibrary::memory_reading(nvmlDevice_t d) const {
  const auto& t = telemetry_symbols();
  MemoryReading out;
  if (t.memory_v2) {
    nvmlMemory_v2_t m{};
    m.version = static_cast<unsigned>(sizeof(nvmlMemory_v2_t)) | (2U << 24U);
    KGPU_NVML_CALL(MemoryReading, t.memory_v2, "nvmlDeviceGetMemoryInfo_v2", d, &m);
    out.total = m.total;
    out.free = m.free;
    out.used = m.used;
    out.reserved = m.reserved;
    return out;
  }
  nvmlMemory_t m{};
  KGPU_NVML_CALL(MemoryReading, t.memory, "nvmlDeviceGetMemoryInfo", d, &m);
  out.total = m.total;
  out.free = m.free;
  out.used = m.used;
  return out;
}

NvmlResult<unsigned> NvmlLibrary::temperature(nvmlDevice_t d) const {
  unsigned c = 0;
  KGPU_NVML_CALL(unsigned, telemetry_symbols().temperature, "nvmlDeviceGetTemperature", d, NVML_TEMPERATURE_GPU, &c);
  return c;
}

NvmlResult<unsigned> NvmlLibrary::memory_temperature(nvmlDevice_t d) const {
  nvmlFieldValue_t field{};
  field.fieldId = NVML_FI_DEV_MEMORY_TEMP;
  KGPU_NVML_CALL(unsigned, telemetry_symbols().field_values, "nvmlDeviceGetFieldValues", d, 1, &field);
  if (field.nvmlReturn != NVML_SUCCESS) return fail<unsigned>("nvmlDeviceGetFieldValues(MEMORY_TEMP)", field.nvmlReturn);
  switch (field.valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT: return field.value.uiVal;
    case NVML_VALUE_TYPE_SIGNED_INT: return static_cast<unsigned>(field.value.siVal < 0 ? 0 : field.value.siVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<unsigned>(field.value.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<unsigned>(field.value.sllVal < 0 ? 0 : field.value.sllVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<unsigned>(field.value.ulVal);
    case NVML_VALUE_TYPE_DOUBLE: return static_cast<unsigned>(field.value.dVal < 0 ? 0 : field.value.dVal);
    default: return fail<unsigned>("nvmlDeviceGetFieldValues(MEMORY_TEMP): unexpected value type", NVML_ERROR_UNKNOWN);
  }
}

NvmlResult<unsigned> NvmlLibrary::power_usage_mw(nvmlDevice_t d) const {
  unsigned mw = 0;
  KGPU_NVML_CALL(unsigned, telemetry_symbols().power, "nvmlDeviceGetPowerUsage", d, &mw);
  return mw;
}

NvmlResult<unsigned long long> NvmlLibrary::total_energy_mj(nvmlDevice_t d) const {
  unsigned long long mj = 0;
  using Energy = unsigned long long;
  KGPU_NVML_CALL(Energy, telemetry_symbols().energy, "nvmlDeviceGetTotalEnergyConsumption", d, &mj);
  return mj;
}

NvmlResult<unsigned> NvmlLibrary::clock_mhz(nvmlDevice_t d, nvmlClockType_t type) const {
  unsigned mhz = 0;
  KGPU_NVML_CALL(unsigned, telemetry_symbols().clock, "nvmlDeviceGetClockInfo", d, type, &mhz);
  return mhz;
}

NvmlResult<unsigned> NvmlLibrary::pcie_replay_counter(nvmlDevice_t d) const {
  unsigned n = 0;
  KGPU_NVML_CALL(unsigned, telemetry_symbols().pcie_replay, "nvmlDeviceGetPcieReplayCounter", d, &n);
  return n;
}

NvmlResult<unsigned long long> NvmlLibrary::total_ecc_errors(nvmlDevice_t d, nvmlMemoryErrorType_t type,
                                                             nvmlEccCounterType_t counter) const {
  using Count = unsigned long long;
  Count n = 0;
  KGPU_NVML_CALL(Count, telemetry_symbols().ecc, "nvmlDeviceGetTotalEccErrors", d, type, counter, &n);
  return n;
}

NvmlResult<RemappedRows> NvmlLibrary::remapped_rows(nvmlDevice_t d) const {
  unsigned corr = 0, unc = 0, pending = 0, failed = 0;
  KGPU_NVML_CALL(RemappedRows, telemetry_symbols().remapped, "nvmlDeviceGetRemappedRows", d, &corr, &unc, &pending,
                 &failed);
  return RemappedRows{corr, unc, pending != 0, failed != 0};
}

NvmlStatus NvmlLibrary::field_values(nvmlDevice_t d, nvmlFieldValue_t* values, int count) const {
  KGPU_NVML_CALL(Ok, telemetry_symbols().field_values, "nvmlDeviceGetFieldValues", d, count, values);
  return Ok{};
}

std::optional<double> field_number(const nvmlFieldValue_t& v) {
  switch (v.valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return v.value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return v.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<double>(v.value.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<double>(v.value.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(v.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT: return v.value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return v.value.usVal;
  }
  return std::nullopt;
}

NvmlResult<unsigned long long> NvmlLibrary::nvlink_data_kib(nvmlDevice_t d) const {
  using KiB = unsigned long long;
  nvmlFieldValue_t fields[2]{};
  fields[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
  fields[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
  fields[0].scopeId = fields[1].scopeId = 0xFFFFFFFFU;  // all links
  KGPU_NVML_CALL(KiB, telemetry_symbols().field_values, "nvmlDeviceGetFieldValues", d, 2, fields);
  KiB total = 0;
  for (const auto& f : fields) {
    if (f.nvmlReturn != NVML_SUCCESS) return fail<KiB>("nvmlDeviceGetFieldValues(NVLINK_THROUGHPUT_DATA)", f.nvmlReturn);
    if (f.valueType != NVML_VALUE_TYPE_UNSIGNED_LONG_LONG)
      return fail<KiB>("nvmlDeviceGetFieldValues(NVLINK_THROUGHPUT_DATA): unexpected value type", NVML_ERROR_UNKNOWN);
    total += f.value.ullVal;
  }
  return total;
}

#undef KGPU_NVML_CALL

Error::Code nvml_error_code(nvmlReturn_t code) {
  switch (code) {
    case NVML_ERROR_INVALID_ARGUMENT:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return Error::Code::InvalidArgument;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_NOT_FOUND:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_GPU_NOT_FOUND: return Error::Code::NotFound;
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_INSUFFICIENT_POWER:
    case NVML_ERROR_RESET_REQUIRED:
    case NVML_ERROR_INVALID_STATE:
    case NVML_ERROR_IN_USE: return Error::Code::FailedPrecondition;
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_TIMEOUT:
    case NVML_ERROR_LIBRARY_NOT_FOUND:
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    case NVML_ERROR_NOT_READY: return Error::Code::Unavailable;
    default: return Error::Code::Internal;
  }
}

std::string sysfs_pci_address(const std::string& nvml_bus_id) {
  // "<domain>:<bus>:<device>.<function>", domain 4 or 8 hex digits.
  auto colon = nvml_bus_id.find(':');
  if (colon == std::string::npos || colon == 0) return {};
  std::string domain = nvml_bus_id.substr(0, colon);
  std::string rest = nvml_bus_id.substr(colon + 1);
  if (rest.size() != 7 || rest[2] != ':' || rest[5] != '.') return {};
  for (char c : domain + rest.substr(0, 2) + rest.substr(3, 2) + rest.substr(6))
    if (!std::isxdigit(static_cast<unsigned char>(c))) return {};
  if (domain.size() > 4) {
    // The top digits of NVML's 8-digit domain are always zero for sysfs purposes.
    domain = domain.substr(domain.size() - 4);
  }
  while (domain.size() < 4) domain.insert(domain.begin(), '0');
  std::string out = domain + ":" + rest;
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace kgpu
