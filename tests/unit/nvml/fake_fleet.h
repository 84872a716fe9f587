#pragma once
// Test helper: the fake libnvidia-ml.so.1 loaded in this process for one fleet file, plus the
// fixture tree (sysfs/proc/dev) the fake's tool writes for that fleet. The fake reads the fleet
// at every first nvmlInit, so each test points KGPU_FAKE_NVML_FLEET at its own fleet first.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "nvml/discovery.h"
#include "nvml/nvml_library.h"

namespace kgpu::testing {

inline std::string fleet_path(const std::string& name) { return std::string(KGPU_FIXTURES_DIR) + "/fleets/" + name; }
inline std::string fake_library_path() { return std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1"; }

// A fresh temp directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kgpu-nvml-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// Fleet + fixture tree + loaded library. `control` (optional) becomes KGPU_FAKE_NVML_CONTROL.
class FakeNode {
 public:
  explicit FakeNode(const std::string& fleet_file, const std::string& control = "") {
    ::setenv("KGPU_FAKE_NVML_FLEET", fleet_file.c_str(), 1);
    if (control.empty()) {
      ::unsetenv("KGPU_FAKE_NVML_CONTROL");
    } else {
      ::setenv("KGPU_FAKE_NVML_CONTROL", control.c_str(), 1);
    }
    // The fake keeps the capability files of the MIG instances it makes in this tree.
    ::setenv("KGPU_FAKE_NVML_ROOT", dir_.path().c_str(), 1);
    std::string tool = std::string(KGPU_FAKE_NVML_DIR) + "/kgpu-fake-nvml-fixture";
    std::string cmd = "'" + tool + "' '" + fleet_file + "' '" + dir_.path() + "' >/dev/null";
    fixture_ok_ = std::system(cmd.c_str()) == 0;
    auto lib = NvmlLibrary::load_file(fake_library_path());
    if (lib) nvml_ = *lib;
    else load_error_ = lib.error().message;
  }

  bool ready() const { return fixture_ok_ && nvml_ != nullptr; }
  std::string problem() const { return fixture_ok_ ? load_error_ : "fixture tool failed"; }
  NvmlLibrary& nvml() { return *nvml_; }
  std::shared_ptr<NvmlLibrary> shared() { return nvml_; }
  const std::string& root() const { return dir_.path(); }

  NvidiaDiscoveryOptions options() const {
    NvidiaDiscoveryOptions o;
    o.sysfs_root = root() + "/sys";
    o.proc_root = root() + "/proc";
    o.dev_root = root();
    return o;
  }

 private:
  TempDir dir_;
  bool fixture_ok_ = false;
  std::shared_ptr<NvmlLibrary> nvml_;
  std::string load_error_;
};

}  // namespace kgpu::testing
