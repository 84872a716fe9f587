// The DRA slice publisher against the fake API server over loopback HTTP: what it creates, updates
// and deletes, that it writes nothing when nothing changed, conflicts, server errors, stop(),
// delete_all(), the watch that puts back what someone else deleted or edited; and the API client's
// POST / PUT / DELETE under the deadline, size and stop rules.
#include <gtest/gtest.h>

#include <atomic>

#include <optional>
#include <thread>

#include "dra/publish/slice_objects.h"
#include "dra/publish/slice_publisher.h"
#include "kube/api_request.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

SliceOptions options() {
  SliceOptions o;
  o.node_name = "node-1";
  o.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  return o;
}

std::vector<DriverPool> pools_of(const Inventory& inv) {
  auto p = build_publication(inv, options());
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? p->pools : std::vector<DriverPool>{};
}

SlicePublisher::Timing fast_timing() {
  SlicePublisher::Timing t;
  t.request_deadline = 2s;
  t.first_backoff = 10ms;
  t.max_backoff = 50ms;
  return t;
}

kube::ApiServer server_of(const test::FakeApiServer& api) { return kube::ApiServer{api.url(), "", "", ""}; }

// The slice as the fake holds it, without what the server adds, for comparing with the builder.
json written(const test::FakeApiServer& api, const std::string& name, const std::string& version = "v1") {
  auto all = api.slices(version);
  if (!all.count(name)) return nullptr;
  json s = all.at(name);
  for (const char* key : {"resourceVersion", "uid", "creationTimestamp", "managedFields"}) s["metadata"].erase(key);
  return s;
}

const std::string kSlice0 = "node-1-gpu.nvidia.com-0";

TEST(SliceSync, FirstPublishCreatesTheSlicesOwnedByTheNode) {
  test::FakeApiServer api("node-1", {});
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(fast_timing());
  publisher.start();
  const auto pools = pools_of(testing::a100_node(4, 2));
  publisher.publish(pools);
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  EXPECT_EQ(written(api, kSlice0), resource_slices(pools[0], options(), 1, SliceApi::V1)[0]);
  EXPECT_EQ(written(api, kSlice0)["metadata"]["ownerReferences"][0]["uid"], options().node_uid);
  EXPECT_EQ(api.slices().size(), 1u);
  const auto counts = api.slice_counts();
  EXPECT_EQ(counts.creates, 1);
  EXPECT_EQ(counts.rejected, 0) << api.slice_rejections().front();
  EXPECT_EQ(counts.discoveries, 1);
  EXPECT_EQ(publisher.state().generations.at("gpu.nvidia.com"), 1);
}

TEST(SliceSync, IdenticalPublishWritesNothing_NorDoesARestartWithTheSameDevices) {
  test::FakeApiServer api("node-1", {});
  const auto pools = pools_of(testing::a100_node(4, 2));
  {
    SlicePublisher publisher(server_of(api), options());
    publisher.set_timing(fast_timing());
    publisher.start();
    publisher.publish(pools);
    ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
    const auto before = api.slice_counts();
    publisher.publish(pools);
    ASSERT_TRUE(publisher.wait_synced(10s));
    EXPECT_EQ(api.slice_counts().writes(), before.writes());
    EXPECT_EQ(api.slice_counts().lists, before.lists);  // not even read again: nothing changed
    EXPECT_EQ(publisher.state().writes, 1u);
  }
  // A restarted daemon reads the slices back and finds them current.
  const auto before = api.slice_counts();
  SlicePublisher again(server_of(api), options(), SliceApi::V1);
  ASSERT_TRUE(again.sync(pools).ok());
  EXPECT_EQ(api.slice_counts().writes(), before.writes());
  EXPECT_GT(api.slice_counts().lists, before.lists);
  EXPECT_EQ(again.state().generations.at("gpu.nvidia.com"), 1);
}

// The slice as written, taints' timeAdded (the server's) left out.
json without_time_added(json slice) {
  for (auto& d : slice["spec"]["devices"])
    for (auto* fields : {&d, d.contains("basic") ? &d["basic"] : nullptr})
      if (fields && fields->contains("taints"))
        for (auto& t : (*fields)["taints"]) t.erase("timeAdded");
  return slice;
}

TEST(SliceSync, HealthChangeUpdatesTheSliceWithTheNextGeneration) {
  test::FakeApiServer api("node-1", {});
  api.set_device_taints(test::FakeApiServer::DeviceTaints::Served);
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(fast_timing());
  publisher.start();
  auto inv = testing::a100_node(4, 0);
  publisher.publish(pools_of(inv));
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  inv.gpus[2].health = {false, "XID 79 (GPU has fallen off the bus)", 79};
  const auto pools = pools_of(inv);
  publisher.publish(pools);
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  EXPECT_EQ(without_time_added(written(api, kSlice0)), resource_slices(pools[0], options(), 2, SliceApi::V1)[0]);
  const json device = written(api, kSlice0)["spec"]["devices"][2];
  EXPECT_EQ(device["taints"][0]["key"], "gpu.nvidia.com/xid");
  EXPECT_EQ(device["taints"][0]["value"], "79");
  EXPECT_EQ(device["taints"][0]["timeAdded"], "2026-11-26T12:00:00Z");
  const auto counts = api.slice_counts();
  EXPECT_EQ(counts.creates, 1);
  EXPECT_EQ(counts.updates, 1);
  EXPECT_EQ(counts.rejected, 0);
  EXPECT_EQ(publisher.state().generations.at("gpu.nvidia.com"), 2);
  EXPECT_EQ(publisher.state().taints, TaintSupport::Full);
  // The server's timeAdded is not a difference: a restarted publisher finds the slices current.
  SlicePublisher again(server_of(api), options());
  again.set_timing(fast_timing());
  again.start();
  again.publish(pools);
  ASSERT_TRUE(again.wait_synced(10s)) << again.state().problem;
  EXPECT_EQ(api.slice_counts().writes(), counts.writes());
}

