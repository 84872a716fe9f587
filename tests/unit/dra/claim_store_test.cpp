// The claim store: idempotent prepare, unprepare, the CDI spec file per claim, the checkpoint
// surviving a restart (and refused when corrupt or from another boot), UID checks, device
// conflicts and concurrent kubelet calls.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "cdi/spec_writer.h"
#include "core/safe_file.h"
#include "dra/claim_checkpoint.h"
#include "dra/claim_store.h"
#include "dra/slice_builder.h"
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
  c.mps = MpsClaimRequest{c.ref.uid, {"GPU-1", "GPU-2"}, 5, {{1, 8192}}};
  const Checkpoint in{"boot",
                      {c, PreparedClaim{ref(2), "gpu.nvidia.com", {}, "f", {}, std::nullopt}},
                      {{"GPU-4", TimeSliceInterval::Default}, {"GPU-5", TimeSliceInterval::Default}}};
  auto out = parse_checkpoint(checkpoint_text(in));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, in);

  // The pending resets have a checksum of their own: an edit is refused, and the claims' checksum
  // is untouched by them (a kgpu that predates them still reads the claims).
  json edited = json::parse(checkpoint_text(in));
  edited["pendingTimeSliceResets"][0]["gpuUUID"] = "GPU-9";
  EXPECT_NE(parse_checkpoint(edited.dump()).error().message.find("pendingTimeSliceResets do not match"),
            std::string::npos);
  json without = json::parse(checkpoint_text(in));
  without.erase("pendingTimeSliceResets");
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

TEST(DraClaimStore, NoDevicesYetIsUnavailable) {
  Fixture f;
  f.serve(1, {1});
  ClaimStore store(f.options(), [](const std::string&, const std::string&) { return Result<std::string>(std::string()); });
  auto r = store.prepare(ref(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Error::Code::Unavailable);
}

}  // namespace
}  // namespace kgpu::dra
