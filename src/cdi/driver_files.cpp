#include "cdi/driver_files.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
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

// JSON (and so a CDI spec) can only hold UTF-8: a name that is not cannot be put in the spec.
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and values past U+10FFFF are invalid too.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    i += len;
  }
  return true;
}

// The name with every byte outside printable ASCII written as \xNN, for a log line.
std::string escaped(std::string_view s) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += ch;
    } else {
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

// A folder entry's name when it can go into a spec; otherwise a warning and nothing.
std::optional<std::string> usable_name(const fs::path& entry, const std::string& dir,
                                       std::vector<std::string>& warnings) {
  std::string name = entry.filename().string();
  if (valid_utf8(name)) return name;
  warnings.push_back("skipping " + dir + "/" + escaped(name) + ": the name is not UTF-8, so no CDI spec can name it");
  return std::nullopt;
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// Files in `dir` (container path) named "*.so.<version>", as container paths.
void versioned_libraries(const std::string& root, const std::string& dir, const std::string& version,
                         DriverFiles& files) {
  std::error_code ec;
  const std::string suffix = ".so." + version;
  for (fs::directory_iterator it(under(root, dir), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string raw = it->path().filename().string();
    if (raw.size() <= suffix.size() || !raw.ends_with(suffix)) continue;
    if (auto name = usable_name(it->path(), dir, files.warnings)) files.libraries.push_back(dir + "/" + *name);
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
  versioned_libraries(driver_root, files.library_dir, driver_version, files);
  versioned_libraries(driver_root, files.library_dir + "/vdpau", driver_version, files);
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
      const std::string raw = it->path().filename().string();
      if (!raw.starts_with("gsp") || !raw.ends_with(".bin")) continue;
      if (auto name = usable_name(it->path(), dir, files.warnings)) files.firmware.push_back(dir + "/" + *name);
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