// Issue 29, item 8: where the API server does not keep device taints, kgpu finds out from its
// answer, says so, and publishes as before taints (the unhealthy device left out) at once; a server
// before effect None loses only the informational taints.
TEST(SliceSync, AServerThatDropsOrRefusesTaintsGetsTheSlicesWithoutWhatItCannotHold) {
  using Mode = test::FakeApiServer::DeviceTaints;
  auto inv = testing::a100_node(4, 0);
  inv.gpus[1].health = {false, "XID 79 (GPU has fallen off the bus)", 79};
  inv.gpus[3].health.informational_xid = 13;
  const auto pools = pools_of(inv);
  struct Case {
    Mode mode;
    TaintSupport found;
    size_t devices;
  };
  for (const auto& c : {Case{Mode::Stripped, TaintSupport::Off, 3}, Case{Mode::Refused, TaintSupport::Off, 3},
                        Case{Mode::NoneEffectRefused, TaintSupport::NoInformational, 4}}) {
    test::FakeApiServer api("node-1", {});
    api.set_device_taints(c.mode);
    SlicePublisher publisher(server_of(api), options());
    publisher.set_timing(fast_timing());
    publisher.start();
    publisher.publish(pools);
    ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
    EXPECT_EQ(publisher.state().taints, c.found) << static_cast<int>(c.mode);
    EXPECT_TRUE(publisher.state().problem.empty()) << publisher.state().problem;
    const json devices = written(api, kSlice0)["spec"]["devices"];
    ASSERT_EQ(devices.size(), c.devices) << devices.dump();
    for (const auto& d : devices) {
      const bool tainted = d.contains("taints");
      EXPECT_EQ(tainted, c.mode == Mode::NoneEffectRefused && d["name"] == "gpu-1") << d.dump();
    }
    // Settled: another publish of the same pools writes nothing more.
    const auto writes = api.slice_counts().writes();
    publisher.publish(pools);
    ASSERT_TRUE(publisher.wait_synced(10s));
    EXPECT_EQ(api.slice_counts().writes(), writes);
  }
}

// Issue 37, item 3: Kubernetes 1.34's allocator keeps pods off a device with an untolerated taint of
// any effect, None included; 1.35 ignores None. So the informational taint goes out only where the
// API server says it is 1.35 or later; 1.34, or a server that does not say, gets the XID taints only.
TEST(SliceSync, NoneTaintsGoOutOnlyWhereTheSchedulerIgnoresThem) {
  auto inv = testing::a100_node(4, 0);
  inv.gpus[1].health = {false, "XID 79 (GPU has fallen off the bus)", 79};
  inv.gpus[3].health.informational_xid = 13;
  const auto pools = pools_of(inv);
  struct Case {
    int minor;  // GET /version's minor; negative: 404
    TaintSupport found;
  };
  for (const auto& c : {Case{35, TaintSupport::Full}, Case{36, TaintSupport::Full}, Case{34, TaintSupport::NoInformational},
                        Case{-1, TaintSupport::NoInformational}}) {
    test::FakeApiServer api("node-1", {});
    api.set_device_taints(test::FakeApiServer::DeviceTaints::Served);
    api.set_kubernetes_minor(c.minor);
    SlicePublisher publisher(server_of(api), options());
    publisher.set_timing(fast_timing());
    publisher.start();
    publisher.publish(pools);
    ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
    EXPECT_EQ(publisher.state().taints, c.found) << "1." << c.minor;
    const json devices = written(api, kSlice0)["spec"]["devices"];
    ASSERT_EQ(devices.size(), 4u) << devices.dump();
    for (const auto& d : devices) {
      const std::string effects = d.contains("taints") ? d["taints"].dump() : "";
      if (d["name"] == "gpu-1") {
        EXPECT_NE(effects.find("NoSchedule"), std::string::npos) << d.dump();
      }
      if (d["name"] == "gpu-3") {
        EXPECT_EQ(effects.find("None") != std::string::npos, c.found == TaintSupport::Full) << d.dump();
      }
    }
  }
}

TEST(KubernetesVersion, MajorMinorOrGitVersionAndManagedSuffixes) {
  auto v = parse_kubernetes_version(R"({"major":"1","minor":"34+","gitVersion":"v1.34.2-eks-1"})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->major, 1);
  EXPECT_EQ(v->minor, 34);
  EXPECT_FALSE(v->at_least(1, 35));
  v = parse_kubernetes_version(R"({"major":"","minor":"","gitVersion":"v1.35.0"})");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->at_least(1, 35));
  EXPECT_TRUE((KubernetesVersion{2, 0}).at_least(1, 35));
  for (const char* bad : {"[]", "not json", R"({"gitVersion":"main"})", R"({"major":"x","minor":"y"})"}) {
    auto r = parse_kubernetes_version(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("GET /version"), std::string::npos) << r.error().message;
  }
}

