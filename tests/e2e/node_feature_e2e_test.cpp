// End to end: GFD's NodeFeature output (flags.useNodeFeatureAPI, issue 41 item 4). The real kgpu,
// plugin and labels daemon, against the fake API server: the node's NodeFeature is created with
// GFD's labels and owners, updated when the labels change, deleted when the setting is switched
// off (the feature file comes back) and on exit; an API server without NFD's CRD or without the
// RBAC is logged with what to do while the plugin keeps serving, and the object appears once
// the cluster is fixed.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "e2e/sim_fixture.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using nlohmann::json;

const std::string kGpu = "nvidia.com/gpu";
const std::string kNode = "gpu-node-1";
const std::string kNamespace = "kube-system";
const std::string kName = "nvidia-features-for-gpu-node-1";
const std::string kObject = kNamespace + "/" + kName;

std::string config(int replicas, bool node_feature) {
  std::string text = "version: v1\n";
  if (node_feature) text += "flags:\n  useNodeFeatureAPI: true\n";
  if (replicas > 1)
    text += "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: " +
            std::to_string(replicas) + "\n";
  return text;
}

// Replaces a file the way ConfigMap updates do: write a new file, rename it over.
void replace_file(const std::string& path, const std::string& content) {
  std::ofstream(path + ".new") << content;
  std::filesystem::rename(path + ".new", path);
}

class NodeFeatureE2E : public SimE2E {
 protected:
  void SetUp() override {
    SimE2E::SetUp();
    api.node_features().put_pod(kNamespace, "kgpu-abcde", "pod-uid", "kgpu", "ds-uid");
  }
  std::map<std::string, std::string> env() const {
    return {{"NODE_NAME", kNode}, {"NAMESPACE", kNamespace}, {"POD_NAME", "kgpu-abcde"}, {"KGPU_KUBE_API", api.url()}};
  }
  // Waits until the object's spec.labels[key] is `value` ("" : until there is no object).
  bool wait_label(const std::string& key, const std::string& value) {
    return api.node_features().wait(
        [&](const std::map<std::string, json>& all) {
          auto it = all.find(kObject);
          if (value.empty()) return it == all.end();
          return it != all.end() && it->second["spec"]["labels"].value(key, "") == value;
        },
        std::chrono::seconds(20));
  }
  bool wait_log(const ChildProcess& p, const std::string& text) {
    return wait_until([&] { return p.stderr_text().find(text) != std::string::npos; }, 20s);
  }

  FakeApiServer api{kNode, {}};
};

TEST_F(NodeFeatureE2E, PluginWritesUpdatesAndDeletesTheNodeFeature) {
  const std::string config_file = work.write("cfg/config.yaml", config(1, true));
  const std::string labels = work.file("features.d/kgpu");
  std::filesystem::create_directories(work.file("features.d"));
  PluginOptions options;
  options.config_file = config_file;
  options.env = env();
  options.extra_args = {"--labels", "--output-file", labels};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_label("nvidia.com/gpu.count", "8")) << diagnostics(*plugin);
  const json object = api.node_features().objects().at(kObject);
  EXPECT_EQ(object["spec"]["labels"]["nvidia.com/gpu.product"], "NVIDIA-A100-SXM4-40GB");
  EXPECT_EQ(object["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"], kNode);
  ASSERT_EQ(object["metadata"]["ownerReferences"].size(), 2u) << object.dump(2);
  EXPECT_EQ(object["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
  EXPECT_EQ(object["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(object["metadata"]["ownerReferences"][1]["name"], "kgpu-abcde");
  EXPECT_FALSE(path_exists(labels));  // the NodeFeature replaces the file
  EXPECT_TRUE(wait_log(*plugin, "labels: created NodeFeature " + kObject + " with ")) << diagnostics(*plugin);
  // Not a compatibility-only key any more: no "has no effect" warning.
  EXPECT_EQ(plugin->stderr_text().find("flags.useNodeFeatureAPI = true (file) has no effect"), std::string::npos);

  replace_file(config_file, config(4, true));  // the labels change: the object is updated
  ASSERT_TRUE(wait_healthy(kGpu, 32)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_label("nvidia.com/gpu.replicas", "4")) << diagnostics(*plugin);
  EXPECT_EQ(api.node_features().objects().at(kObject)["spec"]["labels"]["nvidia.com/gpu.sharing-strategy"],
            "time-slicing");
  EXPECT_TRUE(wait_log(*plugin, "labels: updated NodeFeature " + kObject)) << diagnostics(*plugin);
  EXPECT_NE(plugin->stderr_text().find("nvidia.com/gpu.replicas"), std::string::npos);

  replace_file(config_file, config(4, false));  // switched off: deleted, the file written again
  ASSERT_TRUE(wait_label("", "")) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return read_file(labels).find("nvidia.com/gpu.replicas=4\n") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  EXPECT_TRUE(wait_log(*plugin, "labels: deleted NodeFeature " + kObject)) << diagnostics(*plugin);

  replace_file(config_file, config(4, true));  // on again: the file goes, the object comes back
  ASSERT_TRUE(wait_label("nvidia.com/gpu.replicas", "4")) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return !path_exists(labels); }, 20s)) << diagnostics(*plugin);

  plugin->signal(SIGTERM);
  auto rc = plugin->wait_exit(10s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0) << diagnostics(*plugin);
  EXPECT_FALSE(api.node_features().objects().contains(kObject));  // deleted on exit (no keepLabelsOnExit)
  EXPECT_EQ(api.node_features().counts().rejected, 0) << api.node_features().rejections()[0];
}

