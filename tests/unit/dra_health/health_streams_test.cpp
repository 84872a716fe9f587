// The DRAResourceHealth service on the DRA socket of a real KubeletPlugin, watched with gRPC C++
// (sim::DraHealthWatch) as a kubelet with ResourceHealthStatus watches it: registration advertises
// it, a new stream starts with the current report, changes go out at once, the report is repeated
// on the heartbeat, and a plugin without it advertises only the DRA services.
#include "dra/health/health_streams.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "dra/kubelet_plugin.h"
#include "pluginregistration/v1/registration.grpc.pb.h"
#include "rpc/server.h"
#include "sim/dra_health_watch.h"

namespace kgpu::dra::health {
namespace {

using namespace std::chrono_literals;

class HealthStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/kgpu-drah-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    auto transport = rpc::Server::start();
    ASSERT_TRUE(transport);
    transport_ = std::move(*transport);
  }
  void TearDown() override {
    if (plugin_) plugin_->stop();
    if (streams_) streams_->stop();
    transport_->stop();
    std::filesystem::remove_all(root_);
  }
  void start(bool with_health, std::chrono::milliseconds heartbeat = 10s) {
    streams_ = std::make_unique<HealthStreams>("gpu.nvidia.com", heartbeat, [] { return int64_t{1700000000}; });
    KubeletPluginOptions options{"gpu.nvidia.com", root_, {}};
    if (with_health) options.health_watch = [this](std::shared_ptr<rpc::ServerStream> s) { streams_->watch(std::move(s)); };
    plugin_ = std::make_unique<KubeletPlugin>(options, ClaimHandler{}, transport_);
    auto st = plugin_->start();
    ASSERT_TRUE(st) << st.error().message;
  }
  std::vector<std::string> advertised() {
    auto stub = pluginregistration::Registration::NewStub(
        grpc::CreateChannel("unix:" + plugin_->registration_socket(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    pluginregistration::PluginInfo info;
    EXPECT_TRUE(stub->GetInfo(&ctx, pluginregistration::InfoRequest{}, &info).ok());
    return {info.supported_versions().begin(), info.supported_versions().end()};
  }
  static std::vector<DeviceHealthReport> two(DeviceHealthStatus second, std::string message = "") {
    return {{"node-1", "gpu-0", DeviceHealthStatus::Healthy, ""}, {"node-1", "gpu-1", second, std::move(message)}};
  }

  std::string root_;
  std::shared_ptr<rpc::Server> transport_;
  std::unique_ptr<HealthStreams> streams_;
  std::unique_ptr<KubeletPlugin> plugin_;
};

TEST_F(HealthStreamsTest, RegistrationAdvertisesTheHealthServiceAfterTheDraServices) {
  start(true);
  EXPECT_EQ(advertised(), (std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"}));
}

TEST_F(HealthStreamsTest, WithoutItOnlyTheDraServicesAndTheStreamIsUnimplemented) {
  start(false);
  EXPECT_EQ(advertised(), (std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin"}));
  sim::DraHealthWatch watch(plugin_->dra_socket());
  EXPECT_FALSE(watch.wait_for([](const sim::DraHealthReport&) { return true; }, 5s));
  EXPECT_TRUE(watch.ended());
  EXPECT_EQ(watch.end_status().rfind(std::to_string(static_cast<int>(grpc::StatusCode::UNIMPLEMENTED)), 0), 0u)
      << watch.end_status();
}

TEST_F(HealthStreamsTest, ANewStreamGetsTheCurrentReportAndEveryChangeAtOnce) {
  start(true);
  streams_->update(two(DeviceHealthStatus::Healthy));
  sim::DraHealthWatch watch(plugin_->dra_socket());
  auto first = watch.wait_for([](const sim::DraHealthReport& r) { return r.devices.size() == 2; }, 5s);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->find("gpu-1")->health, "Healthy");
  EXPECT_EQ(first->find("gpu-1")->pool, "node-1");
  EXPECT_EQ(first->find("gpu-1")->last_updated_time, 1700000000);

  streams_->update(two(DeviceHealthStatus::Unhealthy, "XID 79 (GPU has fallen off the bus)"));
  auto changed = watch.wait_for([](const sim::DraHealthReport& r) { return r.find("gpu-1")->health == "Unhealthy"; }, 5s);
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->find("gpu-1")->message, "XID 79 (GPU has fallen off the bus)");
  EXPECT_EQ(changed->find("gpu-0")->health, "Healthy");
  EXPECT_EQ(streams_->streams(), 1u);
}

TEST_F(HealthStreamsTest, TheReportIsRepeatedOnTheHeartbeatSoTheKubeletNeverTimesItOut) {
  start(true, 50ms);
  streams_->update(two(DeviceHealthStatus::Healthy));
  sim::DraHealthWatch watch(plugin_->dra_socket());
  // No change after the first report: later ones come from the heartbeat alone.
  size_t seen = 0;
  EXPECT_TRUE(watch.wait_for([&](const sim::DraHealthReport&) { return ++seen >= 3; }, 10s));
}

TEST_F(HealthStreamsTest, AnUnchangedReportIsNotSentAgain) {
  start(true);
  streams_->update(two(DeviceHealthStatus::Healthy));
  sim::DraHealthWatch watch(plugin_->dra_socket());
  ASSERT_TRUE(watch.wait_for([](const sim::DraHealthReport&) { return true; }, 5s));
  streams_->update(two(DeviceHealthStatus::Healthy));
  streams_->update(two(DeviceHealthStatus::Unhealthy, "lost"));
  ASSERT_TRUE(watch.wait_for([](const sim::DraHealthReport& r) { return r.find("gpu-1")->health == "Unhealthy"; }, 5s));
  EXPECT_EQ(watch.reports().size(), 2u);
}

}  // namespace
}  // namespace kgpu::dra::health
