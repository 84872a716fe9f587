#include "e2e/grpc_go_peer.h"

#include <signal.h>

#include <atomic>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kgpu::test {

namespace {

// Each run gets its own log and request files in the test's folder.
std::string next_name(const std::string& stem) {
  static std::atomic<int> counter{0};
  return stem + "-" + std::to_string(counter++);
}

std::string unhex(const std::string& hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return out + "<not hex: " + hex + ">";
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

// The complete lines of `text` (a last line still being written is left out).
std::vector<std::string> complete_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

void write_whole(const std::string& path, const std::string& bytes) {
  // Written beside and renamed over, so a reader never sees half an answer.
  std::string tmp = path + ".new";
  std::ofstream(tmp, std::ios::binary) << bytes;
  std::filesystem::rename(tmp, path);
}

}  // namespace

std::string grpc_go_peer() { return KGPU_GRPC_GO_PEER; }

const char* style_name(DialStyle style) {
  switch (style) {
    case DialStyle::Old: return "old";
    case DialStyle::New: return "new";
    case DialStyle::Unix: return "unix";
  }
  return "?";
}

void PrintTo(DialStyle style, std::ostream* os) { *os << style_name(style); }

std::string expected_authority(DialStyle style, const std::string& socket) {
  return style == DialStyle::Old ? socket : "localhost";
}

std::string GoCall::describe() const {
  std::ostringstream s;
  s << "grpc-go client: " << messages.size() << " message(s), ";
  if (code) s << "status " << *code << " \"" << status_message << "\"";
  else if (stopped_after) s << "stopped by the client after " << *stopped_after;
  else s << "no status line";
  s << "\nits stderr:\n" << log;
  return s.str();
}

GoCall parse_client_output(const std::string& stdout_text) {
  GoCall call;
  for (const auto& line : complete_lines(stdout_text)) {
    if (starts_with(line, "msg ")) {
      call.messages.push_back(unhex(line.substr(4)));
    } else if (starts_with(line, "status ")) {
      int code = -1;
      auto [end, ec] = std::from_chars(line.data() + 7, line.data() + line.size(), code);
      call.code = ec == std::errc{} ? code : -1;  // -1: a line the peer cannot have written
      call.status_message = end < line.data() + line.size() ? std::string(end + 1, line.data() + line.size()) : "";
    } else if (starts_with(line, "stopped ")) {
      size_t n = 0;
      std::from_chars(line.data() + 8, line.data() + line.size(), n);
      call.stopped_after = n;
    }
  }
  return call;
}

GoClient::GoClient(const Options& options, const std::string& work_dir) {
  const std::string name = next_name("grpc-go-client");
  const std::string request_file = work_dir + "/" + name + ".request";
  std::ofstream(request_file, std::ios::binary) << options.request;
  ProcessOptions p;
  p.argv = {grpc_go_peer(), "client", "--socket", options.socket, "--style", style_name(options.style),
            "--method", options.method, "--request-file", request_file,
            "--timeout", std::to_string(options.timeout.count()) + "s"};
  if (options.stream) p.argv.insert(p.argv.end(), {"--stream", "--count", std::to_string(options.count)});
  process_ = std::make_unique<ChildProcess>(std::move(p), work_dir, name);
}

GoCall GoClient::now() const {
  GoCall call = parse_client_output(process_->stdout_text());
  call.log = process_->stderr_text();
  return call;
}

bool GoClient::wait_messages(size_t n, std::chrono::milliseconds timeout) {
  wait_until([&] { return now().messages.size() >= n || !process_->running(); }, timeout);
  return now().messages.size() >= n;
}

GoCall GoClient::finish(std::chrono::milliseconds timeout) {
  if (!process_->wait_exit(timeout)) {
    process_->signal(SIGKILL);
    process_->wait_exit(std::chrono::seconds(5));
  }
  return now();
}

GoCall go_call(DialStyle style, const std::string& socket, const std::string& method, const std::string& request,
               const std::string& work_dir) {
  GoClient::Options options;
  options.style = style;
  options.socket = socket;
  options.method = method;
  options.request = request;
  return GoClient(options, work_dir).finish();
}

GoServer::GoServer(const std::string& socket, const std::map<std::string, std::string>& answers,
                   const std::string& work_dir, const std::string& name) {
  ProcessOptions p;
  p.argv = {grpc_go_peer(), "server", "--socket", socket};
  for (const auto& [method, bytes] : answers) {
    const std::string file = work_dir + "/" + next_name(name + "-answer");
    write_whole(file, bytes);
    answer_files_[method] = file;
    p.argv.insert(p.argv.end(), {"--respond", method + "=@" + file});
  }
  process_ = std::make_unique<ChildProcess>(std::move(p), work_dir, name);
}

bool GoServer::wait_listening(std::chrono::milliseconds timeout) {
  return wait_until([&] { return process_->stdout_text().find("listening ") != std::string::npos; }, timeout);
}

void GoServer::answer(const std::string& method, const std::string& bytes) {
  write_whole(answer_files_.at(method), bytes);
}

std::vector<GoServedCall> GoServer::calls() const {
  std::vector<GoServedCall> out;
  for (const auto& line : complete_lines(process_->stdout_text())) {
    if (!starts_with(line, "call ")) continue;
    // call <method> request=<hex> authority=<the rest of the line>
    size_t request = line.find(" request=");
    size_t authority = line.find(" authority=");
    if (request == std::string::npos || authority == std::string::npos) continue;
    out.push_back({line.substr(5, request - 5), line.substr(authority + 11),
                   unhex(line.substr(request + 9, authority - request - 9))});
  }
  return out;
}

std::vector<GoServedCall> GoServer::calls(const std::string& method) const {
  std::vector<GoServedCall> out;
  for (auto& c : calls())
    if (c.method == method) out.push_back(std::move(c));
  return out;
}

bool GoServer::wait_calls(const std::string& method, size_t n, std::chrono::milliseconds timeout) {
  return wait_until([&] { return calls(method).size() >= n; }, timeout);
}

std::string GoServer::log() const {
  return "grpc-go server stdout:\n" + process_->stdout_text() + "grpc-go server stderr:\n" + process_->stderr_text();
}

}  // namespace kgpu::test
