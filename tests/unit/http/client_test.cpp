// The HTTP client against cpp-httplib's server over loopback (plain HTTP), and against listeners
// that misbehave: stall, refuse, get cancelled.
#include "http/client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <future>
#include <vector>

#include "test_servers.h"

namespace kgpu::http {
namespace {

using namespace std::chrono_literals;
using test::get;

class HttpClient : public ::testing::Test {
 protected:
  HttpClient() { test::add_handlers(server_); }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(running_.port()); }

  httplib::Server server_;
  test::Running running_{server_};
};

TEST_F(HttpClient, GetWithContentLength) {
  auto res = request(get(base(), "/length"));
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "hello world");
  EXPECT_EQ(res->headers.at("content-length"), "11");
  EXPECT_EQ(res->headers.at("content-type"), "text/plain");
  EXPECT_FALSE(res->stopped);
}

TEST_F(HttpClient, ChunkedBody) {
  auto res = request(get(base(), "/chunked"));
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_EQ(res->headers.at("transfer-encoding"), "chunked");
  EXPECT_EQ(res->body, "part-part-part-");
}

TEST_F(HttpClient, AnyStatusIsAnAnswer) {
  auto res = request(get(base(), "/status"));
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ(res->body, "{\"reason\":\"Forbidden\"}");
  auto missing = request(get(base(), "/nowhere"));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(HttpClient, PostSendsTheBody) {
  auto r = get(base(), "/echo");
  r.method = "POST";
  r.body = "{\"a\":1}";
  r.headers = {{"Content-Type", "application/json"}};
  auto res = request(r);
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_EQ(res->body, "{\"a\":1}");
}

TEST_F(HttpClient, BearerTokenAndHeadersAreSent) {
  auto r = get(base(), "/headers");
  r.bearer_token = "t0k3n";
  r.headers = {{"Accept", "application/json"}};
  auto res = request(r);
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_EQ(res->body, "Bearer t0k3n|application/json|127.0.0.1:" + std::to_string(running_.port()));
}

TEST_F(HttpClient, StreamedLinesEndWhenTheCallbackSaysSo) {
  auto r = get(base(), "/lines");
  std::vector<std::string> lines;
  r.on_line = [&](std::string_view line) {
    lines.emplace_back(line);
    return lines.size() < 3;
  };
  auto res = request(r);
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_TRUE(res->stopped);
  EXPECT_EQ(res->status, 200);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "{\"n\":0}");
  EXPECT_TRUE(lines[2].starts_with("{\"n\":") && lines[2].ends_with("}")) << lines[2];
  EXPECT_TRUE(res->body.empty());
}

TEST_F(HttpClient, StreamedChunksEndWhenTheCallbackSaysSo) {
  auto r = get(base(), "/chunked");
  std::string seen;
  r.on_chunk = [&](std::string_view bytes) {
    seen.append(bytes);
    return seen.size() < 5;
  };
  auto res = request(r);
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_TRUE(res->stopped);
  EXPECT_EQ(seen, "part-");
}

TEST_F(HttpClient, StreamedErrorStatusIsCollectedNotStreamed) {
  auto r = get(base(), "/status");
  bool called = false;
  r.on_line = [&](std::string_view) { return called = true; };
  auto res = request(r);
  ASSERT_TRUE(res) << res.error().message;
  EXPECT_FALSE(called);
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ(res->body, "{\"reason\":\"Forbidden\"}");
}

TEST_F(HttpClient, BodyOverMaxBodyIsAnError) {
  auto r = get(base(), "/big");
  r.max_body = 1000;
  auto res = request(r);
  ASSERT_FALSE(res);
  EXPECT_NE(res.error().message.find("larger than 1000 bytes"), std::string::npos) << res.error().message;
  EXPECT_NE(res.error().message.find("GET http://127.0.0.1"), std::string::npos) << res.error().message;
}

TEST_F(HttpClient, LineOverMaxBodyIsAnError) {
  auto r = get(base(), "/big");  // 200 with one 1 MiB "line"
  r.max_body = 4096;
  r.on_line = [](std::string_view) { return true; };
  auto res = request(r);
  ASSERT_FALSE(res);
  EXPECT_NE(res.error().message.find("longer than 4096 bytes"), std::string::npos) << res.error().message;
}

TEST(HttpClientFailures, StalledServerEndsAtTheDeadline) {
  test::SilentListener silent;
  const auto start = std::chrono::steady_clock::now();
  auto res = request(get("http://127.0.0.1:" + std::to_string(silent.port()), "/", 300ms));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(res);
  EXPECT_NE(res.error().message.find("deadline passed while waiting for the answer's headers"), std::string::npos)
      << res.error().message;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 300ms + 2s) << "the deadline bounds the request";
}

