// IMEX channels (issue 30, item 2): which configured channels exist, looked up as NVIDIA's plugin
// does (under the device root, then the bare path), and what a missing one means.
#include <gtest/gtest.h>

#include <set>

#include "plan/imex.h"

namespace kgpu {
namespace {

Config with_channel(bool required, const std::string& dev_root = "/host") {
  Config c;
  c.imex_channel_ids = {0};
  c.imex_required = required;
  c.nvidia_dev_root = dev_root;
  return c;
}

TEST(Imex, ChannelPathsAndCdiKind) {
  EXPECT_EQ(imex_channel_path(0), "/dev/nvidia-caps-imex-channels/channel0");
  Config c;
  EXPECT_EQ(imex_cdi_kind(c), "k8s.device-plugin.nvidia.com/imex-channel");
  c.cdi_kind = "example.com/gpu";
  EXPECT_EQ(imex_cdi_kind(c), "example.com/imex-channel");
}

TEST(Imex, LookedUpUnderTheDeviceRootThenAtThePathItself) {
  std::vector<std::string> asked;
  auto under_root = find_imex_channels(with_channel(true), [&](const std::string& p) {
    asked.push_back(p);
    return p == "/host/dev/nvidia-caps-imex-channels/channel0";
  });
  ASSERT_TRUE(under_root.ok());
  EXPECT_EQ(under_root->present, std::vector<int>{0});
  EXPECT_EQ(asked, std::vector<std::string>{"/host/dev/nvidia-caps-imex-channels/channel0"});

  auto bare = find_imex_channels(with_channel(true),
                                 [](const std::string& p) { return p == "/dev/nvidia-caps-imex-channels/channel0"; });
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->present, std::vector<int>{0});
}

TEST(Imex, MissingChannelIsAnErrorOnlyWhenRequired) {
  auto none = [](const std::string&) { return false; };
  auto required = find_imex_channels(with_channel(true), none);
  ASSERT_FALSE(required.ok());
  EXPECT_NE(required.error().message.find("IMEX channel 0 is required"), std::string::npos);
  EXPECT_NE(required.error().message.find("/host/dev/nvidia-caps-imex-channels/channel0 or "
                                          "/dev/nvidia-caps-imex-channels/channel0"),
            std::string::npos)
      << required.error().message;

  auto optional = find_imex_channels(with_channel(false), none);
  ASSERT_TRUE(optional.ok());
  EXPECT_TRUE(optional->present.empty());
  ASSERT_EQ(optional->warnings.size(), 1u);
  EXPECT_NE(optional->warnings[0].find("IMEX channel 0 not found"), std::string::npos);

  // The default root "/" is asked once.
  int asks = 0;
  auto root = find_imex_channels(with_channel(false, "/"), [&](const std::string&) { return ++asks, false; });
  EXPECT_EQ(asks, 1);
}

TEST(Imex, NoChannelsConfiguredAsksNothing) {
  Config c;
  bool asked = false;
  auto r = find_imex_channels(c, [&](const std::string&) { return asked = true; });
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->present.empty());
  EXPECT_FALSE(asked);
}

}  // namespace
}  // namespace kgpu
