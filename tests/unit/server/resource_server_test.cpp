// ResourceServer over real unix sockets: how its socket appears (never with the umask's mode) and
// how fast stop() is in every ListAndWatch stream state: streams read, streams open but not read
// (the HTTP/2 window full), and a peer that stopped reading its socket altogether (the socket's
// buffer full, so gRPC's own write blocks).
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "server/resource_server.h"
#include "support/eventually.h"
#include "support/stuck_grpc_peer.h"

namespace kgpu::server {
namespace {
using namespace std::chrono_literals;
using kgpu::test::eventually;
const std::string kGpu = "nvidia.com/gpu";

// A plan with `n` devices of nvidia.com/gpu (IDs long enough that n=20000 makes a ~1 MB message).
StatePtr state_with(size_t n, int generation = 0) {
  ResourcePlan plan;
  Resource r;
  r.name = kGpu;
  for (size_t i = 0; i < n; ++i)
    r.devices.push_back({"GPU-" + std::to_string(generation) + "-0000000-0000-0000-0000-" + std::to_string(i),
                         true, {0}, 0, {}, static_cast<int>(i)});
  plan.resources.push_back(std::move(r));
  static const Config config;  // named: a Config{} temporary trips GCC's maybe-uninitialized here
  static const Inventory inventory;
  return std::make_shared<const ServingState>(config, inventory, std::move(plan));
}

class ResourceServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/kgpu-rs-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir = templ;
  }
  void TearDown() override {
    server.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  void serve(size_t devices) {
    server = std::make_unique<ResourceServer>(kGpu, dir, state_with(devices));
    auto st = server->start();
    ASSERT_TRUE(st.ok()) << st.error().message;
  }
  std::chrono::milliseconds timed_stop() {
    auto t0 = std::chrono::steady_clock::now();
    server->stop();
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  }
  // Publishes `n` new device lists (each a full list of the same size).
  void publish(size_t devices, int n) {
    for (int g = 1; g <= n; ++g) server->update(state_with(devices, g), true);
  }

  std::string dir;
  std::unique_ptr<ResourceServer> server;
};

// Issue 13 "Also": the socket used to be created by bind() with the umask's mode and chmod'ed to
// 0600 only afterwards. Now it appears under its name (moved in) already 0600, and nothing is
// ever created under that name.
TEST_F(ResourceServerTest, SocketAppearsOnlyWithModeSixHundred) {
  int in = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(in, 0);
  ASSERT_GE(::inotify_add_watch(in, dir.c_str(), IN_CREATE | IN_MOVED_TO), 0);
  mode_t old_mask = ::umask(0);  // the worst umask: bind() would make the socket 0777
  serve(2);
  ::umask(old_mask);
  const std::string name = socket_file_name(kGpu);
  bool created = false, moved_in = false;
  alignas(inotify_event) char buf[4096];
  for (ssize_t n; (n = ::read(in, buf, sizeof buf)) > 0;) {
    for (ssize_t off = 0; off < n;) {
      auto* ev = reinterpret_cast<inotify_event*>(buf + off);
      std::string ev_name = ev->len ? ev->name : "";
      if (ev_name == name && (ev->mask & IN_CREATE)) created = true;
      if (ev_name == name && (ev->mask & IN_MOVED_TO)) moved_in = true;
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
  ::close(in);
  EXPECT_FALSE(created) << "the socket was bound under its final name, with the umask's mode";
  EXPECT_TRUE(moved_in);
  struct stat st {};
  ASSERT_EQ(::stat(server->socket_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Nothing but the socket is left in the directory (the private staging folder is gone).
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST_F(ResourceServerTest, BindFailuresSayExactlyWhy) {
  const std::string sock = dir + "/" + socket_file_name(kGpu);
  ASSERT_TRUE(std::filesystem::create_directory(sock));
  ResourceServer blocked(kGpu, dir, state_with(1));
  auto st = blocked.start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("a directory is in its place"), std::string::npos) << st.error().message;
  EXPECT_FALSE(blocked.serving());

  ResourceServer no_dir(kGpu, dir + "/missing", state_with(1));
  st = no_dir.start();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Error::Code::Unavailable);
  EXPECT_NE(st.error().message.find("does not exist"), std::string::npos) << st.error().message;

  ResourceServer too_long("example.com/" + std::string(120, 'x'), dir, state_with(1));
  st = too_long.start();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Error::Code::InvalidArgument);
  // Nothing left behind by the failed attempts but the blocking directory.
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u);
}

// ---- stop() in every stream state ----

std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_for(const std::string& path) {
  return v1beta1::DevicePlugin::NewStub(grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials()));
}

TEST_F(ResourceServerTest, StopIsFastWithStreamsOpenAndRead) {
  serve(8);
  auto stub = stub_for(server->socket_path());
  grpc::ClientContext ctx;
  auto reader = stub->ListAndWatch(&ctx, v1beta1::Empty());
  v1beta1::ListAndWatchResponse msg;
  ASSERT_TRUE(reader->Read(&msg));
  std::thread drain([&] {
    while (reader->Read(&msg)) {
    }
  });
  auto took = timed_stop();
  drain.join();
  EXPECT_LT(took, 1000ms);
  std::cout << "[figure] stop() with a stream open and read: " << took.count() << " ms\n";
}

TEST_F(ResourceServerTest, StopIsFastWithAStreamOfALargeListOpenButNotRead) {
  serve(20000);
  auto stub = stub_for(server->socket_path());
  grpc::ClientContext ctx;
  auto reader = stub->ListAndWatch(&ctx, v1beta1::Empty());  // never Read(): the HTTP/2 window fills
  ASSERT_TRUE(eventually([&] { return server->open_streams() == 1; }, 10s));
  publish(20000, 3);
  auto took = timed_stop();
  EXPECT_LT(took, 1000ms);
  std::cout << "[figure] stop() with a large-list stream open, not read: " << took.count() << " ms\n";
  ctx.TryCancel();
}

TEST_F(ResourceServerTest, StopIsFastWhenThePeerStoppedReadingItsSocket) {
  serve(20000);
  kgpu::test::StuckPeer peer(server->socket_path());
  ASSERT_TRUE(peer.connected());
  ASSERT_TRUE(eventually([&] { return server->open_streams() == 1; }, 10s));
  publish(20000, 3);
  auto took = timed_stop();
  EXPECT_LT(took, 1000ms);
  std::cout << "[figure] stop() with a peer that stopped reading its socket: " << took.count() << " ms\n";
}

TEST_F(ResourceServerTest, StopIsFastWithNoStreams) {
  serve(8);
  auto took = timed_stop();
  EXPECT_LT(took, 1000ms);
  std::cout << "[figure] stop() with no streams: " << took.count() << " ms\n";
}

}  // namespace
}  // namespace kgpu::server
