// ApiClient on kgpu's HTTP client: what the port onto src/http must keep (the CA file, a watch's
// error answer cut to 4 KiB, stop() in the TLS handshake) and what it changed (no thread of its
// own per request: the deadline and stop() are polled next to the socket).
#include "kube/api_request.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "support/eventually.h"
#include "support/tls_cert.h"
#include "unit/http/test_servers.h"

namespace kgpu::kube {
namespace {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kgpu-api-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

ApiServer server_at(const std::string& base_url, const std::string& ca_file = "") {
  return ApiServer{base_url, "", ca_file, ""};
}

size_t threads_of_this_process() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// How many connections from this process to `port` are established (/proc/net/tcp, state 01).
int established_to(int port) {
  char port_hex[8];
  std::snprintf(port_hex, sizeof port_hex, "%04X", port);
  int n = 0;
  std::ifstream tcp("/proc/net/tcp");
  for (std::string line; std::getline(tcp, line);) {
    // "  sl  local_address rem_address   st ...": the remote address is the third column.
    std::istringstream fields(line);
    std::string sl, local, remote, state;
    fields >> sl >> local >> remote >> state;
    if (remote.size() > 5 && remote.substr(remote.size() - 4) == port_hex && state == "01") ++n;
  }
  return n;
}

// A server whose /hold answers only once released, counting the requests that reached it.
class HoldingServer {
 public:
  HoldingServer() {
    server_.Get("/hold", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock lock(mu_);
      ++arrived_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
      res.set_content("{}", "application/json");
    });
    server_.Get("/now", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{}", "application/json");
    });
    running_.emplace(server_);  // after the handlers: they are not to change while it serves
  }
  ~HoldingServer() { release(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(running_->port()); }
  bool wait_arrived(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 5s, [&] { return arrived_ >= n; });
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  bool released_ = false;
  httplib::Server server_;
  std::optional<http::test::Running> running_;
};

// Regression (issue 14): every request started a watchdog thread for its deadline and for stop(),
// which cost a thread start per request and a thread per request in flight.
TEST(ApiClient, ARequestInFlightHasNoThreadOfItsOwn) {
  HoldingServer api;
  Interrupter interrupter;
  ApiClient client(server_at(api.url()), interrupter);
  auto warm_up = client.get("/now", 5s, 1024);  // the server's thread pool is up once this answered
  ASSERT_TRUE(warm_up.ok()) << warm_up.error().message;
  ASSERT_EQ(warm_up->status, 200);
  const size_t before = threads_of_this_process();

  std::optional<Result<ApiAnswer>> held;
  std::thread caller([&] { held = client.get("/hold", 30s, 1024); });
  ASSERT_TRUE(api.wait_arrived(1));
  EXPECT_EQ(threads_of_this_process(), before + 1) << "only the caller's thread; no watchdog beside it";
  api.release();
  caller.join();
  ASSERT_TRUE(held.has_value());
  ASSERT_TRUE(held->ok()) << held->error().message;
  EXPECT_EQ((*held)->status, 200);
}

TEST(ApiClient, AWatchAnsweredWithAnErrorStatusKeepsTheStatusAndTheStartOfTheBody) {
  httplib::Server server;
  server.Get("/watch", [](const httplib::Request&, httplib::Response& res) {
    res.status = 500;
    res.set_content(std::string(10 * 1024, 'x'), "application/json");
  });
  http::test::Running running(server);
  Interrupter interrupter;
  ApiClient client(server_at("http://127.0.0.1:" + std::to_string(running.port())), interrupter);
  int lines = 0;
  auto answer = client.stream_lines("/watch", 5s, 1 << 20, [&](std::string_view) {
    ++lines;
    return true;
  });
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->status, 500);
  EXPECT_EQ(answer->body, std::string(4096, 'x'));
  EXPECT_EQ(lines, 0);
}

TEST(ApiClient, VerifiesTheServerAgainstTheCaFile) {
  TempDir dir;
  auto files = kgpu::test::make_self_signed_cert(dir.path(), "api", "IP:127.0.0.1");
  auto other = kgpu::test::make_self_signed_cert(dir.path(), "other", "IP:127.0.0.1");
  httplib::SSLServer server(files.cert.c_str(), files.key.c_str());
  http::test::add_handlers(server);
  http::test::Running running(server);
  const std::string url = "https://127.0.0.1:" + std::to_string(running.port());
  Interrupter interrupter;

  ApiClient trusting(server_at(url, files.cert), interrupter);
  auto answer = trusting.get("/length", 5s, 1024);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->status, 200);
  EXPECT_EQ(answer->body, "hello world");

  ApiClient distrusting(server_at(url, other.cert), interrupter);
  auto refused = distrusting.get("/length", 5s, 1024);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("/length"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("verif"), std::string::npos) << refused.error().message;
}

TEST(ApiClient, StopEndsATlsHandshakeThatGetsNoAnswer) {
  TempDir dir;
  auto files = kgpu::test::make_self_signed_cert(dir.path(), "api", "IP:127.0.0.1");
  http::test::SilentListener silent;  // the TCP connect succeeds, the ClientHello is never answered
  Interrupter interrupter;
  ApiClient client(server_at("https://127.0.0.1:" + std::to_string(silent.port()), files.cert), interrupter);
  std::optional<Result<ApiAnswer>> answer;
  std::thread caller([&] { answer = client.get("/api/v1/nodes/n1", 30s, 1024); });
  EXPECT_TRUE(test::eventually([&] { return established_to(silent.port()) > 0; }, 5s));
  const auto t0 = std::chrono::steady_clock::now();
  interrupter.stop();
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  ASSERT_TRUE(answer.has_value());
  ASSERT_FALSE(answer->ok());
  EXPECT_NE(answer->error().message.find("stopping"), std::string::npos) << answer->error().message;
  // And a request after stop() is refused without connecting.
  auto later = client.get("/api/v1/nodes/n1", 30s, 1024);
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.error().message.find("stopping"), std::string::npos) << later.error().message;
}

TEST(ApiClient, AnUnusableUrlIsAnErrorNamingTheRequest) {
  Interrupter interrupter;
  ApiClient client(server_at("ftp://api.example"), interrupter);
  auto answer = client.get("/api/v1/nodes/n1", 1s, 1024);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().code, Error::Code::InvalidArgument);
  EXPECT_NE(answer.error().message.find("GET ftp://api.example/api/v1/nodes/n1"), std::string::npos)
      << answer.error().message;
}

}  // namespace
}  // namespace kgpu::kube
