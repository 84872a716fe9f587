// Loads the simulated libnvidia-ml.so.1 with dlopen exactly like a consumer (go-nvml uses
// RTLD_LAZY | RTLD_GLOBAL) and resolves entry points by name, plus helpers to run a test against a
// fleet file in its own temporary directory.
#pragma once
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "nvml/nvml_abi.h"

namespace kgpu::fake_nvml::testing {

inline std::string library_path() { return std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1"; }
inline std::string fleet_path(const std::string& name) {
  return std::string(KGPU_FIXTURES_DIR) + "/fleets/" + name + ".yaml";
}

inline void* library() {
  static void* handle = dlopen(library_path().c_str(), RTLD_LAZY | RTLD_GLOBAL);
  return handle;
}

// The entry point `name`, typed as the caller asks; fails the test when the symbol is missing.
template <typename Fn>
Fn sym(const char* name) {
  void* h = library();
  if (h == nullptr) {
    ADD_FAILURE() << "dlopen " << library_path() << ": " << dlerror();
    return nullptr;
  }
  void* p = dlsym(h, name);
  if (p == nullptr) ADD_FAILURE() << "missing symbol " << name;
  return reinterpret_cast<Fn>(p);
}

// A fresh temporary directory, removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fake-nvml-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name, const std::string& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << content;
    return p;
  }

 private:
  std::string path_;
};

// Base fixture: points the library at a fleet (and optionally a control file), initialises it,
// and shuts it down again after the test.
class NvmlTest : public ::testing::Test {
 protected:
  void TearDown() override {
    auto shutdown = sym<nvmlShutdown_fn>("nvmlShutdown");
    while (initialised_ > 0) {
      shutdown();
      --initialised_;
    }
    unsetenv("KGPU_FAKE_NVML_FLEET");
    unsetenv("KGPU_FAKE_NVML_CONTROL");
  }

  nvmlReturn_t init_with(const std::string& fleet, const std::string& control = "") {
    setenv("KGPU_FAKE_NVML_FLEET", fleet.c_str(), 1);
    if (control.empty())
      unsetenv("KGPU_FAKE_NVML_CONTROL");
    else
      setenv("KGPU_FAKE_NVML_CONTROL", control.c_str(), 1);
    nvmlReturn_t rc = sym<nvmlInit_fn>("nvmlInit_v2")();
    if (rc == NVML_SUCCESS) ++initialised_;
    return rc;
  }

  nvmlDevice_t device(unsigned index) {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(sym<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2")(index, &d), NVML_SUCCESS);
    return d;
  }

  std::string uuid(nvmlDevice_t d) {
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(sym<nvmlDeviceGetUUID_fn>("nvmlDeviceGetUUID")(d, buf, sizeof buf), NVML_SUCCESS);
    return buf;
  }

  std::string name(nvmlDevice_t d) {
    char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(sym<nvmlDeviceGetName_fn>("nvmlDeviceGetName")(d, buf, sizeof buf), NVML_SUCCESS);
    return buf;
  }

  TempDir dir_;
  int initialised_ = 0;
};

}  // namespace kgpu::fake_nvml::testing
