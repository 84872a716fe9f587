// Logging (issue 30, item 7): JSON records carry gpu/uuid/xid/resource fields, blank records are
// dropped, text timestamps say UTC.
#include "core/logging.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace kgpu {
namespace {

TEST(LogFields, TakeTheUuidsXidAndResourceAMessageNames) {
  auto f = log_fields("GPU-8f2e4b1d-3c6a-4d5e-9f70-1a2b3c4d5e21::3: unhealthy: XID 79 (GPU has fallen off the bus) on nvidia.com/gpu.shared.");
  EXPECT_EQ(f.gpu, "GPU-8f2e4b1d-3c6a-4d5e-9f70-1a2b3c4d5e21");
  EXPECT_EQ(f.uuid, "GPU-8f2e4b1d-3c6a-4d5e-9f70-1a2b3c4d5e21");
  EXPECT_EQ(f.xid, 79u);
  EXPECT_EQ(f.resource, "nvidia.com/gpu.shared");
  f = log_fields("MIG-5d1a3c0e-9b7f-4e2a-8c61-0f3d2b7a9e10 of GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee: XID 94");
  EXPECT_EQ(f.uuid, "MIG-5d1a3c0e-9b7f-4e2a-8c61-0f3d2b7a9e10");
  EXPECT_EQ(f.gpu, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
}

TEST(LogFields, PathsAndLookAlikesAreNotFields) {
  auto f = log_fields("cannot open /var/lib/kubelet/device-plugins/kgpu-nvidia.com-gpu.sock: XIDs are off; NOTGPU-12345678");
  EXPECT_EQ(f, LogFields{});
  f = log_fields("mounted /run/nvidia.com/x and XID abc");
  EXPECT_EQ(f.resource, "");
  EXPECT_FALSE(f.xid);
}

// Runs `body` with stderr redirected to a file; returns what was written.
std::string captured_stderr(const std::function<void()>& body) {
  std::fflush(stderr);
  const std::string path = ::testing::TempDir() + "/kgpu-log-" + std::to_string(::getpid());
  const int saved = ::dup(2);
  FILE* file = std::fopen(path.c_str(), "w");
  EXPECT_NE(file, nullptr);
  ::dup2(::fileno(file), 2);
  body();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::fclose(file);
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::remove(path.c_str());
  return text.str();
}

TEST(Logging, JsonRecordsCarryFieldsAndBlankOnesAreDropped) {
  configure_logging({"info", "json"});
  const std::string out = captured_stderr([] {
    spdlog::info("");
    spdlog::info("  ");
    spdlog::warn("GPU-8f2e4b1d-3c6a-4d5e-9f70-1a2b3c4d5e21: unhealthy: XID 79 on nvidia.com/gpu");
  });
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find(R"("level":"warning","msg":"GPU-8f2e4b1d-3c6a-4d5e-9f70-1a2b3c4d5e21: unhealthy: XID 79 on nvidia.com/gpu","gpu":"GPU-8f2e4b1d-3c6a-4d5e-9f70-1a2b3c4d5e21","uuid":"GPU-8f2e4b1d-3c6a-4d5e-9f70-1a2b3c4d5e21","xid":79,"resource":"nvidia.com/gpu"})"),
            std::string::npos)
      << out;
}

TEST(Logging, TextTimestampsSayUtc) {
  configure_logging({"info", "text"});
  const std::string out = captured_stderr([] { spdlog::info("hello"); });
  // 2026-01-02T03:04:05.678Z info  hello
  ASSERT_GE(out.size(), 24u) << out;
  EXPECT_EQ(out[10], 'T') << out;
  EXPECT_EQ(out.substr(23, 2), "Z ") << out;
  EXPECT_NE(out.find("info  hello\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace kgpu
