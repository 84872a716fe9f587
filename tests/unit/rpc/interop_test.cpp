// kgpu's gRPC transport against gRPC C++ (the reference implementation, as the kubelet's grpc-go
// is another): gRPC C++ clients call our server, our client calls gRPC C++ servers.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "rpc/client.h"
#include "rpc/server.h"
#include "support/eventually.h"

namespace kgpu::rpc {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string temp_socket(const char* name) {
  std::string dir = "/tmp/kgpu-rpc-" + std::to_string(::getpid());
  fs::create_directories(dir);
  std::string path = dir + "/" + name;
  fs::remove(path);
  return path;
}

std::string serialized(const google::protobuf::Message& m) { return m.SerializeAsString(); }

v1beta1::ListAndWatchResponse devices(int n, const std::string& prefix = "GPU-") {
  v1beta1::ListAndWatchResponse r;
  for (int i = 0; i < n; ++i) {
    auto* d = r.add_devices();
    d->set_id(prefix + std::to_string(i));
    d->set_health("Healthy");
  }
  return r;
}

class OurServer : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = temp_socket(("s" + std::to_string(counter_++)).c_str());
    auto server = Server::start();
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
  }
  void serve(std::shared_ptr<Service> service) {
    auto fd = listen_unix(path_);
    ASSERT_TRUE(fd) << fd.error().message;
    auto id = server_->serve(std::move(*fd), std::move(service));
    ASSERT_TRUE(id) << id.error().message;
    listener_ = *id;
  }
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub() {
    return v1beta1::DevicePlugin::NewStub(grpc::CreateChannel("unix:" + path_, grpc::InsecureChannelCredentials()));
  }
  static inline int counter_ = 0;
  std::string path_;
  std::unique_ptr<Server> server_;
  uint64_t listener_ = 0;
};

TEST_F(OurServer, UnaryCallsAnswerWithTheHandlersMessage) {
  auto service = std::make_shared<Service>();
  service->unary("/v1beta1.DevicePlugin/GetDevicePluginOptions", [](std::string_view request, Responder r) {
    v1beta1::Empty empty;
    ASSERT_TRUE(empty.ParseFromArray(request.data(), static_cast<int>(request.size())));
    v1beta1::DevicePluginOptions options;
    options.set_get_preferred_allocation_available(true);
    r.reply(serialized(options));
  });
  serve(service);
  auto s = stub();
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    v1beta1::DevicePluginOptions out;
    auto st = s->GetDevicePluginOptions(&ctx, v1beta1::Empty{}, &out);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_TRUE(out.get_preferred_allocation_available());
  }
}

TEST_F(OurServer, FailuresCarryTheirCodeAndMessage) {
  auto service = std::make_shared<Service>();
  std::string message = "device \"GPU-9\" is 100% unknown \xc3\xa9";
  service->unary("/v1beta1.DevicePlugin/Allocate",
                 [&](std::string_view, Responder r) { r.fail({Code::InvalidArgument, message}); });
  serve(service);
  grpc::ClientContext ctx;
  v1beta1::AllocateResponse out;
  auto st = stub()->Allocate(&ctx, v1beta1::AllocateRequest{}, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), message);
}

TEST_F(OurServer, UnknownMethodsAreUnimplementedAndThrowingHandlersInternal) {
  auto service = std::make_shared<Service>();
  service->unary("/v1beta1.DevicePlugin/Allocate",
                 [](std::string_view, Responder) { throw std::runtime_error("boom"); });
  serve(service);
  auto s = stub();
  {
    grpc::ClientContext ctx;
    v1beta1::PreStartContainerResponse out;
    auto st = s->PreStartContainer(&ctx, v1beta1::PreStartContainerRequest{}, &out);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED);
    EXPECT_NE(st.error_message().find("PreStartContainer"), std::string::npos);
  }
  grpc::ClientContext ctx;
  v1beta1::AllocateResponse out;
  auto st = s->Allocate(&ctx, v1beta1::AllocateRequest{}, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_NE(st.error_message().find("boom"), std::string::npos);
}

