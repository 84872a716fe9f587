// Fuzz target: CDI driver-file scanning with hostile file names. Each input names a few files
// (any bytes but '/' and NUL: not UTF-8, control characters, ".so.<version>" look-alikes) created
// next to libcuda in a temporary driver root; then what kgpu does at start with a cdi-* strategy:
// find_driver_files(), build_cdi_spec() and write_cdi_spec(). Any name gives a spec or an Error.
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cdi/driver_files.h"
#include "cdi/spec_builder.h"
#include "cdi/spec_writer.h"
#include "fuzz/fleet_inventory.h"

namespace {

namespace fs = std::filesystem;

struct Node {
  kgpu::Config config;
  kgpu::Inventory inventory;
  std::string root;      // driver root and dev root
  std::string spec_dir;  // where the spec is written
};
Node* node = nullptr;
const std::vector<std::string> kDirs = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/vdpau"};

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) __builtin_trap();  // setup, not a finding
  ::close(fd);
}

bool usable_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kgpu::fuzz::silence_logs();
  node = new Node;
  node->inventory = kgpu::fuzz::discover_fleet("dgx-a100");
  std::string pattern = (fs::temp_directory_path() / "kgpu-fuzz-driver-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) __builtin_trap();
  static const std::string top = pattern;
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(top, ec);
  });
  node->root = pattern + "/root";
  node->spec_dir = pattern + "/cdi";
  const std::string& v = node->inventory.driver_version;
  touch(node->root + kDirs[0] + "/libcuda.so." + v);
  touch(node->root + kDirs[1] + "/libvdpau_nvidia.so." + v);
  touch(node->root + "/usr/bin/nvidia-smi");
  touch(node->root + "/dev/nvidiactl");
  node->config = kgpu::fuzz::config_from_yaml("version: v1\nflags:\n  plugin:\n    deviceListStrategy: [cdi-cri]\n");
  node->config.nvidia_driver_root = node->root;
  node->config.cdi_spec_dir = node->spec_dir;
  return 0;
}

// True when `s` is valid UTF-8 (nlohmann's strict dump throws otherwise).
bool is_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string& version = node->inventory.driver_version;
  std::vector<std::string> created;  // container paths
  for (int i = in.ConsumeIntegralInRange<int>(1, 6); i > 0 && in.remaining_bytes() > 0; --i) {
    const std::string& dir = kDirs[in.ConsumeIntegralInRange<size_t>(0, kDirs.size() - 1)];
    std::string name = in.ConsumeRandomLengthString(64);
    if (in.ConsumeBool()) name += ".so." + version;
    if (!usable_name(name)) continue;
    const std::string path = dir + "/" + name;
    if (fs::exists(node->root + path) || std::find(created.begin(), created.end(), path) != created.end()) continue;
    touch(node->root + path);
    created.push_back(path);
  }

  auto files = kgpu::find_driver_files(node->root, node->root, version);
  if (!files) __builtin_trap();  // libcuda is there: the scan must succeed
  // Every created "*.so.<version>" library is in the list, unless its name is not UTF-8: then it is
  // left out (no JSON spec can name it) and a warning says so. nlohmann's strict dump is the oracle.
  for (const auto& path : created) {
    const std::string suffix = ".so." + version;
    const std::string name = fs::path(path).filename().string();
    if (name.size() <= suffix.size() || !name.ends_with(suffix)) continue;
    const bool listed = std::find(files->libraries.begin(), files->libraries.end(), path) != files->libraries.end();
    if (listed != is_utf8(path)) __builtin_trap();
    if (!listed && files->warnings.empty()) __builtin_trap();
  }
  auto spec = kgpu::build_cdi_spec(node->config, node->inventory, *files);
  (void)kgpu::write_cdi_spec(node->spec_dir, node->config.cdi_kind, spec);

  for (const auto& path : created) ::unlink((node->root + path).c_str());
  return 0;
}
