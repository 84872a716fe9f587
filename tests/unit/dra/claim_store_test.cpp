// The claim store: idempotent prepare, unprepare, the CDI spec file per claim, the checkpoint
// surviving a restart (and refused when corrupt or from another boot), UID checks, device
// conflicts and concurrent kubelet calls.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "cdi/spec_writer.h"
#include "core/safe_file.h"
#include "dra/claims/claim_checkpoint.h"
#include "dra/claims/claim_store.h"
#include "dra/claims/nvidia_checkpoint.h"
#include "dra/model/publication.h"
#include "unit/dra/claim_test_support.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;
using testing::claim_json;
using testing::gpu_name;

namespace fs = std::filesystem;

std::string uid(int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "7c0a11e0-0000-4000-8000-%012d", n);
  return buf;
}

ClaimRef ref(int n) { return {uid(n), "team-a", "claim-" + uid(n)}; }

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Fixture {
  testing::ScratchDir dir;
  std::map<std::string, std::string> claims;  // "ns/name" -> JSON the fake API server returns
  std::atomic<int> fetches{0};
  std::shared_ptr<NodeDevices> devices = std::make_shared<NodeDevices>();

  Fixture() {
    devices->inventory = testing::a100_node(8, 0);
    SliceOptions o;
    o.node_name = "node-1";
    devices->pool = build_publication(devices->inventory, o)->pools.at(0);
  }
  ClaimStoreOptions options(const std::string& boot = "boot-1") const {
    return {"gpu.nvidia.com", (dir.path / "plugin" / "claims.json").string(), (dir.path / "cdi").string(), boot};
  }
  std::unique_ptr<ClaimStore> open(const std::string& boot = "boot-1") {
    auto store = std::make_unique<ClaimStore>(options(boot), [this](const std::string& ns, const std::string& name) {
      ++fetches;
      auto it = claims.find(ns + "/" + name);
      if (it == claims.end()) return Result<std::string>(Error::not_found("resourceclaims \"" + name + "\" not found"));
      return Result<std::string>(it->second);
    });
    store->set_devices(devices);
    return store;
  }
  void serve(int n, const std::vector<int>& gpus) {
    std::vector<testing::ResultSpec> results;
    for (int g : gpus) results.push_back({"gpus", gpu_name(devices->inventory, g)});
    claims["team-a/claim-" + uid(n)] = claim_json(uid(n), results).dump();
  }
  fs::path spec(int n) const { return dir.path / "cdi" / claim_cdi_spec_file("gpu.nvidia.com", uid(n)); }
};

TEST(DraClaimStore, PrepareWritesTheSpecAndAnswersAgainWithoutFetchingOrWriting) {
  Fixture f;
  f.serve(1, {0, 1, 2, 3, 4, 5, 6, 7});
  auto store = f.open();
  auto first = store->prepare(ref(1));
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->devices.size(), 8u);
  ASSERT_TRUE(fs::is_regular_file(f.spec(1)));
  const json spec = json::parse(read(f.spec(1)));
  EXPECT_EQ(spec["kind"], "k8s.gpu.nvidia.com/claim");
  EXPECT_EQ(spec["devices"].size(), 8u);
  EXPECT_EQ(fs::status(f.spec(1)).permissions() & fs::perms::all, fs::perms(0644));
  const auto written = fs::last_write_time(f.spec(1));
  const auto checkpoint_written = fs::last_write_time(f.options().checkpoint_path);

  auto again = store->prepare(ref(1));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(f.fetches, 1);
  EXPECT_EQ(fs::last_write_time(f.spec(1)), written);
  EXPECT_EQ(fs::last_write_time(f.options().checkpoint_path), checkpoint_written);
}

TEST(DraClaimStore, StateSurvivesARestartAndUnprepareRemovesTheSpec) {
  Fixture f;
  f.serve(1, {1});
  f.serve(2, {2, 3});
  PreparedClaim one, two;
  {
    auto store = f.open();
    one = *store->prepare(ref(1));
    two = *store->prepare(ref(2));
  }
  f.claims.clear();  // the API objects are gone: the restarted store must not need them
  auto store = f.open();
  EXPECT_TRUE(store->startup_warnings().empty());
  EXPECT_EQ(store->prepared(), (std::vector<PreparedClaim>{one, two}));
  auto again = store->prepare(ref(2));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, two);
  EXPECT_EQ(f.fetches, 2);

  auto released = store->unprepare(uid(2));
  ASSERT_TRUE(released.ok()) << released.error().message;
  ASSERT_TRUE(released->has_value());
  EXPECT_EQ(**released, two);
  EXPECT_FALSE(fs::exists(f.spec(2)));
  EXPECT_TRUE(fs::exists(f.spec(1)));
  auto unknown = store->unprepare(uid(2));  // again, and unknown UIDs: fine
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->has_value());

  auto restarted = f.open();
  EXPECT_EQ(restarted->prepared(), std::vector<PreparedClaim>{one});
}

TEST(DraClaimStore, UnprepareOfAnUnrecordedClaimRemovesALeftoverSpec) {
  Fixture f;
  fs::create_directories(f.dir.path / "cdi");
  std::ofstream(f.spec(9)) << "{}";
  auto store = f.open();
  ASSERT_TRUE(store->unprepare(uid(9)).ok());
  EXPECT_FALSE(fs::exists(f.spec(9)));
  EXPECT_FALSE(store->unprepare("../../etc/passwd").ok());
}

TEST(DraClaimStore, AMissingSpecFileIsWrittenAgain) {
  Fixture f;
  f.serve(1, {1});
  auto store = f.open();
  const auto first = *store->prepare(ref(1));
  fs::remove(f.spec(1));
  auto again = store->prepare(ref(1));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, first);
  EXPECT_TRUE(fs::is_regular_file(f.spec(1)));
}

TEST(DraClaimStore, FailuresLeaveTheRecordAsItWas) {
  Fixture f;
  f.serve(1, {1});
  auto store = f.open();
  ASSERT_TRUE(store->prepare(ref(1)).ok());
  // The spec cannot be removed (a non-empty folder took its place): the claim stays recorded.
  fs::remove(f.spec(1));
  fs::create_directories(f.spec(1) / "x");
  auto failed = store->unprepare(uid(1));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, Error::Code::Unavailable);
  EXPECT_NE(failed.error().message.find(f.spec(1).string()), std::string::npos);
  EXPECT_EQ(store->prepared().size(), 1u);
  EXPECT_EQ(f.open()->prepared().size(), 1u);
  fs::remove_all(f.spec(1));
  auto released = store->unprepare(uid(1));
  ASSERT_TRUE(released.ok()) << released.error().message;
  EXPECT_TRUE(released->has_value());

  // The checkpoint cannot be written: not prepared, and no spec left behind.
  const fs::path checkpoint = f.options().checkpoint_path;
  fs::remove(checkpoint);
  fs::create_directories(checkpoint / "x");
  auto refused = store->prepare(ref(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Error::Code::Unavailable);
  EXPECT_FALSE(fs::exists(f.spec(1)));
  EXPECT_TRUE(store->prepared().empty());
}

