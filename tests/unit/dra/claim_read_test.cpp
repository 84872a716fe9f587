// ResourceClaim reads against the fake API server: one GET per claim, in the resource.k8s.io version
// discovery found (discovery read once, shared with the slice publisher), names that would change
// the request's path refused, and stop() ending a read the server holds.
#include <gtest/gtest.h>

#include <thread>

#include "dra/publish/resource_api.h"
#include "dra/publish/slice_publisher.h"
#include "support/fake_api_server.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

kube::ApiServer server_of(const test::FakeApiServer& api) { return kube::ApiServer{api.url(), "", "", ""}; }

json claim(const std::string& name, const std::string& uid) {
  return {{"apiVersion", "resource.k8s.io/v1beta1"},
          {"kind", "ResourceClaim"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid}}}};
}

TEST(ClaimVersion, NewestServedOfV1V1beta2V1beta1) {
  EXPECT_EQ(*choose_claim_version({"v1", "v1beta2", "v1beta1"}), "v1");
  EXPECT_EQ(*choose_claim_version({"v1beta1", "v1beta2"}), "v1beta2");
  EXPECT_EQ(*choose_claim_version({"v1beta1"}), "v1beta1");
  EXPECT_EQ(*choose_claim_version({"v1alpha3", "v1beta1"}), "v1beta1");
  auto none = choose_claim_version({"v1alpha3"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("v1alpha3"), std::string::npos) << none.error().message;
  EXPECT_FALSE(choose_claim_version({}).ok());
}

// A 1.32 cluster (v1beta1 only): every claim is one GET in v1beta1, after one discovery. (Before,
// each claim tried v1, then v1beta2, then v1beta1: three GETs, two of them 404s.)
TEST(ClaimRead, OneGetPerClaimInTheVersionDiscoveryFound) {
  for (const auto& [served, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"v1beta1"}, "v1beta1"}, {{"v1beta2", "v1beta1"}, "v1beta2"}, {{"v1", "v1beta2", "v1beta1"}, "v1"}}) {
    test::FakeApiServer api("node-1", {});
    api.serve_resource_versions(served);
    api.put_resource_claim(claim("train", "uid-1"));
    api.put_resource_claim(claim("infer", "uid-2"));
    kube::Interrupter interrupter;
    ClaimReader reader(std::make_shared<ResourceApiDiscovery>(), server_of(api), interrupter);
    for (const char* name : {"train", "infer", "train"}) {
      auto text = reader.fetch("team-a", name);
      ASSERT_TRUE(text.ok()) << text.error().message;
      EXPECT_EQ(json::parse(*text)["metadata"]["name"], name);
    }
    EXPECT_EQ(api.claim_reads(), std::vector<std::string>(3, expected));
    EXPECT_EQ(api.slice_counts().discoveries, 1);
  }
}

TEST(ClaimRead, TheSlicePublisherAndTheClaimReadsShareOneDiscovery) {
  test::FakeApiServer api("node-1", {});
  api.serve_resource_versions({"v1beta1"});
  api.put_resource_claim(claim("train", "uid-1"));
  auto discovery = std::make_shared<ResourceApiDiscovery>();
  SliceOptions options;
  options.node_name = "node-1";
  options.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  SlicePublisher publisher(server_of(api), options, std::nullopt, discovery);
  auto publication = build_publication(testing::a100_node(2, 0), options);
  ASSERT_TRUE(publication.ok());
  ASSERT_TRUE(publisher.sync(publication->pools).ok()) << publisher.state().problem;
  kube::Interrupter interrupter;
  ClaimReader reader(discovery, server_of(api), interrupter);
  ASSERT_TRUE(reader.fetch("team-a", "train").ok());
  EXPECT_EQ(api.slice_counts().discoveries, 1);
  EXPECT_EQ(api.claim_reads(), std::vector<std::string>{"v1beta1"});
  ASSERT_TRUE(discovery->known().has_value());
  EXPECT_EQ(*discovery->known(), std::vector<std::string>{"v1beta1"});
}

TEST(ClaimRead, AMissingClaimOrGroupIsAnErrorNamingTheClaimAndTheStatus) {
  test::FakeApiServer api("node-1", {});
  kube::Interrupter interrupter;
  ClaimReader reader(std::make_shared<ResourceApiDiscovery>(), server_of(api), interrupter);
  auto missing = reader.fetch("team-a", "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("team-a/nope"), std::string::npos) << missing.error().message;
  EXPECT_NE(missing.error().message.find("HTTP 404"), std::string::npos) << missing.error().message;
  EXPECT_EQ(api.claim_reads(), std::vector<std::string>{"v1"});  // one GET, no other version tried

  test::FakeApiServer no_dra("node-1", {});
  no_dra.serve_resource_versions({});
  ClaimReader without(std::make_shared<ResourceApiDiscovery>(), server_of(no_dra), interrupter);
  auto refused = without.fetch("team-a", "train");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("no version"), std::string::npos) << refused.error().message;
  EXPECT_TRUE(no_dra.claim_reads().empty());
}

TEST(ClaimRead, NamesThatWouldChangeThePathAreRefusedWithoutARequest) {
  test::FakeApiServer api("node-1", {});
  kube::Interrupter interrupter;
  ClaimReader reader(std::make_shared<ResourceApiDiscovery>(), server_of(api), interrupter);
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{
           {"team-a", "x/../../nodes/n1"}, {"team-a", "a?watch=1"}, {"..", "train"}, {"", "train"}, {"team-a", "%2F"},
           {"Team-A", "train"}}) {
    auto refused = reader.fetch(ns, name);
    ASSERT_FALSE(refused.ok()) << ns << "/" << name;
    EXPECT_EQ(refused.error().code, Error::Code::InvalidArgument) << refused.error().message;
  }
  EXPECT_TRUE(api.claim_reads().empty());
  EXPECT_EQ(api.slice_counts().discoveries, 0);
}

TEST(ClaimRead, StopEndsAReadTheServerHolds) {
  test::FakeApiServer api("node-1", {});
  api.put_resource_claim(claim("train", "uid-1"));
  api.stall_claim_reads(true);
  kube::Interrupter interrupter;
  ClaimReader reader(std::make_shared<ResourceApiDiscovery>(), server_of(api), interrupter, 60s);
  Result<std::string> result = Error::internal("not run");
  std::thread reading([&] { result = reader.fetch("team-a", "train"); });
  ASSERT_TRUE(api.wait_claim_reads(1, 10s));
  const auto t0 = std::chrono::steady_clock::now();
  interrupter.stop();
  reading.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("stopping"), std::string::npos) << result.error().message;
  api.stall_claim_reads(false);
}

}  // namespace
}  // namespace kgpu::dra