// Issue 31: shared GPUs go out with consumable capacity where the API server keeps it; one that
// drops the fields (DRAConsumableCapacity off) or refuses them (before 1.34) gets them whole, at once
// and for good, and the owner hears of it once.
TEST(SliceSync, AServerWithoutConsumableCapacityGetsSharedGpusWhole) {
  using Mode = test::FakeApiServer::ConsumableCapacity;
  const auto inv = testing::a100_node(4, 0);
  SliceOptions shared = options();
  shared.memory_shared_gpus = {inv.gpus[2].uuid};
  shared.memory_policy = {uint64_t{1} << 30, uint64_t{1} << 30, uint64_t{1} << 30};
  const auto pools = build_publication(inv, shared)->pools;
  ASSERT_TRUE(has_shared_devices(pools.at(0)));
  for (Mode mode : {Mode::Served, Mode::Stripped, Mode::Refused}) {
    test::FakeApiServer api("node-1", {});
    api.set_consumable_capacity(mode);
    SlicePublisher publisher(server_of(api), options());
    publisher.set_timing(fast_timing());
    std::atomic<int> refusals{0};
    publisher.on_shares_refused([&] { ++refusals; });
    publisher.start();
    publisher.publish(pools);
    ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
    const bool served = mode == Mode::Served;
    EXPECT_EQ(publisher.shares_served(), served) << static_cast<int>(mode);
    EXPECT_EQ(publisher.state().shares, served);
    EXPECT_EQ(refusals.load(), served ? 0 : 1);
    EXPECT_TRUE(publisher.state().problem.empty()) << publisher.state().problem;
    // What the server holds is the pool as written: with the fields, or whole.
    const json stored = written(api, kSlice0);
    const json wanted = resource_slices(with_share_support(pools.at(0), served), options(), 1, SliceApi::V1).at(0);
    EXPECT_EQ(stored["spec"]["devices"], wanted["spec"]["devices"]) << static_cast<int>(mode);
    // Settled: the same pools again write nothing.
    const auto writes = api.slice_counts().writes();
    publisher.publish(pools);
    ASSERT_TRUE(publisher.wait_synced(10s));
    EXPECT_EQ(api.slice_counts().writes(), writes);
    EXPECT_EQ(refusals.load(), served ? 0 : 1);
  }
}

TEST(SliceSync, ConflictOnceIsReadAgainAndRetriedAtOnce) {
  test::FakeApiServer api("node-1", {});
  api.set_device_taints(test::FakeApiServer::DeviceTaints::Served);  // the unhealthy GPU keeps its taint
  SlicePublisher publisher(server_of(api), options(), SliceApi::V1);
  auto timing = fast_timing();
  timing.first_backoff = 60s;  // a backoff would fail the test: a conflict is retried without one
  publisher.set_timing(timing);
  publisher.start();
  auto inv = testing::a100_node(2, 0);
  publisher.publish(pools_of(inv));
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  api.fail_slice_writes(409, 1);
  inv.gpus[0].health = {false, "XID 48"};
  const auto pools = pools_of(inv);
  publisher.publish(pools);
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  EXPECT_EQ(api.slice_counts().conflicts, 1);
  EXPECT_EQ(without_time_added(written(api, kSlice0)), resource_slices(pools[0], options(), 2, SliceApi::V1)[0]);
  EXPECT_TRUE(publisher.state().problem.empty());
}

TEST(SliceSync, SomeoneElsesUpdateAfterOurListIsAConflictThatEndsInOurContent) {
  test::FakeApiServer api("node-1", {});
  api.set_device_taints(test::FakeApiServer::DeviceTaints::Served);  // the unhealthy GPU keeps its taint
  SlicePublisher publisher(server_of(api), options(), SliceApi::V1);
  publisher.set_timing(fast_timing());
  auto inv = testing::a100_node(2, 0);
  ASSERT_TRUE(publisher.sync(pools_of(inv)).ok());
  // Another writer changes the slice between our LIST and our PUT: the PUT's resourceVersion is
  // stale (a real 409), so the publisher lists again and writes over it.
  api.touch_slice_after_next_list(kSlice0);
  inv.gpus[1].health = {false, "XID 79"};
  const auto pools = pools_of(inv);
  const auto before = api.slice_counts();
  ASSERT_TRUE(publisher.sync(pools).ok()) << publisher.state().problem;
  EXPECT_EQ(api.slice_counts().conflicts, before.conflicts + 1);
  // Only the changed driver is read, twice; amd and intel are known to have no slices here.
  EXPECT_EQ(api.slice_counts().lists, before.lists + 2);
  EXPECT_EQ(without_time_added(written(api, kSlice0)), resource_slices(pools[0], options(), 2, SliceApi::V1)[0]);
}

TEST(SliceSync, ServerErrorsAreRetriedWithBackoffUntilTheyPass) {
  test::FakeApiServer api("node-1", {});
  api.fail_slice_writes(500, 2);
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(fast_timing());
  publisher.start();
  const auto pools = pools_of(testing::a100_node(2, 0));
  publisher.publish(pools);
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  EXPECT_EQ(api.slice_counts().creates, 3);  // two refused, the third created
  EXPECT_GE(publisher.state().passes, 3u);
  EXPECT_EQ(written(api, kSlice0), resource_slices(pools[0], options(), 1, SliceApi::V1)[0]);
  EXPECT_TRUE(publisher.state().problem.empty());
}

