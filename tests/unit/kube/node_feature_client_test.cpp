// The NodeFeature writer against the fake API server (issue 41 item 4): created, left alone when it
// says the same, updated (through conflicts), deleted; every failure a cluster can give (no CRD,
// no RBAC, another writer) an Error that says what to do; the sync's thread retries and recovers.
#include "kube/node_feature_client.h"

#include <gtest/gtest.h>

#include "kube/node_feature_sync.h"
#include "support/fake_api_server.h"

namespace kgpu::kube {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kNode = "gpu-node-1";
const std::string kObject = "kube-system/nvidia-features-for-gpu-node-1";
const std::map<std::string, std::string> kLabels{{"nvidia.com/gpu.count", "8"}, {"nvidia.com/gpu.replicas", "1"}};

class NodeFeatureClientTest : public ::testing::Test {
 protected:
  NodeFeatureClientTest() {
    api.node_features().put_pod("kube-system", "kgpu-abcde", "pod-uid", "kgpu", "ds-uid");
  }
  NodeFeatureSettings settings(const std::string& pod = "kgpu-abcde") const {
    return {{"kube-system", kNode}, pod};
  }
  json stored() {
    auto all = api.node_features().objects();
    auto it = all.find(kObject);
    return it == all.end() ? json() : it->second;
  }