TEST_F(NodeFeatureE2E, ApiFailuresAreLoggedWhileThePluginServesThenFixed) {
  api.node_features().set_forbidden(true);
  PluginOptions options;
  options.config_file = work.write("cfg/config.yaml", config(1, true));
  options.env = env();
  options.extra_args = {"--labels", "--output-file", work.file("features.d/kgpu")};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_log(*plugin, "HTTP 403 (RBAC: the service account needs get, create, update and delete on "
                                "nodefeatures.nfd.k8s-sigs.io in namespace kube-system"))
      << diagnostics(*plugin);
  EXPECT_NE(plugin->stderr_text().find("kgpu keeps running without it"), std::string::npos) << diagnostics(*plugin);

  api.node_features().set_forbidden(false);
  api.node_features().set_served(false);  // next: NFD's CRD is not installed
  ASSERT_TRUE(wait_log(*plugin, "install node-feature-discovery with its CRDs")) << diagnostics(*plugin);
  EXPECT_TRUE(plugin->running());
  EXPECT_EQ(sim->snapshot().find(kGpu)->registrations, 1);  // served throughout

  api.node_features().set_served(true);
  ASSERT_TRUE(wait_label("nvidia.com/gpu.count", "8")) << diagnostics(*plugin);
  EXPECT_TRUE(wait_log(*plugin, "labels: NodeFeature " + kObject + " is as wanted again, after ")) << diagnostics(*plugin);
  plugin->signal(SIGTERM);
  ASSERT_TRUE(plugin->wait_exit(10s).has_value());
  EXPECT_FALSE(api.node_features().objects().contains(kObject));
}

// The plugin cannot reach the NodeFeature API at all (no NODE_NAME): it says so and writes the
// feature file instead, and keeps serving.
TEST_F(NodeFeatureE2E, PluginWithoutNodeNameFallsBackToTheFeatureFile) {
  const std::string labels = work.file("features.d/kgpu");
  std::filesystem::create_directories(work.file("features.d"));
  PluginOptions options;
  options.config_file = work.write("cfg/config.yaml", config(1, true));
  options.env = {{"KGPU_KUBE_API", api.url()}};
  options.extra_args = {"--labels", "--output-file", labels};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return read_file(labels).find("nvidia.com/gpu.count=8\n") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  EXPECT_TRUE(wait_log(*plugin, "labels: flags.useNodeFeatureAPI needs the node's name in NODE_NAME (the chart sets it "
                                "from spec.nodeName); writing the feature file " + labels + " instead"))
      << diagnostics(*plugin);
  EXPECT_EQ(api.node_features().counts().gets, 0);
}

TEST_F(NodeFeatureE2E, LabelsDaemonWritesRestoresAndDeletesTheNodeFeature) {
  FakeNode node = make_fake_node("hgx-h100.yaml", work.file("node"));
  ProcessOptions p;
  p.argv = {kgpu_binary(), "labels", "--daemon", "--sysfs-root", node.sysfs_root, "--sleep-interval", "infinite"};
  p.env = fake_nvml_env(node);
  for (const auto& [k, v] : env()) p.env[k] = v;
  p.env["GFD_USE_NODE_FEATURE_API"] = "true";
  ChildProcess daemon(p, work.path(), "labels");
  ASSERT_TRUE(wait_label("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")) << daemon.stderr_text();
  EXPECT_EQ(api.node_features().objects().at(kObject)["spec"]["labels"]["nvidia.com/gpu.count"], "8");
  EXPECT_TRUE(wait_log(daemon, "labels: writing NodeFeature " + kObject +
                                   " (node-feature-discovery's NodeFeature API, flags.useNodeFeatureAPI) now and on "
                                   "SIGHUP"))
      << daemon.stderr_text();

  // Someone else changed the labels: the next round (SIGHUP) puts GFD's back.
  json changed = api.node_features().objects().at(kObject);
  changed["spec"]["labels"]["nvidia.com/gpu.count"] = "1";
  api.node_features().put(kNamespace, changed);
  daemon.signal(SIGHUP);
  ASSERT_TRUE(wait_label("nvidia.com/gpu.count", "8")) << daemon.stderr_text();
  EXPECT_TRUE(wait_log(daemon, "labels: updated NodeFeature " + kObject + " (")) << daemon.stderr_text();
  EXPECT_NE(daemon.stderr_text().find("changed: nvidia.com/gpu.count"), std::string::npos) << daemon.stderr_text();

  daemon.signal(SIGTERM);
  auto rc = daemon.wait_exit(10s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0) << daemon.stderr_text();
  EXPECT_FALSE(api.node_features().objects().contains(kObject));
  EXPECT_NE(daemon.stderr_text().find("labels: deleted NodeFeature " + kObject), std::string::npos)
      << daemon.stderr_text();
  EXPECT_EQ(api.node_features().counts().rejected, 0) << api.node_features().rejections()[0];
}

TEST_F(NodeFeatureE2E, LabelsDaemonWithoutNodeNameSaysWhatIsMissing) {
  FakeNode node = make_fake_node("hgx-h100.yaml", work.file("node"));
  ProcessOptions p;
  p.argv = {kgpu_binary(), "labels", "--daemon", "--sysfs-root", node.sysfs_root, "--use-node-feature-api"};
  p.env = fake_nvml_env(node);
  p.env["KGPU_KUBE_API"] = api.url();
  p.unset_env = {"NODE_NAME"};
  ChildProcess daemon(p, work.path(), "labels");
  auto rc = daemon.wait_exit(10s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 1);
  EXPECT_NE(daemon.stderr_text().find("flags.useNodeFeatureAPI needs the node's name in NODE_NAME"), std::string::npos)
      << daemon.stderr_text();
}

}  // namespace
}  // namespace kgpu::test