TEST(SliceSync, FailingListIsAProblemNamingTheStatus) {
  test::FakeApiServer api("node-1", {});
  api.fail_slice_lists(403, 1000);
  SlicePublisher publisher(server_of(api), options(), SliceApi::V1);
  auto status = publisher.sync(pools_of(testing::a100_node(1, 0)));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("HTTP 403"), std::string::npos) << status.error().message;
  EXPECT_NE(status.error().message.find("resourceslices"), std::string::npos) << status.error().message;
}

TEST(SliceSync, DeleteAllRemovesEverySliceOfTheNode_OnlyThose) {
  test::FakeApiServer api("node-1", {});
  auto other = resource_slices(pools_of(testing::a100_node(1, 0))[0], [] {
    auto o = options();
    o.node_name = "node-2";
    return o;
  }(), 1, SliceApi::V1)[0];
  api.put_slice(other);
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(fast_timing());
  publisher.start();
  publisher.publish(pools_of(testing::a100_node(20, 20)));  // two slices
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  ASSERT_EQ(api.slices().size(), 3u);
  ASSERT_TRUE(publisher.delete_all(10s).ok());
  const auto left = api.slices();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left.begin()->first, "node-2-gpu.nvidia.com-0");
}

TEST(SliceSync, StaleSlicesOfADriverWithoutDevicesHereAreDeleted_PagedLists) {
  test::FakeApiServer api("node-1", {});
  api.set_slice_page_size(1);
  auto amd = resource_slices(pools_of(testing::a100_node(1, 0))[0], options(), 4, SliceApi::V1)[0];
  for (const char* name : {"node-1-gpu.amd.com-0", "node-1-gpu.amd.com-1"}) {
    amd["metadata"]["name"] = name;
    amd["spec"]["driver"] = "gpu.amd.com";
    api.put_slice(amd);
  }
  SlicePublisher publisher(server_of(api), options());
  ASSERT_TRUE(publisher.sync(pools_of(testing::a100_node(1, 0))).ok()) << publisher.state().problem;
  const auto left = api.slices();
  EXPECT_EQ(left.size(), 1u);
  EXPECT_TRUE(left.count(kSlice0));
}

// Issue 28, item 11: lists ask the API server for pages (`limit`, then `continue`), so no single
// answer holds more than a few slices; twenty stale slices of this node are all found and deleted
// through the pages the server cuts by that limit.
TEST(SliceSync, ListsAskForBoundedPagesAndFollowThem) {
  test::FakeApiServer api("node-1", {});
  auto stale = resource_slices(pools_of(testing::a100_node(1, 0))[0], options(), 1, SliceApi::V1)[0];
  for (int i = 1; i <= 20; ++i) {
    stale["metadata"]["name"] = "node-1-gpu.nvidia.com-stale-" + std::to_string(i);
    api.put_slice(stale);
  }
  SlicePublisher publisher(server_of(api), options());
  ASSERT_TRUE(publisher.sync(pools_of(testing::a100_node(1, 0))).ok()) << publisher.state().problem;
  EXPECT_EQ(api.slices().size(), 1u);
  const auto lists = api.slice_list_params();
  ASSERT_GE(lists.size(), 3u);  // 20 slices in pages of 8: three pages at least
  for (const auto& params : lists) {
    ASSERT_EQ(params.count("limit"), 1u);
    EXPECT_EQ(params.at("limit"), "8");
  }
  EXPECT_EQ(lists[1].count("continue"), 1u);
}

TEST(SliceSync, V1beta1OnlyClusterGetsV1beta1Slices) {
  test::FakeApiServer api("node-1", {});
  api.serve_resource_versions({"v1beta1"});
  SlicePublisher publisher(server_of(api), options());
  const auto pools = pools_of(testing::a100_node(2, 1));
  ASSERT_TRUE(publisher.sync(pools).ok()) << publisher.state().problem;
  EXPECT_EQ(api.slice_counts().rejected, 0);
  EXPECT_EQ(written(api, kSlice0, "v1beta1"), resource_slices(pools[0], options(), 1, SliceApi::V1beta1)[0]);
  const auto before = api.slice_counts();
  SlicePublisher again(server_of(api), options());
  ASSERT_TRUE(again.sync(pools).ok());
  EXPECT_EQ(api.slice_counts().writes(), before.writes());
}

TEST(SliceSync, ClusterWithoutAUsableVersionIsAClearError) {
  test::FakeApiServer api("node-1", {});
  api.serve_resource_versions({"v1beta2"});
  SlicePublisher publisher(server_of(api), options());
  auto status = publisher.sync(pools_of(testing::a100_node(1, 0)));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("v1beta2"), std::string::npos) << status.error().message;
}

