#include "nvml/mig_facts.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <fmt/format.h>

#include "core/gpu_architecture.h"
#include "nvml/nvml_abi.h"

namespace kgpu {

uint64_t mig_memory_gb(uint64_t mig_memory_mib, uint64_t gpu_memory_bytes) {
  if (gpu_memory_bytes == 0) return (mig_memory_mib + 1023) / 1024;
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr uint64_t kGiB = 1024ULL * 1024 * 1024;
  constexpr double kEighths = 8.0;
  double share = static_cast<double>(mig_memory_mib) * kMiB / static_cast<double>(gpu_memory_bytes);
  share = std::ceil(share * kEighths) / kEighths;
  auto gpu_gb = static_cast<double>((gpu_memory_bytes + kGiB - 1) / kGiB);
  return static_cast<uint64_t>(std::llround(share * gpu_gb));
}

std::string mig_profile_name(int gpu_instance_slices, int compute_instance_slices, uint64_t mig_memory_mib,
                             uint64_t gpu_memory_bytes, std::optional<unsigned> gpu_instance_profile_id) {
  // The suffixes NVIDIA's go-nvlib (and so its device plugin v0.20) names profiles with: each is a
  // resource of its own there ("nvidia.com/mig-1g.24gb.me.all"), never counted with the base profile.
  std::string suffix;
  switch (gpu_instance_profile_id.value_or(NVML_GPU_INSTANCE_PROFILE_1_SLICE)) {
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1:
      suffix = "+me";  // media extensions
      break;
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
      suffix = "+me.all";  // every media engine of the GPU
      break;
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX:
    case NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX:
      suffix = "+gfx";  // graphics capable
      break;
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
      suffix = "-me";  // no media engines at all
      break;
    default:
      break;
  }
  std::string gi = fmt::format("{}g.{}gb{}", gpu_instance_slices, mig_memory_gb(mig_memory_mib, gpu_memory_bytes),
                               suffix);
  if (compute_instance_slices > 0 && compute_instance_slices < gpu_instance_slices)
    return fmt::format("{}c.{}", compute_instance_slices, gi);
  return gi;
}

Result<MigMinors> MigMinors::parse(std::string_view text) {
  MigMinors out;
  std::map<int, std::string> names_by_minor;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
    auto next_field = [&](std::string_view& rest) {
      while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
      size_t end = 0;
      while (end < rest.size() && !is_space(rest[end])) ++end;
      std::string_view field = rest.substr(0, end);
      rest.remove_prefix(end);
      return field;
    };
    std::string_view rest = line;
    std::string_view name = next_field(rest);
    if (name.empty()) continue;
    std::string_view number = next_field(rest);
    const std::string where = fmt::format("line {} \"{}\"", line_no, line.substr(0, 100));
    if (number.empty() || !next_field(rest).empty())
      return Error::invalid(where + " is not \"<name> <minor>\"");
    int minor = -1;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), minor);
    if (ec != std::errc() || end != number.data() + number.size() || minor < 0 || minor > kMaxCapabilityMinor)
      return Error::invalid(fmt::format("{}: minor \"{}\" is not a number in 0..{}", where, number, kMaxCapabilityMinor));
    const std::string key(name);
    if (!out.names_.insert(key).second) return Error::invalid(where + ": " + key + " appears twice");
    if (auto [it, fresh] = names_by_minor.emplace(minor, key); !fresh)
      return Error::invalid(fmt::format("{}: minor {} is also {}", where, minor, it->second));
    const std::string tail = "/access";
    if (key.size() > tail.size() && key.compare(key.size() - tail.size(), tail.size(), tail) == 0)
      out.minors_[key.substr(0, key.size() - tail.size())] = minor;
  }
  return out;
}

