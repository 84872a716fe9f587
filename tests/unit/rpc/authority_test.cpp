// The `:authority` kubelets send (issue 26): kubelets 1.19-1.25 dial the bare socket path with
// grpc-go, which sends that path as :authority; 1.26+ send "localhost". gRPC C++ plays both here
// through its default-authority channel argument (grpc-go itself: tests/e2e, grpc-go interop). A
// request the transport must refuse is reset, logged once and counted (Server::error_counts).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "rpc/server.h"
#include "support/raw_h2_client.h"

namespace kgpu::rpc {
namespace {

using namespace std::chrono_literals;

class Authorities : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/kgpu-auth-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++);
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/kgpu-nvidia.com-gpu.sock";
    auto server = Server::start();
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    auto service = std::make_shared<Service>();
    service->unary("/v1beta1.DevicePlugin/GetDevicePluginOptions", [](std::string_view, Responder r) {
      v1beta1::DevicePluginOptions options;
      options.set_get_preferred_allocation_available(true);
      r.reply(options.SerializeAsString());
    });
    auto fd = listen_unix(path_);
    ASSERT_TRUE(fd) << fd.error().message;
    ASSERT_TRUE(server_->serve(std::move(*fd), service));
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  grpc::Status call_with_authority(const std::string& authority) {
    grpc::ChannelArguments args;
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, authority);
    auto stub = v1beta1::DevicePlugin::NewStub(
        grpc::CreateCustomChannel("unix:" + path_, grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1beta1::DevicePluginOptions out;
    auto st = stub->GetDevicePluginOptions(&ctx, v1beta1::Empty{}, &out);
    if (st.ok()) {
      EXPECT_TRUE(out.get_preferred_allocation_available());
    }
    return st;
  }
  uint64_t errors(ErrorScope scope, const std::string& code) const {
    for (const auto& c : server_->error_counts())
      if (c.scope == scope && c.code == code) return c.value;
    return 0;
  }
  static inline int counter_ = 0;
  std::string dir_, path_;
  std::unique_ptr<Server> server_;
};

TEST_F(Authorities, TheSocketPathThatKubeletsBefore126SendIsServed) {
  auto st = call_with_authority(path_);
  EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(errors(ErrorScope::Stream, "PROTOCOL_ERROR"), 0u);
}

TEST_F(Authorities, LocalhostEncodedPathsAndLongValuesAreServed) {
  for (std::string authority : {std::string("localhost"), std::string("%2Fvar%2Flib%2Fkubelet%2Fkubelet.sock"),
                                "/" + std::string(4000, 'p')}) {
    auto st = call_with_authority(authority);
    EXPECT_TRUE(st.ok()) << authority.substr(0, 40) << ": " << st.error_message();
  }
}

TEST_F(Authorities, NoAuthorityAtAllIsServed) {
  test::RawH2Client client(path_);
  std::string empty_request = test::grpc_frame("");
  int32_t id = client.request({{":method", "POST"},
                               {":scheme", "http"},
                               {":path", "/v1beta1.DevicePlugin/GetDevicePluginOptions"},
                               {"content-type", "application/grpc"},
                               {"te", "trailers"}},
                              &empty_request);
  ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }));
  EXPECT_EQ(client.stream(id).close_code, 0u);
  EXPECT_EQ(client.stream(id).headers.at("grpc-status"), "0");
}

TEST_F(Authorities, AMalformedRequestIsResetWithProtocolErrorAndCounted) {
  for (int i = 0; i < 2; ++i) {
    test::RawH2Client client(path_);
    int32_t id = client.request({{":method", "POST"},
                                 {":scheme", "http"},
                                 {":path", "/v1beta1.DevicePlugin/GetDevicePluginOptions"},
                                 {":path", "/v1beta1.DevicePlugin/Allocate"},
                                 {"content-type", "application/grpc"},
                                 {"te", "trailers"}});
    ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }));
    EXPECT_EQ(client.stream(id).close_code, static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  }
  EXPECT_EQ(errors(ErrorScope::Stream, "PROTOCOL_ERROR"), 2u);
}

}  // namespace
}  // namespace kgpu::rpc
