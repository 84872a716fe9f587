// Memory shares of full GPUs (kgpu.dra.sharing.memory, issue 31): which GPUs are published for
// shares and how, a claim's consumed capacity, what a share's containers get as an MPS client of
// its GPU's daemon, the claim store's arithmetic over a GPU's shares, and the checkpoint keeping
// them across a restart.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "dra/claims/claim_store.h"
#include "dra/model/publication.h"
#include "dra/publish/slice_objects.h"
#include "dra/sharing/memory_shares.h"
#include "dra/sharing/prepare.h"
#include "dra/sharing/share_usage.h"
#include "plan/mps_paths.h"
#include "unit/dra/claim_test_support.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;
using testing::claim_json;
using testing::gpu_name;

constexpr uint64_t kGi = uint64_t{1} << 30;
constexpr uint64_t kSms = 108;  // an A100's
const CapacityRequestPolicy kPolicy{kGi, kGi, kGi};

Inventory node() {
  Inventory inv = testing::a100_node(4, 1);  // GPU 0 in MIG mode, GPUs 1-3 full, 40 GiB each
  for (auto& g : inv.gpus) g.multiprocessors = static_cast<int>(kSms);
  return inv;
}

std::string uid(int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "5a4e0000-0000-4000-8000-%012d", n);
  return buf;
}

DraMemorySharing sharing(std::vector<std::string> gpus) {
  DraMemorySharing m;
  m.gpus = std::move(gpus);
  return m;
}

bool has_note(const std::vector<std::string>& notes, const std::string& text) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// A claim with one share of `device` per entry of `memory` (share IDs <claim uid>-s0, -s1, ...), each with its
// consumedCapacity (none where the amount is 0). Share IDs are "<claim uid>-s<n>": unique, as the scheduler makes them.
json share_claim(const std::string& claim_uid, const std::string& device, const std::vector<uint64_t>& memory,
                 std::optional<uint64_t> sms = std::nullopt) {
  std::vector<testing::ResultSpec> results;
  for (size_t i = 0; i < memory.size(); ++i)
    results.push_back({"gpu" + std::to_string(i), device, "gpu.nvidia.com", "node-1", false,
                       claim_uid + "-s" + std::to_string(i)});
  json c = claim_json(claim_uid, results);
  for (size_t i = 0; i < memory.size(); ++i) {
    json& r = c["status"]["allocation"]["devices"]["results"][i];
    if (memory[i] > 0) r["consumedCapacity"]["memory"] = binary_si_quantity(memory[i]);
    if (sms) r["consumedCapacity"]["multiprocessors"] = std::to_string(*sms);
  }
  return c;
}

// GPU 1 published for shares (memory, and multiprocessors when `sms_default` > 0); the rest whole.
struct SharedNode {
  Inventory inventory = node();
  Config config;
  SliceOptions options;
  DriverPool pool;
  explicit SharedNode(uint64_t sms_default = 4) {
    config.mps_root = "/run/kgpu/mps";
    options.node_name = "node-1";
    options.memory_shared_gpus = {inventory.gpus[1].uuid};
    options.memory_policy = kPolicy;
    options.multiprocessors_default = sms_default;
    pool = build_publication(inventory, options)->pools.at(0);
  }
  const std::string& uuid() const { return inventory.gpus[1].uuid; }
  std::string device() const { return gpu_name(inventory, 1); }
  Result<Preparation> prepare(const json& claim) const {
    auto parsed = parse_resource_claim(claim.dump());
    if (!parsed) return parsed.error();
    return prepare_claim(*parsed, PrepareInputs{config, inventory, pool, nullptr});
  }
  std::string error(const json& claim) const {
    auto p = prepare(claim);
    EXPECT_FALSE(p.ok());
    return p.ok() ? "" : p.error().message;
  }
};

const DraDevice& device_named(const DriverPool& pool, const std::string& name) {
  auto it = std::find_if(pool.devices.begin(), pool.devices.end(), [&](const DraDevice& d) { return d.name == name; });
  EXPECT_NE(it, pool.devices.end()) << name;
  return *it;
}

bool has_env(const json& edits, const std::string& entry) {
  const json env = edits.value("env", json::array());
  return std::find(env.begin(), env.end(), entry) != env.end();
}