std::optional<int> MigMinors::gpu_instance(int gpu_minor, int gi) const {
  auto it = minors_.find(fmt::format("gpu{}/gi{}", gpu_minor, gi));
  if (it == minors_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> MigMinors::compute_instance(int gpu_minor, int gi, int ci) const {
  auto it = minors_.find(fmt::format("gpu{}/gi{}/ci{}", gpu_minor, gi, ci));
  if (it == minors_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::vector<DeviceNodeRef>> mig_capability_nodes(const MigMinors& minors, int gpu_minor, int gi,
                                                               int ci) {
  auto g = minors.gpu_instance(gpu_minor, gi);
  auto c = minors.compute_instance(gpu_minor, gi, ci);
  if (!g || !c) return std::nullopt;
  return std::vector<DeviceNodeRef>{{fmt::format("/dev/nvidia-caps/nvidia-cap{}", *g)},
                                    {fmt::format("/dev/nvidia-caps/nvidia-cap{}", *c)}};
}

std::string architecture_name(unsigned arch, int cc_major, int cc_minor) {
  switch (arch) {
    case NVML_DEVICE_ARCH_KEPLER: return "kepler";
    case NVML_DEVICE_ARCH_MAXWELL: return "maxwell";
    case NVML_DEVICE_ARCH_PASCAL: return "pascal";
    case NVML_DEVICE_ARCH_VOLTA: return "volta";
    case NVML_DEVICE_ARCH_TURING: return "turing";
    case NVML_DEVICE_ARCH_AMPERE: return "ampere";
    case NVML_DEVICE_ARCH_ADA: return "ada-lovelace";
    case NVML_DEVICE_ARCH_HOPPER: return "hopper";
    case NVML_DEVICE_ARCH_BLACKWELL: return "blackwell";
    default: return architecture_from_compute_capability(cc_major, cc_minor);
  }
}

std::string brand_name(int brand) {
  switch (brand) {
    case NVML_BRAND_QUADRO: return "quadro";
    case NVML_BRAND_TESLA: return "tesla";
    case NVML_BRAND_NVS: return "nvs";
    case NVML_BRAND_GRID: return "grid";
    case NVML_BRAND_GEFORCE: return "geforce";
    case NVML_BRAND_TITAN: return "titan";
    case NVML_BRAND_NVIDIA_VAPPS: return "nvidia-vapps";
    case NVML_BRAND_NVIDIA_VPC: return "nvidia-vpc";
    case NVML_BRAND_NVIDIA_VCS: return "nvidia-vcs";
    case NVML_BRAND_NVIDIA_VWS: return "nvidia-vws";
    case NVML_BRAND_NVIDIA_CLOUD_GAMING: return "nvidia-cloud-gaming";
    case NVML_BRAND_QUADRO_RTX: return "quadro-rtx";
    case NVML_BRAND_NVIDIA_RTX: return "nvidia-rtx";
    case NVML_BRAND_NVIDIA: return "nvidia";
    case NVML_BRAND_GEFORCE_RTX: return "geforce-rtx";
    case NVML_BRAND_TITAN_RTX: return "titan-rtx";
    default: return {};
  }
}

std::string addressing_mode_name(unsigned mode) {
  switch (mode) {
    case NVML_DEVICE_ADDRESSING_MODE_NONE: return "None";
    case NVML_DEVICE_ADDRESSING_MODE_HMM: return "HMM";
    case NVML_DEVICE_ADDRESSING_MODE_ATS: return "ATS";
    default: return {};
  }
}

int sms_from_cores(unsigned cores, int cc_major, int cc_minor) {
  unsigned per_sm = 0;
  if (cc_major == 3) per_sm = 192;
  else if (cc_major == 6 && cc_minor == 0) per_sm = 64;
  else if (cc_major == 7 || (cc_major == 8 && cc_minor == 0)) per_sm = 64;
  else if (cc_major >= 5) per_sm = 128;
  if (per_sm == 0 || cores == 0 || cores % per_sm != 0) return 0;
  return static_cast<int>(cores / per_sm);
}

PcieLevel pcie_level(int level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL: return PcieLevel::SameBoard;
    case NVML_TOPOLOGY_SINGLE: return PcieLevel::SingleSwitch;
    case NVML_TOPOLOGY_MULTIPLE: return PcieLevel::MultipleSwitches;
    case NVML_TOPOLOGY_HOSTBRIDGE: return PcieLevel::HostBridge;
    case NVML_TOPOLOGY_NODE: return PcieLevel::SameNuma;
    case NVML_TOPOLOGY_SYSTEM: return PcieLevel::CrossSocket;
    default: return PcieLevel::Unknown;
  }
}

}  // namespace kgpu
