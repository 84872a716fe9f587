#include "core/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>
#include <mutex>

namespace kgpu {
namespace {

bool word_start(std::string_view s, size_t at) {
  return at == 0 || !(std::isalnum(static_cast<unsigned char>(s[at - 1])) || s[at - 1] == '/' ||
                      s[at - 1] == '-' || s[at - 1] == '.' || s[at - 1] == '_');
}

// The UUID starting at `at` ("GPU-" or "MIG-" then hex digits and dashes), empty when too short.
std::string uuid_at(std::string_view s, size_t at) {
  size_t end = at + 4;
  while (end < s.size() && (std::isxdigit(static_cast<unsigned char>(s[end])) || s[end] == '-')) ++end;
  if (end - at < 12) return {};
  return std::string(s.substr(at, end - at));
}

void find_uuids(std::string_view s, LogFields& f) {
  for (size_t at = 0; at + 4 < s.size() && f.gpu.empty(); ++at) {
    const bool gpu = s.compare(at, 4, "GPU-") == 0, mig = s.compare(at, 4, "MIG-") == 0;
    if ((!gpu && !mig) || !word_start(s, at)) continue;
    std::string u = uuid_at(s, at);
    if (u.empty()) continue;
    if (f.uuid.empty()) f.uuid = u;
    if (gpu) f.gpu = u;
  }
}

void find_xid(std::string_view s, LogFields& f) {
  for (size_t at = s.find("XID "); at != std::string_view::npos; at = s.find("XID ", at + 4)) {
    size_t end = at + 4;
    uint64_t n = 0;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])) && end - at < 14)
      n = n * 10 + static_cast<uint64_t>(s[end++] - '0');
    if (end > at + 4 && word_start(s, at)) {
      f.xid = n;
      return;
    }
  }
}

bool domain_char(char c) {
  return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
         c == '-';
}
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'; }

void find_resource(std::string_view s, LogFields& f) {
  for (size_t slash = s.find('/'); slash != std::string_view::npos; slash = s.find('/', slash + 1)) {
    size_t begin = slash;
    while (begin > 0 && domain_char(s[begin - 1])) --begin;
    const std::string_view domain = s.substr(begin, slash - begin);
    if (domain.find('.') == std::string_view::npos || domain.front() == '.' || domain.back() == '.' ||
        !word_start(s, begin))
      continue;
    size_t end = slash + 1;
    while (end < s.size() && name_char(s[end])) ++end;
    while (end > slash + 1 && (s[end - 1] == '.' || s[end - 1] == '-')) --end;  // a sentence's full stop
    if (end == slash + 1 || (end < s.size() && s[end] == '/')) continue;  // a path, not a resource
    f.resource = std::string(s.substr(begin, end - begin));
    return;
  }
}

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

// %& in a pattern: the message's fields (log_fields) as extra JSON members. Their characters are
// restricted to ones JSON strings take unescaped.
class JsonFields final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const LogFields f = log_fields(std::string_view(msg.payload.data(), msg.payload.size()));
    if (!f.gpu.empty()) fmt::format_to(std::back_inserter(dest), ",\"gpu\":\"{}\"", f.gpu);
    if (!f.uuid.empty()) fmt::format_to(std::back_inserter(dest), ",\"uuid\":\"{}\"", f.uuid);
    if (f.xid) fmt::format_to(std::back_inserter(dest), ",\"xid\":{}", *f.xid);
    if (!f.resource.empty()) fmt::format_to(std::back_inserter(dest), ",\"resource\":\"{}\"", f.resource);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonFields>(); }
};

// stderr, skipping records whose message is blank: an empty line or `{"msg":""}` says nothing
// and trips line-based log pipelines.
class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return;
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

}  // namespace

LogFields log_fields(std::string_view message) {
  LogFields f;
  find_uuids(message, f);
  find_xid(message, f);
  find_resource(message, f);
  return f;
}

void configure_logging(const LogOptions& options) {
  // stderr, so that subcommands which print results (devices, labels, probe) keep stdout clean.
  auto logger = spdlog::get("kgpu");
  if (!logger) {
    logger = std::make_shared<spdlog::logger>("kgpu", std::make_shared<StderrSink>());
    spdlog::register_logger(logger);
  }
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(options.level));
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  if (options.format == "json") {
    formatter->add_flag<JsonEscapedMessage>('*');
    formatter->add_flag<JsonFields>('&');
    formatter->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%*"%&})");
  } else {
    // UTC, and the Z says so: a reader in another zone must not guess.
    formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%-5l%$ %v");
  }
  spdlog::set_formatter(std::move(formatter));
  spdlog::flush_on(spdlog::level::trace);
}

}  // namespace kgpu