TEST(DraClaimStore, FetchedClaimMustHaveTheRequestedUid) {
  Fixture f;
  f.claims["team-a/claim-" + uid(1)] = claim_json(uid(5), {{"gpus", "gpu-1"}}).dump();
  auto store = f.open();
  auto r = store->prepare(ref(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Error::Code::FailedPrecondition);
  EXPECT_NE(r.error().message.find("has UID \"" + uid(5) + "\", not " + uid(1)), std::string::npos);
  EXPECT_FALSE(fs::exists(f.spec(1)));

  auto missing = store->prepare(ref(2));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Error::Code::NotFound);
  EXPECT_NE(missing.error().message.find("not found"), std::string::npos);
  EXPECT_TRUE(store->prepared().empty());
}

TEST(DraClaimStore, ADeviceIsNeverPreparedForTwoClaims) {
  Fixture f;
  f.serve(1, {1, 2});
  f.serve(2, {2});
  auto store = f.open();
  ASSERT_TRUE(store->prepare(ref(1)).ok());
  auto r = store->prepare(ref(2));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("device " + gpu_name(f.devices->inventory, 2) + " is already prepared for"),
            std::string::npos);
  // Admin access may look at a device in use.
  f.claims["team-a/claim-" + uid(3)] =
      claim_json(uid(3), {{"gpus", gpu_name(f.devices->inventory, 2), "gpu.nvidia.com", "node-1", true}}).dump();
  EXPECT_TRUE(store->prepare(ref(3)).ok());
  ASSERT_TRUE(store->unprepare(uid(1)).ok());
  EXPECT_TRUE(store->prepare(ref(2)).ok());
}

// Issue 28, item 12: a whole GPU held by one claim does not reach another as MIG devices after
// the MIG layout changed under it (the devices have other names, the hardware is the same).
TEST(DraClaimStore, AMigReLayoutOfAHeldGpuDoesNotHandItsMigDevicesToAnotherClaim) {
  Fixture f;
  f.serve(1, {3});
  auto store = f.open();
  ASSERT_TRUE(store->prepare(ref(1)).ok());
  const std::string gpu3_uuid = f.devices->inventory.gpus[3].uuid;
  EXPECT_EQ(store->prepared().at(0).devices.at(0).gpu_uuid, gpu3_uuid);
  EXPECT_TRUE(store->prepared().at(0).devices.at(0).whole_gpu);

  // GPU 3 now in MIG mode: its MIG devices are published under new names.
  auto relaid = std::make_shared<NodeDevices>(*f.devices);
  relaid->inventory = testing::a100_node(8, 4);
  SliceOptions o;
  o.node_name = "node-1";
  relaid->pool = build_publication(relaid->inventory, o)->pools.at(0);
  store->set_devices(relaid);
  ASSERT_EQ(relaid->inventory.gpus[3].uuid, gpu3_uuid);
  const std::string mig_of_gpu3 = testing::mig_name(relaid->inventory, 3, 0);
  const std::string mig_of_gpu0 = testing::mig_name(relaid->inventory, 0, 0);
  f.claims["team-a/claim-" + uid(2)] = claim_json(uid(2), {{"gpus", mig_of_gpu3}}).dump();
  auto refused = store->prepare(ref(2));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Error::Code::FailedPrecondition);
  EXPECT_NE(refused.error().message.find("device " + mig_of_gpu3 + " is on GPU " + gpu3_uuid +
                                         ", which is already prepared as " + gpu_name(f.devices->inventory, 3)),
            std::string::npos)
      << refused.error().message;
  // A MIG device of another GPU is fine; once the whole-GPU claim goes, so is GPU 3's.
  f.claims["team-a/claim-" + uid(3)] = claim_json(uid(3), {{"gpus", mig_of_gpu0}}).dump();
  EXPECT_TRUE(store->prepare(ref(3)).ok());
  ASSERT_TRUE(store->unprepare(uid(1)).ok());
  EXPECT_TRUE(store->prepare(ref(2)).ok());
}

// Issue 28, item 10: the reset of a time-sliced GPU is recorded by the unprepare that forgets the
// claim, survives a restart, blocks another tenant of that GPU until it ran, and is superseded by
// a claim that sets an interval of its own.
TEST(DraClaimStore, ATimeSliceResetStaysPendingUntilDoneAndGuardsTheGpu) {
  Fixture f;
  const json long_slices = testing::opaque_config(
      {{"apiVersion", "resource.nvidia.com/v1beta1"},
       {"kind", "GpuConfig"},
       {"sharing", {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}}});
  const std::string gpu1 = gpu_name(f.devices->inventory, 1);
  const std::string gpu1_uuid = f.devices->inventory.gpus[1].uuid;
  f.claims["team-a/claim-" + uid(1)] = claim_json(uid(1), {{"gpus", gpu1}}, json::array({long_slices})).dump();
  f.serve(2, {1});
  f.claims["team-a/claim-" + uid(3)] = claim_json(uid(3), {{"gpus", gpu1}}, json::array({long_slices})).dump();
  {
    auto store = f.open();
    ASSERT_TRUE(store->prepare(ref(1)).ok());
    EXPECT_TRUE(store->pending_resets().empty());
    ASSERT_TRUE(store->unprepare(uid(1)).ok());
    EXPECT_EQ(store->pending_resets(), (std::vector<TimeSliceSetting>{{gpu1_uuid, TimeSliceInterval::Default}}));
  }  // kgpu dies before running it
  auto store = f.open();
  ASSERT_TRUE(store->is_reset_pending(gpu1_uuid)) << "kept in the checkpoint";
  ASSERT_FALSE(store->startup_warnings().empty());
  EXPECT_NE(store->startup_warnings().back().find(gpu1_uuid + " still waits for its time-slice interval"),
            std::string::npos);
  auto refused = store->prepare(ref(2));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Error::Code::Unavailable) << "the kubelet retries";
  EXPECT_NE(refused.error().message.find("could not reset yet"), std::string::npos) << refused.error().message;

  // A claim that sets its own interval on that GPU takes it over: the reset would undo it later.
  ASSERT_TRUE(store->prepare(ref(3)).ok());
  EXPECT_FALSE(store->is_reset_pending(gpu1_uuid));
  ASSERT_TRUE(store->unprepare(uid(3)).ok());
  ASSERT_TRUE(store->is_reset_pending(gpu1_uuid));
  store->reset_done(gpu1_uuid);
  EXPECT_FALSE(f.open()->is_reset_pending(gpu1_uuid)) << "forgotten in the checkpoint too";
  EXPECT_TRUE(store->prepare(ref(2)).ok());
}

// Issue 29, item 7: an MPS claim's GPUs run EXCLUSIVE_PROCESS; its unprepare leaves a reset to
// compute mode DEFAULT pending (in the checkpoint), which guards the GPU like a time-slice reset.
TEST(DraClaimStore, AnMpsClaimsExclusiveProcessGpuIsResetAfterItAndGuardedUntilThen) {
  Fixture f;
  auto devices = std::make_shared<NodeDevices>(*f.devices);
  devices->config.mps_root = "/run/kgpu/mps";
  f.devices = devices;
  const std::string gpu2 = gpu_name(f.devices->inventory, 2);
  const std::string gpu2_uuid = f.devices->inventory.gpus[2].uuid;
  f.claims["team-a/claim-" + uid(1)] =
      claim_json(uid(1), {{"gpus", gpu2}},
                 json::array({testing::opaque_config(testing::gpu_sharing({{"strategy", "MPS"}}))}))
          .dump();
  f.serve(2, {2});
  auto store = f.open();
  auto prepared = store->prepare(ref(1));
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  EXPECT_EQ(prepared->exclusive_gpus, std::vector<std::string>{gpu2_uuid});
  EXPECT_EQ(f.open()->prepared().at(0).exclusive_gpus, std::vector<std::string>{gpu2_uuid}) << "in the checkpoint";
  ASSERT_TRUE(store->unprepare(uid(1)).ok());
  EXPECT_TRUE(f.open()->is_reset_pending(gpu2_uuid));
  auto refused = store->prepare(ref(2));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("time-slice interval or compute mode"), std::string::npos);
  store->reset_done(gpu2_uuid);
  EXPECT_TRUE(store->prepare(ref(2)).ok());
}