  test::FakeApiServer api{kNode, {}};
  Interrupter interrupter;
  ApiClient client{ApiServer{api.url(), "", "", ""}, interrupter};
};

TEST_F(NodeFeatureClientTest, CreatesThenLeavesAloneThenUpdates) {
  NodeFeatureClient writer(client, settings());
  auto created = writer.write(kLabels);
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_EQ(created->outcome, NodeFeatureClient::Outcome::Created);
  const json object = stored();
  EXPECT_EQ(object["spec"]["labels"], json(kLabels));
  EXPECT_EQ(object["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"], kNode);
  ASSERT_EQ(object["metadata"]["ownerReferences"].size(), 2u);
  EXPECT_EQ(object["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
  EXPECT_EQ(object["metadata"]["ownerReferences"][0]["uid"], "ds-uid");
  EXPECT_EQ(object["metadata"]["ownerReferences"][1]["kind"], "Pod");

  auto same = writer.write(kLabels);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->outcome, NodeFeatureClient::Outcome::Unchanged);
  EXPECT_EQ(api.node_features().counts().updates, 0);
  EXPECT_EQ(api.node_features().pod_gets(), 1);  // the owners are looked up once

  auto changed = kLabels;
  changed["nvidia.com/gpu.replicas"] = "4";
  api.node_features().touch("kube-system", "nvidia-features-for-gpu-node-1");  // someone else wrote it
  auto updated = writer.write(changed);
  ASSERT_TRUE(updated.ok()) << updated.error().message;
  EXPECT_EQ(updated->outcome, NodeFeatureClient::Outcome::Updated);
  EXPECT_EQ(updated->before, kLabels);
  EXPECT_EQ(stored()["spec"]["labels"]["nvidia.com/gpu.replicas"], "4");
  EXPECT_EQ(stored()["metadata"]["annotations"]["touched-by"], "someone-else");  // kept
  EXPECT_EQ(api.node_features().counts().rejected, 0) << api.node_features().rejections()[0];
}

TEST_F(NodeFeatureClientTest, AConflictIsReadAgainAndWritten) {
  NodeFeatureClient writer(client, settings());
  ASSERT_TRUE(writer.write(kLabels).ok());
  api.node_features().fail_writes(409, 2);
  auto changed = kLabels;
  changed["nvidia.com/gpu.count"] = "7";
  auto updated = writer.write(changed);
  ASSERT_TRUE(updated.ok()) << updated.error().message;
  EXPECT_EQ(stored()["spec"]["labels"]["nvidia.com/gpu.count"], "7");
  api.node_features().fail_writes(409, 10);
  changed["nvidia.com/gpu.count"] = "6";
  auto failed = writer.write(changed);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("another writer kept changing the object"), std::string::npos)
      << failed.error().message;
}

TEST_F(NodeFeatureClientTest, FailuresSayWhatToDo) {
  NodeFeatureClient writer(client, settings());
  api.node_features().set_served(false);
  auto no_crd = writer.write(kLabels);
  ASSERT_FALSE(no_crd.ok());
  EXPECT_NE(no_crd.error().message.find("HTTP 404"), std::string::npos) << no_crd.error().message;
  EXPECT_NE(no_crd.error().message.find("install node-feature-discovery with its CRDs"), std::string::npos)
      << no_crd.error().message;

  api.node_features().set_served(true);
  api.node_features().set_forbidden(true);
  auto forbidden = writer.write(kLabels);
  ASSERT_FALSE(forbidden.ok());
  EXPECT_NE(forbidden.error().message.find("HTTP 403 (RBAC: the service account needs get, create, update and delete "
                                           "on nodefeatures.nfd.k8s-sigs.io in namespace kube-system"),
            std::string::npos)
      << forbidden.error().message;
  auto not_deleted = writer.remove();
  ASSERT_FALSE(not_deleted.ok());
  EXPECT_NE(not_deleted.error().message.find("DELETE "), std::string::npos) << not_deleted.error().message;
}

TEST_F(NodeFeatureClientTest, WithoutThePodTheNodeOwnsIt) {
  api.node_features().pods_forbidden(true);
  NodeFeatureClient writer(client, settings());
  ASSERT_TRUE(writer.write(kLabels).ok());
  ASSERT_EQ(stored()["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(stored()["metadata"]["ownerReferences"][0],
            json({{"apiVersion", "v1"}, {"kind", "Node"}, {"name", kNode}, {"uid", api.node_uid()}}));

  NodeFeatureClient no_pod(client, settings(""));
  ASSERT_TRUE(no_pod.remove().ok());
  ASSERT_TRUE(no_pod.write(kLabels).ok());
  EXPECT_EQ(stored()["metadata"]["ownerReferences"][0]["kind"], "Node");
}

TEST_F(NodeFeatureClientTest, RemoveSaysWhetherThereWasOne) {
  NodeFeatureClient writer(client, settings());
  ASSERT_TRUE(writer.write(kLabels).ok());
  auto removed = writer.remove();
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(*removed);
  EXPECT_TRUE(stored().is_null());
  auto again = writer.remove();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(NodeFeatureSettings, FromGfdsEnvironment) {
  auto full = node_feature_settings({{"NODE_NAME", "n1"}, {"NAMESPACE", "gpu"}, {"POD_NAME", "kgpu-x"}}, "/nonexistent");
  ASSERT_TRUE(full.ok()) << full.error().message;
  EXPECT_EQ(full->place.ns, "gpu");
  EXPECT_EQ(full->place.node, "n1");
  EXPECT_EQ(full->pod, "kgpu-x");
  auto defaulted = node_feature_settings({{"NODE_NAME", "n1"}}, "/nonexistent");
  ASSERT_TRUE(defaulted.ok());
  EXPECT_EQ(defaulted->place.ns, "default");  // GFD's default
  auto no_node = node_feature_settings({{"NAMESPACE", "gpu"}}, "/nonexistent");
  ASSERT_FALSE(no_node.ok());
  EXPECT_NE(no_node.error().message.find("NODE_NAME"), std::string::npos);
  EXPECT_FALSE(node_feature_settings({{"NODE_NAME", "n1"}, {"NAMESPACE", "Bad_NS"}}, "/nonexistent").ok());
}

TEST(NodeFeatureSyncTest, PublishesRetriesAndWithdraws) {
  test::FakeApiServer api(kNode, {});
  api.node_features().set_served(false);  // NFD's CRD not installed yet
  NodeFeatureSync sync(ApiServer{api.url(), "", "", ""}, {{"kube-system", kNode}, ""}, {10ms, 50ms, 5000ms});
  sync.publish(kLabels);
  ASSERT_TRUE(api.node_features().wait_counts([](const auto& c) { return c.refused >= 4; }, 10s));  // two attempts: retried
  api.node_features().set_served(true);
  ASSERT_TRUE(api.node_features().wait([](const auto& all) { return all.contains(kObject); }, 10s));
  auto changed = kLabels;
  changed["nvidia.com/gpu.count"] = "4";
  sync.publish(changed);
  ASSERT_TRUE(api.node_features().wait(
      [](const auto& all) { return all.contains(kObject) && all.at(kObject)["spec"]["labels"]["nvidia.com/gpu.count"] == "4"; },
      10s));
  sync.withdraw();
  ASSERT_TRUE(api.node_features().wait([](const auto& all) { return !all.contains(kObject); }, 10s));
  sync.publish(kLabels);
  ASSERT_TRUE(api.node_features().wait([](const auto& all) { return all.contains(kObject); }, 10s));
  sync.stop(true, 5s);  // on exit: deleted
  EXPECT_FALSE(api.node_features().objects().contains(kObject));
  EXPECT_EQ(api.node_features().counts().rejected, 0);
}

// An object this process never managed to write (no RBAC) is not deleted at exit: no request, no wait.
TEST(NodeFeatureSyncTest, NothingWrittenNothingDeletedAtExit) {
  test::FakeApiServer api(kNode, {});
  api.node_features().set_forbidden(true);
  NodeFeatureSync sync(ApiServer{api.url(), "", "", ""}, {{"kube-system", kNode}, ""}, {10ms, 50ms, 5000ms});
  sync.publish(kLabels);
  // A second refusal: the first attempt has been counted as failed (a first write still in flight
  // might be creating the object, and would be deleted).
  ASSERT_TRUE(api.node_features().wait_counts([](const auto& c) { return c.refused >= 2; }, 10s));
  const auto start = std::chrono::steady_clock::now();
  sync.stop(true, 5s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(api.node_features().counts().deletes, 0);
}

TEST(NodeFeatureSyncTest, StopsAtOnceWhileTheApiServerHangs) {
  test::FakeApiServer api(kNode, {});
  api.set_fault(test::FakeApiServer::Fault::Stall);  // the Node GET (owner lookup) hangs
  NodeFeatureSync sync(ApiServer{api.url(), "", "", ""}, {{"kube-system", kNode}, ""}, {10ms, 50ms, 60000ms});
  sync.publish(kLabels);
  ASSERT_TRUE(api.wait_requests(1, 10s));
  const auto start = std::chrono::steady_clock::now();
  sync.stop(true, 200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  api.set_fault(test::FakeApiServer::Fault::None);
}

}  // namespace
}  // namespace kgpu::kube