TEST(SliceSync, TheFakeRejectsMalformedSlices) {
  test::FakeApiServer api("node-1", {});
  kube::Interrupter interrupter;
  kube::ApiClient client(server_of(api), interrupter);
  auto slice = resource_slices(pools_of(testing::a100_node(20, 20))[0], options(), 1, SliceApi::V1)[0];
  const std::string path = "/apis/resource.k8s.io/v1/resourceslices";
  auto too_many = slice;
  while (too_many["spec"]["devices"].size() <= 128) {
    auto d = too_many["spec"]["devices"][0];
    d["name"] = "extra-" + std::to_string(too_many["spec"]["devices"].size());
    too_many["spec"]["devices"].push_back(d);
  }
  auto v1beta1_shape = resource_slices(pools_of(testing::a100_node(1, 0))[0], options(), 1, SliceApi::V1beta1)[0];
  v1beta1_shape["apiVersion"] = "resource.k8s.io/v1";
  auto bad_name = slice;
  bad_name["metadata"]["name"] = "Node_1";
  auto no_generation = slice;
  no_generation["spec"]["pool"].erase("generation");
  for (const auto& body : {too_many, v1beta1_shape, bad_name, no_generation}) {
    auto answer = client.post(path, body.dump(), 2s, 1 << 20);
    ASSERT_TRUE(answer.ok()) << answer.error().message;
    EXPECT_EQ(answer->status, 422) << body.dump().substr(0, 200);
  }
  EXPECT_EQ(api.slice_counts().rejected, 4);
  auto good = client.post(path, slice.dump(), 2s, 1 << 20);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->status, 201) << good->body;
}

TEST(SliceSync, StopEndsAStalledWriteAtOnce) {
  test::FakeApiServer api("node-1", {});
  api.stall_slice_writes(true);
  SlicePublisher publisher(server_of(api), options(), SliceApi::V1);
  auto timing = fast_timing();
  timing.request_deadline = 60s;
  publisher.set_timing(timing);
  publisher.start();
  publisher.publish(pools_of(testing::a100_node(1, 0)));
  ASSERT_TRUE(api.wait_slice_writes(1, 10s));
  const auto t0 = std::chrono::steady_clock::now();
  publisher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  api.stall_slice_writes(false);
}