TEST(HttpClientFailures, CancelEndsARequestInFlightAtOnce) {
  test::SilentListener silent;
  auto canceller = Canceller::create();
  ASSERT_TRUE(canceller);
  auto r = get("http://127.0.0.1:" + std::to_string(silent.port()), "/", 60s);
  r.canceller = &*canceller;
  auto in_flight = std::async(std::launch::async, [&] { return request(r); });
  // The request is connected (and waiting for an answer) once the listener has it to accept.
  UniqueFd accepted(::accept4(silent.fd(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(accepted.valid());
  const auto start = std::chrono::steady_clock::now();
  canceller->cancel();
  ASSERT_EQ(in_flight.wait_for(5s), std::future_status::ready) << "cancel() did not end the request";
  auto res = in_flight.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  ASSERT_FALSE(res);
  EXPECT_NE(res.error().message.find("cancelled while"), std::string::npos) << res.error().message;
  // Cancelled stays cancelled: later requests are refused before connecting.
  auto later = request(r);
  ASSERT_FALSE(later);
  EXPECT_NE(later.error().message.find("cancelled while connecting"), std::string::npos) << later.error().message;
  EXPECT_FALSE(canceller->sleep_for(10s));
}

TEST(HttpClientFailures, HangingConnectEndsAtTheDeadlineAndOnCancel) {
  test::FullListener full;
  const std::string base = "http://127.0.0.1:" + std::to_string(full.port());
  const auto start = std::chrono::steady_clock::now();
  auto res = request(get(base, "/", 300ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300ms + 2s);
  ASSERT_FALSE(res);
  EXPECT_NE(res.error().message.find("deadline passed while connecting to 127.0.0.1"), std::string::npos)
      << res.error().message;

  auto canceller = Canceller::create();
  ASSERT_TRUE(canceller);
  auto r = get(base, "/", 60s);
  r.canceller = &*canceller;
  auto in_flight = std::async(std::launch::async, [&] { return request(r); });
  // The connect hangs (shown above), so whenever cancel() comes, it finds the request connecting
  // or about to: both end it, naming the connect.
  canceller->cancel();
  ASSERT_EQ(in_flight.wait_for(5s), std::future_status::ready) << "cancel() did not end the connect";
  auto cancelled = in_flight.get();
  ASSERT_FALSE(cancelled);
  EXPECT_NE(cancelled.error().message.find("cancelled while connecting to 127.0.0.1"), std::string::npos)
      << cancelled.error().message;
}

TEST(HttpClientFailures, CancellerSleepsUntilCancelled) {
  auto canceller = Canceller::create();
  ASSERT_TRUE(canceller);
  EXPECT_FALSE(canceller->cancelled());
  EXPECT_TRUE(canceller->sleep_for(1ms));
  auto sleeping = std::async(std::launch::async, [&] { return canceller->sleep_for(60s); });
  canceller->cancel();
  ASSERT_EQ(sleeping.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(sleeping.get());
  EXPECT_TRUE(canceller->cancelled());
}

TEST(HttpClientFailures, ConnectionRefusedIsAnError) {
  const int port = test::closed_port();
  auto res = request(get("http://127.0.0.1:" + std::to_string(port), "/"));
  ASSERT_FALSE(res);
  EXPECT_EQ(res.error().code, Error::Code::Unavailable);
  EXPECT_NE(res.error().message.find("cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused"),
            std::string::npos)
      << res.error().message;
}

TEST(HttpClientFailures, InvalidRequestsAreRefusedBeforeConnecting) {
  const std::string base = "http://127.0.0.1:" + std::to_string(test::closed_port());
  auto bad_target = get(base, "no-slash");
  auto bad_header = get(base, "/");
  bad_header.headers = {{"X-Evil", "a\r\nInjected: yes"}};
  auto own_header = get(base, "/");
  own_header.headers = {{"content-length", "5"}};
  auto bad_method = get(base, "/");
  bad_method.method = "GE T";
  auto both = get(base, "/");
  both.on_line = both.on_chunk = [](std::string_view) { return true; };
  auto no_deadline = get(base, "/");
  no_deadline.deadline = {};
  for (const Request& r : {bad_target, bad_header, own_header, bad_method, both, no_deadline}) {
    auto res = request(r);
    ASSERT_FALSE(res);
    EXPECT_EQ(res.error().code, Error::Code::InvalidArgument) << res.error().message;
  }
}

TEST(HttpRequestWriter, WritesTheWireFormat) {
  Request r = get("http://[::1]:8080/base", "/api/v1/nodes?watch=1");
  r.method = "PUT";
  r.bearer_token = "abc";
  r.headers = {{"Content-Type", "application/json"}};
  r.body = "{}";
  auto wire = serialize_request(r);
  ASSERT_TRUE(wire) << wire.error().message;
  EXPECT_EQ(*wire,
            "PUT /base/api/v1/nodes?watch=1 HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n"
            "Authorization: Bearer abc\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
}

}  // namespace
}  // namespace kgpu::http