// Issue 38, item 2: an MPS claim that only its CDI spec remembers (the checkpoint was unreadable)
// is released at unprepare with its MPS daemon to stop, and its GPU's compute mode goes back to
// DEFAULT (a pending reset), so the next tenant does not get an EXCLUSIVE_PROCESS GPU.
TEST(DraClaimStore, AClaimRecoveredFromItsSpecUndoesItsMpsAtUnprepare) {
  Fixture f;
  auto devices = std::make_shared<NodeDevices>(*f.devices);
  devices->config.mps_root = "/run/kgpu/mps";
  f.devices = devices;
  const std::string gpu2_uuid = f.devices->inventory.gpus[2].uuid;
  f.claims["team-a/claim-" + uid(1)] =
      claim_json(uid(1), {{"gpus", gpu_name(f.devices->inventory, 2)}},
                 json::array({testing::opaque_config(testing::gpu_sharing({{"strategy", "MPS"}}))}))
          .dump();
  f.serve(2, {3});
  { ASSERT_TRUE(f.open()->prepare(ref(1)).ok()); }
  ASSERT_TRUE(write_file_atomically(f.options().checkpoint_path, "cut sh", 0600).ok());
  auto store = f.open();
  ASSERT_EQ(store->recovered_claims().count(uid(1)), 1u);
  ASSERT_TRUE(store->prepare(ref(2)).ok());  // another claim, on another GPU, stays as it is
  auto released = store->unprepare(uid(1));
  ASSERT_TRUE(released.ok()) << released.error().message;
  ASSERT_TRUE(released->has_value());
  const PreparedClaim& undo = **released;
  EXPECT_EQ(undo.ref.uid, uid(1));
  ASSERT_TRUE(undo.mps.has_value());
  EXPECT_EQ(undo.mps->claim_uid, uid(1));
  EXPECT_EQ(undo.exclusive_gpus, std::vector<std::string>{gpu2_uuid});
  EXPECT_TRUE(store->is_reset_pending(gpu2_uuid));
  EXPECT_TRUE(f.open()->is_reset_pending(gpu2_uuid)) << "in the checkpoint";
  // Asked again (the kubelet retries): nothing more to undo.
  auto again = store->unprepare(uid(1));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());
}

TEST(DraClaimStore, CorruptCheckpointStartsEmptyWithAWarningNamingThePath) {
  Fixture f;
  f.serve(1, {1});
  { ASSERT_TRUE(f.open()->prepare(ref(1)).ok()); }
  const std::string path = f.options().checkpoint_path;
  std::string text = read(path);
  text.replace(text.find(uid(1)), 1, "f");  // edited by hand: the checksum no longer matches
  ASSERT_TRUE(write_file_atomically(path, text, 0600).ok());
  auto store = f.open();
  ASSERT_EQ(store->startup_warnings().size(), 2u);  // the bad file, the claim found by its CDI spec
  EXPECT_NE(store->startup_warnings()[0].find(path), std::string::npos);
  EXPECT_NE(store->startup_warnings()[0].find("checksum"), std::string::npos);
  EXPECT_TRUE(store->prepared().empty());
  EXPECT_EQ(store->recovered_claims().count(uid(1)), 1u);

  ASSERT_TRUE(write_file_atomically(path, "not json", 0600).ok());
  EXPECT_NE(f.open()->startup_warnings().at(0).find("is corrupt"), std::string::npos);
  fs::remove(path);
  fs::create_directory(path);  // not a file at all
  EXPECT_NE(f.open()->startup_warnings().at(0).find("cannot be read"), std::string::npos);
}

// The files next to the checkpoint whose name starts with `prefix`.
std::vector<fs::path> beside(const std::string& checkpoint, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(checkpoint).parent_path()))
    if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path());
  return out;
}

// Issue 28, item 3: one flipped byte used to drop every prepared claim, overwrite the file and let
// a second claim be prepared on the same GPU.
TEST(DraClaimStore, AnUnreadableCheckpointIsKeptAsideAndItsClaimsDevicesStayHeld) {
  Fixture f;
  f.serve(1, {1, 2});
  f.serve(2, {2});
  f.serve(3, {3});
  { ASSERT_TRUE(f.open()->prepare(ref(1)).ok()); }
  const std::string path = f.options().checkpoint_path;
  std::string text = read(path);
  text[text.size() / 2] ^= 0x20;  // one flipped byte
  ASSERT_TRUE(write_file_atomically(path, text, 0600).ok());

  auto store = f.open();
  const auto aside = beside(path, "claims.json.corrupt-");
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(read(aside[0]), text);  // kept as it was
  EXPECT_NE(store->startup_warnings().at(0).find("kept as " + aside[0].string()), std::string::npos)
      << store->startup_warnings().at(0);
  EXPECT_EQ(store->recovered_claims().at(uid(1)),
            (std::vector<std::string>{gpu_name(f.devices->inventory, 1), gpu_name(f.devices->inventory, 2)}));

  // A device of the claim the checkpoint forgot is refused to another claim, with the reason.
  auto second = store->prepare(ref(2));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Error::Code::FailedPrecondition);
  EXPECT_NE(second.error().message.find("device " + gpu_name(f.devices->inventory, 2) + " is held by claim " + uid(1)),
            std::string::npos)
      << second.error().message;
  // Other devices are served meanwhile, and the new checkpoint goes where the bad one was.
  ASSERT_TRUE(store->prepare(ref(3)).ok());
  EXPECT_EQ(read(aside[0]), text);
  // A restart still knows the forgotten claim's devices (its spec is still on disk)...
  store = f.open();
  EXPECT_EQ(store->recovered_claims().count(uid(1)), 1u);
  EXPECT_FALSE(store->prepare(ref(2)).ok());
  // ...until the kubelet unprepares it.
  auto released = store->unprepare(uid(1));
  ASSERT_TRUE(released.ok());
  EXPECT_FALSE(fs::exists(f.spec(1)));
  EXPECT_TRUE(store->recovered_claims().empty());
  EXPECT_TRUE(store->prepare(ref(2)).ok());
}

