#pragma once
// Pure AMD facts: KFD topology "properties" parsing, gfx target names, the labeller's family names,
// product names for common data-centre parts. No I/O.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu::amd {

// "key value" lines of /sys/class/kfd/kfd/topology/nodes/N/properties. Error names the first bad
// line (a KFD node whose properties do not parse is ignored with a warning).
Result<std::map<std::string, uint64_t>> parse_kfd_properties(std::string_view text);

// gfx_target_version 90010 -> "gfx90a", 90402 -> "gfx942", 110000 -> "gfx1100". Empty for 0.
std::string gfx_target_name(uint64_t gfx_target_version);

// The AMD node labeller's family acronym (libdrm family): "SI", "CI", "KV", "VI", "CZ", "AI",
// "RV", "NV", "VGH", "YC", "GC_10_3_6", "GC_10_3_7", "GC_11_0_0", "GC_11_0_1", "GC_11_5_0",
// "GC_12_0_0"; derived from the gfx IP version because we do not link libdrm. `apu` = the KFD node
// has CPU cores. Empty when unknown.
std::string family_name(uint64_t gfx_target_version, bool apu);

// KFD "location_id" ((bus << 8) | (device << 3) | function) and "domain" -> "0000:c1:00.0".
std::string pci_address(uint64_t domain, uint64_t location_id);

// Marketing name for well-known PCI device IDs (0x740f -> "AMD Instinct MI210"), else nullopt.
std::optional<std::string> product_for_device_id(uint32_t device_id);

// The labeller's VRAM value: whole GiB rounded, "64G".
std::string vram_label(uint64_t bytes);

}  // namespace kgpu::amd