TEST_F(OurServer, AResponderMayAnswerLaterFromAnotherThread) {
  auto service = std::make_shared<Service>();
  std::thread worker;
  service->unary("/v1beta1.DevicePlugin/GetDevicePluginOptions", [&](std::string_view, Responder r) {
    worker = std::thread([r] {
      v1beta1::DevicePluginOptions options;
      options.set_pre_start_required(true);
      r.reply(serialized(options));
      r.fail({Code::Internal, "a second answer is ignored"});
    });
  });
  serve(service);
  grpc::ClientContext ctx;
  v1beta1::DevicePluginOptions out;
  auto st = stub()->GetDevicePluginOptions(&ctx, v1beta1::Empty{}, &out);
  worker.join();
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(out.pre_start_required());
}

// A ListAndWatch-like stream: the first list, then the newest after each change; large lists
// arrive intact; the stream ends when the server closes the socket.
class StreamingServer : public OurServer {
 protected:
  void SetUp() override {
    OurServer::SetUp();
    auto service = std::make_shared<Service>();
    service->server_streaming("/v1beta1.DevicePlugin/ListAndWatch",
                              [this](std::string_view, std::shared_ptr<ServerStream> stream) {
                                std::lock_guard lock(mu_);
                                stream->on_end([this] {
                                  std::lock_guard l(mu_);
                                  ended_++;
                                });
                                stream->send_latest(std::make_shared<std::string>(serialized(devices(2))));
                                streams_.push_back(stream);
                              });
    serve(service);
  }
  std::shared_ptr<ServerStream> stream(size_t i) {
    std::lock_guard lock(mu_);
    return i < streams_.size() ? streams_[i] : nullptr;
  }
  int ended() {
    std::lock_guard lock(mu_);
    return ended_;
  }
  std::mutex mu_;
  std::vector<std::shared_ptr<ServerStream>> streams_;
  int ended_ = 0;
};

TEST_F(StreamingServer, StreamsCarryEveryNewStateAndLargeLists) {
  grpc::ClientContext ctx;
  auto s = stub();
  auto reader = s->ListAndWatch(&ctx, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse got;
  ASSERT_TRUE(reader->Read(&got));
  EXPECT_EQ(got.devices_size(), 2);
  // About 3 MiB: many HTTP/2 frames and flow-control windows.
  auto big = devices(60000, "GPU-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-");
  ASSERT_TRUE(stream(0)->send_latest(std::make_shared<std::string>(serialized(big))));
  ASSERT_TRUE(reader->Read(&got));
  ASSERT_EQ(got.devices_size(), 60000);
  EXPECT_EQ(got.devices(59999).id(), big.devices(59999).id());
  stream(0)->finish();
  EXPECT_FALSE(reader->Read(&got));
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_TRUE(test::eventually([&] { return ended() == 1; }));
  EXPECT_FALSE(stream(0)->send_latest(std::make_shared<std::string>("x")));
}

TEST_F(StreamingServer, AMessageQueuedBehindAnotherIsReplacedByANewerOne) {
  grpc::ClientContext ctx;
  auto reader = stub()->ListAndWatch(&ctx, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse got;
  ASSERT_TRUE(test::eventually([&] { return stream(0) != nullptr; }));
  // Without reading: whatever the socket holds, the last message the reader sees is the newest.
  for (int n = 3; n <= 50; ++n) stream(0)->send_latest(std::make_shared<std::string>(serialized(devices(n))));
  int last = 0, reads = 0;
  while (last != 50 && reader->Read(&got)) {
    last = got.devices_size();
    ++reads;
  }
  EXPECT_EQ(last, 50);
  EXPECT_LE(reads, 50);
}

TEST_F(StreamingServer, ClosingTheSocketEndsItsStreamsAndAClientCancelEndsOne) {
  grpc::ClientContext first, second;
  auto s = stub();
  auto r1 = s->ListAndWatch(&first, v1beta1::Empty{});
  auto r2 = s->ListAndWatch(&second, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse got;
  ASSERT_TRUE(r1->Read(&got));
  ASSERT_TRUE(r2->Read(&got));
  second.TryCancel();
  EXPECT_FALSE(r2->Read(&got));
  EXPECT_TRUE(test::eventually([&] { return ended() == 1; }));
  EXPECT_EQ(server_->connections(listener_), 1u);
  server_->close(listener_);
  EXPECT_EQ(ended(), 2);  // close() returns after the streams ended
  EXPECT_FALSE(r1->Read(&got));
  EXPECT_EQ(server_->connections(listener_), 0u);
}

TEST_F(StreamingServer, OurClientTakesTheFirstMessageAndItsLeavingEndsTheStream) {
  auto first = call_first_message(path_, "/v1beta1.DevicePlugin/ListAndWatch", serialized(v1beta1::Empty{}), 5s);
  ASSERT_TRUE(first.status.ok()) << first.status.message;
  v1beta1::ListAndWatchResponse got;
  ASSERT_TRUE(got.ParseFromString(first.message));
  EXPECT_EQ(got.devices_size(), 2);
  EXPECT_TRUE(test::eventually([&] { return ended() == 1; })) << "the server sees the snapshot reader go";
  auto missing = call_first_message(path_, "/v1beta1.DevicePlugin/Nope", "", 5s);
  EXPECT_EQ(missing.status.code, Code::Unimplemented);
  auto nobody = call_first_message(path_ + ".missing", "/v1beta1.DevicePlugin/ListAndWatch", "", 1s);
  EXPECT_EQ(nobody.status.code, Code::Unavailable);
}

// Our client against gRPC C++ servers.
class Registrar final : public v1beta1::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req, v1beta1::Empty*) override {
    std::unique_lock lock(mu);
    last = *req;
    if (req->resource_name() == "hang") cv.wait(lock, [&] { return released; });
    if (req->version() != "v1beta1") return {grpc::StatusCode::INVALID_ARGUMENT, "version 50% \xc3\xa9 wrong"};
    return grpc::Status::OK;
  }
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  v1beta1::RegisterRequest last;
};

class OurClient : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = temp_socket("kubelet.sock");
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + path_, grpc::InsecureServerCredentials());
    b.RegisterService(&registrar_);
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_);
  }
  void TearDown() override {
    {
      std::lock_guard lock(registrar_.mu);
      registrar_.released = true;
    }
    registrar_.cv.notify_all();
    server_->Shutdown(std::chrono::system_clock::now());
  }
  CallResult call(const std::string& version, const std::string& resource, std::chrono::milliseconds timeout = 5s) {
    v1beta1::RegisterRequest req;
    req.set_version(version);
    req.set_endpoint("kgpu.sock");
    req.set_resource_name(resource);
    return call_unary(path_, "/v1beta1.Registration/Register", serialized(req), timeout);
  }
  std::string path_;
  Registrar registrar_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(OurClient, CallsReachTheServerAndOkComesBack) {
  auto r = call("v1beta1", "nvidia.com/gpu");
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  v1beta1::Empty empty;
  EXPECT_TRUE(empty.ParseFromString(r.message));
  std::lock_guard lock(registrar_.mu);
  EXPECT_EQ(registrar_.last.resource_name(), "nvidia.com/gpu");
  EXPECT_EQ(registrar_.last.endpoint(), "kgpu.sock");
}

