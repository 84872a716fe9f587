// MetricsServer over loopback: real HTTP requests with cpp-httplib's client against ephemeral
// ports on 127.0.0.1.
#include "metrics/metrics_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>
#include <vector>

#include "exposition_parser.h"

namespace kgpu {
namespace {

TEST(ListenAddress, Parses) {
  auto a = parse_listen_address("127.0.0.1:9400");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9400);
  auto any = parse_listen_address(":8080");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "0.0.0.0");
  EXPECT_EQ(any->port, 8080);
  auto v6 = parse_listen_address("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
}

TEST(ListenAddress, RejectsBadInput) {
  for (const char* bad : {"", "9400", "host:", "host:x", "host:70000", "host:-1", "::1:80", "h:80x"}) {
    auto r = parse_listen_address(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().code, Error::Code::InvalidArgument) << bad;
    }
  }
}

class MetricsServerTest : public ::testing::Test {
 protected:
  void start(MetricsServer::ReadyFn ready) {
    auto s = MetricsServer::start("127.0.0.1:0", metrics_, std::move(ready));
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(s.value());
    ASSERT_GT(server_->port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  Metrics metrics_{"9.9.9"};
  std::unique_ptr<MetricsServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(MetricsServerTest, ServesMetricsThatParse) {
  start(nullptr);
  metrics_.set_devices("nvidia.com/gpu", 8, 0);
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  const auto e = testing::parse_exposition(res->body);
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.value("kgpu_devices", {{"resource", "nvidia.com/gpu"}, {"health", "healthy"}}), 8.0);
  EXPECT_EQ(e.value("kgpu_build_info", {{"version", "9.9.9"}}), 1.0);

  // A later scrape sees later values: the server renders on every request.
  metrics_.count_xid(79);
  res = client_->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(testing::parse_exposition(res->body).value("kgpu_health_xid_events_total", {{"xid", "79"}}), 1.0);
}

TEST_F(MetricsServerTest, HealthzIsAlwaysOk) {
  start([] { return false; });
  auto res = client_->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(MetricsServerTest, ReadyzFollowsThePredicate) {
  std::atomic<bool> ready{false};
  start([&ready] { return ready.load(); });
  auto res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  ready = true;
  res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  ready = false;
  res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
}

TEST_F(MetricsServerTest, NullPredicateMeansReady) {
  start(nullptr);
  auto res = client_->Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(MetricsServerTest, UnknownPathIs404AndPostIsRejected) {
  start(nullptr);
  auto res = client_->Get("/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  res = client_->Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_NE(res->status, 200);
}

TEST_F(MetricsServerTest, StopClosesThePortAndIsIdempotent) {
  start(nullptr);
  const int port = server_->port();
  server_->stop();
  server_->stop();
  httplib::Client after("127.0.0.1", port);
  after.set_connection_timeout(1);
  EXPECT_FALSE(after.Get("/healthz")) << "nothing should answer after stop()";
}

TEST_F(MetricsServerTest, ConcurrentScrapesAllSucceed) {
  start(nullptr);
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      httplib::Client c("127.0.0.1", server_->port());
      for (int i = 0; i < 20; ++i) {
        auto res = c.Get(i % 2 ? "/metrics" : "/readyz");
        if (res && res->status == 200) ++ok;
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(ok.load(), 80);
}

TEST(MetricsServer, StopRightAfterStartDoesNotHang) {
  Metrics m;
  for (int i = 0; i < 20; ++i) {
    auto s = MetricsServer::start("127.0.0.1:0", m, nullptr);
    ASSERT_TRUE(s.ok());
    s.value()->stop();
  }
}

TEST(MetricsServer, PortInUseIsAnError) {
  Metrics m;
  auto first = MetricsServer::start("127.0.0.1:0", m, nullptr);
  ASSERT_TRUE(first.ok());
  auto second = MetricsServer::start("127.0.0.1:" + std::to_string(first.value()->port()), m, nullptr);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Error::Code::Unavailable);
}

TEST(MetricsServer, BadAddressIsInvalidArgument) {
  Metrics m;
  auto s = MetricsServer::start("nonsense", m, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, Error::Code::InvalidArgument);
}

}  // namespace
}  // namespace kgpu
