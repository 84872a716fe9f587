// End to end (issue 30, item 12): `kgpu node-capacity set NAME=QTY` / `remove NAME` against the
// fake API server: the real binary sends the Kubernetes docs' JSON Patch to the Node's status
// subresource, with the node from --node or NODE_NAME and the API server from KGPU_KUBE_API
// (the same discovery as the rest of kgpu); bad input exits 2 without a request, a refused patch
// exits 1 and says why.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/harness.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;

struct CliResult {
  int rc = -1;
  std::string out, err;
};

class NodeCapacityE2E : public ::testing::Test {
 protected:
  CliResult kgpu(std::vector<std::string> args, std::map<std::string, std::string> env, const std::string& name) {
    ProcessOptions p;
    p.argv = {kgpu_binary()};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    p.env = {{"KGPU_KUBE_API", api.url()}};
    for (auto& [k, v] : env) p.env[k] = v;
    // Only what the test gives: no pod environment of the machine running the tests.
    for (const char* var : {"NODE_NAME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KGPU_KUBE_TOKEN"})
      if (!p.env.contains(var)) p.unset_env.push_back(var);
    ChildProcess child(p, work.path(), name);
    auto rc = child.wait_exit(30s);
    return {rc.value_or(-1), child.stdout_text(), child.stderr_text()};
  }

  FakeApiServer api{"gpu-node-1", {}};
  TempDir work{"kgpu-node-capacity"};
};

TEST_F(NodeCapacityE2E, SetAndRemoveSendTheDocsJsonPatchToTheNodesStatus) {
  ASSERT_TRUE(api.bound());
  auto set = kgpu({"node-capacity", "set", "example.com/dongle=4"}, {{"NODE_NAME", "gpu-node-1"}}, "set");
  ASSERT_EQ(set.rc, 0) << set.err;
  EXPECT_NE(set.out.find("node gpu-node-1: status.capacity example.com/dongle=4"), std::string::npos) << set.out;
  auto patches = api.node_patches();
  ASSERT_EQ(patches.size(), 1u);
  EXPECT_EQ(patches[0].content_type, "application/json-patch+json");
  EXPECT_EQ(nlohmann::json::parse(patches[0].body, nullptr, false),
            nlohmann::json::parse(R"([{"op":"add","path":"/status/capacity/example.com~1dongle","value":"4"}])"))
      << patches[0].body;
  EXPECT_EQ(api.node_capacity(), (std::map<std::string, std::string>{{"example.com/dongle", "4"}}));

  // --node wins over NODE_NAME (the fake knows only gpu-node-1: "other" would be a 404).
  auto again = kgpu({"node-capacity", "set", "example.com/dongle=2k", "--node", "gpu-node-1"},
                    {{"NODE_NAME", "other"}}, "set-node");
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_EQ(api.node_capacity(), (std::map<std::string, std::string>{{"example.com/dongle", "2k"}}));

  auto remove = kgpu({"node-capacity", "remove", "example.com/dongle", "--node", "gpu-node-1"}, {}, "remove");
  ASSERT_EQ(remove.rc, 0) << remove.err;
  EXPECT_NE(remove.out.find("example.com/dongle removed"), std::string::npos) << remove.out;
  EXPECT_TRUE(api.node_capacity().empty());
  patches = api.node_patches();
  ASSERT_EQ(patches.size(), 3u);
  EXPECT_EQ(nlohmann::json::parse(patches[2].body, nullptr, false),
            nlohmann::json::parse(R"([{"op":"remove","path":"/status/capacity/example.com~1dongle"}])"))
      << patches[2].body;

  // Removing what is not there: the API server's 422, with the hint.
  auto missing = kgpu({"node-capacity", "remove", "example.com/dongle", "--node", "gpu-node-1"}, {}, "remove-missing");
  EXPECT_EQ(missing.rc, 1) << missing.err;
  EXPECT_NE(missing.err.find("HTTP 422"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("is example.com/dongle in the node's status.capacity?"), std::string::npos) << missing.err;
}

TEST_F(NodeCapacityE2E, BadInputExitsTwoWithoutARequest) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"node-capacity", "set", "dongle=4"}, {{"NODE_NAME", "gpu-node-1"}}, "needs a domain prefix"},
      {{"node-capacity", "set", "kubernetes.io/dongle=4"}, {{"NODE_NAME", "gpu-node-1"}}, "reserved"},
      {{"node-capacity", "set", "requests.example.com/dongle=4"}, {{"NODE_NAME", "gpu-node-1"}}, "requests."},
      {{"node-capacity", "set", "example.com/dongle=1.5"}, {{"NODE_NAME", "gpu-node-1"}}, "not whole"},
      {{"node-capacity", "set", "example.com/dongle=-1"}, {{"NODE_NAME", "gpu-node-1"}}, "not a number"},
      {{"node-capacity", "set", "example.com/dongle"}, {{"NODE_NAME", "gpu-node-1"}}, "is not NAME=QTY"},
      {{"node-capacity", "set", "example.com/dongle=4"}, {}, "pass --node NAME or set NODE_NAME"},
      {{"node-capacity", "set", "example.com/dongle=4", "--node", "a/b"}, {}, "node name \"a/b\""},
      {{"node-capacity", "remove", "dongle"}, {{"NODE_NAME", "gpu-node-1"}}, "needs a domain prefix"},
  };
  for (const auto& c : cases) {
    auto run = kgpu(c.args, c.env, "bad");
    EXPECT_EQ(run.rc, 2) << c.args.back() << ": " << run.err;
    EXPECT_NE(run.err.find(c.says), std::string::npos) << c.args.back() << ": " << run.err;
  }
  EXPECT_TRUE(api.node_patches().empty());
}

TEST_F(NodeCapacityE2E, RefusalsExitOneAndSayWhy) {
  auto unknown = kgpu({"node-capacity", "set", "example.com/dongle=4", "--node", "no-such-node"}, {}, "unknown-node");
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_NE(unknown.err.find("HTTP 404"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("no Node named \"no-such-node\""), std::string::npos) << unknown.err;

  api.require_token("sekrit");
  auto refused = kgpu({"node-capacity", "set", "example.com/dongle=4", "--node", "gpu-node-1"},
                      {{"KGPU_KUBE_TOKEN", "wrong"}}, "bad-token");
  EXPECT_EQ(refused.rc, 1);
  EXPECT_NE(refused.err.find("HTTP 401"), std::string::npos) << refused.err;
  EXPECT_TRUE(api.node_capacity().empty());

  auto accepted = kgpu({"node-capacity", "set", "example.com/dongle=4", "--node", "gpu-node-1"},
                       {{"KGPU_KUBE_TOKEN", "sekrit"}}, "good-token");
  ASSERT_EQ(accepted.rc, 0) << accepted.err;
  EXPECT_EQ(api.node_capacity(), (std::map<std::string, std::string>{{"example.com/dongle", "4"}}));

  auto unreachable = kgpu({"node-capacity", "set", "example.com/dongle=4", "--node", "gpu-node-1"},
                          {{"KGPU_KUBE_API", "http://127.0.0.1:" + std::to_string(FakeApiServer::free_port())}},
                          "unreachable");
  EXPECT_EQ(unreachable.rc, 1);
  EXPECT_NE(unreachable.err.find("PATCH /api/v1/nodes/gpu-node-1/status"), std::string::npos) << unreachable.err;
}

}  // namespace
}  // namespace kgpu::test
