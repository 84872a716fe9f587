#include "kube/node_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kube/api_server.h"

namespace kgpu::kube {
namespace {

const NodeConfigSource kSource{"gpu-node-7", "nvidia.com/device-plugin.config", "/available-configs", "default"};
bool only_known(const std::string& path) {
  return path == "/available-configs/default" || path == "/available-configs/a100-mig";
}

TEST(NodeConfigSource, NeedsNodeLabelAndDirectory) {
  std::map<std::string, std::string> env = {{"NODE_NAME", "n"}, {"KGPU_CONFIG_DIR", "/c"},
                                            {"KGPU_NODE_CONFIG_LABEL", "l"}, {"KGPU_CONFIG_DEFAULT", "d"}};
  ASSERT_TRUE(node_config_source(env).has_value());
  EXPECT_EQ(*node_config_source(env), (NodeConfigSource{"n", "l", "/c", "d"}));
  env.erase("NODE_NAME");
  EXPECT_FALSE(node_config_source(env).has_value());
}

TEST(ChooseNodeConfig, LabelPicksTheFile) {
  auto c = choose_node_config({{kSource.label, "a100-mig"}}, kSource, only_known);
  EXPECT_EQ(c.file, "/available-configs/a100-mig");
  EXPECT_FALSE(c.problem);
  EXPECT_NE(c.reason.find("a100-mig"), std::string::npos);
}

TEST(ChooseNodeConfig, NoLabelMeansTheDefault) {
  auto c = choose_node_config({{"other", "x"}}, kSource, only_known);
  EXPECT_EQ(c.file, "/available-configs/default");
  EXPECT_FALSE(c.problem);
}

TEST(ChooseNodeConfig, UnknownOrPathLikeNamesFallBackAndAreProblems) {
  auto unknown = choose_node_config({{kSource.label, "h100"}}, kSource, only_known);
  EXPECT_EQ(unknown.file, "/available-configs/default");
  EXPECT_TRUE(unknown.problem);
  EXPECT_NE(unknown.reason.find("h100"), std::string::npos) << unknown.reason;
  auto escape = choose_node_config({{kSource.label, "../etc"}}, kSource, [](const std::string&) { return true; });
  EXPECT_EQ(escape.file, "/available-configs/default");
  EXPECT_TRUE(escape.problem);
}

TEST(ChooseNodeConfig, NoDefaultMeansNoFile) {
  NodeConfigSource s = kSource;
  s.default_name.clear();
  auto c = choose_node_config({}, s, only_known);
  EXPECT_EQ(c.file, "");
}

TEST(FindApiServer, OverrideThenInCluster) {
  auto over = find_api_server({{"KGPU_KUBE_API", "http://127.0.0.1:8001"}});
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->base_url, "http://127.0.0.1:8001");
  EXPECT_FALSE(find_api_server({}).ok());

  std::string dir = ::testing::TempDir() + "/sa-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << "abc.def\n";
  auto in_pod = find_api_server({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir);
  ASSERT_TRUE(in_pod.ok()) << in_pod.error().message;
  EXPECT_EQ(in_pod->base_url, "https://10.96.0.1:443");
  EXPECT_EQ(in_pod->token, "abc.def");
  EXPECT_EQ(in_pod->ca_file, dir + "/ca.crt");
  EXPECT_EQ(in_pod->token_file, dir + "/token");  // re-read per request: projected tokens rotate
  EXPECT_EQ(over->token_file, "");                // KGPU_KUBE_TOKEN is fixed
  auto no_token = find_api_server({{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}}, dir + "/none");
  ASSERT_FALSE(no_token.ok());
  EXPECT_NE(no_token.error().message.find("token"), std::string::npos);
}

}  // namespace
}  // namespace kgpu::kube
