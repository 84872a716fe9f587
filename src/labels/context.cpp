#include "labels/context.h"

#include <algorithm>
#include <cctype>

#include "core/safe_file.h"

namespace kgpu {
namespace {

// Bounded and non-blocking (core/safe_file.h): a FIFO at the machine-type path must not stall the loop.
std::optional<std::string> read_file(const std::string& path) {
  auto text = read_regular_file(path, kAttributeFileLimit);
  if (!text) return std::nullopt;
  return std::move(*text);
}

std::string trim(std::string s) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

// NVML writes "00000000:07:00.0"; sysfs names it "0000:07:00.0", lower case.
std::string sysfs_bdf(const std::string& bus_id) {
  std::string s = bus_id;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto colon = s.find(':');
  if (colon != std::string::npos && colon > 4) s = s.substr(colon - 4);
  return s;
}

}  // namespace

LabelContext read_label_context(const Config& config, const Inventory& inventory, std::optional<int64_t> now) {
  LabelContext ctx;
  ctx.timestamp = now;
  if (auto text = read_file(config.gfd_machine_type_file)) ctx.machine_type = trim(*text);
  for (const auto& g : inventory.gpus) {
    if (g.vendor != Vendor::Nvidia || g.pci_bus_id.empty()) continue;
    auto text = read_file(config.sysfs_root + "/bus/pci/devices/" + sysfs_bdf(g.pci_bus_id) + "/class");
    if (!text) continue;
    try {
      ctx.pci_class[g.pci_bus_id] = static_cast<uint32_t>(std::stoul(trim(*text), nullptr, 16));
    } catch (const std::exception&) {
      // An unreadable class is the same as a missing one: gpu.mode=unknown.
    }
  }
  return ctx;
}

}  // namespace kgpu