TEST(DraClaimStore, ACheckpointOfANewerVersionIsRefusedLoudlyAndNeverOverwritten) {
  Fixture f;
  f.serve(1, {1});
  f.serve(2, {2});
  { ASSERT_TRUE(f.open()->prepare(ref(1)).ok()); }
  const std::string path = f.options().checkpoint_path;
  json doc = json::parse(read(path));
  doc["version"] = 2;
  ASSERT_TRUE(write_file_atomically(path, doc.dump(), 0600).ok());
  auto store = f.open();
  const std::string& warning = store->startup_warnings().at(0);
  EXPECT_TRUE(warning.starts_with("REFUSED: DRA checkpoint " + path)) << warning;
  EXPECT_NE(warning.find("newer than this kgpu reads"), std::string::npos) << warning;
  ASSERT_TRUE(store->prepare(ref(2)).ok());
  const auto aside = beside(path, "claims.json.corrupt-");
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(json::parse(read(aside[0]))["version"], 2);
  EXPECT_EQ(store->recovered_claims().count(uid(1)), 1u);  // claim 1 still held
}

TEST(DraClaimStore, AFifoOrLinkAtTheCheckpointPathIsMovedAsideNotFollowed) {
  for (bool fifo : {true, false}) {
    Fixture f;
    f.serve(1, {1});
    const std::string path = f.options().checkpoint_path;
    fs::create_directories(fs::path(path).parent_path());
    const fs::path target = f.dir.path / "elsewhere";
    std::ofstream(target) << "keep me";
    if (fifo) ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    else fs::create_symlink(target, path);
    auto store = f.open();
    EXPECT_NE(store->startup_warnings().at(0).find("cannot be read"), std::string::npos);
    ASSERT_TRUE(store->prepare(ref(1)).ok());
    const auto aside = beside(path, "claims.json.corrupt-");
    ASSERT_EQ(aside.size(), 1u);
    EXPECT_EQ(fs::is_fifo(fs::symlink_status(aside[0])), fifo);
    EXPECT_EQ(fs::is_symlink(fs::symlink_status(aside[0])), !fifo);
    EXPECT_EQ(read(target), "keep me");
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)));
  }
}

// Issue 28, item 12: write_file_atomically's temporary files that a SIGKILL left are removed.
TEST(DraClaimStore, TemporaryCheckpointFilesLeftByAKillAreRemovedAtStart) {
  Fixture f;
  const std::string path = f.options().checkpoint_path;
  fs::create_directories(fs::path(path).parent_path());
  const fs::path stale = fs::path(path).parent_path() / ".claims.json.kgpu-0123456789abcdef";
  const fs::path other = fs::path(path).parent_path() / ".someone-else.kgpu-0123456789abcdef";
  std::ofstream(stale) << "half";
  std::ofstream(other) << "theirs";
  auto store = f.open();
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(other));
}

// Issue 38, item 5: the CDI spec temporaries of a prepare that a SIGKILL cut short go at start too;
// other files in the CDI folder (another driver's, another program's) stay.
TEST(DraClaimStore, TemporarySpecFilesLeftByAKillAreRemovedAtStart) {
  Fixture f;
  const fs::path cdi = f.options().cdi_dir;
  fs::create_directories(cdi);
  const fs::path stale = cdi / ("." + claim_cdi_spec_file("gpu.nvidia.com", uid(1)) + ".kgpu-0123456789abcdef");
  const fs::path amd = cdi / ("." + claim_cdi_spec_file("gpu.amd.com", uid(1)) + ".kgpu-0123456789abcdef");
  const fs::path other = cdi / ".nvidia.yaml.tmp";
  for (const auto& p : {stale, amd, other}) std::ofstream(p) << "half";
  auto store = f.open();
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(amd));
  EXPECT_TRUE(fs::exists(other));
}

// Issue 38, item 5: after a checkpoint write failed (a full disk), a repeated prepare of a claim
// already on disk writes nothing, so it succeeds.
TEST(DraClaimStore, ARepeatedPrepareSucceedsWhileTheCheckpointCannotBeWritten) {
  Fixture f;
  f.serve(1, {1});
  f.serve(2, {2});
  auto store = f.open();
  ASSERT_TRUE(store->prepare(ref(1)).ok());
  const fs::path checkpoint = f.options().checkpoint_path;
  const std::string on_disk = read(checkpoint);
  fs::remove(checkpoint);
  fs::create_directories(checkpoint / "x");  // every write fails from now on
  ASSERT_FALSE(store->prepare(ref(2)).ok());
  const int fetches = f.fetches;
  auto again = store->prepare(ref(1));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(f.fetches, fetches);
  EXPECT_EQ(again->ref, ref(1));
  // The disk has room again: everything is written as before.
  fs::remove_all(checkpoint);
  std::ofstream(checkpoint) << on_disk;
  ASSERT_TRUE(store->prepare(ref(2)).ok());
  EXPECT_EQ(f.open()->prepared().size(), 2u);
}

// Issue 40, item 3: the unprepares of one kubelet call are made durable together at its end. Until
// then the claims' devices stay held and the checkpoint still records them; settle() writes once.
TEST(DraClaimStore, UnpreparesSettledTogetherHoldTheirDevicesUntilDurable) {
  Fixture f;
  f.serve(1, {1});
  f.serve(2, {2});
  f.serve(3, {1});  // wants claim 1's GPU
  auto store = f.open();
  ASSERT_TRUE(store->prepare(ref(1)).ok());
  ASSERT_TRUE(store->prepare(ref(2)).ok());
  for (int n : {1, 2}) {
    auto released = store->unprepare(uid(n), ClaimStore::Durability::AtSettle);
    ASSERT_TRUE(released.ok()) << released.error().message;
    ASSERT_TRUE(released->has_value());
    EXPECT_FALSE(fs::exists(f.spec(n)));
  }
  EXPECT_EQ(f.open()->prepared().size(), 2u);  // not written yet
  EXPECT_EQ(store->prepared().size(), 2u);      // still holding their devices
  EXPECT_TRUE(store->prepared_staying().empty());
  auto conflict = store->prepare(ref(3));
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error().code, Error::Code::FailedPrecondition) << conflict.error().message;
  EXPECT_FALSE(store->unprepare(uid(1), ClaimStore::Durability::AtSettle).ok());  // being unprepared

  ASSERT_TRUE(store->settle({uid(1), uid(2)}).ok());
  EXPECT_TRUE(store->prepared().empty());
  EXPECT_TRUE(f.open()->prepared().empty());
  EXPECT_TRUE(store->prepare(ref(3)).ok());
  EXPECT_TRUE(store->settle({uid(1)}).ok());  // nothing left to write
}

TEST(DraClaimStore, AFailedSettleKeepsTheClaimsPrepared) {
  Fixture f;
  f.serve(1, {1});
  auto store = f.open();
  ASSERT_TRUE(store->prepare(ref(1)).ok());
  const fs::path checkpoint = f.options().checkpoint_path;
  ASSERT_TRUE(store->unprepare(uid(1), ClaimStore::Durability::AtSettle).ok());
  fs::remove(checkpoint);
  fs::create_directories(checkpoint / "x");  // every write fails from now on
  EXPECT_FALSE(store->settle({uid(1)}).ok());
  ASSERT_EQ(store->prepared().size(), 1u);
  EXPECT_EQ(store->prepared_staying().size(), 1u);
  // The kubelet's retry: the disk has room again.
  fs::remove_all(checkpoint);
  auto again = store->unprepare(uid(1), ClaimStore::Durability::AtSettle);
  ASSERT_TRUE(again.ok()) << again.error().message;
  ASSERT_TRUE(store->settle({uid(1)}).ok());
  EXPECT_TRUE(store->prepared().empty());
  EXPECT_TRUE(f.open()->prepared().empty());
}

