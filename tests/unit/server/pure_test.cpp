// Pure parts of the server module: proto conversion, status mapping, inotify decoding, backoff,
// socket naming.
#include <gtest/gtest.h>
#include <sys/inotify.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "server/daemon.h"
#include "server/edits_proto.h"
#include "server/plugin_dir_watcher.h"
#include "server/registrar.h"
#include "server/resource_server.h"

namespace kgpu::server {
namespace {

TEST(EditsProto, RoundTripsEveryField) {
  ContainerEdits e;
  e.envs = {{"NVIDIA_VISIBLE_DEVICES", "GPU-a,GPU-b"}, {"X", "1"}};
  e.mounts = {{"/c", "/h", true}, {"/c2", "/h2", false}};
  e.devices = {{"/dev/nvidia0", "/dev/nvidia0", "rw"}};
  e.annotations = {{"cdi.k8s.io/x", "nvidia.com/gpu=0"}};
  e.cdi_devices = {"nvidia.com/gpu=GPU-a"};
  v1beta1::ContainerAllocateResponse proto;
  to_proto(e, &proto);
  EXPECT_EQ(proto.envs().at("X"), "1");
  EXPECT_EQ(proto.mounts_size(), 2);
  EXPECT_FALSE(proto.mounts(1).read_only());
  EXPECT_EQ(proto.cdi_devices(0).name(), "nvidia.com/gpu=GPU-a");
  EXPECT_EQ(from_proto(proto), e);
}

TEST(StatusMapping, InvalidArgumentKeepsCodeAndMessage) {
  auto st = to_grpc_status(Error::invalid("unknown device ID GPU-x for nvidia.com/gpu"));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "unknown device ID GPU-x for nvidia.com/gpu");
  Error back = from_grpc_status(st);
  EXPECT_EQ(back.code, Error::Code::InvalidArgument);
  EXPECT_EQ(back.message, st.error_message());
  EXPECT_EQ(from_grpc_status(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down")).code, Error::Code::Unavailable);
  EXPECT_EQ(to_grpc_status(Error::internal("x")).error_code(), grpc::StatusCode::INTERNAL);
}

// Appends one inotify record (header + NUL-padded name) to buf.
void add_event(std::vector<char>& buf, uint32_t mask, const std::string& name) {
  inotify_event ev{};
  ev.wd = 1;
  ev.mask = mask;
  ev.len = name.empty() ? 0 : static_cast<uint32_t>((name.size() + 1 + 15) / 16 * 16);
  size_t at = buf.size();
  buf.resize(at + sizeof(ev) + ev.len, '\0');
  std::memcpy(buf.data() + at, &ev, sizeof(ev));
  std::memcpy(buf.data() + at + sizeof(ev), name.data(), name.size());
}

TEST(InotifyEvents, KubeletSocketCreationAndDeletionsAreDecoded) {
  std::vector<char> buf;
  add_event(buf, IN_DELETE, "kgpu-nvidia.com-gpu.sock");
  add_event(buf, IN_DELETE, "kubelet.sock");
  add_event(buf, IN_CREATE, "kubelet.sock");
  add_event(buf, IN_CREATE, "other.sock");
  auto c = parse_inotify_events(buf.data(), buf.size());
  EXPECT_TRUE(c.kubelet_socket_created);
  EXPECT_EQ(c.deleted, (std::set<std::string>{"kgpu-nvidia.com-gpu.sock", "kubelet.sock"}));
  EXPECT_FALSE(c.directory_gone);
  EXPECT_FALSE(c.empty());
}

TEST(InotifyEvents, MovedInKubeletSocketCountsAsCreated) {
  std::vector<char> buf;
  add_event(buf, IN_MOVED_TO, "kubelet.sock");
  EXPECT_TRUE(parse_inotify_events(buf.data(), buf.size()).kubelet_socket_created);
}

TEST(InotifyEvents, OtherFilesAndDirectoryRemoval) {
  std::vector<char> buf;
  add_event(buf, IN_CREATE, "kubelet_internal_checkpoint");
  EXPECT_TRUE(parse_inotify_events(buf.data(), buf.size()).empty());
  add_event(buf, IN_DELETE_SELF, "");
  add_event(buf, IN_Q_OVERFLOW, "");
  auto c = parse_inotify_events(buf.data(), buf.size());
  EXPECT_TRUE(c.directory_gone);
  EXPECT_TRUE(c.overflow);
}

TEST(InotifyEvents, TruncatedBufferIsIgnoredSafely) {
  std::vector<char> buf;
  add_event(buf, IN_CREATE, "kubelet.sock");
  auto c = parse_inotify_events(buf.data(), sizeof(inotify_event) - 1);
  EXPECT_TRUE(c.empty());
}

TEST(Backoff, DoublesUpToTheCapAndResets) {
  using std::chrono::milliseconds;
  Backoff b(milliseconds(20), milliseconds(100));
  EXPECT_EQ(b.next(), milliseconds(20));
  EXPECT_EQ(b.next(), milliseconds(40));
  EXPECT_EQ(b.next(), milliseconds(80));
  EXPECT_EQ(b.next(), milliseconds(100));
  EXPECT_EQ(b.next(), milliseconds(100));
  b.reset();
  EXPECT_EQ(b.next(), milliseconds(20));
}

TEST(SocketNames, SlashesBecomeDashes) {
  EXPECT_EQ(socket_file_name("nvidia.com/gpu"), "kgpu-nvidia.com-gpu.sock");
  EXPECT_EQ(socket_file_name("nvidia.com/mig-1g.10gb"), "kgpu-nvidia.com-mig-1g.10gb.sock");
}

TEST(SocketNames, TooLongPathIsAClearError) {
  EXPECT_TRUE(check_socket_path("/var/lib/kubelet/device-plugins/kgpu-nvidia.com-gpu.sock").ok());
  EXPECT_TRUE(check_socket_path(std::string(107, 'a')).ok());
  auto st = check_socket_path("/" + std::string(107, 'a'));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Error::Code::InvalidArgument);
  EXPECT_NE(st.error().message.find("at most 107 bytes"), std::string::npos) << st.error().message;
}

TEST(DeviceList, HealthAndNumaOnTheWire) {
  ResourcePlan plan;
  Resource r;
  r.name = "nvidia.com/gpu";
  r.devices = {{"GPU-a", true, {0}, 0, {}, -1}, {"GPU-b", false, {}, 1, {}, -1}};
  plan.resources.push_back(r);
  auto list = device_list(plan, "nvidia.com/gpu");
  ASSERT_EQ(list->devices_size(), 2);
  EXPECT_EQ(list->devices(0).id(), "GPU-a");
  EXPECT_EQ(list->devices(0).health(), "Healthy");
  ASSERT_EQ(list->devices(0).topology().nodes_size(), 1);
  EXPECT_EQ(list->devices(0).topology().nodes(0).id(), 0);
  EXPECT_EQ(list->devices(1).health(), "Unhealthy");
  EXPECT_FALSE(list->devices(1).has_topology());  // no NUMA preference: no topology at all
  EXPECT_EQ(device_list(plan, "nvidia.com/other")->devices_size(), 0);
}

}  // namespace
}  // namespace kgpu::server

// Issue 30, item 11: the device-plugin folder is checked at start, never created.
namespace kgpu::server {
namespace {

TEST(CheckPluginDir, MissingNotAFolderAndUsable) {
  const std::string base = ::testing::TempDir() + "/kgpu-check-plugin-dir-" + std::to_string(::getpid());
  std::filesystem::remove_all(base);
  auto missing = check_plugin_dir(base);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Error::Code::NotFound);
  EXPECT_NE(missing.error().message.find("does not exist; kgpu does not create it"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(base));

  std::ofstream(base) << "x";
  auto file = check_plugin_dir(base);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().message, "the device-plugin folder " + base + " is not a folder");
  std::filesystem::remove(base);

  std::filesystem::create_directories(base);
  EXPECT_TRUE(check_plugin_dir(base));
  if (::geteuid() != 0) {  // root writes anywhere: the mode check only holds for others
    std::filesystem::permissions(base, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    auto ro = check_plugin_dir(base);
    ASSERT_FALSE(ro);
    EXPECT_NE(ro.error().message.find("kgpu needs root or a writable mount"), std::string::npos);
    std::filesystem::permissions(base, std::filesystem::perms::owner_all);
  }
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace kgpu::server
