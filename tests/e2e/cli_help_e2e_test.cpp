// The command line as an operator meets it (issue 30, item 5): `--help` of every subcommand is
// checked against a golden file (tests/fixtures/golden/help/<command>.txt; regenerate with
// KGPU_UPDATE_GOLDEN=1 after a deliberate change and read the diff), each subcommand lists only its
// own flags with their real type and default, usage errors exit 2 with a did-you-mean, and
// `kgpu version` names the commit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "e2e/harness.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;

struct CliResult {
  int rc = -1;
  std::string out, err;
};

class CliHelpE2E : public ::testing::Test {
 protected:
  CliResult kgpu(std::vector<std::string> args, const std::string& name) {
    ProcessOptions p;
    p.argv = {kgpu_binary()};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    // Help must not depend on the caller's environment.
    p.unset_env = {"KGPU_LOG_LEVEL", "KGPU_LOG_FORMAT", "COLUMNS"};
    ChildProcess child(p, work.path(), name);
    auto rc = child.wait_exit(20s);
    return {rc.value_or(-1), child.stdout_text(), child.stderr_text()};
  }
  TempDir work{"kgpu-help"};
};

std::string golden_path(const std::string& command) {
  std::string name = command.empty() ? "kgpu" : command;
  for (char& c : name)
    if (c == ' ') c = '_';
  return std::string(KGPU_FIXTURES_DIR) + "/golden/help/" + name + ".txt";
}

// The subcommands `kgpu --help` (or a group's --help) lists.
std::vector<std::string> listed_subcommands(const std::string& help) {
  std::vector<std::string> out;
  std::istringstream in(help.substr(help.find("Subcommands:") == std::string::npos ? help.size()
                                                                                    : help.find("Subcommands:")));
  std::string line;
  std::getline(in, line);
  static const std::regex entry(R"(^  ([a-z][a-z-]*)\s)");
  for (std::smatch m; std::getline(in, line);)
    if (std::regex_search(line, m, entry)) out.push_back(m[1]);
  return out;
}

const std::vector<std::string>& commands() {
  static const std::vector<std::string> all = {
      "",       "plugin",     "devices", "probe",          "labels",      "cdi",  "cdi generate", "config",
      "config validate", "mps-daemon", "kubelet-sim", "demo", "version", "node-capacity", "node-capacity set",
      "node-capacity remove"};
  return all;
}

TEST_F(CliHelpE2E, EverySubcommandsHelpMatchesItsGoldenFile) {
  const bool update = std::getenv("KGPU_UPDATE_GOLDEN") != nullptr;
  for (const auto& command : commands()) {
    SCOPED_TRACE("kgpu " + command + " --help");
    std::vector<std::string> args;
    std::istringstream words(command);
    for (std::string w; words >> w;) args.push_back(w);
    args.push_back("--help");
    auto run = kgpu(args, "help");
    ASSERT_EQ(run.rc, 0) << run.err;
    const std::string path = golden_path(command);
    if (update) {
      std::ofstream(path) << run.out;
      continue;
    }
    ASSERT_TRUE(path_exists(path)) << path << " is missing: run the test with KGPU_UPDATE_GOLDEN=1";
    EXPECT_EQ(run.out, read_file(path)) << "regenerate with KGPU_UPDATE_GOLDEN=1 if the change is meant";
  }
}

// A new subcommand cannot go without a golden file: every command the help lists is checked above.
TEST_F(CliHelpE2E, TheGoldenListCoversEveryListedSubcommand) {
  const std::set<std::string> known(commands().begin(), commands().end());
  for (const std::string group : {"", "cdi", "config", "node-capacity"}) {
    auto args = group.empty() ? std::vector<std::string>{"--help"} : std::vector<std::string>{group, "--help"};
    auto run = kgpu(args, "list");
    ASSERT_EQ(run.rc, 0) << run.err;
    auto listed = listed_subcommands(run.out);
    EXPECT_FALSE(listed.empty()) << run.out;
    for (const auto& sub : listed) {
      const std::string full = group.empty() ? sub : group + " " + sub;
      EXPECT_TRUE(known.contains(full)) << "kgpu " << full << " has no golden help file";
    }
  }
}

