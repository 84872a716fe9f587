// `kgpu config validate` through the real binary: output and exit status.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace {

struct CommandRun {
  int status = -1;
  std::string output;
};

CommandRun run(const std::string& args) {
  CommandRun r;
  std::string command = std::string(KGPU_BINARY) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) r.output.append(buffer, n);
  int status = ::pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const std::string kConfigs = std::string(KGPU_FIXTURES_DIR) + "/configs/";

TEST(ConfigValidateCommand, ValidFileExitsZero) {
  CommandRun r = run("config validate " + kConfigs + "kgpu-full.yaml --strict");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("kgpu-full.yaml: ok"), std::string::npos) << r.output;
}

TEST(ConfigValidateCommand, PrintsEveryProblemAndExitsOne) {
  CommandRun r = run("config validate " + kConfigs + "many-errors.yaml");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("many-errors.yaml:3:16: error: unknown MIG strategy \"foo\" (valid: none, single, mixed)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("many-errors.yaml:4:3: warning: unknown key \"mpsroot\""), std::string::npos);
  EXPECT_NE(r.output.find("many-errors.yaml:14:13: error: resource name"), std::string::npos);
}

TEST(ConfigValidateCommand, UnknownKeyFailsOnlyWhenStrict) {
  const std::string file = kConfigs + "unknown-key.yaml";
  EXPECT_EQ(run("config validate " + file).status, 0);
  CommandRun strict = run("config validate --strict " + file);
  EXPECT_EQ(strict.status, 1);
  EXPECT_NE(strict.output.find("error: unknown key \"deviceIdStrategy\" in flags.plugin; did you mean "
                               "\"deviceIDStrategy\"?"),
            std::string::npos)
      << strict.output;
}

TEST(ConfigValidateCommand, PrintsTheDaemonsWarningsForKeysWithoutEffect) {
  // The daemon logs "has no effect in kgpu" for these at start; validate says so too (issue 41).
  char path[] = "/tmp/kgpu-validate-XXXXXX.yaml";
  const int fd = ::mkstemps(path, 5);
  ASSERT_GE(fd, 0);
  const std::string text = "version: v1\nflags:\n  deviceDiscoveryStrategy: tegra\n";
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  CommandRun r = run(std::string("config validate ") + path);
  ::unlink(path);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(std::string(path) + ": warning: flags.deviceDiscoveryStrategy = tegra (file"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("has no effect in kgpu"), std::string::npos) << r.output;
}

}  // namespace