TEST(SliceSync, StopIsImmediateDuringABackoff) {
  test::FakeApiServer api("node-1", {});
  api.fail_slice_lists(500, 1000);
  SlicePublisher publisher(server_of(api), options(), SliceApi::V1);
  auto timing = fast_timing();
  timing.first_backoff = 60s;
  publisher.set_timing(timing);
  publisher.start();
  publisher.publish(pools_of(testing::a100_node(1, 0)));
  ASSERT_TRUE(test::eventually([&] { return publisher.state().passes >= 1; }, 10s));
  EXPECT_FALSE(publisher.state().problem.empty());
  const auto t0 = std::chrono::steady_clock::now();
  publisher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

// ---- The Node as owner (issue 26, item 5) ----

SliceOptions options_without_uid() {
  SliceOptions o = options();
  o.node_uid.clear();  // the publisher reads the Node's
  return o;
}

// "<kind>/<uid>" of the owner of every slice, by name ("" for a slice without an owner).
std::vector<std::string> owner_uids(const std::map<std::string, json>& slices) {
  std::vector<std::string> out;
  for (const auto& [name, slice] : slices) {
    const auto& refs = slice["metadata"].value("ownerReferences", json::array());
    out.push_back(refs.empty() ? "" : refs[0].value("kind", "") + "/" + refs[0].value("uid", ""));
  }
  return out;
}

// A publisher started on a node with slices from a previous run, and an API server that cannot
// answer the Node's GET yet: it keeps retrying the uid, but deletes nothing before the daemon's
// first publication (a pass with nothing published would take the node's slices away).
TEST(SliceOwner, NoPassBeforeTheFirstPublishEvenWhileTheUidIsRetried) {
  test::FakeApiServer api("node-1", {});
  const auto pools = pools_of(testing::a100_node(2, 0));
  api.put_slice(resource_slices(pools[0], options(), 3, SliceApi::V1)[0]);
  api.set_fault(test::FakeApiServer::Fault::Status500);
  SlicePublisher publisher(server_of(api), options_without_uid());
  publisher.set_timing(fast_timing());
  publisher.start();
  ASSERT_TRUE(test::eventually([&] { return api.gets() >= 3; }, 10s)) << api.gets();  // retried
  EXPECT_EQ(api.slice_counts().lists, 0);
  EXPECT_EQ(api.slice_counts().writes(), 0);
  EXPECT_EQ(api.slices().size(), 1u);
  api.set_fault(test::FakeApiServer::Fault::None);
  publisher.publish(pools);
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  const std::vector<std::string> owned{"Node/" + api.node_uid()};
  ASSERT_TRUE(api.wait_slices([&](const auto& slices) { return owner_uids(slices) == owned; }, 10s));
  EXPECT_EQ(api.slice_counts().deletes, 0);
}

// The API server answers the Node's GET at once: the first writes already name the Node as owner
// (no ownerless create followed by an update).
TEST(SliceOwner, TheNodesUidIsReadBeforeTheFirstWrite) {
  test::FakeApiServer api("node-1", {});
  SlicePublisher publisher(server_of(api), options_without_uid());
  publisher.set_timing(fast_timing());
  publisher.start();
  publisher.publish(pools_of(testing::a100_node(20, 20)));  // two slices
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  EXPECT_EQ(owner_uids(api.slices()), (std::vector<std::string>{"Node/" + api.node_uid(), "Node/" + api.node_uid()}));
  EXPECT_EQ(api.slice_counts().creates, 2);
  EXPECT_EQ(api.slice_counts().updates, 0);
  EXPECT_EQ(api.slice_counts().rejected, 0);
  EXPECT_EQ(publisher.state().node_uid, api.node_uid());
}

// The Node's GET fails when the publisher starts (an API server still starting, a proxy's 500): the
// slices are published without an owner rather than not at all, the read is retried, and once it
// succeeds every slice is rewritten with the Node as owner. (Before: read once at start-up; the
// slices stayed ownerless for good.)
TEST(SliceOwner, AnUnreadableNodeIsReadAgainUntilItsUidIsKnown_ThenEverySliceGetsTheOwner) {
  test::FakeApiServer api("node-1", {});
  api.set_fault(test::FakeApiServer::Fault::Status500);  // the Node's GET and watch only; slices are served
  SlicePublisher publisher(server_of(api), options_without_uid());
  publisher.set_timing(fast_timing());
  publisher.start();
  publisher.publish(pools_of(testing::a100_node(20, 20)));
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  EXPECT_EQ(owner_uids(api.slices()), (std::vector<std::string>{"", ""}));
  // Still retrying with backoff: more than one read of the Node fails.
  const int gets = api.gets();
  ASSERT_TRUE(test::eventually([&] { return api.gets() > gets + 1; }, 10s)) << api.gets();
  EXPECT_EQ(owner_uids(api.slices()), (std::vector<std::string>{"", ""}));

  api.set_fault(test::FakeApiServer::Fault::None);
  const std::vector<std::string> owned{"Node/" + api.node_uid(), "Node/" + api.node_uid()};
  ASSERT_TRUE(api.wait_slices([&](const auto& slices) { return owner_uids(slices) == owned; }, 10s))
      << owner_uids(api.slices())[0] << " " << publisher.state().problem;
  EXPECT_EQ(api.slice_counts().rejected, 0);
  // Once known, the uid is not read again, and the rewrite is one generation for the whole pool.
  ASSERT_TRUE(test::eventually([&] { return !publisher.state().worker; }, 10s));
  const int settled = api.gets();
  publisher.publish(pools_of(testing::a100_node(20, 19)));
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  EXPECT_EQ(api.gets(), settled);
  EXPECT_EQ(owner_uids(api.slices()), owned);
  EXPECT_EQ(publisher.state().node_uid, api.node_uid());
}

// ---- The worker runs only while there is work (issue 32) ----

TEST(SliceWorker, EndsOnceInSyncAndAPublishStartsAnother) {
  test::FakeApiServer api("node-1", {});
  api.set_device_taints(test::FakeApiServer::DeviceTaints::Served);  // the unhealthy GPU keeps its taint
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(fast_timing());
  publisher.start();
  // Started, nothing published: a worker reads the API version ahead of the first publication and
  // ends; it writes nothing (and reads no slice) before there is something to publish.
  ASSERT_TRUE(api.wait_slice_counts([](const auto& c) { return c.discoveries == 1; }, 10s));
  ASSERT_TRUE(test::eventually([&] { return !publisher.state().worker; }, 10s));
  EXPECT_EQ(api.slice_counts().lists, 0);
  EXPECT_EQ(api.slice_counts().writes(), 0);
  auto inv = testing::a100_node(2, 0);
  publisher.publish(pools_of(inv));
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  ASSERT_TRUE(test::eventually([&] { return !publisher.state().worker; }, 10s));
  inv.gpus[1].health = {false, "XID 79"};
  const auto pools = pools_of(inv);
  publisher.publish(pools);
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  EXPECT_EQ(without_time_added(written(api, kSlice0)), resource_slices(pools[0], options(), 2, SliceApi::V1)[0]);
  publisher.resync();  // the kubelet re-registered: read again, nothing to write
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  ASSERT_TRUE(test::eventually([&] { return !publisher.state().worker; }, 10s));
  EXPECT_EQ(api.slice_counts().writes(), 2);
}

// A failing API server keeps the worker (it sleeps out its backoff) until the write goes through.
TEST(SliceWorker, StaysThroughABackoffUntilTheWriteGoesThrough) {
  test::FakeApiServer api("node-1", {});
  api.fail_slice_writes(500, 3);
  SlicePublisher publisher(server_of(api), options(), SliceApi::V1);
  publisher.set_timing(fast_timing());
  publisher.start();
  publisher.publish(pools_of(testing::a100_node(1, 0)));
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  EXPECT_EQ(api.slice_counts().creates, 4);
  EXPECT_TRUE(publisher.state().problem.empty());
  ASSERT_TRUE(test::eventually([&] { return !publisher.state().worker; }, 10s));
}

SlicePublisher::Timing fast_watch_timing() {
  SlicePublisher::Timing t = fast_timing();
  t.watch.first_backoff = 10ms;
  t.watch.max_backoff = 50ms;
  t.watch.min_quiet_watch = 0ms;
  return t;
}

// Someone else deletes kgpu's slice, then edits it: with the watch, both are put back at once,
// with no publish() in between (before the watch, only the next change or registration did it).
TEST(SliceWatch, ASliceDeletedOrEditedBySomeoneElseIsPutBack) {
  test::FakeApiServer api("node-1", {});
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(fast_watch_timing());
  publisher.start();
  publisher.start_watch();
  const auto pools = pools_of(testing::a100_node(4, 0));
  publisher.publish(pools);
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  ASSERT_TRUE(test::eventually([&] { return api.slice_counts().watches >= 1; }, 10s));
  const json ours = written(api, kSlice0);

  api.remove_slice(kSlice0);
  // Back with the same devices, in the pool's next generation (a rewritten pool always bumps it).
  ASSERT_TRUE(test::eventually([&] { return written(api, kSlice0)["spec"]["devices"] == ours["spec"]["devices"]; }, 10s))
      << publisher.state().problem;
  EXPECT_EQ(written(api, kSlice0)["spec"]["pool"]["generation"], 2);

  json edited = api.slices().at(kSlice0);
  edited["spec"]["devices"] = json::array();
  api.put_slice(edited);
  ASSERT_TRUE(test::eventually([&] { return written(api, kSlice0)["spec"]["devices"] == ours["spec"]["devices"]; }, 10s))
      << publisher.state().problem;
  EXPECT_EQ(api.slice_counts().rejected, 0);
}

// Issue 28, item 9: a second writer empties kgpu's slice after every write kgpu makes. kgpu keeps
// putting it back, but each repair waits twice as long as the last (up to max_backoff), instead
// of rewriting it as fast as the API server answers; the fight is reported in state() and ends
// with the first pass that finds the slice as kgpu wrote it.
TEST(SliceWatch, ASecondWriterIsFoughtWithBackoff) {
  test::FakeApiServer api("node-1", {});
  SlicePublisher::Timing timing = fast_watch_timing();
  timing.resync_interval = 20ms;
  timing.max_backoff = 160ms;
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(timing);
  publisher.start();
  publisher.start_watch();
  publisher.publish(pools_of(testing::a100_node(2, 0)));
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  ASSERT_TRUE(test::eventually([&] { return api.slice_counts().watches >= 1; }, 10s));
  const json ours = written(api, kSlice0);

  // The second writer: after each of kgpu's writes, the slice's devices are emptied again.
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> repaired_at;  // when each of kgpu's repairs was seen
  int seen = api.slice_counts().writes();
  auto fight = [&] {
    json edited = api.slices().at(kSlice0);
    edited["spec"]["devices"] = json::array();
    api.put_slice(edited);
  };
  fight();
  while (repaired_at.size() < 6) {
    ASSERT_TRUE(api.wait_slice_counts([&](const auto& c) { return c.writes() > seen; }, 20s))
        << "kgpu stopped repairing after " << repaired_at.size() << ": " << publisher.state().problem;
    repaired_at.push_back(Clock::now());
    seen = api.slice_counts().writes();
    fight();
  }
  // Waits after repairs 1..5: 20 (one repair is no fight), 40, 80, 160, 160 ms; unpaced, six
  // repairs take a few milliseconds.
  EXPECT_GE(repaired_at.back() - repaired_at.front(), 400ms);
  // The publisher counts a repair once its pass has ended, just after the server stored the write.
  ASSERT_TRUE(test::eventually([&] { return publisher.state().repairs >= 6; }, 10s)) << publisher.state().repairs;
  EXPECT_TRUE(publisher.state().fighting);
  EXPECT_EQ(api.slice_counts().rejected, 0);

  // The writer gives up: the next repair stands, and the pass after it ends the fight.
  ASSERT_TRUE(test::eventually([&] { return written(api, kSlice0)["spec"]["devices"] == ours["spec"]["devices"]; }, 10s));
  ASSERT_TRUE(test::eventually([&] { return !publisher.state().fighting; }, 10s));
}

// kgpu's own change during a fight is written at once: the repairs' pace holds only the passes a
// watch event asked for. (wait_synced() would also wait for the paced re-check, so the server's
// content is what is awaited.)
TEST(SliceWatch, APublishIsNotHeldByTheRepairsPace) {
  test::FakeApiServer api("node-1", {});
  SlicePublisher::Timing timing = fast_watch_timing();
  timing.resync_interval = 5s;  // a watch-caused pass waits this long after the last pass
  timing.max_backoff = 5s;
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(timing);
  publisher.start();
  publisher.start_watch();
  auto devices_are = [&](size_t n) {
    return api.wait_slices([&](const auto& slices) {
      auto it = slices.find(kSlice0);
      return it != slices.end() && it->second["spec"]["devices"].size() == n;
    }, 4s);
  };
  publisher.publish(pools_of(testing::a100_node(2, 0)));
  ASSERT_TRUE(devices_are(2)) << publisher.state().problem;
  ASSERT_TRUE(test::eventually([&] { return api.slice_counts().watches >= 1; }, 10s));
  api.remove_slice(kSlice0);  // its repair now waits out the 5 s
  publisher.publish(pools_of(testing::a100_node(3, 0)));
  EXPECT_TRUE(devices_are(3)) << publisher.state().problem;
}

// A slice of a driver kgpu does not serve appears on this node (AMD's own DRA driver, say): the
// watch sees it, and kgpu leaves it alone while it still puts back its own.
TEST(SliceWatch, OtherDriversSlicesAreIgnored) {
  test::FakeApiServer api("node-1", {});
  SliceOptions o = options();
  o.drivers.amd.clear();
  o.drivers.intel.clear();
  SlicePublisher publisher(server_of(api), o);
  publisher.set_timing(fast_watch_timing());
  publisher.start();
  publisher.start_watch();
  publisher.publish(pools_of(testing::a100_node(2, 0)));
  ASSERT_TRUE(publisher.wait_synced(10s)) << publisher.state().problem;
  ASSERT_TRUE(test::eventually([&] { return api.slice_counts().watches >= 1; }, 10s));
  // Our own create comes back as an event: one re-read, no write. Wait until that has settled.
  ASSERT_TRUE(test::eventually([&] { return api.slice_counts().lists >= 2; }, 10s));
  const auto before = api.slice_counts();
  json other = api.slices().at(kSlice0);
  other["metadata"]["name"] = "node-1-gpu.amd.com-0";
  other["spec"]["driver"] = "gpu.amd.com";
  api.put_slice(other);
  // Then one of ours, removed: its re-read is the sync point; the AMD one must have caused nothing.
  api.remove_slice(kSlice0);
  ASSERT_TRUE(test::eventually([&] { return api.slices().count(kSlice0) == 1; }, 10s));
  EXPECT_EQ(api.slices().count("node-1-gpu.amd.com-0"), 1u);  // left alone
  EXPECT_EQ(api.slice_counts().creates, before.creates + 1);
}

// The watch asks for no BOOKMARK events: a real API server sends one about once a minute to a
// watch that allows them, waking the idle daemon for nothing (issue 32: no wake-up while nothing
// changes). Its resourceVersion and timeout are still sent.
TEST(SliceWatch, AsksForNoBookmarks) {
  test::FakeApiServer api("node-1", {});
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(fast_watch_timing());
  publisher.start();
  publisher.start_watch();
  ASSERT_TRUE(api.wait_slice_counts([](const auto& c) { return c.watches >= 1; }, 10s));
  const auto params = api.slice_watch_params().at(0);
  EXPECT_EQ(params.count("allowWatchBookmarks"), 0u);
  EXPECT_EQ(params.at("watch"), "1");
  EXPECT_EQ(params.count("resourceVersion"), 1u);
  EXPECT_EQ(params.count("timeoutSeconds"), 1u);
  EXPECT_EQ(params.at("fieldSelector"), "spec.nodeName=node-1");
}

TEST(SliceWatch, StopEndsTheWatchAtOnce) {
  test::FakeApiServer api("node-1", {});
  SlicePublisher publisher(server_of(api), options());
  publisher.set_timing(fast_watch_timing());
  publisher.start();
  publisher.start_watch();
  publisher.publish(pools_of(testing::a100_node(1, 0)));
  ASSERT_TRUE(test::eventually([&] { return api.slice_counts().watches >= 1; }, 10s));
  const auto start = std::chrono::steady_clock::now();
  publisher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(SliceWatchEvent, ParsesTheHeadAndTheDriver_WrongTypesAreErrors) {
  const json slice = {{"metadata", {{"name", "s"}, {"resourceVersion", "42"}}},
                      {"spec", {{"driver", "gpu.nvidia.com"}, {"nodeName", "node-1"}, {"pool", {{"name", "node-1"}}}}}};
  auto deleted = kube::parse_slice_watch_event(json{{"type", "DELETED"}, {"object", slice}}.dump());
  ASSERT_TRUE(deleted.ok()) << deleted.error().message;
  EXPECT_EQ(deleted->type, "DELETED");
  EXPECT_EQ(deleted->resource_version, "42");
  EXPECT_EQ(deleted->driver, "gpu.nvidia.com");
  auto bookmark = kube::parse_slice_watch_event(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})");
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->resource_version, "7");
  EXPECT_TRUE(bookmark->driver.empty());
  auto gone = kube::parse_slice_watch_event(R"({"type":"ERROR","object":{"kind":"Status","code":410}})");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->error_code, 410);
  json bad = slice;
  bad["spec"]["driver"] = 5;
  auto wrong = kube::parse_slice_watch_event(json{{"type", "MODIFIED"}, {"object", bad}}.dump());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("object.spec.driver is a number"), std::string::npos) << wrong.error().message;
  EXPECT_FALSE(kube::parse_slice_watch_event(R"({"type":"RENAMED","object":{}})").ok());
  EXPECT_FALSE(kube::parse_slice_watch_event(R"({"type":"ERROR","object":{"code":"x"}})").ok());
  EXPECT_FALSE(kube::parse_slice_watch_event("not json").ok());
}

