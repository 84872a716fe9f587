#include "sysfs/amd_info.h"

#include <cmath>
#include <cstdio>

#include "sysfs/fs_util.h"

namespace kgpu::amd {

Result<std::map<std::string, uint64_t>> parse_kfd_properties(std::string_view text) {
  std::map<std::string, uint64_t> out;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos)
      return Error::invalid("line " + std::to_string(line_no) + " \"" + std::string(line) + "\" has no value");
    std::string_view key = line.substr(0, sp);
    std::string_view value = line.substr(line.find_first_not_of(' ', sp));
    auto v = sysfs::parse_u64(value);
    if (!v)
      return Error::invalid("line " + std::to_string(line_no) + ": \"" + std::string(key) +
                            "\" has a non-numeric value \"" + std::string(value) + "\"");
    out[std::string(key)] = *v;
  }
  return out;
}

std::string gfx_target_name(uint64_t v) {
  if (v == 0) return "";
  uint64_t major = v / 10000, minor = (v / 100) % 100, step = v % 100;
  char buf[48];
  std::snprintf(buf, sizeof buf, "gfx%llu%llx%llx", static_cast<unsigned long long>(major),
                static_cast<unsigned long long>(minor), static_cast<unsigned long long>(step));
  return buf;
}

std::string family_name(uint64_t v, bool apu) {
  uint64_t major = v / 10000, minor = (v / 100) % 100, step = v % 100;
  switch (major) {
    case 6: return "SI";
    case 7: return apu ? "KV" : "CI";
    case 8: return apu ? "CZ" : "VI";
    case 9: return (apu && minor < 4) ? "RV" : "AI";  // Raven/Renoir APUs; 9.4.x (MI200/MI300) is AI
    case 10:
      if (minor == 3 && step == 1) return "VGH";
      if (minor == 3 && step == 3) return "YC";
      if (minor == 3 && step == 6) return "GC_10_3_6";
      if (minor == 3 && step == 7) return "GC_10_3_7";
      return "NV";
    case 11:
      if (minor == 5) return "GC_11_5_0";
      if (step == 1 || step == 4) return "GC_11_0_1";
      return "GC_11_0_0";
    case 12: return "GC_12_0_0";
    default: return "";
  }
}

std::string pci_address(uint64_t domain, uint64_t location_id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04llx:%02llx:%02llx.%llx", static_cast<unsigned long long>(domain & 0xffff),
                static_cast<unsigned long long>((location_id >> 8) & 0xff),
                static_cast<unsigned long long>((location_id >> 3) & 0x1f),
                static_cast<unsigned long long>(location_id & 0x7));
  return buf;
}

std::optional<std::string> product_for_device_id(uint32_t id) {
  switch (id) {
    case 0x738c: return "AMD Instinct MI100";
    case 0x7408: return "AMD Instinct MI250X";
    case 0x740c: return "AMD Instinct MI250X/MI250";
    case 0x740f: return "AMD Instinct MI210";
    case 0x74a0: return "AMD Instinct MI300A";
    case 0x74a1: return "AMD Instinct MI300X";
    case 0x74a5: return "AMD Instinct MI325X";
    default: return std::nullopt;
  }
}

std::string vram_label(uint64_t bytes) {
  const double gib = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
  return std::to_string(static_cast<long long>(std::llround(gib))) + "G";
}

}  // namespace kgpu::amd