TEST(DraMemoryShares, AllIndexesAndUuidsNameTheFullGpusDraServes) {
  const Inventory inv = node();
  auto all = memory_share_options(inv, sharing({"all"}), {});
  EXPECT_EQ(all.gpus, (std::set<std::string>{inv.gpus[1].uuid, inv.gpus[2].uuid, inv.gpus[3].uuid}));
  EXPECT_TRUE(has_note(all.notes, inv.gpus[0].uuid + ": MIG mode is on")) << all.notes.size();
  EXPECT_EQ(all.memory_policy, kPolicy);

  // GPU 2 is the device-plugin API's (not owned by DRA), and there is no GPU 9.
  auto some = memory_share_options(inv, sharing({"2", inv.gpus[3].uuid, "9"}), {true, true, false, true});
  EXPECT_EQ(some.gpus, (std::set<std::string>{inv.gpus[3].uuid}));
  EXPECT_TRUE(has_note(some.notes, "entry \"2\" names no NVIDIA GPU that DRA serves"));
  EXPECT_TRUE(has_note(some.notes, "entry \"9\" names no NVIDIA GPU that DRA serves"));

  auto none = memory_share_options(inv, {}, {});
  EXPECT_TRUE(none.gpus.empty());
  EXPECT_TRUE(none.notes.empty());

  DraMemorySharing off_grid = sharing({"all"});
  off_grid.default_share = "1536Mi";  // not min + whole steps of 1Gi
  auto refused = memory_share_options(inv, off_grid, {});
  EXPECT_TRUE(refused.gpus.empty());
  EXPECT_TRUE(has_note(refused.notes, "no GPU is shared"));
}

TEST(DraMemoryShares, ThreadPercentagesRoundUpAndPinnedLimitsAreWholeMib) {
  EXPECT_EQ(thread_percentage_for(kSms / 2, kSms), 50);
  EXPECT_EQ(thread_percentage_for(kSms / 2 + 1, kSms), static_cast<int>(((kSms / 2 + 1) * 100 + kSms - 1) / kSms));
  EXPECT_EQ(thread_percentage_for(1, kSms), 1);
  EXPECT_EQ(thread_percentage_for(kSms * 2, kSms), 100);
  EXPECT_EQ(pinned_limit_for("GPU-a", 10 * kGi), "GPU-a=" + std::to_string(10 * 1024) + "M");
  EXPECT_EQ(pinned_limit_for("GPU-a", kGi + 1000), "GPU-a=" + std::to_string(1024) + "M");
}

