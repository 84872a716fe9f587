// The node's NodeFeature object (flags.useNodeFeatureAPI, issue 41 item 4): what kgpu writes passes
// NFD's CRD schema (tests/support/node_feature_schema.h) and says what GFD's says; the answers it
// reads (the NodeFeature, the daemon's Pod) give a value or an Error, never a throw.
#include "kube/node_feature.h"

#include <gtest/gtest.h>

#include "kube/node_capacity.h"
#include "support/node_feature_schema.h"

namespace kgpu::kube {
namespace {

using nlohmann::json;

const NodeFeaturePlace kPlace{"kube-system", "gpu-node-1"};
const std::map<std::string, std::string> kLabels{{"nvidia.com/gpu.count", "8"},
                                                 {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"},
                                                 {"nvidia.com/gfd.timestamp", "1700000000"}};
const std::vector<OwnerRef> kOwners{{"apps/v1", "DaemonSet", "kgpu", "ds-uid", true}, {"v1", "Pod", "kgpu-abcde", "pod-uid", false}};

TEST(NodeFeature, PlaceAndNameAreGfds) {
  EXPECT_EQ(kPlace.name(), "nvidia-features-for-gpu-node-1");
  EXPECT_EQ(kPlace.path(), "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/kube-system/nodefeatures/nvidia-features-for-gpu-node-1");
  EXPECT_EQ(kPlace.describe(), "NodeFeature kube-system/nvidia-features-for-gpu-node-1");
  EXPECT_TRUE(check_node_feature_place(kPlace).ok());
  EXPECT_FALSE(check_node_feature_place({"Kube_System", "n"}).ok());
  EXPECT_FALSE(check_node_feature_place({"ns", "Node/1"}).ok());
  const std::string long_node = std::string(60, 'a') + "." + std::string(60, 'b') + "." + std::string(60, 'c') + "." +
                                std::string(60, 'd');  // a valid node name, but the object's name is over 253
  EXPECT_TRUE(check_node_name(long_node).ok());
  EXPECT_FALSE(check_node_feature_place({"ns", long_node}).ok());
}

TEST(NodeFeature, ObjectPassesNfdsSchemaAndSaysWhatGfdWrites) {
  const json object = node_feature_object(kPlace, kLabels, kOwners);
  EXPECT_EQ(test::node_feature_schema_problem(object), "") << object.dump(2);
  EXPECT_EQ(object["apiVersion"], "nfd.k8s-sigs.io/v1alpha1");
  EXPECT_EQ(object["kind"], "NodeFeature");
  EXPECT_EQ(object["metadata"]["name"], "nvidia-features-for-gpu-node-1");
  EXPECT_EQ(object["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(object["metadata"]["labels"], json({{"nfd.node.kubernetes.io/node-name", "gpu-node-1"}}));
  EXPECT_FALSE(object["metadata"].contains("resourceVersion"));
  EXPECT_EQ(object["spec"]["labels"], json(kLabels));
  EXPECT_EQ(object["spec"]["features"], json({{"flags", json::object()}, {"attributes", json::object()}, {"instances", json::object()}}));
  ASSERT_EQ(object["metadata"]["ownerReferences"].size(), 2u);
  EXPECT_EQ(object["metadata"]["ownerReferences"][0],
            json({{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "kgpu"}, {"uid", "ds-uid"}, {"controller", true}}));
  EXPECT_EQ(object["metadata"]["ownerReferences"][1],
            json({{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "kgpu-abcde"}, {"uid", "pod-uid"}}));
  // No owners: no ownerReferences field at all (an empty list is as good, but GFD leaves it out).
  EXPECT_FALSE(node_feature_object(kPlace, {}, {})["metadata"].contains("ownerReferences"));
  EXPECT_EQ(test::node_feature_schema_problem(node_feature_object(kPlace, {}, {})), "");
}

// The schema check itself finds what the CRD and NFD's master refuse (so that the fake's 422s mean it).
TEST(NodeFeature, SchemaCheckRefusesWhatTheCrdRefuses) {
  const json good = node_feature_object(kPlace, kLabels, kOwners);
  auto broken = [&](auto change) {
    json o = good;
    change(o);
    return test::node_feature_schema_problem(o);
  };
  EXPECT_NE(broken([](json& o) { o.erase("spec"); }), "");
  EXPECT_NE(broken([](json& o) { o["spec"]["labels"]["a"] = 1; }), "");
  EXPECT_NE(broken([](json& o) { o["spec"]["extra"] = 1; }), "");
  EXPECT_NE(broken([](json& o) { o["status"] = json::object(); }), "");
  EXPECT_NE(broken([](json& o) { o["spec"]["features"]["attributes"]["x"] = json::object(); }), "");  // elements required
  EXPECT_NE(broken([](json& o) { o["spec"]["features"]["instances"]["x"]["elements"] = json::object(); }), "");
  EXPECT_NE(broken([](json& o) { o["metadata"]["labels"].erase("nfd.node.kubernetes.io/node-name"); }), "");
  EXPECT_NE(broken([](json& o) { o["metadata"]["ownerReferences"][0].erase("uid"); }), "");
  EXPECT_NE(broken([](json& o) { o["metadata"]["ownerReferences"][1]["controller"] = true; }), "");  // two controllers
  EXPECT_NE(broken([](json& o) { o["spec"]["labels"]["nvidia.com/gpu.product"] = std::string(64, 'a'); }), "");
  EXPECT_NE(broken([](json& o) { o["apiVersion"] = "nfd.k8s-sigs.io/v1"; }), "");
  EXPECT_EQ(broken([](json& o) {
              o["spec"]["features"]["attributes"]["cpu.model"]["elements"] = {{"vendor_id", "Intel"}};
              o["spec"]["features"]["flags"]["cpu.cpuid"]["elements"] = {{"AVX", json::object()}};
              o["spec"]["features"]["instances"]["pci.device"]["elements"] = {{{"attributes", {{"vendor", "10de"}}}}};
            }),
            "");
}

TEST(NodeFeature, ParsesWhatTheServerHoldsAndComparesIt) {
  json stored = node_feature_object(kPlace, kLabels, kOwners);
  stored["metadata"]["resourceVersion"] = "42";
  stored["metadata"]["annotations"] = {{"someone", "else"}};
  auto state = parse_node_feature(stored.dump());
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->resource_version, "42");
  EXPECT_EQ(state->node_label, "gpu-node-1");
  EXPECT_EQ(state->labels, kLabels);
  EXPECT_EQ(state->owners, kOwners);
  EXPECT_TRUE(state->features_empty);
  EXPECT_TRUE(node_feature_matches(*state, kPlace, kLabels, kOwners));
  auto changed = kLabels;
  changed["nvidia.com/gpu.replicas"] = "4";
  EXPECT_FALSE(node_feature_matches(*state, kPlace, changed, kOwners));
  EXPECT_FALSE(node_feature_matches(*state, kPlace, kLabels, {kOwners[1]}));

  // The update keeps the resourceVersion (optimistic concurrency) and what others added.
  const json update = node_feature_update(*state, kPlace, changed, kOwners);
  EXPECT_EQ(test::node_feature_schema_problem(update), "") << update.dump(2);
  EXPECT_EQ(update["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(update["metadata"]["annotations"]["someone"], "else");
  EXPECT_EQ(update["spec"]["labels"]["nvidia.com/gpu.replicas"], "4");

  // Features someone else put in are replaced by GFD's empty sets: not a match.
  stored["spec"]["features"]["attributes"]["x"]["elements"] = {{"a", "b"}};
  auto foreign = parse_node_feature(stored.dump());
  ASSERT_TRUE(foreign.ok());
  EXPECT_FALSE(foreign->features_empty);
  EXPECT_FALSE(node_feature_matches(*foreign, kPlace, kLabels, kOwners));
}

TEST(NodeFeature, BadAnswersAreErrorsNotThrows) {
  for (const char* text : {"", "[]", "{", R"({"kind":"Node"})", R"({"kind":5})",
                           R"({"kind":"NodeFeature","metadata":[]})",
                           R"({"kind":"NodeFeature","metadata":{"resourceVersion":7}})",
                           R"({"kind":"NodeFeature","metadata":{"labels":{"a":1}}})",
                           R"({"kind":"NodeFeature","metadata":{"ownerReferences":{}}})",
                           R"({"kind":"NodeFeature","metadata":{"ownerReferences":[{"controller":"yes"}]}})",
                           R"({"kind":"NodeFeature","spec":{"labels":{"a":["b"]}}})",
                           R"({"kind":"NodeFeature","spec":{"features":7}})"})
    EXPECT_FALSE(parse_node_feature(text).ok()) << text;
  EXPECT_FALSE(parse_node_feature(std::string(100, '[') + std::string(100, ']')).ok());  // nesting limit
  // A bare object with none of the optional parts is a NodeFeature without labels.
  auto bare = parse_node_feature(R"({"kind":"NodeFeature"})");
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare->labels.empty());
}

TEST(NodeFeature, OwnersFromThePodAreItsDaemonSetThenThePod) {
  const json pod{{"kind", "Pod"},
                 {"metadata",
                  {{"name", "kgpu-abcde"},
                   {"uid", "pod-uid"},
                   {"ownerReferences",
                    {{{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "kgpu"}, {"uid", "ds-uid"}, {"controller", true}}}}}}};
  auto owners = owners_from_pod(pod.dump());
  ASSERT_TRUE(owners.ok()) << owners.error().message;
  EXPECT_EQ(*owners, kOwners);

  json bare = pod;
  bare["metadata"].erase("ownerReferences");  // run by hand: the pod alone
  auto alone = owners_from_pod(bare.dump());
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(*alone, std::vector<OwnerRef>({kOwners[1]}));

  for (const char* text : {"x", R"({"kind":"Pod"})", R"({"kind":"Pod","metadata":{"name":"p"}})",
                           R"({"kind":"Node","metadata":{"name":"p","uid":"u"}})",
                           R"({"kind":"Pod","metadata":{"name":"p","uid":"u","ownerReferences":[5]}})"})
    EXPECT_FALSE(owners_from_pod(text).ok()) << text;
}

}  // namespace
}  // namespace kgpu::kube
