// End to end (issue 26, item 4): a stream kgpu resets is never silent. A client sends kgpu's
// device-plugin socket a malformed request (a duplicated :path); the daemon resets that stream with
// PROTOCOL_ERROR, logs one warning naming the peer, the method and the :authority it sent, counts it
// on /metrics, and goes on serving the kubelet. The kubelet simulator dials with the socket path as
// :authority (kubelets 1.19-1.25), so the registration itself also proves that path is served.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "e2e/sim_fixture.h"
#include "support/raw_h2_client.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;

const std::string kGpu = "nvidia.com/gpu";

int metrics_port(const ChildProcess& plugin) {
  static const std::regex line(R"(metrics: serving .* on 127\.0\.0\.1:(\d+))");
  std::smatch m;
  std::string log = plugin.stderr_text();
  return std::regex_search(log, m, line) ? std::stoi(m[1]) : 0;
}

std::string metrics(int port) {
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/metrics");
  return res ? res->body : "";
}

class TransportE2E : public SimE2E {};

TEST_F(TransportE2E, AStreamKgpuResetsIsLoggedOnceAndCounted) {
  PluginOptions options;
  options.extra_args = {"--metrics-addr", "127.0.0.1:0"};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);  // served with the socket path as :authority
  int port = 0;
  ASSERT_TRUE(wait_until([&] { return (port = metrics_port(*plugin)) > 0; }, 20s)) << diagnostics(*plugin);

  const std::string socket = plugin_dir + "/" + socket_name(kGpu);
  const std::string authority = "/var/lib/kubelet/device-plugins/kubelet.sock";
  for (int i = 0; i < 3; ++i) {
    RawH2Client client(socket);
    ASSERT_TRUE(client.connected());
    int32_t id = client.request({{":method", "POST"},
                                 {":scheme", "http"},
                                 {":path", "/v1beta1.DevicePlugin/Allocate"},
                                 {":authority", authority},
                                 {":path", "/v1beta1.DevicePlugin/Allocate"},
                                 {"content-type", "application/grpc"},
                                 {"te", "trailers"}});
    ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }));
    EXPECT_EQ(client.stream(id).close_code, static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  }

  // One warning for this peer and cause, naming what the operator needs.
  const std::string warning = "gRPC: reset a stream of peer pid " + std::to_string(::getpid());
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find(warning) != std::string::npos; }, 10s))
      << diagnostics(*plugin);
  std::string log = plugin->stderr_text();
  size_t at = log.find(warning);
  std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find("PROTOCOL_ERROR"), std::string::npos) << line;
  EXPECT_NE(line.find("duplicate pseudo-header"), std::string::npos) << line;
  EXPECT_NE(line.find("/v1beta1.DevicePlugin/Allocate"), std::string::npos) << line;
  EXPECT_NE(line.find(authority), std::string::npos) << line;
  EXPECT_EQ(log.find(warning, at + 1), std::string::npos) << "warned more than once:\n" << log;

  // Every one counted.
  std::string body;
  EXPECT_TRUE(wait_until(
      [&] {
        body = metrics(port);
        return body.find("kgpu_grpc_errors_total{scope=\"stream\",code=\"PROTOCOL_ERROR\"} 3") != std::string::npos;
      },
      10s))
      << body;

  // The kubelet's own stream is untouched.
  EXPECT_TRUE(sim->allocate(kGpu, {sim->snapshot().find(kGpu)->device_ids()[0]}).ok());
  EXPECT_TRUE(sim->snapshot().find(kGpu)->connected);
}

// The simulator plays kubelets 1.19-1.25 by default (above); as a kubelet since 1.26 it sends
// "localhost", which is served the same.
TEST(TransportAuthorityE2E, AKubeletSendingLocalhostGetsEveryGpu) {
  TempDir work("kgpu-e2e");
  std::string dir = work.path() + "/dp";
  std::filesystem::create_directories(dir);
  sim::KubeletSim kubelet(dir);
  kubelet.set_authority("localhost");
  ASSERT_TRUE(kubelet.start().ok());
  PluginOptions options;
  options.plugin_dir = dir;
  auto plugin = start_plugin(options, work.path());
  EXPECT_TRUE(kubelet.wait_for(
      [](const sim::Snapshot& s) {
        const auto* r = s.find(kGpu);
        return r && r->connected && r->healthy_count() == 8;
      },
      20s))
      << plugin->stderr_text();
  EXPECT_EQ(plugin->stderr_text().find("gRPC: reset"), std::string::npos) << plugin->stderr_text();
}

}  // namespace
}  // namespace kgpu::test