TEST_F(OurClient, AServerErrorComesBackWithItsCodeAndMessage) {
  auto r = call("v1alpha", "nvidia.com/gpu");
  EXPECT_EQ(r.status.code, Code::InvalidArgument);
  EXPECT_EQ(r.status.message, "version 50% \xc3\xa9 wrong");
}

TEST_F(OurClient, TheDeadlineEndsACallTheServerSitsOn) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = call("v1beta1", "hang", 100ms);
  EXPECT_TRUE(r.status.code == Code::DeadlineExceeded) << static_cast<int>(r.status.code) << r.status.message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

TEST_F(OurClient, NothingListeningIsUnavailable) {
  auto r = call_unary(path_ + ".missing", "/v1beta1.Registration/Register", "", 1s);
  EXPECT_EQ(r.status.code, Code::Unavailable);
  EXPECT_NE(r.status.message.find(".missing"), std::string::npos);
}

TEST(OurClientAndServer, TalkToEachOther) {
  auto path = temp_socket("both.sock");
  auto server = Server::start();
  ASSERT_TRUE(server);
  auto service = std::make_shared<Service>();
  service->unary("/x.Y/Echo", [](std::string_view req, Responder r) { r.reply(std::string(req) + "!"); });
  auto fd = listen_unix(path);
  ASSERT_TRUE(fd);
  ASSERT_TRUE((*server)->serve(std::move(*fd), service));
  auto r = call_unary(path, "/x.Y/Echo", std::string(100000, 'e'), 5s);
  ASSERT_TRUE(r.status.ok()) << r.status.message;
  EXPECT_EQ(r.message, std::string(100000, 'e') + "!");
  auto missing = call_unary(path, "/x.Y/Nope", "", 5s);
  EXPECT_EQ(missing.status.code, Code::Unimplemented);
}

}  // namespace
}  // namespace kgpu::rpc
