#include "core/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace kgpu {
namespace {

// %* in a pattern: the log message escaped as a JSON string body, so JSON lines stay valid
// whatever a message contains (quotes in device names, paths with backslashes).
class JsonEscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    for (char c : msg.payload) {
      switch (c) {
        case '"': dest.append(std::string_view("\\\"")); break;
        case '\\': dest.append(std::string_view("\\\\")); break;
        case '\n': dest.append(std::string_view("\\n")); break;
        case '\t': dest.append(std::string_view("\\t")); break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            fmt::format_to(std::back_inserter(dest), "\\u{:04x}", static_cast<unsigned>(c));
          } else {
            dest.push_back(c);
          }
      }
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonEscapedMessage>();
  }
};

}  // namespace

void configure_logging(const LogOptions& options) {
  // stderr, so that subcommands which print results (devices, labels, probe) keep stdout clean.
  auto logger = spdlog::get("kgpu");
  if (!logger) logger = spdlog::stderr_logger_mt("kgpu");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(options.level));
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (options.format == "json") {
    formatter->add_flag<JsonEscapedMessage>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%*"})");
  } else {
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %v");
  }
  spdlog::set_formatter(std::move(formatter));
  spdlog::flush_on(spdlog::level::trace);
}

}  // namespace kgpu