TEST(DraClaimStore, CheckpointFromAnotherBootIsDropped) {
  Fixture f;
  f.serve(1, {1});
  { ASSERT_TRUE(f.open("boot-1")->prepare(ref(1)).ok()); }
  auto store = f.open("boot-2");
  EXPECT_TRUE(store->prepared().empty());
  ASSERT_EQ(store->startup_warnings().size(), 1u);
  EXPECT_NE(store->startup_warnings()[0].find("rebooted"), std::string::npos);
}

TEST(DraClaimStore, BootIdIsReadFromProc) {
  testing::ScratchDir proc;
  EXPECT_EQ(read_boot_id(proc.path.string()), "");
  fs::create_directories(proc.path / "sys/kernel/random");
  std::ofstream(proc.path / "sys/kernel/random/boot_id") << "0c5a1f2e-aaaa-4bbb-8ccc-000000000001\n";
  EXPECT_EQ(read_boot_id(proc.path.string()), "0c5a1f2e-aaaa-4bbb-8ccc-000000000001");
}

TEST(DraClaimStore, CheckpointRoundTripsEveryField) {
  PreparedClaim c;
  c.ref = ref(1);
  c.driver = "gpu.nvidia.com";
  c.cdi_spec_file = claim_cdi_spec_file(c.driver, c.ref.uid);
  c.devices = {{{"a", "b"}, "node-1", "gpu-1", {"k8s.gpu.nvidia.com/claim=x-gpu-1"}, "share-1", true, "GPU-1", true},
               {{"c"}, "node-1", "gpu-2-mig-1g5gb-0", {}, std::nullopt, false, "GPU-2", false},
               {{"d"}, "node-1", "gpu-3", {}, std::nullopt, false, "", false}};
  c.time_slicing = {{"GPU-1", TimeSliceInterval::Medium}};
  c.exclusive_gpus = {"GPU-2"};
  c.mps = MpsClaimRequest{c.ref.uid, {"GPU-1", "GPU-2"}, 5, {{1, 8192}}};
  PreparedClaim bare;
  bare.ref = ref(2);
  bare.driver = "gpu.nvidia.com";
  bare.cdi_spec_file = "f";
  const Checkpoint in{"boot",
                      {c, bare},
                      {{"GPU-4", TimeSliceInterval::Default}, {"GPU-5", TimeSliceInterval::Default}}};
  auto out = parse_checkpoint(checkpoint_text(in));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, in);

  // The pending resets have a checksum of their own: an edit is refused, and the claims' checksum
  // is untouched by them (a kgpu that predates them still reads the claims).
  json edited = json::parse(checkpoint_text(in));
  edited["pendingGpuResets"][0]["gpuUUID"] = "GPU-9";
  EXPECT_NE(parse_checkpoint(edited.dump()).error().message.find("pendingGpuResets do not match"),
            std::string::npos);
  json without = json::parse(checkpoint_text(in));
  without.erase("pendingGpuResets");
  without.erase("pendingChecksum");
  ASSERT_TRUE(parse_checkpoint(without.dump()).ok());
  EXPECT_TRUE(parse_checkpoint(without.dump())->pending_resets.empty());

  json doc = json::parse(checkpoint_text(in));
  doc["version"] = 2;
  EXPECT_NE(parse_checkpoint(doc.dump()).error().message.find("version 2 is newer than this kgpu reads (1)"),
            std::string::npos);
  EXPECT_EQ(parse_checkpoint(doc.dump()).error().code, Error::Code::FailedPrecondition);
  doc["version"] = 0;
  EXPECT_NE(parse_checkpoint(doc.dump()).error().message.find("version 0 is not 1"), std::string::npos);
  doc = json::parse(checkpoint_text(in));
  doc["claims"][0]["devices"] = 5;
  EXPECT_FALSE(parse_checkpoint(doc.dump()).ok());
}

TEST(DraClaimStore, ConcurrentKubeletCallsGetOneAnswerPerClaim) {
  Fixture f;
  for (int n = 0; n < 8; ++n) f.serve(n, {n});
  auto store = f.open();
  std::vector<std::thread> threads;
  std::vector<std::vector<PreparedClaim>> seen(16);
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int n = 0; n < 8; ++n) {
        auto r = store->prepare(ref((n + t) % 8));
        if (r.ok()) seen[t].push_back(*r);
      }
    });
  for (auto& t : threads) t.join();
  const auto prepared = store->prepared();
  ASSERT_EQ(prepared.size(), 8u);
  for (const auto& answers : seen) {
    ASSERT_EQ(answers.size(), 8u);
    for (const auto& a : answers)
      EXPECT_EQ(a, *std::find_if(prepared.begin(), prepared.end(), [&](const PreparedClaim& p) { return p.ref == a.ref; }));
  }
  auto restarted = f.open();
  EXPECT_EQ(restarted->prepared(), prepared);
}

