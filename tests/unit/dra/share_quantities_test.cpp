// Issue 38, item 5: the amounts a memory share's allocation result consumes are checked against
// the request policy kgpu published and the device's capacity, never trusted: a 1-byte share under
// a 1Gi minimum was prepared with a 1 MiB MPS limit. The errors name the value.
#include <gtest/gtest.h>

#include "dra/model/claim.h"
#include "dra/model/publication.h"
#include "dra/sharing/prepare.h"
#include "unit/dra/claim_test_support.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;

constexpr uint64_t kGi = uint64_t{1} << 30;
const std::string kUid = "5a4e0000-0000-4000-8000-000000000038";

struct SharedGpu {
  Inventory inventory = testing::a100_node(2, 0);  // 40 GiB each; GPU 1 shared
  Config config;
  DriverPool pool;
  SharedGpu() {
    for (auto& g : inventory.gpus) g.multiprocessors = 108;
    config.mps_root = "/run/kgpu/mps";
    SliceOptions options;
    options.node_name = "node-1";
    options.memory_shared_gpus = {inventory.gpus[1].uuid};
    options.memory_policy = CapacityRequestPolicy{kGi, kGi, kGi};
    options.multiprocessors_default = 4;
    pool = build_publication(inventory, options)->pools.at(0);
  }
  // One share of GPU 1 consuming `memory` (and `sms` multiprocessors when given).
  Result<Preparation> prepare(const std::string& memory, const std::string& sms = "") const {
    json c = testing::claim_json(
        kUid, {{"gpu", testing::gpu_name(inventory, 1), "gpu.nvidia.com", "node-1", false, kUid + "-s0"}});
    json& r = c["status"]["allocation"]["devices"]["results"][0];
    r["consumedCapacity"]["memory"] = memory;
    if (!sms.empty()) r["consumedCapacity"]["multiprocessors"] = sms;
    auto parsed = parse_resource_claim(c.dump());
    if (!parsed) return parsed.error();
    return prepare_claim(*parsed, PrepareInputs{config, inventory, pool, nullptr});
  }
  std::string error(const std::string& memory, const std::string& sms = "") const {
    auto p = prepare(memory, sms);
    EXPECT_FALSE(p.ok()) << memory << " " << sms;
    return p.ok() ? "" : p.error().message;
  }
};

TEST(DraShareQuantities, WhatThePolicyAllowsIsPrepared) {
  SharedGpu n;
  EXPECT_TRUE(n.prepare("1Gi").ok());
  EXPECT_TRUE(n.prepare("3Gi", "54").ok());
  EXPECT_TRUE(n.prepare("40Gi", "108").ok());
}

TEST(DraShareQuantities, AnAmountOutsideThePolicyOrTheDeviceIsRefusedByValue) {
  SharedGpu n;
  const std::string tiny = n.error("1");
  EXPECT_NE(tiny.find("consumes memory 1 (1 bytes), below the minimum 1Gi (1073741824 bytes) of the device's "
                      "request policy"),
            std::string::npos)
      << tiny;
  const std::string odd = n.error("1536Mi");
  EXPECT_NE(odd.find("consumes memory 1536Mi (1610612736 bytes), not the policy's minimum 1Gi (1073741824 bytes) "
                     "plus whole steps of 1Gi"),
            std::string::npos)
      << odd;
  const std::string big = n.error("41Gi");
  EXPECT_NE(big.find("consumes memory 41Gi (44023414784 bytes), more than the device's 40Gi"), std::string::npos)
      << big;
  const std::string sms = n.error("1Gi", "109");
  EXPECT_NE(sms.find("consumes multiprocessors 109, more than the device's 108"), std::string::npos) << sms;
}

}  // namespace
}  // namespace kgpu::dra
