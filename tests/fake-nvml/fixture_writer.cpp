#include "fixture_writer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kgpu::fake_nvml {
namespace {

namespace fs = std::filesystem;

Status write_file(const fs::path& path, const std::string& content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return Error::unavailable("cannot create " + path.parent_path().string() + ": " + ec.message());
  std::ofstream out(path, std::ios::trunc);
  out << content;
  out.close();
  if (!out) return Error::unavailable("cannot write " + path.string());
  return ok_status();
}

std::string hex(unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, value);
  return buf;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string capability(unsigned minor) { return capability_file_text(minor); }

}  // namespace

Status write_fixture(const Fleet& fleet, const std::string& out_dir) {
  const fs::path root(out_dir);
  std::vector<std::pair<fs::path, std::string>> files;
  auto add = [&](const fs::path& p, std::string content) { files.emplace_back(root / p, std::move(content)); };

  unsigned max_minor = 0;
  std::set<unsigned> cap_minors = {1, 2};
  std::vector<std::pair<fs::path, fs::path>> links;  // (link, target relative to the link's folder)
  for (const Gpu& gpu : fleet.gpus) {
    // As on a real host, bus/pci/devices/<bdf> links to the device under its PCIe root complex
    // (devices/pci<domain>:<bus>/...), from which the DRA driver reads resource.kubernetes.io/pcieRoot:
    // one root complex per NUMA node (a socket's), as on two-socket servers.
    const std::string bdf = lower(legacy_bus_id_string(gpu.pci));
    char root_complex[32];
    std::snprintf(root_complex, sizeof root_complex, "pci%s:%02x", bdf.substr(0, 4).c_str(),
                  static_cast<unsigned>(std::max(gpu.numa_node, 0))  * 0x40u % 0x100u);
    const fs::path dev = fs::path("sys/devices") / root_complex / bdf;
    links.emplace_back(fs::path("sys/bus/pci/devices") / bdf, fs::path("../../..") / "devices" / root_complex / bdf);
    add(dev / "numa_node", std::to_string(gpu.numa_node) + "\n");
    add(dev / "class", hex(gpu.pci_class, 6) + "\n");
    add(dev / "vendor", hex(kPciVendorNvidia, 4) + "\n");
    add(dev / "device", hex(gpu.pci_device_id, 4) + "\n");
    add(dev / "subsystem_vendor", hex(gpu.pci_subsystem_id & 0xFFFFu, 4) + "\n");
    add(dev / "subsystem_device", hex(gpu.pci_subsystem_id >> 16, 4) + "\n");
    add(fs::path("dev") / ("nvidia" + std::to_string(gpu.minor)), "");
    // The driver's own record of the GPU, as it writes it when it binds the device: it stays
    // readable for a GPU NVML can no longer open.
    add(fs::path("proc/driver/nvidia/gpus") / bdf / "information",
        "Model: \t\t " + gpu.name + "\nIRQ:   \t\t 0\nGPU UUID: \t " + gpu.uuid +
            "\nVideo BIOS: \t ??.??.??.??.??\nBus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\n"
            "Bus Location: \t " + bdf + "\nDevice Minor: \t " + std::to_string(gpu.minor) + "\nGPU Excluded:\t No\n");
    max_minor = std::max(max_minor, gpu.minor);
    const fs::path caps = fs::path("proc/driver/nvidia/capabilities") / ("gpu" + std::to_string(gpu.minor)) / "mig";
    for (const GpuInstance& gi : gpu.mig.instances) {
      const unsigned gi_minor = mig_gi_minor(gpu.minor, gi.id);
      cap_minors.insert(gi_minor);
      add(caps / ("gi" + std::to_string(gi.id)) / "access", capability(gi_minor));
      for (const ComputeInstance& ci : gi.compute_instances) {
        const unsigned ci_minor = mig_ci_minor(gpu.minor, gi.id, ci.id);
        cap_minors.insert(ci_minor);
        add(caps / ("gi" + std::to_string(gi.id)) / ("ci" + std::to_string(ci.id)) / "access", capability(ci_minor));
      }
    }
  }
  std::string mig_minors = "config 1\nmonitor 2\n";
  if (!fleet.gpus.empty()) {
    for (unsigned m = 0; m <= max_minor; ++m)
      for (unsigned gi = 0; gi < kGiPerGpu; ++gi) {
        const std::string prefix = "gpu" + std::to_string(m) + "/gi" + std::to_string(gi);
        mig_minors += prefix + "/access " + std::to_string(mig_gi_minor(m, gi)) + "\n";
        for (unsigned ci = 0; ci < kCiPerGi; ++ci)
          mig_minors += prefix + "/ci" + std::to_string(ci) + "/access " + std::to_string(mig_ci_minor(m, gi, ci)) + "\n";
      }
  }
  add("proc/driver/nvidia-caps/mig-minors", mig_minors);
  add("proc/driver/nvidia/capabilities/mig/config", capability(1));
  add("proc/driver/nvidia/capabilities/mig/monitor", capability(2));
  for (const char* node : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}) add(fs::path("dev") / node, "");
  for (unsigned minor : cap_minors) add(fs::path("dev/nvidia-caps") / ("nvidia-cap" + std::to_string(minor)), "");
  if (!fleet.product_name.empty()) add("sys/class/dmi/id/product_name", fleet.product_name + "\n");

  for (const auto& [path, content] : files)
    if (auto st = write_file(path, content); !st) return st;
  for (const auto& [link, target] : links) {
    std::error_code ec;
    fs::create_directories((root / link).parent_path(), ec);
    fs::remove_all(root / link, ec);
    fs::create_directory_symlink(target, root / link, ec);
    if (ec) return Error::unavailable("cannot link " + (root / link).string() + ": " + ec.message());
  }
  return ok_status();
}

Status write_fixture(const std::string& fleet_path, const std::string& out_dir) {
  auto fleet = load_fleet(fleet_path);
  if (!fleet) return fleet.error();
  return write_fixture(*fleet, out_dir);
}

}  // namespace kgpu::fake_nvml