TEST(DraMemoryShares, SharedGpusArePublishedWithConsumableCapacityInEveryRendering) {
  SharedNode n;
  const DraDevice& shared = device_named(n.pool, n.device());
  EXPECT_TRUE(shared.allow_multiple_allocations);
  const Capacity* memory = nullptr;
  const Capacity* sms = nullptr;
  for (const auto& c : shared.capacity) {
    if (c.name == "memory") memory = &c;
    if (c.name == "multiprocessors") sms = &c;
  }
  ASSERT_NE(memory, nullptr);
  ASSERT_NE(sms, nullptr);
  EXPECT_EQ(memory->value, n.inventory.gpus[1].memory_bytes);
  EXPECT_EQ(memory->request_policy, kPolicy);
  EXPECT_EQ(sms->value, kSms);
  EXPECT_EQ(sms->request_policy, (CapacityRequestPolicy{4, 1, 1}));
  EXPECT_FALSE(device_named(n.pool, gpu_name(n.inventory, 2)).allow_multiple_allocations);
  // Its own type, so NVIDIA's class gpu.nvidia.com (type == 'gpu') never hands a claim for a whole GPU
  // a share of it (issue 37); the other GPUs stay "gpu".
  ASSERT_NE(shared.attribute("type"), nullptr);
  EXPECT_EQ(std::get<std::string>(*shared.attribute("type")), "gpu-share");
  EXPECT_EQ(std::get<std::string>(*device_named(n.pool, gpu_name(n.inventory, 2)).attribute("type")), "gpu");

  const json slice = resource_slices(n.pool, n.options, 1, SliceApi::V1).at(0);
  for (const auto& d : slice["spec"]["devices"]) {
    if (d["name"] != n.device()) {
      EXPECT_FALSE(d.contains("allowMultipleAllocations")) << d.dump();
      continue;
    }
    EXPECT_EQ(d["allowMultipleAllocations"], true);
    EXPECT_EQ(d["attributes"]["type"], (json{{"string", "gpu-share"}}));
    EXPECT_EQ(d["capacity"]["memory"]["requestPolicy"],
              (json{{"default", binary_si_quantity(kGi)},
                    {"validRange", {{"min", binary_si_quantity(kGi)}, {"step", binary_si_quantity(kGi)}}}}));
    EXPECT_EQ(d["capacity"]["multiprocessors"]["value"], std::to_string(kSms));
  }
  // The direct text writer gives the same bytes as the JSON trees, in both API versions.
  for (SliceApi api : {SliceApi::V1, SliceApi::V1beta1})
    EXPECT_EQ(resource_slice_texts(n.pool, n.options, 3, api).at(0), resource_slices(n.pool, n.options, 3, api).at(0).dump());

  // An API server without consumable capacity gets the GPU as an ordinary exclusive device: what
  // kgpu publishes with no GPU shared.
  SliceOptions plain = n.options;
  plain.memory_shared_gpus.clear();
  EXPECT_EQ(with_share_support(n.pool, false), build_publication(n.inventory, plain)->pools.at(0));
  EXPECT_EQ(with_share_support(n.pool, true), n.pool);
  EXPECT_TRUE(has_shared_devices(n.pool));
  EXPECT_FALSE(has_shared_devices(with_share_support(n.pool, false)));
  EXPECT_EQ(std::get<std::string>(*device_named(with_share_support(n.pool, false), n.device()).attribute("type")), "gpu");
}