// Issue 28, item 6: unprepares side by side share checkpoint writes (one write covers every change
// made before it began), and what each caller was told is what the checkpoint holds.
TEST(DraClaimStore, ConcurrentUnpreparesShareCheckpointWritesAndLoseNothing) {
  Fixture f;
  constexpr int kClaims = 48;
  for (int n = 0; n < kClaims; ++n)
    f.claims["team-a/claim-" + uid(n)] =
        claim_json(uid(n), {{"gpus", gpu_name(f.devices->inventory, static_cast<size_t>(n % 8)), "gpu.nvidia.com",
                             "node-1", true}})
            .dump();
  auto store = f.open();
  for (int n = 0; n < kClaims; ++n) ASSERT_TRUE(store->prepare(ref(n)).ok()) << n;
  // The first 40 are unprepared by 8 threads; meanwhile the last 8 are asked for again (the
  // kubelet after a restart): those answers must be durable ones.
  constexpr int kKept = 8;
  std::vector<std::thread> threads;
  std::atomic<int> next{0}, released{0}, answered{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int n; (n = next++) < kClaims - kKept;) {
        if (store->prepare(ref(kClaims - kKept + (n + t) % kKept)).ok()) ++answered;
        auto r = store->unprepare(uid(n));
        if (r.ok() && *r) ++released;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(released.load(), kClaims - kKept);
  EXPECT_EQ(answered.load(), kClaims - kKept);
  const auto kept = store->prepared();
  ASSERT_EQ(kept.size(), static_cast<size_t>(kKept));
  EXPECT_EQ(f.open()->prepared(), kept) << "the checkpoint holds exactly what the callers were told";
  for (int n = 0; n < kClaims; ++n) EXPECT_EQ(fs::exists(f.spec(n)), n >= kClaims - kKept) << n;
}

TEST(DraClaimStore, NoDevicesYetIsUnavailable) {
  Fixture f;
  f.serve(1, {1});
  ClaimStore store(f.options(), [](const std::string&, const std::string&) { return Result<std::string>(std::string()); });
  auto r = store.prepare(ref(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Error::Code::Unavailable);
}

// Issue 29, item 10: taking over from NVIDIA's DRA driver. Its checkpoint.json lies next to kgpu's
// checkpoint; its per-claim CDI specs in the CDI folder.
struct NvidiaNode : Fixture {
  fs::path nvidia_checkpoint() const { return dir.path / "plugin" / "checkpoint.json"; }
  fs::path nvidia_spec(int n) const { return dir.path / "cdi" / nvidia_claim_spec_file("gpu.nvidia.com", uid(n)); }
  // One device entry as NVIDIA's driver records it (the kubelet helper's Device: Go field names).
  static json device(int n, const std::string& name) {
    return {{"Requests", {"gpu"}},
            {"PoolName", "node-1"},
            {"DeviceName", name},
            {"CDIDeviceIDs", {"k8s.gpu.nvidia.com/claim=" + uid(n) + "-" + name}}};
  }
  json whole(int n, int g) const {
    const json info = {{"uuid", devices->inventory.gpus[g].uuid}};
    return {{"gpu", {{"info", info}, {"device", device(n, gpu_name(devices->inventory, g))}}},
            {"mig", nullptr}};
  }
  static json claim(const std::vector<json>& entries, const std::string& state = "PrepareCompleted") {
    return {{"checkpointState", state},
            {"status", json::object()},
            {"preparedDevices", {{{"devices", entries}, {"configState", {{"mpsControlDaemonID", ""}}}}}}};
  }
  // Writes checkpoint.json with these v2 claims (and the v1 copy of the completed ones, as
  // NVIDIA's driver does), and the CDI spec of each claim in `specs`.
  void write_nvidia(const std::map<int, json>& entries, const std::vector<int>& specs) const {
    json v1 = json::object(), v2 = json::object();
    for (const auto& [n, c] : entries) {
      v2[uid(n)] = c;
      if (c.value("checkpointState", "") == "PrepareCompleted")
        v1[uid(n)] = {{"status", c["status"]}, {"preparedDevices", c["preparedDevices"]}};
    }
    fs::create_directories(nvidia_checkpoint().parent_path());
    std::ofstream(nvidia_checkpoint()) << json{{"checksum", 42}, {"v1", {{"preparedClaims", v1}}},
                                               {"v2", {{"checksum", 7}, {"preparedClaims", v2}}}}.dump();
    fs::create_directories(dir.path / "cdi");
    for (int n : specs) std::ofstream(nvidia_spec(n)) << "cdiVersion: 0.5.0\nkind: k8s.gpu.nvidia.com/claim\n";
  }
  // NVIDIA's per-claim CDI spec as its driver writes it: one device "<uid>-<name>" whose
  // containerEdits give the GPU's device node.
  void write_nvidia_spec(int n, const std::string& name, int minor) const {
    fs::create_directories(dir.path / "cdi");
    std::ofstream(nvidia_spec(n)) << "---\ncdiVersion: 0.5.0\nkind: k8s.gpu.nvidia.com/claim\ndevices:\n- name: " +
                                         uid(n) + "-" + name + "\n  containerEdits:\n    deviceNodes:\n    - path: " +
                                         "/dev/nvidia" + std::to_string(minor) + "\n    - path: /dev/nvidia-caps/cap1\n";
  }
  std::vector<fs::path> adopted_files() const {
    return beside(options().checkpoint_path, "checkpoint.json.adopted-by-kgpu-");
  }
  static std::string all(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};

TEST(DraClaimStore, ClaimsNvidiasDriverPreparedAreTakenOverAndItsFileRenamedAside) {
  NvidiaNode f;
  f.write_nvidia({{50, NvidiaNode::claim({f.whole(50, 2), f.whole(50, 3)})}}, {50});
  auto store = f.open();
  const std::string warnings = NvidiaNode::all(store->startup_warnings());
  EXPECT_NE(warnings.find("took over claim " + uid(50)), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("1 prepared claims taken over"), std::string::npos) << warnings;
  ASSERT_EQ(store->prepared().size(), 1u);
  const PreparedClaim adopted = store->prepared()[0];
  EXPECT_EQ(adopted.ref, (ClaimRef{uid(50), "", ""}));  // NVIDIA's completed entries lose ns/name
  EXPECT_EQ(adopted.cdi_spec_file, nvidia_claim_spec_file("gpu.nvidia.com", uid(50)));
  ASSERT_EQ(adopted.devices.size(), 2u);
  EXPECT_EQ(adopted.devices[0].device, gpu_name(f.devices->inventory, 2));
  EXPECT_EQ(adopted.devices[0].gpu_uuid, f.devices->inventory.gpus[2].uuid);
  EXPECT_TRUE(adopted.devices[0].whole_gpu);
  EXPECT_EQ(adopted.devices[0].cdi_device_ids,
            std::vector<std::string>{"k8s.gpu.nvidia.com/claim=" + uid(50) + "-" + gpu_name(f.devices->inventory, 2)});

  // NVIDIA's file is renamed, never read again; kgpu's checkpoint holds the claim.
  EXPECT_FALSE(fs::exists(f.nvidia_checkpoint()));
  ASSERT_EQ(f.adopted_files().size(), 1u);
  EXPECT_NE(warnings.find(f.adopted_files()[0].string()), std::string::npos) << warnings;
  auto restarted = f.open();
  EXPECT_EQ(restarted->prepared(), std::vector<PreparedClaim>{adopted});
  EXPECT_EQ(NvidiaNode::all(restarted->startup_warnings()).find("took over"), std::string::npos);
  EXPECT_EQ(f.adopted_files().size(), 1u);
}

TEST(DraClaimStore, AnAdoptedClaimsGpusAreNotPreparedForAnotherClaimUntilTheKubeletUnpreparesIt) {
  NvidiaNode f;
  f.devices->inventory = testing::a100_node(8, 0);
  f.write_nvidia({{50, NvidiaNode::claim({f.whole(50, 2)})}}, {50});
  auto store = f.open();
  f.serve(1, {2});
  auto refused = store->prepare(ref(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Error::Code::FailedPrecondition);
  EXPECT_NE(refused.error().message.find("already prepared for ResourceClaim / (" + uid(50) + ")"), std::string::npos)
      << refused.error().message;
  f.serve(3, {4});
  EXPECT_TRUE(store->prepare(ref(3)).ok());  // other GPUs are free

  // The kubelet's repeated prepare (after its restart) gets NVIDIA's answer, and names the claim.
  const ClaimRef kubelets{uid(50), "team-b", "infer"};
  auto again = store->prepare(kubelets);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->devices.at(0).cdi_device_ids,
            std::vector<std::string>{"k8s.gpu.nvidia.com/claim=" + uid(50) + "-" + gpu_name(f.devices->inventory, 2)});
  EXPECT_EQ(again->ref, kubelets);
  for (const auto& c : f.open()->prepared())
    if (c.ref.uid == uid(50)) {
      EXPECT_EQ(c.ref, kubelets);  // recorded
    }
  auto other_name = store->prepare({uid(50), "team-b", "other"});
  EXPECT_FALSE(other_name.ok());  // once known, a mismatch is refused as ever

  // Unprepare removes NVIDIA's spec; the GPU is free.
  ASSERT_TRUE(fs::exists(f.nvidia_spec(50)));
  auto released = store->unprepare(uid(50));
  ASSERT_TRUE(released.ok()) << released.error().message;
  ASSERT_TRUE(released->has_value());
  EXPECT_FALSE(fs::exists(f.nvidia_spec(50)));
  auto prepared = store->prepare(ref(1));
  EXPECT_TRUE(prepared.ok()) << prepared.error().message;
  EXPECT_EQ(f.open()->prepared().size(), 2u);  // claims 1 and 3; 50 is never adopted again
}

TEST(DraClaimStore, AnAdoptedGpuIsNotHandedOutAsMigDevicesNorItsMigDevicesByAnotherName) {
  NvidiaNode f;
  f.devices->inventory = testing::a100_node(8, 4);
  SliceOptions o;
  o.node_name = "node-1";
  f.devices->pool = build_publication(f.devices->inventory, o)->pools.at(0);
  const Inventory& inv = f.devices->inventory;
  // Claim 50: whole GPU 5 (v25.12 entry). Claim 51: a MIG device of GPU 1 as an NVIDIA release
  // before v25.12 recorded it: its own UUID only, and that release's name for it.
  json old_mig = {{"gpu", nullptr},
                  {"mig",
                   {{"info", {{"uuid", inv.gpus[1].mig_devices[2].uuid}}},
                    {"device", NvidiaNode::device(51, "gpu-1-mig-19-2-1")}}}};
  // Claim 52: a MIG device of GPU 3 (v25.12: the parent named).
  json new_mig = {{"gpu", nullptr},
                  {"mig",
                   {{"concrete", {{"parentUUID", inv.gpus[3].uuid}, {"migUUID", inv.gpus[3].mig_devices[0].uuid}}},
                           {"device", NvidiaNode::device(52, testing::mig_name(inv, 3, 0))}}}};
  f.write_nvidia({{50, NvidiaNode::claim({f.whole(50, 5)})},
                  {51, NvidiaNode::claim({old_mig})},
                  {52, NvidiaNode::claim({new_mig})}},
                 {50, 51, 52});
  auto store = f.open();
  ASSERT_EQ(store->prepared().size(), 3u);
  auto try_claim = [&](int n, const std::string& device) {
    f.claims["team-a/claim-" + uid(n)] = claim_json(uid(n), {{"gpus", device}}).dump();
    return store->prepare(ref(n));
  };
  auto same_slice = try_claim(1, testing::mig_name(inv, 1, 2));  // kgpu's name for claim 51's device
  ASSERT_FALSE(same_slice.ok());
  EXPECT_NE(same_slice.error().message.find("is the MIG device already prepared as gpu-1-mig-19-2-1"),
            std::string::npos)
      << same_slice.error().message;
  auto same_device = try_claim(4, testing::mig_name(inv, 3, 0));  // claim 52's device itself
  ASSERT_FALSE(same_device.ok());
  EXPECT_EQ(same_device.error().code, Error::Code::FailedPrecondition);
  // Whole GPU 5 as a MIG device, once it is in MIG mode.
  auto relaid = std::make_shared<NodeDevices>(*f.devices);
  relaid->inventory = testing::a100_node(8, 6);
  relaid->pool = build_publication(relaid->inventory, o)->pools.at(0);
  store->set_devices(relaid);
  auto on_adopted_gpu = try_claim(7, testing::mig_name(relaid->inventory, 5, 0));
  ASSERT_FALSE(on_adopted_gpu.ok());
  EXPECT_NE(on_adopted_gpu.error().message.find("already prepared as " + gpu_name(inv, 5)), std::string::npos)
      << on_adopted_gpu.error().message;
  EXPECT_TRUE(try_claim(5, testing::mig_name(inv, 1, 3)).ok());   // another slice of GPU 1: free
  EXPECT_TRUE(try_claim(6, testing::mig_name(inv, 3, 1)).ok());   // and of GPU 3
}

TEST(DraClaimStore, AClaimAlreadyInKgpusCheckpointIsNotTakenOverAgain) {
  NvidiaNode f;
  f.serve(1, {1});
  PreparedClaim own;
  { own = *f.open()->prepare(ref(1)); }
  f.write_nvidia({{1, NvidiaNode::claim({f.whole(1, 6)})}}, {});
  auto store = f.open();
  EXPECT_EQ(store->prepared(), std::vector<PreparedClaim>{own});
  EXPECT_NE(NvidiaNode::all(store->startup_warnings()).find("0 prepared claims taken over, 1 already in kgpu's"),
            std::string::npos)
      << NvidiaNode::all(store->startup_warnings());
  EXPECT_EQ(f.adopted_files().size(), 1u);
}

TEST(DraClaimStore, NvidiaClaimsFromBeforeAReobotAreDroppedUnlessTheirSpecSurvived) {
  NvidiaNode f;
  f.write_nvidia({{50, NvidiaNode::claim({f.whole(50, 2)})}, {51, NvidiaNode::claim({f.whole(51, 3)})}}, {51});
  // Written long before this boot: claim 50 (no CDI spec left) ran before a reboot; 51's spec is
  // there (a CDI folder on disk, or a pod of this boot): held.
  fs::last_write_time(f.nvidia_checkpoint(), fs::file_time_type::clock::now() - std::chrono::hours(24 * 365 * 20));
  auto store = f.open();
  ASSERT_EQ(store->prepared().size(), 1u);
  EXPECT_EQ(store->prepared()[0].ref.uid, uid(51));
  EXPECT_NE(NvidiaNode::all(store->startup_warnings()).find("1 dropped (prepared before the node rebooted"),
            std::string::npos);
}

TEST(DraClaimStore, AHalfPreparedNvidiaClaimHoldsItsAllocatedDevicesAndLosesItsSpec) {
  NvidiaNode f;
  json started = {{"checkpointState", "PrepareStarted"},
                  {"name", "train"},
                  {"namespace", "team-a"},
                  {"status",
                   {{"allocation",
                     {{"devices",
                       {{"results",
                         {{{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "node-1"},
                           {"device", gpu_name(f.devices->inventory, 4)}}}}}}}}}}};
  f.write_nvidia({{60, started}}, {60});
  auto store = f.open();
  EXPECT_TRUE(store->prepared().empty());
  EXPECT_EQ(store->recovered_claims().at(uid(60)), std::vector<std::string>{gpu_name(f.devices->inventory, 4)});
  EXPECT_FALSE(fs::exists(f.nvidia_spec(60)));  // it would clash with the spec kgpu writes on retry
  f.serve(1, {4});
  auto refused = store->prepare(ref(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("which NVIDIA's DRA driver began to prepare"), std::string::npos)
      << refused.error().message;
  // The kubelet retries the claim: kgpu prepares it itself.
  f.claims["team-a/train"] = claim_json(uid(60), {{"gpus", gpu_name(f.devices->inventory, 4)}}).dump();
  auto retried = store->prepare({uid(60), "team-a", "train"});
  ASSERT_TRUE(retried.ok()) << retried.error().message;
  EXPECT_EQ(retried->cdi_spec_file, claim_cdi_spec_file("gpu.nvidia.com", uid(60)));
  EXPECT_TRUE(store->recovered_claims().empty());
}

TEST(DraClaimStore, AnUnreadableNvidiaCheckpointIsLeftInPlaceWithAWarningAndKgpuServes) {
  NvidiaNode f;
  fs::create_directories(f.nvidia_checkpoint().parent_path());
  std::ofstream(f.nvidia_checkpoint()) << R"({"v2": {"preparedClaims": {"x": 5)";  // cut short
  auto store = f.open();
  const std::string warnings = NvidiaNode::all(store->startup_warnings());
  EXPECT_NE(warnings.find("is not understood"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("stay held until the kubelet unprepares those claims"), std::string::npos) << warnings;
  EXPECT_TRUE(fs::exists(f.nvidia_checkpoint()));
  EXPECT_TRUE(f.adopted_files().empty());
  f.serve(1, {1});
  EXPECT_TRUE(store->prepare(ref(1)).ok());
  EXPECT_TRUE(fs::exists(f.nvidia_checkpoint()));
}

TEST(DraClaimStore, OnlyTheNvidiaDriversStoreTakesOverAndAnUnpreparedUnknownClaimLosesNvidiasSpec) {
  NvidiaNode f;
  f.write_nvidia({{50, NvidiaNode::claim({f.whole(50, 2)})}}, {50, 51});
  auto options = f.options();
  options.driver = "gpu.amd.com";
  ClaimStore amd(options, [](const std::string&, const std::string&) { return Result<std::string>(std::string()); });
  EXPECT_TRUE(amd.prepared().empty());
  EXPECT_TRUE(fs::exists(f.nvidia_checkpoint()));
  // A spec NVIDIA's driver left for a claim nobody records goes with the kubelet's unprepare.
  auto store = f.open();
  ASSERT_TRUE(store->unprepare(uid(51)).ok());
  EXPECT_FALSE(fs::exists(f.nvidia_spec(51)));
}

// Issue 38: whatever NVIDIA's checkpoint holds (cut short, a field of the wrong type in one entry,
// a link, only a newer version's section), the GPU that NVIDIA's CDI spec for a claim gives its
// containers is never prepared for another claim until the kubelet unprepares that claim; good
// entries are still taken over; a newer version's file is kept and reported.
TEST(DraClaimStore, WhateverNvidiasCheckpointHoldsTheGpusItsCdiSpecsGiveStayHeld) {
  struct Case {
    std::string name;
    std::function<void(NvidiaNode&)> write;
    std::string warned;
    bool file_kept;
  };
  const std::vector<Case> cases = {
      {"truncated",
       [](NvidiaNode& f) {
         f.write_nvidia({{50, NvidiaNode::claim({f.whole(50, 2)})}}, {});
         std::string text = read(f.nvidia_checkpoint());
         std::ofstream(f.nvidia_checkpoint(), std::ios::trunc) << text.substr(0, text.size() / 2);
       },
       "is not understood (not JSON)", true},
      {"one bad entry",
       [](NvidiaNode& f) {
         json bad = NvidiaNode::claim({f.whole(50, 2)});
         bad["status"] = {{"reservedFor", {"pod"}}};
         f.write_nvidia({{50, bad}, {51, NvidiaNode::claim({f.whole(51, 4)})}}, {51});
       },
       "reservedFor[0]: expected an object; passed over", false},
      {"a symlink",
       [](NvidiaNode& f) {
         f.write_nvidia({{50, NvidiaNode::claim({f.whole(50, 2)})}}, {});
         fs::rename(f.nvidia_checkpoint(), f.dir.path / "elsewhere.json");
         fs::create_symlink(f.dir.path / "elsewhere.json", f.nvidia_checkpoint());
       },
       "it is a symlink", true},
      {"v3 only",
       [](NvidiaNode& f) {
         fs::create_directories(f.nvidia_checkpoint().parent_path());
         std::ofstream(f.nvidia_checkpoint()) << json{{"checksum", 1}, {"v3", {{"preparedClaims", {{uid(50), 1}}}}}};
       },
       "also holds v3, a version of NVIDIA's format this kgpu does not know", true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    NvidiaNode f;
    c.write(f);
    // NVIDIA's name for the device need not be kgpu's: the device node says which GPU it is.
    f.write_nvidia_spec(50, "nvidia-gpu-2", 2);
    auto store = f.open();
    const std::string warnings = NvidiaNode::all(store->startup_warnings());
    EXPECT_NE(warnings.find(c.warned), std::string::npos) << warnings;
    EXPECT_NE(warnings.find("claim " + uid(50) + " has NVIDIA's CDI spec"),
              std::string::npos)
        << warnings;
    EXPECT_EQ(fs::exists(fs::symlink_status(f.nvidia_checkpoint())), c.file_kept);
    f.serve(1, {2});
    auto refused = store->prepare(ref(1));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, Error::Code::FailedPrecondition);
    EXPECT_NE(refused.error().message.find("(/dev/nvidia2), which NVIDIA's DRA driver's CDI spec for claim " + uid(50)),
              std::string::npos)
        << refused.error().message;
    f.serve(3, {3});
    EXPECT_TRUE(store->prepare(ref(3)).ok());
    if (c.name == "one bad entry") {  // the good entry is taken over: its GPU is held too
      ASSERT_TRUE(store->is_prepared(uid(51)));
      f.serve(4, {4});
      EXPECT_FALSE(store->prepare(ref(4)).ok());
    }
    // Still held after a restart (the spec is on disk, whatever became of the checkpoint).
    store = f.open();
    EXPECT_FALSE(store->prepare(ref(1)).ok());
    ASSERT_TRUE(store->unprepare(uid(50)).ok());
    EXPECT_FALSE(fs::exists(f.nvidia_spec(50)));
    auto prepared = store->prepare(ref(1));
    EXPECT_TRUE(prepared.ok()) << prepared.error().message;
    EXPECT_EQ(fs::exists(fs::symlink_status(f.nvidia_checkpoint())), c.file_kept);
  }
}

// Issue 38: the spec is what a claim's containers got: an adopted claim whose checkpoint entry
// names another GPU than its NVIDIA spec holds both.
TEST(DraClaimStore, AnAdoptedClaimAlsoHoldsWhatItsNvidiaSpecGives) {
  NvidiaNode f;
  f.write_nvidia({{50, NvidiaNode::claim({f.whole(50, 5)})}}, {});
  f.write_nvidia_spec(50, "gpu-x", 2);
  auto store = f.open();
  ASSERT_TRUE(store->is_prepared(uid(50)));
  f.serve(1, {2});
  f.serve(2, {5});
  EXPECT_FALSE(store->prepare(ref(1)).ok());
  EXPECT_FALSE(store->prepare(ref(2)).ok());
  ASSERT_TRUE(store->unprepare(uid(50)).ok());
  EXPECT_TRUE(store->prepare(ref(1)).ok());
  EXPECT_TRUE(store->prepare(ref(2)).ok());
}

// Issue 38: a kept file (a newer version's) is read at every start: a claim of it that the
// kubelet unprepared (its NVIDIA spec gone) is not taken over again.
TEST(DraClaimStore, AKeptNvidiaCheckpointNeverTakesOverAClaimAgainOnceUnprepared) {
  NvidiaNode f;
  f.write_nvidia({{50, NvidiaNode::claim({f.whole(50, 2)})}}, {50});
  json file = json::parse(read(f.nvidia_checkpoint()));
  file["v3"] = {{"preparedClaims", json::object()}};
  std::ofstream(f.nvidia_checkpoint(), std::ios::trunc) << file.dump();
  auto store = f.open();
  ASSERT_TRUE(store->is_prepared(uid(50)));
  EXPECT_TRUE(fs::exists(f.nvidia_checkpoint()));
  ASSERT_TRUE(store->unprepare(uid(50)).ok());
  store = f.open();
  EXPECT_FALSE(store->is_prepared(uid(50)));
  f.serve(1, {2});
  EXPECT_TRUE(store->prepare(ref(1)).ok());
}

}  // namespace
}  // namespace kgpu::dra