TEST(ApiClientWrites, DeadlineSizeLimitAndStopHoldForWrites) {
  test::FakeApiServer api("node-1", {});
  kube::Interrupter interrupter;
  kube::ApiClient client(server_of(api), interrupter);
  auto slice = resource_slices(pools_of(testing::a100_node(1, 0))[0], options(), 1, SliceApi::V1)[0];
  const std::string path = "/apis/resource.k8s.io/v1/resourceslices";
  // Size: the created object comes back larger than 16 bytes.
  auto small = client.post(path, slice.dump(), 2s, 16);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("larger than 16 bytes"), std::string::npos) << small.error().message;
  EXPECT_NE(small.error().message.find("POST "), std::string::npos) << small.error().message;
  // Deadline: a write the server never answers.
  api.stall_slice_writes(true);
  auto t0 = std::chrono::steady_clock::now();
  auto stalled = client.put(path + "/" + kSlice0, slice.dump(), 300ms, 1 << 20);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  ASSERT_FALSE(stalled.ok());
  EXPECT_NE(stalled.error().message.find("no complete answer within 0.3 s"), std::string::npos)
      << stalled.error().message;
  // stop() from another thread ends a write in flight.
  std::optional<Result<kube::ApiAnswer>> removed;
  const int writes = api.slice_counts().writes();
  std::thread caller([&] { removed = client.remove(path + "/" + kSlice0, "", 30s, 1 << 20); });
  ASSERT_TRUE(api.wait_slice_writes(writes + 1, 5s));
  t0 = std::chrono::steady_clock::now();
  interrupter.stop();
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  ASSERT_TRUE(removed.has_value());
  EXPECT_FALSE(removed->ok());
  api.stall_slice_writes(false);
}

}  // namespace
}  // namespace kgpu::dra