TEST(DraMemoryShares, ConsumedCapacityIsReadAsWholeNumbersAndBadAmountsAreNamed) {
  json c = share_claim(uid(1), "gpu-1", {10 * kGi}, 54);
  auto parsed = parse_resource_claim(c.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->results.at(0).consumed_capacity,
            (std::map<std::string, uint64_t>{{"memory", 10 * kGi}, {"multiprocessors", 54}}));

  c["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["memory"] = 10;
  auto number = parse_resource_claim(c.dump());
  ASSERT_FALSE(number.ok());
  EXPECT_NE(number.error().message.find("consumedCapacity.\"memory\" must be a quantity string"), std::string::npos)
      << number.error().message;
  c["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["memory"] = "10GB";
  auto unit = parse_resource_claim(c.dump());
  ASSERT_FALSE(unit.ok());
  EXPECT_NE(unit.error().message.find("consumedCapacity.\"memory\": quantity \"10GB\""), std::string::npos)
      << unit.error().message;
}

TEST(DraMemoryShares, AShareIsAnMpsClientOfItsGpusDaemonWithItsMemoryAsLimit) {
  SharedNode n;
  auto p = n.prepare(share_claim(uid(1), n.device(), {10 * kGi}, kSms / 2));
  ASSERT_TRUE(p.ok()) << p.error().message;
  const std::string daemon = share_daemon_name(n.uuid());
  EXPECT_EQ(p->claim.shares,
            (std::vector<GpuShare>{{n.device(), n.uuid(), 10 * kGi, kSms / 2, thread_percentage_for(kSms / 2, kSms)}}));
  ASSERT_EQ(p->claim.share_daemons.size(), 1u);
  EXPECT_EQ(p->claim.share_daemons[0].claim_uid, daemon);
  EXPECT_EQ(p->claim.share_daemons[0].visible_devices, std::vector<std::string>{n.uuid()});
  EXPECT_TRUE(p->claim.share_daemons[0].pinned_mib.empty());  // limits are per client
  EXPECT_EQ(p->claim.exclusive_gpus, std::vector<std::string>{n.uuid()});
  EXPECT_FALSE(p->claim.mps.has_value());
  ASSERT_EQ(p->claim.devices.size(), 1u);
  EXPECT_EQ(p->claim.devices[0].share_id, uid(1) + "-s0");

  const json& edits = p->cdi_spec["devices"].at(0)["containerEdits"];
  const std::string resource = mps_claim_resource(daemon);
  EXPECT_TRUE(has_env(edits, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + pinned_limit_for(n.uuid(), 10 * kGi))) << edits.dump();
  EXPECT_TRUE(has_env(edits, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" + std::to_string(thread_percentage_for(kSms / 2, kSms))));
  EXPECT_TRUE(has_env(edits, "CUDA_MPS_PIPE_DIRECTORY=" + mps_container_pipe_dir(resource)));
  std::set<std::pair<std::string, std::string>> mounts;
  for (const auto& m : edits["mounts"])
    mounts.insert({m["containerPath"].get<std::string>(), m["hostPath"].get<std::string>()});
  EXPECT_TRUE(mounts.contains({"/dev/shm", mps_claim_shm_dir(n.config.mps_root, daemon)})) << edits.dump();
  EXPECT_TRUE(mounts.contains({mps_container_pipe_dir(resource), mps_pipe_dir(n.config.mps_root, resource)}));
}

TEST(DraMemoryShares, WithoutConsumedCapacityAShareTakesThePolicyDefaultAndTheConfiguredPercentage) {
  SharedNode n(/*sms_default=*/0);
  n.config.dra.memory_sharing.active_thread_percentage = 25;
  auto p = n.prepare(share_claim(uid(1), n.device(), {0}));
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->claim.shares.size(), 1u);
  EXPECT_EQ(p->claim.shares[0].memory_bytes, kPolicy.default_value);
  EXPECT_EQ(p->claim.shares[0].multiprocessors, std::nullopt);
  EXPECT_EQ(p->claim.shares[0].active_thread_percentage, 25);

  // Two shares of the GPU in one claim add up.
  auto two = n.prepare(share_claim(uid(2), n.device(), {10 * kGi, 5 * kGi}));
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->claim.shares.at(0).memory_bytes, 15 * kGi);
  EXPECT_EQ(two->claim.devices.size(), 2u);
  EXPECT_EQ(two->claim.share_daemons.size(), 1u);
}

TEST(DraMemoryShares, ASharedGpuIsNeverPreparedWholeAndASharesAmountsAreChecked) {
  SharedNode n;
  const std::string whole = n.error(claim_json(uid(1), {{"gpu", n.device()}}));
  EXPECT_NE(whole.find("is published for memory shares (allowMultipleAllocations) but was allocated without a "
                       "shareID"),
            std::string::npos)
      << whole;
  // An admin may look at a GPU whatever holds it.
  EXPECT_TRUE(n.prepare(claim_json(uid(2), {{"gpu", n.device(), "gpu.nvidia.com", "node-1", true}})).ok());

  json mps = share_claim(uid(3), n.device(), {kGi});
  mps["status"]["allocation"]["devices"]["config"] = {
      testing::opaque_config(testing::gpu_sharing({{"strategy", "MPS"}}))};
  EXPECT_NE(n.error(mps).find("is a memory share, an MPS client of the GPU's own control daemon; it takes no sharing "
                              "config (its GpuConfig asks for MPS)"),
            std::string::npos);

  const std::string over = n.error(share_claim(uid(4), n.device(), {30 * kGi, 20 * kGi}));
  EXPECT_NE(over.find("consume " + binary_si_quantity(50 * kGi) + ", more than the GPU's " +
                      binary_si_quantity(n.inventory.gpus[1].memory_bytes)),
            std::string::npos)
      << over;

  n.config.mps_root.clear();
  EXPECT_NE(n.error(share_claim(uid(5), n.device(), {kGi})).find("kgpu runs without --mps-root"), std::string::npos);
}

// The claim store with GPU 1 shared and GPU 2 whole.
struct StoreFixture {
  testing::ScratchDir dir;
  SharedNode node;
  std::map<std::string, std::string> claims;  // "ns/name" -> JSON
  StoreFixture() {}
  std::unique_ptr<ClaimStore> open() {
    ClaimStoreOptions o{"gpu.nvidia.com", (dir.path / "plugin" / "claims.json").string(), (dir.path / "cdi").string(),
                        "boot-1"};
    auto store = std::make_unique<ClaimStore>(o, [this](const std::string& ns, const std::string& name) {
      auto it = claims.find(ns + "/" + name);
      if (it == claims.end()) return Result<std::string>(Error::not_found("resourceclaims \"" + name + "\" not found"));
      return Result<std::string>(it->second);
    });
    auto devices = std::make_shared<NodeDevices>();
    devices->config = node.config;
    devices->inventory = node.inventory;
    devices->pool = node.pool;
    store->set_devices(devices);
    return store;
  }
  ClaimRef serve(int n, const json& claim) {
    claims["team-a/claim-" + uid(n)] = claim.dump();
    return {uid(n), "team-a", "claim-" + uid(n)};
  }
};

TEST(DraMemoryShares, TheStoreFitsAGpusSharesInItsMemoryAcrossRestarts) {
  StoreFixture f;
  auto store = f.open();
  const std::string dev = f.node.device();
  for (auto [n, gib] : {std::pair{1, 10}, {2, 10}, {3, 20}}) {
    auto p = store->prepare(f.serve(n, share_claim(uid(n), dev, {gib * kGi})));
    ASSERT_TRUE(p.ok()) << p.error().message;
  }
  // The GPU's 40 GiB are taken: the scheduler's arithmetic is checked, not trusted.
  auto fourth = store->prepare(f.serve(4, share_claim(uid(4), dev, {kGi})));
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.error().code, Error::Code::FailedPrecondition);
  EXPECT_NE(fourth.error().message.find("cannot take this claim's " + binary_si_quantity(kGi) + " memory share: " +
                                        binary_si_quantity(40 * kGi) + " of it is held by the shares prepared for"),
            std::string::npos)
      << fourth.error().message;

  // A restart keeps the shares (and so the arithmetic).
  const auto before = store->prepared();
  store.reset();
  store = f.open();
  EXPECT_EQ(store->prepared(), before);
  EXPECT_FALSE(store->prepare(f.serve(5, share_claim(uid(5), dev, {kGi}))).ok());
  ASSERT_TRUE(store->unprepare(uid(1)).ok());
  auto fits = store->prepare(f.serve(6, share_claim(uid(6), dev, {10 * kGi})));
  EXPECT_TRUE(fits.ok()) << fits.error().message;
}

TEST(DraMemoryShares, AGpuPreparedWholeTakesNoShareAndAShareKeepsItFromBeingTakenWhole) {
  StoreFixture f;
  auto store = f.open();
  const std::string gpu2 = gpu_name(f.node.inventory, 2);
  ASSERT_TRUE(store->prepare(f.serve(1, claim_json(uid(1), {{"gpu", gpu2}}))).ok());
  // The operator shares GPU 2 now: its whole claim stays, a share of it waits for that claim.
  f.node.options.memory_shared_gpus.insert(f.node.inventory.gpus[2].uuid);
  f.node.pool = build_publication(f.node.inventory, f.node.options)->pools.at(0);
  store = f.open();
  auto share = store->prepare(f.serve(2, share_claim(uid(2), gpu2, {kGi})));
  ASSERT_FALSE(share.ok());
  EXPECT_NE(share.error().message.find("device " + gpu2 + " is prepared whole for"), std::string::npos)
      << share.error().message;

  // The other way round: shares prepared, then the GPU published whole again (the API server
  // dropped consumable capacity): a whole claim waits for the shares.
  ASSERT_TRUE(store->prepare(f.serve(3, share_claim(uid(3), f.node.device(), {kGi}))).ok());
  f.node.pool = with_share_support(f.node.pool, false);
  store = f.open();
  auto whole = store->prepare(f.serve(4, claim_json(uid(4), {{"gpu", f.node.device()}})));
  ASSERT_FALSE(whole.ok());
  EXPECT_NE(whole.error().message.find("holds a memory share of"), std::string::npos) << whole.error().message;
}

// What `kgpu devices --live` and /metrics show: each shared GPU, what its prepared shares hold and
// what is left, from the same records the store keeps.
TEST(DraMemoryShares, TheOperatorSeesEachSharedGpusSharesAndWhatIsLeft) {
  StoreFixture f;
  auto store = f.open();
  const std::string dev = f.node.device();
  ASSERT_TRUE(store->prepare(f.serve(1, share_claim(uid(1), dev, {10 * kGi}, 54))).ok());
  ASSERT_TRUE(store->prepare(f.serve(2, share_claim(uid(2), dev, {20 * kGi}))).ok());
  const std::set<std::string> shareable = {f.node.uuid(), f.node.inventory.gpus[3].uuid};
  const auto use = shared_gpu_use(f.node.inventory, shareable, store->prepared());
  ASSERT_EQ(use.size(), 2u);  // GPU 1 with its shares, GPU 3 shareable and unused, in inventory order
  EXPECT_EQ(use[0].gpu_uuid, f.node.uuid());
  EXPECT_EQ(use[0].device, dev);
  EXPECT_EQ(use[0].memory_bytes, f.node.inventory.gpus[1].memory_bytes);
  EXPECT_EQ(use[0].shared_bytes, 30 * kGi);
  ASSERT_EQ(use[0].shares.size(), 2u);
  EXPECT_EQ(use[0].shares[0].claim, "team-a/claim-" + uid(1) + " (" + uid(1) + ")");
  EXPECT_EQ(use[0].shares[0].multiprocessors, 54u);
  EXPECT_EQ(use[0].shares[0].active_thread_percentage, thread_percentage_for(54, kSms));
  EXPECT_EQ(use[1].gpu_uuid, f.node.inventory.gpus[3].uuid);
  EXPECT_TRUE(use[1].shares.empty());

  std::string metrics;
  append_share_metrics(use, metrics);
  EXPECT_NE(metrics.find("kgpu_dra_gpu_memory_shared_bytes{gpu=\"" + f.node.uuid() + "\"} " +
                         std::to_string(30 * kGi) + "\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("kgpu_dra_gpu_memory_shares{gpu=\"" + f.node.uuid() + "\"} 2\n"), std::string::npos);
  EXPECT_NE(metrics.find("kgpu_dra_gpu_memory_shares{gpu=\"" + f.node.inventory.gpus[3].uuid + "\"} 0\n"),
            std::string::npos);
  const json j = share_use_json(use);
  EXPECT_EQ(j[0]["freeBytes"], f.node.inventory.gpus[1].memory_bytes - 30 * kGi);
  EXPECT_EQ(j[0]["shares"][1]["memoryBytes"], 20 * kGi);
  const std::string text = share_use_text(use);
  EXPECT_NE(text.find(dev + ": 2 shares hold 30Gi of 40Gi, 10Gi left"), std::string::npos) << text;
  EXPECT_NE(text.find("memory 10Gi  multiprocessors 54  threads"), std::string::npos) << text;
  std::string none;
  append_share_metrics({}, none);
  EXPECT_TRUE(none.empty());
}

TEST(DraMemoryShares, AGpuWhoseShareDaemonIsNotReadyIsTaintedOnceAndTheOthersAreNot) {
  SharedNode n;
  PreparedClaim with_share;
  MpsClaimRequest daemon;
  daemon.claim_uid = share_daemon_name(n.uuid());
  daemon.visible_devices = {n.uuid()};
  with_share.share_daemons = {daemon};
  EXPECT_EQ(share_daemon_gpus({with_share, PreparedClaim{}}), std::set<std::string>{n.uuid()});

  std::vector<DriverPool> pools{n.pool};
  EXPECT_TRUE(taint_gpus_without_share_daemon(pools, {}).empty());
  EXPECT_EQ(pools.front(), n.pool) << "every daemon ready: nothing changes";

  auto tainted = taint_gpus_without_share_daemon(pools, {n.uuid()});
  ASSERT_EQ(tainted, std::vector<std::string>{n.device() + " (" + n.uuid() + ")"});
  const DeviceTaint expected{"gpu.nvidia.com/mps-daemon", "not-ready", kTaintNoSchedule};
  EXPECT_EQ(device_named(pools.front(), n.device()).taints, std::vector<DeviceTaint>{expected});
  EXPECT_TRUE(device_named(pools.front(), gpu_name(n.inventory, 2)).taints.empty());
  EXPECT_TRUE(taint_gpus_without_share_daemon(pools, {n.uuid()}).empty()) << "tainted once";
  EXPECT_EQ(device_named(pools.front(), n.device()).taints.size(), 1u);
}

}  // namespace
}  // namespace kgpu::dra
