// The PodResources client against the kubelet simulator's PodResources server: what the kubelet
// lists is what list() returns, and a missing kubelet is a clear Unavailable error.
#include "podresources/client.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "sim/pod_resources_sim.h"

namespace kgpu::podresources {
namespace {

std::string temp_socket(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("kgpu-podres-" + std::to_string(::getpid()) + "-" + name);
  return (dir / "kubelet.sock").string();
}

TEST(PodResourcesClient, SocketLivesInTheKubeletRootNextToDevicePlugins) {
  EXPECT_EQ(socket_for("/var/lib/kubelet/device-plugins/kubelet.sock"), "/var/lib/kubelet/pod-resources/kubelet.sock");
}

TEST(PodResourcesClient, ListsEveryContainersDevicesOfEveryPod) {
  sim::PodResourcesSim kubelet(temp_socket("list"));
  ASSERT_TRUE(kubelet.start().ok());
  kubelet.add("default", "trainer", "nvidia.com/gpu", {"GPU-a", "GPU-b"});
  kubelet.add("ml", "infer", "nvidia.com/mig-1g.5gb", {"MIG-c"});

  auto got = list(kubelet.socket_path(), std::chrono::seconds(5));
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0], (ContainerDevices{"default", "trainer", "main", "nvidia.com/gpu", {"GPU-a", "GPU-b"}}));
  EXPECT_EQ((*got)[1], (ContainerDevices{"ml", "infer", "main", "nvidia.com/mig-1g.5gb", {"MIG-c"}}));
  EXPECT_EQ((*got)[1].pod(), "ml/infer");

  kubelet.remove("default", "trainer");
  got = list(kubelet.socket_path(), std::chrono::seconds(5));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 1u);
  kubelet.stop();
  std::filesystem::remove_all(std::filesystem::path(kubelet.socket_path()).parent_path());
}

TEST(PodResourcesClient, NoKubeletIsUnavailable) {
  auto got = list(temp_socket("none"), std::chrono::milliseconds(500));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, Error::Code::Unavailable);
  EXPECT_NE(got.error().message.find("PodResources List on"), std::string::npos) << got.error().message;
}

}  // namespace
}  // namespace kgpu::podresources