TEST_F(CliHelpE2E, BooleansShowTheirRealDefaultAndTypeAndSubcommandsOnlyTheirFlags) {
  auto plugin = kgpu({"plugin", "--help"}, "plugin");
  ASSERT_EQ(plugin.rc, 0);
  static const std::regex pass_specs(R"(--pass-device-specs \[=BOOL\] \(default false\))");
  EXPECT_TRUE(std::regex_search(plugin.out, pass_specs)) << plugin.out;
  EXPECT_EQ(plugin.out.find("TEXT=true"), std::string::npos) << plugin.out;
  EXPECT_NE(plugin.out.find("--fail-on-init-error [=BOOL] (default true)"), std::string::npos) << plugin.out;
  EXPECT_NE(plugin.out.find("--imex-channel-ids"), std::string::npos);

  auto labels = kgpu({"labels", "--help"}, "labels");
  ASSERT_EQ(labels.rc, 0);
  EXPECT_NE(labels.out.find("--sleep-interval"), std::string::npos) << labels.out;
  for (const char* other : {"--pass-device-specs", "--device-list-strategy", "--metrics-addr", "--dra", "--kubelet-socket"})
    EXPECT_EQ(labels.out.find(other), std::string::npos) << other << " in kgpu labels --help";
  auto cdi = kgpu({"cdi", "generate", "--help"}, "cdi");
  ASSERT_EQ(cdi.rc, 0);
  EXPECT_NE(cdi.out.find("--cdi-spec-dir"), std::string::npos);
  EXPECT_EQ(cdi.out.find("--oneshot"), std::string::npos) << cdi.out;
  // Fewer flags than the plugin: the plugin's ~50 are not repeated.
  auto count = [](const std::string& text) {
    size_t n = 0;
    for (size_t at = text.find("\n  --"); at != std::string::npos; at = text.find("\n  --", at + 1)) ++n;
    return n;
  };
  EXPECT_LT(count(labels.out) + 15, count(plugin.out));
  EXPECT_LT(count(cdi.out) + 15, count(plugin.out));
}

TEST_F(CliHelpE2E, UsageErrorsExitTwoWithADidYouMean) {
  auto typo = kgpu({"plugin", "--mig-stratgy", "mixed"}, "typo");
  EXPECT_EQ(typo.rc, 2) << typo.err;
  EXPECT_NE(typo.err.find("kgpu plugin: "), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("--mig-stratgy: did you mean --mig-strategy?"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("Run 'kgpu plugin --help'"), std::string::npos) << typo.err;

  auto bad_value = kgpu({"devices", "-o", "yaml"}, "bad-value");
  EXPECT_EQ(bad_value.rc, 2) << bad_value.err;
  auto no_command = kgpu({}, "no-command");
  EXPECT_EQ(no_command.rc, 2) << no_command.err;
  auto unknown = kgpu({"plugn"}, "unknown-command");
  EXPECT_EQ(unknown.rc, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("plugn: did you mean plugin?"), std::string::npos) << unknown.err;
  auto nested = kgpu({"config", "valdate"}, "unknown-nested-command");
  EXPECT_EQ(nested.rc, 2) << nested.err;
  EXPECT_NE(nested.err.find("valdate: did you mean validate?"), std::string::npos) << nested.err;
  EXPECT_NE(nested.err.find("Run 'kgpu config --help'"), std::string::npos) << nested.err;
}

TEST_F(CliHelpE2E, VersionNamesTheCommit) {
  auto run = kgpu({"version"}, "version");
  ASSERT_EQ(run.rc, 0) << run.err;
  static const std::regex line(R"(^kgpu \d+\.\d+\.\d+ \(commit ([0-9a-f]{7,40}|unknown)\)\n$)");
  EXPECT_TRUE(std::regex_match(run.out, line)) << run.out;
  auto flag = kgpu({"--version"}, "version-flag");
  EXPECT_EQ(flag.rc, 0);
  EXPECT_EQ(flag.out, run.out);
}

}  // namespace
}  // namespace kgpu::test
