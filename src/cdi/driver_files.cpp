#include "cdi/driver_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace kgpu {
namespace {

namespace fs = std::filesystem;

// Where distributions and driver containers put the driver's libraries, most specific first.
const std::vector<std::string> kLibraryDirs = {
    "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",    "/lib64",                     "/usr/lib",   "/lib"};
const std::vector<std::string> kBinaryDirs = {"/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"};
const std::vector<std::string> kBinaries = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                            "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};
const std::vector<std::string> kSockets = {"/run/nvidia-persistenced/socket", "/run/nvidia-fabricmanager/socket",
                                           "/tmp/nvidia-mps"};
const std::vector<std::string> kControlNodes = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                                "/dev/nvidia-modeset"};

fs::path under(const std::string& root, const std::string& path) { return fs::path(root) / path.substr(1); }

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Files in `dir` (container path) named "*.so.<version>", as container paths.
void versioned_libraries(const std::string& root, const std::string& dir, const std::string& version,
                         std::vector<std::string>& out) {
  std::error_code ec;
  const std::string suffix = ".so." + version;
  for (fs::directory_iterator it(under(root, dir), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) out.push_back(dir + "/" + name);
  }
}

}  // namespace

Result<DriverFiles> find_driver_files(const std::string& driver_root, const std::string& dev_root,
                                      const std::string& driver_version) {
  if (driver_version.empty()) return Error::precondition("driver version unknown: cannot find driver libraries");
  DriverFiles files;
  for (const auto& dir : kLibraryDirs) {
    if (path_exists(under(driver_root, dir + "/libcuda.so." + driver_version))) {
      files.library_dir = dir;
      break;
    }
  }
  if (files.library_dir.empty())
    return Error::not_found("libcuda.so." + driver_version + " not found under driver root " + driver_root);
  versioned_libraries(driver_root, files.library_dir, driver_version, files.libraries);
  versioned_libraries(driver_root, files.library_dir + "/vdpau", driver_version, files.libraries);
  std::sort(files.libraries.begin(), files.libraries.end());

  for (const auto& binary : kBinaries)
    for (const auto& dir : kBinaryDirs)
      if (path_exists(under(driver_root, dir + "/" + binary))) {
        files.binaries.push_back(dir + "/" + binary);
        break;
      }

  for (const char* base : {"/lib/firmware/nvidia/", "/usr/lib/firmware/nvidia/"}) {
    const std::string dir = base + driver_version;
    std::error_code ec;
    for (fs::directory_iterator it(under(driver_root, dir), ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.starts_with("gsp") && name.ends_with(".bin")) files.firmware.push_back(dir + "/" + name);
    }
    if (!files.firmware.empty()) break;
  }
  std::sort(files.firmware.begin(), files.firmware.end());

  for (const auto& socket : kSockets)
    if (path_exists(under(driver_root, socket))) files.ipc_sockets.push_back(socket);
  for (const auto& node : kControlNodes)
    if (path_exists(under(dev_root, node))) files.control_nodes.push_back(node);
  return files;
}

}  // namespace kgpu
