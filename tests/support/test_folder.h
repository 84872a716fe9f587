#pragma once
// A fresh, empty folder for the running test: <gtest's temp dir>/<prefix>-<pid>-<test name>, so tests
// running at once (ctest -j) or one after another never see each other's files. The caller removes
// it when done.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace kgpu::test {

inline std::filesystem::path fresh_test_folder(const std::string& prefix) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto folder = std::filesystem::path(::testing::TempDir()) /
                      (prefix + "-" + std::to_string(::getpid()) + "-" + (test ? test->name() : "none"));
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  return folder;
}

}  // namespace kgpu::test
