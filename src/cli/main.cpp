// kgpu: one executable, many subcommands (see DESIGN.md). Subcommands register themselves.
// Usage errors (an unknown or misspelled flag or subcommand, a missing or bad value) exit 2 with the
// subcommand's name, a did-you-mean for a misspelled flag or subcommand, and where to find the help;
// --help and --version exit 0.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "config/diagnostics.h"
#include "core/logging.h"
#include "kgpu_commit.h"

namespace kgpu::cli {
namespace {
std::vector<CommandSetup>& registry() {
  static std::vector<CommandSetup> commands;
  return commands;
}
int g_exit_code = 0;

// The deepest subcommand the parser had entered ("kgpu plugin", "kgpu cdi generate").
const CLI::App* innermost(const CLI::App* app) {
  for (const CLI::App* sub : app->get_subcommands())
    if (sub->parsed()) return innermost(sub);
  return app;
}

std::string command_path(const CLI::App* app) {
  std::string path = app->get_name();
  for (const CLI::App* p = app->get_parent(); p; p = p->get_parent()) path = p->get_name() + " " + path;
  return path;
}

// The words CLI11 names as not expected ("... not expected: devcies, --mig-stratgy=x"), flags
// without their "=value".
std::vector<std::string> unexpected_words(const std::string& message) {
  std::vector<std::string> out;
  const auto colon = message.find(':');
  if (colon == std::string::npos) return out;
  std::string rest = message.substr(colon + 1);
  size_t pos = 0;
  while (pos < rest.size()) {
    while (pos < rest.size() && (rest[pos] == ' ' || rest[pos] == ',')) ++pos;
    size_t end = rest.find_first_of(" ,", pos);
    if (end == std::string::npos) end = rest.size();
    std::string word = rest.substr(pos, end - pos);
    if (word.size() > 1 && word[0] == '-') out.push_back(word.substr(0, word.find('=')));
    else if (!word.empty()) out.push_back(word);
    pos = end;
  }
  return out;
}

// Every flag spelling `app` accepts ("--mig-strategy", "-o").
std::vector<std::string> flag_names(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::App* a = app; a; a = a->get_parent())  // parents' options fall through
    for (const CLI::Option* opt : a->get_options()) {
      for (const auto& l : opt->get_lnames()) out.push_back("--" + l);
      for (const auto& s : opt->get_snames()) out.push_back("-" + s);
    }
  return out;
}

// The names of `app`'s own subcommands ("plugin", "devices"; "generate" under "cdi").
std::vector<std::string> subcommand_names(const CLI::App* app) {
  std::vector<std::string> out;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; }))
    out.push_back(sub->get_name());
  return out;
}

int usage_error(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* where = innermost(&app);
  std::cerr << command_path(where) << ": " << e.what() << "\n";
  const auto flags = flag_names(where);
  const auto commands = subcommand_names(where);
  auto words = unexpected_words(e.what());
  // "A subcommand is required" names no word: the ones the parser left over are the misspelling.
  // (Left over in the subcommand, or in a parent: `kgpu config valdate` leaves it to kgpu.)
  if (!commands.empty())
    for (const CLI::App* a = where; a; a = a->get_parent())
      for (const auto& left : a->remaining())
        if (!left.empty() && left[0] != '-' && std::find(words.begin(), words.end(), left) == words.end())
          words.push_back(left);
  for (const auto& word : words) {
    // A misspelled flag, or a misspelled subcommand ("kgpu devcies": did you mean devices?).
    const std::string guess = closest_match(word, word[0] == '-' ? flags : commands);
    if (!guess.empty()) std::cerr << "  " << word << ": did you mean " << guess << "?\n";
  }
  std::cerr << "Run '" << command_path(where) << " --help' for the flags it takes.\n";
  return 2;
}
}  // namespace

int add_command(CommandSetup setup) {
  registry().push_back(setup);
  return static_cast<int>(registry().size());
}
void set_exit_code(int code) { g_exit_code = code; }

}  // namespace kgpu::cli

int main(int argc, char** argv) {
  CLI::App app{"kgpu: a GPU device plugin and feature labeller for Kubernetes", "kgpu"};
  app.set_version_flag("--version", std::string("kgpu ") + KGPU_VERSION + " (commit " + KGPU_COMMIT + ")");
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand: `kgpu plugin --log-format json`
  kgpu::LogOptions log_options;
  app.add_option("--log-level", log_options.level, "trace|debug|info|warn|error")
      ->envname("KGPU_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--log-format", log_options.format, "text|json")
      ->envname("KGPU_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}));
  app.parse_complete_callback([&] { kgpu::configure_logging(log_options); });
  for (auto setup : kgpu::cli::registry()) setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return kgpu::cli::usage_error(app, e);
  }
  return kgpu::cli::g_exit_code;
}
