// The HTTP client over TLS against cpp-httplib's SSLServer, with certificates made at test time.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <future>
#include <vector>

#include "http/client.h"
#include "support/tls_cert.h"
#include "test_servers.h"

namespace kgpu::http {
namespace {

using namespace std::chrono_literals;
using test::get;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kgpu-http-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class HttpsClient : public ::testing::Test {
 protected:
  HttpsClient() { test::add_handlers(server_); }
  std::string base() const { return "https://127.0.0.1:" + std::to_string(running_.port()); }
  Request get_ok(const std::string& target) {
    auto r = get(base(), target);
    r.ca_file = server_files_.cert;
    return r;
  }

  TempDir dir_;
  kgpu::test::TlsFiles server_files_ = kgpu::test::make_self_signed_cert(dir_.path(), "server", "IP:127.0.0.1");
  httplib::SSLServer server_{server_files_.cert.c_str(), server_files_.key.c_str()};
  test::Running running_{server_};
};

TEST_F(HttpsClient, GetWithContentLength) {
  ASSERT_TRUE(server_.is_valid());
  auto res = request(get_ok("/length"));
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "hello world");
}

TEST_F(HttpsClient, ChunkedAndPost) {
  auto chunked = request(get_ok("/chunked"));
  ASSERT_TRUE(chunked) << chunked.error().message;
  EXPECT_EQ(chunked->body, "part-part-part-");
  auto r = get_ok("/echo");
  r.method = "POST";
  r.body = std::string(100000, 'p');  // several TLS records each way
  auto echoed = request(r);
  ASSERT_TRUE(echoed) << echoed.error().message;
  EXPECT_EQ(echoed->body, r.body);
}

TEST_F(HttpsClient, StreamedLinesEndWhenTheCallbackSaysSo) {
  auto r = get_ok("/lines");
  int lines = 0;
  r.on_line = [&](std::string_view line) {
    EXPECT_TRUE(line.starts_with("{\"n\":")) << line;
    return ++lines < 5;
  };
  auto res = request(r);
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_TRUE(res->stopped);
  EXPECT_EQ(lines, 5);
}

TEST_F(HttpsClient, WrongCaIsAVerificationError) {
  auto other = kgpu::test::make_self_signed_cert(dir_.path(), "other", "IP:127.0.0.1");
  auto r = get(base(), "/length");
  r.ca_file = other.cert;
  auto res = request(r);
  ASSERT_FALSE(res);
  EXPECT_NE(res.error().message.find("TLS certificate verification of 127.0.0.1:" + std::to_string(running_.port()) +
                                     " failed: self-signed certificate"),
            std::string::npos)
      << res.error().message;
}

TEST_F(HttpsClient, NameNotInTheCertificateIsAVerificationError) {
  auto r = get("https://localhost:" + std::to_string(running_.port()), "/length");
  r.ca_file = server_files_.cert;  // the right CA, but the certificate names only IP 127.0.0.1
  auto res = request(r);
  ASSERT_FALSE(res);
  EXPECT_NE(res.error().message.find("certificate verification of localhost"), std::string::npos)
      << res.error().message;
  EXPECT_NE(res.error().message.find("mismatch"), std::string::npos) << res.error().message;
}

TEST(HttpsClientNames, DnsNameIsVerifiedAndSentAsSni) {
  TempDir dir;
  auto files = kgpu::test::make_self_signed_cert(dir.path(), "named", "DNS:localhost");
  httplib::SSLServer server(files.cert.c_str(), files.key.c_str());
  server.Get("/sni", [&](const httplib::Request& req, httplib::Response& res) {
    const char* name = SSL_get_servername(req.ssl, TLSEXT_NAMETYPE_host_name);
    res.set_content(name != nullptr ? name : "(none)", "text/plain");
  });
  test::Running running(server);
  // localhost may resolve to ::1 first, where nothing listens: the next address is tried.
  auto r = get("https://localhost:" + std::to_string(running.port()), "/sni");
  r.ca_file = files.cert;
  auto res = request(r);
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_EQ(res->body, "localhost");
}

TEST_F(HttpsClient, MissingCaFileIsAnError) {
  auto r = get(base(), "/length");
  r.ca_file = dir_.path() + "/absent.crt";
  auto res = request(r);
  ASSERT_FALSE(res);
  EXPECT_NE(res.error().message.find("cannot load CA file '" + r.ca_file + "'"), std::string::npos)
      << res.error().message;
}

TEST(HttpsClientFailures, StalledHandshakeEndsAtTheDeadlineOrOnCancel) {
  test::SilentListener silent;
  const std::string base = "https://127.0.0.1:" + std::to_string(silent.port());
  const auto start = std::chrono::steady_clock::now();
  auto res = request(get(base, "/", 300ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms + 2s);
  ASSERT_FALSE(res);
  EXPECT_NE(res.error().message.find("deadline passed while doing the TLS handshake"), std::string::npos)
      << res.error().message;

  auto canceller = Canceller::create();
  ASSERT_TRUE(canceller);
  auto r = get(base, "/", 60s);
  r.canceller = &*canceller;
  auto in_flight = std::async(std::launch::async, [&] { return request(r); });
  UniqueFd first(::accept4(silent.fd(), nullptr, nullptr, SOCK_CLOEXEC));   // the timed-out request's
  UniqueFd second(::accept4(silent.fd(), nullptr, nullptr, SOCK_CLOEXEC));  // this one's: it is in flight
  canceller->cancel();
  ASSERT_EQ(in_flight.wait_for(5s), std::future_status::ready) << "cancel() did not end the handshake";
  auto cancelled = in_flight.get();
  ASSERT_FALSE(cancelled);
  EXPECT_NE(cancelled.error().message.find("cancelled while"), std::string::npos) << cancelled.error().message;
}

}  // namespace
}  // namespace kgpu::http
