#pragma once
// Test helper: a private, writable copy of a sysfs fixture tree (symlinks kept as symlinks), so a
// test can break one file and see what the backend makes of it.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sysfs/roots.h"

namespace kgpu::testing {

inline std::string fixture(const std::string& name) { return std::string(KGPU_SYSFS_FIXTURES_DIR) + "/" + name; }

inline SysfsRoots fixture_roots(const std::string& name) { return {fixture(name) + "/sys", fixture(name)}; }

class FixtureCopy {
 public:
  explicit FixtureCopy(const std::string& name) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kgpu-sysfs-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = made;
    std::filesystem::copy(fixture(name), dir_,
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  }
  ~FixtureCopy() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  FixtureCopy(const FixtureCopy&) = delete;
  FixtureCopy& operator=(const FixtureCopy&) = delete;

  SysfsRoots roots() const { return {dir_ + "/sys", dir_}; }
  std::string path(const std::string& rel) const { return dir_ + "/" + rel; }
  void write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(path(rel)).parent_path());
    std::ofstream(path(rel)) << text;
  }
  void remove(const std::string& rel) const { std::filesystem::remove_all(path(rel)); }

 private:
  std::string dir_;
};

}  // namespace kgpu::testing
