// Issue 38, item 4: kgpu.dra.sharing.memory.oneNamespacePerGpu keeps the memory shares of one GPU
// (one MPS server, one trust domain) within one namespace: a share of another namespace is refused
// at prepare with both namespaces named, and taken once the GPU's shares of the first are gone.
#include <gtest/gtest.h>

#include "dra/claims/claim_store.h"
#include "dra/model/publication.h"
#include "unit/dra/claim_test_support.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

constexpr uint64_t kGi = uint64_t{1} << 30;

std::string uid(int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "5a4e0000-0000-4000-8000-%012d", 3800 + n);
  return buf;
}

struct SharedStore {
  testing::ScratchDir dir;
  std::shared_ptr<NodeDevices> devices = std::make_shared<NodeDevices>();
  std::map<std::string, std::string> claims;  // name -> JSON
  explicit SharedStore(bool one_namespace) {
    devices->inventory = testing::a100_node(2, 0);
    devices->config.mps_root = "/run/kgpu/mps";
    devices->config.dra.memory_sharing.one_namespace_per_gpu = one_namespace;
    SliceOptions options;
    options.node_name = "node-1";
    options.memory_shared_gpus = {devices->inventory.gpus[1].uuid};
    options.memory_policy = CapacityRequestPolicy{kGi, kGi, kGi};
    devices->pool = build_publication(devices->inventory, options)->pools.at(0);
  }
  std::unique_ptr<ClaimStore> open() {
    auto store = std::make_unique<ClaimStore>(
        ClaimStoreOptions{"gpu.nvidia.com", (dir.path / "plugin" / "claims.json").string(),
                          (dir.path / "cdi").string(), "boot-1"},
        [this](const std::string&, const std::string& name) {
          auto it = claims.find(name);
          if (it == claims.end()) return Result<std::string>(Error::not_found(name));
          return Result<std::string>(it->second);
        });
    store->set_devices(devices);
    return store;
  }
  // A 1Gi share of GPU 1 for claim n of namespace `ns`.
  ClaimRef share(int n, const std::string& ns) {
    nlohmann::json c = testing::claim_json(
        uid(n), {{"gpu", testing::gpu_name(devices->inventory, 1), "gpu.nvidia.com", "node-1", false, uid(n) + "-s0"}});
    c["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["memory"] = "1Gi";
    claims["claim-" + std::to_string(n)] = c.dump();
    return {uid(n), ns, "claim-" + std::to_string(n)};
  }
};

TEST(DraShareNamespaces, AGpusSharesStayWithinOneNamespaceWhenTheOperatorAsks) {
  SharedStore node(true);
  auto store = node.open();
  ASSERT_TRUE(store->prepare(node.share(1, "team-a")).ok());
  ASSERT_TRUE(store->prepare(node.share(2, "team-a")).ok());  // the same namespace shares on
  auto refused = store->prepare(node.share(3, "team-b"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Error::Code::FailedPrecondition);
  EXPECT_NE(refused.error().message.find("holds memory shares of namespace team-a"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("this claim is of namespace team-b"), std::string::npos);
  EXPECT_NE(refused.error().message.find("kgpu.dra.sharing.memory.oneNamespacePerGpu"), std::string::npos);
  // Once team-a's shares are gone, the GPU takes team-b's.
  ASSERT_TRUE(store->unprepare(uid(1)).ok());
  ASSERT_TRUE(store->unprepare(uid(2)).ok());
  EXPECT_TRUE(store->prepare(node.share(3, "team-b")).ok());
}

TEST(DraShareNamespaces, ByDefaultNamespacesShareAGpu) {
  SharedStore node(false);
  auto store = node.open();
  ASSERT_TRUE(store->prepare(node.share(1, "team-a")).ok());
  EXPECT_TRUE(store->prepare(node.share(2, "team-b")).ok());
}

}  // namespace
}  // namespace kgpu::dra
