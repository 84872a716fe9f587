// The fleet: an immutable description of one simulated GPU node, parsed from the YAML fleet file
// (format: FLEET_FORMAT.md). Pure data; the simulator and the fixture writer both read it.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "nvml/nvml_abi.h"

namespace kgpu::fake_nvml {

inline constexpr unsigned kPciVendorNvidia = 0x10DE;
inline constexpr unsigned kNoId = 0xFFFFFFFFu;

// One GPU-instance profile of a product's MIG table (a row of `nvidia-smi mig -lgip`).
struct GiProfile {
  std::string name;             // "1g.5gb"
  unsigned profile_index = 0;   // NVML_GPU_INSTANCE_PROFILE_*
  unsigned id = 0;              // the profile id nvidia-smi shows (19 for A100 1g.5gb)
  unsigned compute_slices = 0;  // SM slices ("1g" = 1)
  unsigned memory_slices = 0;   // placement size in memory slices
  unsigned instance_count = 0;
  std::vector<unsigned> placements;  // valid start slices
  unsigned sm_count = 0;
  unsigned copy_engines = 0, decoders = 0, encoders = 0, jpegs = 0, ofas = 0;
  unsigned long long memory_mib = 0;
};

struct MigProfileTable {
  std::string name;                // "a100-40gb"
  unsigned memory_slice_count = 8;
  unsigned max_mig_devices = 7;
  unsigned sms_per_slice = 0;
  std::vector<GiProfile> profiles;
};

struct ComputeInstance {
  unsigned id = 0;
  unsigned slices = 0;     // compute slices it spans
  unsigned placement = 0;  // start compute slice within the GI
  std::string uuid;        // the MIG device uuid ("MIG-...")
};

struct GpuInstance {
  unsigned id = 0;
  GiProfile profile;
  unsigned placement = 0;  // start memory slice
  std::vector<ComputeInstance> compute_instances;
};

struct Mig {
  bool capable = false;
  unsigned mode = NVML_DEVICE_MIG_DISABLE;
  unsigned pending = NVML_DEVICE_MIG_DISABLE;
  std::optional<MigProfileTable> table;  // set when capable
  std::vector<GpuInstance> instances;
};

struct Fabric {
  unsigned char cluster_uuid[NVML_GPU_FABRIC_UUID_LEN] = {};
  unsigned clique_id = 0;
  nvmlGpuFabricState_t state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
  nvmlReturn_t status = NVML_SUCCESS;
  unsigned health_mask = 0;
};

// A named NVML call forced to fail on a GPU (and its MIG devices).
struct CallFailure {
  std::string call;  // base name, e.g. "nvmlDeviceGetMemoryInfo" (matches _v2/_v3 too)
  nvmlReturn_t code = NVML_ERROR_UNKNOWN;
};

// Far end of one NVLink port.
struct NvLinkPeer {
  bool to_switch = false;
  unsigned gpu = 0;            // peer GPU index when !to_switch
  std::string remote_bus_id;   // canonical "dddddddd:bb:dd.f"
  unsigned remote_device_id = 0;  // PCI device id of the far end
};

struct PciAddress {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
};

struct Gpu {
  unsigned index = 0;
  std::string uuid;
  std::string name;
  nvmlBrandType_t brand = NVML_BRAND_NVIDIA;
  // nvmlDeviceGetAddressingMode's NVML_DEVICE_ADDRESSING_MODE_*; nullopt: NOT_SUPPORTED (most systems).
  std::optional<unsigned> addressing_mode;
  nvmlDeviceArchitecture_t architecture = NVML_DEVICE_ARCH_UNKNOWN;
  int cc_major = 0, cc_minor = 0;
  std::string serial;
  unsigned minor = 0;
  int numa_node = 0;
  unsigned long long memory_total_mib = 0, memory_used_mib = 0;
  PciAddress pci;
  unsigned pci_device_id = 0;     // 16-bit device id
  unsigned pci_subsystem_id = 0;  // as NVML reports it
  unsigned pci_class = 0x030200;
  unsigned sm_count = 0;
  unsigned nvlink_ports = 0;
  std::optional<unsigned> power_mw, power_limit_mw, temperature_c;
  std::map<std::string, unsigned long long> telemetry;  // `telemetry:` readings (telemetry_values.h)
  unsigned long long supported_events = 0;
  std::optional<Fabric> fabric;
  Mig mig;
  bool lost = false;
  std::optional<nvmlReturn_t> handle_failure;
  std::vector<CallFailure> call_failures;
  std::vector<std::optional<NvLinkPeer>> nvlinks;  // one entry per port; nullopt = not connected
};

struct Fleet {
  std::string path;
  std::string driver_version;
  int cuda_driver_version = 0;
  std::string product_name;
  std::optional<nvmlReturn_t> init_failure;
  std::vector<Gpu> gpus;
  // common-ancestor level of every ordered pair, [i][j]
  std::vector<std::vector<nvmlGpuTopologyLevel_t>> ancestry;
};

// Reads and validates a fleet file. The error names the file, line, column and field.
Result<Fleet> load_fleet(const std::string& path);
// The same for fleet text already in memory (the fuzz target); `name` stands in for the path.
Result<Fleet> parse_fleet(const std::string& text, const std::string& name);

// "00000000:07:00.0" (NVML's 32-byte busId form, upper-case hex).
std::string bus_id_string(const PciAddress& pci);
// "0000:07:00.0" (the legacy 16-byte form; sysfs uses this in lower case).
std::string legacy_bus_id_string(const PciAddress& pci);
// Accepts [domain:]bus:device.function in hex, with a 4- or 8-digit domain.
std::optional<PciAddress> parse_bus_id(const std::string& text);

// Error-code names (NVML_ERROR_NOT_FOUND, NOT_FOUND, or a number).
std::optional<nvmlReturn_t> parse_return_code(const std::string& text);

}  // namespace kgpu::fake_nvml
