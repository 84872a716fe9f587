// Dynamic MIG prepare and unprepare in the claim store against the fake NVML (issue 42): the
// instances of a claim's placements made at prepare with their capability nodes in the CDI spec,
// NVML's refusals answered per claim with nothing left behind, unprepare emptying the GPU, and the
// restart clean-up destroying what kgpu made for no prepared claim and nothing else.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/safe_file.h"
#include "dra/claims/claim_checkpoint.h"
#include "dra/claims/claim_store.h"
#include "dra/claims/nvml_mig_control.h"
#include "dra/model/dynamic_mig.h"
#include "dra/model/publication.h"
#include "nvml/discovery.h"
#include "support/eventually.h"
#include "unit/dra/claim_test_support.h"
#include "unit/dra/h100_mig_facts.h"
#include "unit/nvml/fake_fleet.h"

namespace kgpu::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string uid(int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "d1a90000-0000-4000-8000-%012d", n);
  return buf;
}
ClaimRef ref(int n) { return {uid(n), "team-a", "claim-" + uid(n)}; }

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// (profile, id, start, size) of an H100 placement.
struct Place {
  const char* profile;
  unsigned id, start, size;
};
constexpr Place k1g0{"1g.10gb", 19, 0, 1}, k1g1{"1g.10gb", 19, 1, 1}, k2g2{"2g.20gb", 14, 2, 2},
    k3g4{"3g.40gb", 9, 4, 4}, k2g0{"2g.20gb", 14, 0, 2}, k1g6{"1g.10gb", 19, 6, 1};

// An 8x H100 node of the fake NVML, GPU 0 published for dynamic MIG as the publishing side does:
// its layout in NodeDevices::dynamic_mig, every one of its devices in the pool.
class DraDynamicMigPrepare : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(node_.ready()) << node_.problem();
    auto inv = discover_nvidia(node_.nvml(), node_.options());
    ASSERT_TRUE(inv) << inv.error().message;
    ASSERT_TRUE(node_.nvml().init());  // held for the instance calls
    devices_->inventory = *inv;
    devices_->config.nvidia_driver_root = node_.root();
    devices_->config.proc_root = node_.root() + "/proc";
    SliceOptions o;
    o.node_name = "node-1";
    devices_->pool = build_publication(devices_->inventory, o)->pools.at(0);
    const Gpu& gpu = devices_->inventory.gpus.at(0);
    auto facts = dra::testing::h100_mig_facts(static_cast<unsigned>(gpu.minor));
    facts.uuid = gpu.uuid;
    layout_ = dynamic_mig_layout(facts);
    for (const auto& d : layout_.devices)
      if (!d.profile.empty()) devices_->pool.devices.push_back(DraDevice{d.name, nullptr, {{"uuid", gpu.uuid}}, {}});
    devices_->dynamic_mig = {layout_};
    auto control = NvmlMigControl::bind(node_.shared(), node_.root() + "/proc");
    ASSERT_TRUE(control) << control.error().message;
    control_ = *control;
  }
  void TearDown() override { node_.nvml().shutdown(); }

  std::string parent() const { return devices_->inventory.gpus.at(0).uuid; }
  static std::string name(const Place& p) { return dynamic_mig_device_name(0, p.profile, p.id, p.start); }
  void serve(int n, const std::vector<std::string>& names) {
    std::vector<kgpu::testing::ResultSpec> results;
    for (const auto& d : names) results.push_back({"mig", d});
    claims_["team-a/claim-" + uid(n)] = kgpu::testing::claim_json(uid(n), results).dump();
  }
  ClaimStoreOptions options() const {
    return {"gpu.nvidia.com", (dir_.path / "plugin" / "claims.json").string(), (dir_.path / "cdi").string(), "boot-1"};
  }
  std::unique_ptr<ClaimStore> open(std::vector<std::string>* notes = nullptr) {
    auto store = std::make_unique<ClaimStore>(options(), [this](const std::string& ns, const std::string& n) {
      auto it = claims_.find(ns + "/" + n);
      if (it == claims_.end()) return Result<std::string>(Error::not_found(n));
      return Result<std::string>(it->second);
    });
    store->set_devices(devices_);
    auto said = store->set_mig_control(control_);
    if (notes) *notes = said;
    return store;
  }
  std::vector<GpuInstanceAt> instances() const {
    auto list = control_->gpu_instances(parent());
    EXPECT_TRUE(list) << list.error().message;
    return list ? *list : std::vector<GpuInstanceAt>{};
  }
  fs::path spec(int n) const { return dir_.path / "cdi" / claim_cdi_spec_file("gpu.nvidia.com", uid(n)); }

  kgpu::testing::FakeNode node_{kgpu::testing::fleet_path("hgx-h100.yaml")};
  kgpu::testing::ScratchDir dir_;
  std::shared_ptr<NodeDevices> devices_ = std::make_shared<NodeDevices>();
  DynamicMigLayout layout_;
  std::shared_ptr<const NvmlMigControl> control_;
  std::map<std::string, std::string> claims_;
};

TEST_F(DraDynamicMigPrepare, OneOneTwoThreeOnOneH100AllPreparedWithTheirInstancesAndNodes) {
  auto store = open();
  const std::vector<Place> plan = {k1g0, k1g1, k2g2, k3g4};
  for (int n = 0; n < 4; ++n) serve(n, {name(plan[n])});
  std::set<std::string> uuids;
  for (int n = 0; n < 4; ++n) {
    auto prepared = store->prepare(ref(n));
    ASSERT_TRUE(prepared) << prepared.error().message;
    ASSERT_EQ(prepared->devices.size(), 1u);
    EXPECT_EQ(prepared->devices[0].device, name(plan[n]));
    EXPECT_EQ(prepared->devices[0].gpu_uuid, parent());
    EXPECT_FALSE(prepared->devices[0].whole_gpu);
    // The spec names the new MIG device: NVIDIA_VISIBLE_DEVICES its uuid, its two capability
    // nodes besides the parent's /dev/nvidia0, each a file the fake made for the instance.
    const json cdi = json::parse(read(spec(n)));
    const json& edits = cdi["devices"][0]["containerEdits"];
    std::string visible;
    for (const auto& e : edits["env"])
      if (e.get<std::string>().starts_with("NVIDIA_VISIBLE_DEVICES=")) visible = e.get<std::string>().substr(23);
    EXPECT_TRUE(visible.starts_with("MIG-")) << visible;
    EXPECT_TRUE(node_.nvml().device_by_uuid(visible)) << "the MIG device exists in the fake";
    uuids.insert(visible);
    int caps = 0;
    for (const auto& d : edits["deviceNodes"]) {
      const std::string path = d["path"];
      if (!path.starts_with("/dev/nvidia-caps/nvidia-cap")) continue;
      ++caps;
      EXPECT_TRUE(fs::exists(d["hostPath"].get<std::string>())) << d.dump();
    }
    EXPECT_EQ(caps, 2) << edits.dump();
  }
  const auto made = instances();
  ASSERT_EQ(made.size(), 4u);
  for (const auto& p : plan)
    EXPECT_TRUE(std::any_of(made.begin(), made.end(), [&](const GpuInstanceAt& gi) {
      return gi.profile_id == p.id && gi.start == p.start && gi.size == p.size;
    })) << p.profile << "@" << p.start;
  EXPECT_EQ(store->created_mig_uuids(), uuids);
  // Asked again: the same answer, nothing made twice.
  auto again = store->prepare(ref(3));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(instances().size(), 4u);
}

TEST_F(DraDynamicMigPrepare, ATakenPlacementIsRefusedByNvmlsAnswerAndLeavesNothing) {
  auto store = open();
  serve(1, {name(k3g4)});
  ASSERT_TRUE(store->prepare(ref(1)));
  // 2g at 0 fits; then 1g at 6 does not (3g 4-7 holds slice 6), nor does a 1g at 0 (the 2g).
  serve(2, {name(k2g0)});
  ASSERT_TRUE(store->prepare(ref(2)));
  serve(3, {name(k1g6)});
  auto refused = store->prepare(ref(3));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(name(k1g6)), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("nvmlDeviceCreateGpuInstanceWithPlacement"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(fs::exists(spec(3)));
  EXPECT_FALSE(store->is_prepared(uid(3)));
  EXPECT_EQ(instances().size(), 2u);
  EXPECT_EQ(store->mig_instances().size(), 2u) << "the refused claim's intent is gone";
  // The checkpoint on disk says the same.
  auto on_disk = parse_checkpoint(read(options().checkpoint_path));
  ASSERT_TRUE(on_disk) << on_disk.error().message;
  EXPECT_EQ(on_disk->mig_instances.size(), 2u);
}

TEST_F(DraDynamicMigPrepare, UnprepareEmptiesTheGpuAndSwitchesMigBackOff) {
  auto store = open();
  serve(1, {name(k1g0), name(k2g2)});  // one claim, two placements
  serve(2, {name(k3g4)});
  auto one = store->prepare(ref(1));
  ASSERT_TRUE(one) << one.error().message;
  ASSERT_TRUE(store->prepare(ref(2)));
  EXPECT_EQ(instances().size(), 3u);
  const auto gpu = node_.nvml().device_by_uuid(parent());
  ASSERT_TRUE(gpu);
  ASSERT_TRUE(store->unprepare(uid(1)));
  EXPECT_EQ(instances().size(), 1u);
  EXPECT_TRUE(node_.nvml().mig_mode(*gpu)->current) << "a claim still runs on it: MIG stays on";
  ASSERT_TRUE(store->unprepare(uid(2)));
  EXPECT_TRUE(instances().empty());
  EXPECT_FALSE(node_.nvml().mig_mode(*gpu)->current) << "Hopper: off again once kgpu's last instance is gone";
  EXPECT_TRUE(store->created_mig_uuids().empty());
  // The capability nodes went with the instances.
  for (const auto& entry : fs::directory_iterator(node_.root() + "/dev/nvidia-caps")) {
    const std::string f = entry.path().filename().string();
    EXPECT_TRUE(f == "nvidia-cap1" || f == "nvidia-cap2") << f;
  }
  // Unprepared again (the kubelet's retry): fine.
  EXPECT_TRUE(store->unprepare(uid(2)));
}

TEST_F(DraDynamicMigPrepare, WholeGpuAndPlacementsExcludeEachOther) {
  auto store = open();
  serve(1, {name(k1g0)});
  ASSERT_TRUE(store->prepare(ref(1)));
  serve(2, {kgpu::testing::gpu_name(devices_->inventory, 0)});
  auto whole = store->prepare(ref(2));
  ASSERT_FALSE(whole);
  EXPECT_NE(whole.error().message.find("MIG"), std::string::npos) << whole.error().message;
  ASSERT_TRUE(store->unprepare(uid(1)));
  auto now = store->prepare(ref(2));
  ASSERT_TRUE(now) << now.error().message;
  EXPECT_TRUE(now->devices[0].whole_gpu);
  serve(3, {name(k3g4)});
  auto placement = store->prepare(ref(3));
  ASSERT_FALSE(placement);
  EXPECT_NE(placement.error().message.find("holds whole"), std::string::npos) << placement.error().message;
  EXPECT_TRUE(instances().empty());
}

// MIG mode left on with no instance (an operator's switch, or kgpu killed between its last destroy
// and the switch): the whole GPU is handed out with MIG off, usable by CUDA.
TEST_F(DraDynamicMigPrepare, AWholeGpuLeftInMigModeIsSwitchedOffBeforeItIsHandedOut) {
  auto store = open();
  const auto gpu = node_.nvml().device_by_uuid(parent());
  ASSERT_TRUE(gpu);
  ASSERT_TRUE(control_->enable_mig(parent()));
  ASSERT_TRUE(node_.nvml().mig_mode(*gpu)->current);
  serve(1, {kgpu::testing::gpu_name(devices_->inventory, 0)});
  auto whole = store->prepare(ref(1));
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_TRUE(whole->devices[0].whole_gpu);
  EXPECT_FALSE(node_.nvml().mig_mode(*gpu)->current);
}

TEST_F(DraDynamicMigPrepare, ARestartDestroysWhatKgpuMadeForNoPreparedClaimAndNothingElse) {
  std::set<std::string> kept;
  {
    auto store = open();
    serve(1, {name(k3g4)});
    auto prepared = store->prepare(ref(1));
    ASSERT_TRUE(prepared) << prepared.error().message;
    kept = store->created_mig_uuids();
  }
  // An operator's instance (no record names it).
  auto gpu = node_.nvml().device_by_uuid(parent());
  ASSERT_TRUE(gpu);
  auto operators = control_->instances().create(*gpu, k1g0.id, {k1g0.start, k1g0.size});
  ASSERT_TRUE(operators) << operators.error().message;
  // What a kgpu killed mid-prepare leaves: an intent whose GPU instance was made but not its
  // compute instance (killed inside the create), and an instance made whose claim was never
  // answered. Recorded as that kgpu would have, in the checkpoint on disk.
  auto checkpoint = parse_checkpoint(read(options().checkpoint_path));
  ASSERT_TRUE(checkpoint) << checkpoint.error().message;
  MigInstanceRecord intent{uid(2), name(k1g1), {parent(), k1g1.id, k1g1.start, k1g1.size}, {}, std::nullopt};
  for (const auto& gi : instances()) intent.gpu_instances_before.push_back(gi.id);
  auto half = control_->instances().create_gpu_instance(*gpu, k1g1.id, {k1g1.start, k1g1.size});
  ASSERT_TRUE(half) << half.error().message;
  MigInstanceRecord unanswered{uid(3), name(k2g2), {parent(), k2g2.id, k2g2.start, k2g2.size}, {}, std::nullopt};
  auto made = control_->create(unanswered.placement);
  ASSERT_TRUE(made) << made.error().message;
  unanswered.made = *made;
  checkpoint->mig_instances.push_back(intent);
  checkpoint->mig_instances.push_back(unanswered);
  ASSERT_TRUE(write_file_atomically(options().checkpoint_path, checkpoint_text(*checkpoint), 0600));
  ASSERT_EQ(instances().size(), 4u);

  std::vector<std::string> notes;
  auto store = open(&notes);
  EXPECT_EQ(notes.size(), 2u);
  for (const auto& n : notes) EXPECT_NE(n.find("destroyed"), std::string::npos) << n;
  const auto left = instances();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_TRUE(std::any_of(left.begin(), left.end(), [](const GpuInstanceAt& gi) { return gi.start == 4; }))
      << "the prepared claim's 3g stays";
  EXPECT_TRUE(std::any_of(left.begin(), left.end(), [&](const GpuInstanceAt& gi) {
    return gi.id == operators->gpu_instance_id && gi.start == 0;
  })) << "the operator's 1g is never touched";
  EXPECT_FALSE(node_.nvml().device_by_uuid(made->mig_uuid));
  EXPECT_EQ(store->created_mig_uuids(), kept);
  auto on_disk = parse_checkpoint(read(options().checkpoint_path));
  ASSERT_TRUE(on_disk);
  EXPECT_EQ(on_disk->mig_instances.size(), 1u);
  // The prepared claim still unprepares cleanly; the operator's instance keeps MIG on.
  ASSERT_TRUE(store->unprepare(uid(1)));
  ASSERT_EQ(instances().size(), 1u);
  EXPECT_TRUE(node_.nvml().mig_mode(*gpu)->current);
}

// A real SIGKILL between the GPU instance's creation and the compute instance's: a forked copy of
// this process prepares while the fake NVML holds its compute-instance create
// (KGPU_FAKE_NVML_BLOCK_CI_CREATE), and is killed there. The fake keeps its MIG state in a file
// (KGPU_FAKE_NVML_MIG_STATE, as a driver outlives the process), so this process, reading it back,
// sees the orphan GPU instance; the restarted store destroys it from the checkpoint's intent.
TEST_F(DraDynamicMigPrepare, ASigkillInsideTheCreateLeavesNoOrphanAfterTheRestart) {
  const std::string state = (dir_.path / "fake-mig-state").string();
  const std::string gate = (dir_.path / "ci-gate").string();
  ::setenv("KGPU_FAKE_NVML_MIG_STATE", state.c_str(), 1);
  ::setenv("KGPU_FAKE_NVML_BLOCK_CI_CREATE", gate.c_str(), 1);
  serve(1, {name(k3g4)});
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = open();
    (void)store->prepare(ref(1));  // blocks in the compute-instance create until killed
    ::_exit(3);
  }
  const bool blocked = test::eventually([&] { return fs::exists(gate + ".blocked"); }, std::chrono::seconds(20));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(blocked) << "the child never reached the compute-instance create";
  ASSERT_TRUE(WIFSIGNALED(status));
  std::ofstream(gate).flush();  // open the gate for this process

  // This process reads the fake's state again: the orphan GPU instance, no compute instance.
  node_.nvml().shutdown();
  ASSERT_TRUE(node_.nvml().init());
  auto orphan = instances();
  ASSERT_EQ(orphan.size(), 1u);
  EXPECT_EQ(orphan[0].start, k3g4.start);
  auto on_disk = parse_checkpoint(read(options().checkpoint_path));
  ASSERT_TRUE(on_disk) << on_disk.error().message;
  ASSERT_EQ(on_disk->mig_instances.size(), 1u) << "the intent was durable before NVML was asked";
  EXPECT_FALSE(on_disk->mig_instances[0].made);
  EXPECT_TRUE(on_disk->claims.empty());

  std::vector<std::string> notes;
  auto store = open(&notes);
  EXPECT_TRUE(instances().empty()) << "an orphan instance after the restart";
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("destroyed"), std::string::npos) << notes[0];
  EXPECT_TRUE(store->mig_instances().empty());
  // The kubelet retries: prepared now, as if nothing happened.
  auto prepared = store->prepare(ref(1));
  EXPECT_TRUE(prepared) << prepared.error().message;
  EXPECT_EQ(instances().size(), 1u);
  ::unsetenv("KGPU_FAKE_NVML_MIG_STATE");
  ::unsetenv("KGPU_FAKE_NVML_BLOCK_CI_CREATE");
}

TEST(DraCheckpointMig, RecordsRoundTripAndAFileWithoutThemLoads) {
  Checkpoint c;
  c.boot_id = "b";
  MigInstanceRecord r{"u-1", "gpu-0-mig-3g40gb-9-4", {"GPU-1", 9, 4, 4}, {0, 3}, std::nullopt};
  c.mig_instances.push_back(r);
  r.device = "gpu-0-mig-1g10gb-19-0";
  r.placement = {"GPU-1", 19, 0, 1};
  r.made = MigInstanceMade{5, 0, "MIG-x", {{"/dev/nvidia-caps/nvidia-cap48"}, {"/dev/nvidia-caps/nvidia-cap49"}}};
  c.mig_instances.push_back(r);
  auto back = parse_checkpoint(checkpoint_text(c));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, c);
  // Without the section (an older kgpu's file): no records.
  const std::string older = checkpoint_text(Checkpoint{"b", {}, {}});
  EXPECT_EQ(older.find("migInstances"), std::string::npos);
  auto old = parse_checkpoint(older);
  ASSERT_TRUE(old);
  EXPECT_TRUE(old->mig_instances.empty());
  // Edited by hand: refused whole.
  std::string edited = checkpoint_text(c);
  edited.replace(edited.find("MIG-x"), 5, "MIG-y");
  EXPECT_FALSE(parse_checkpoint(edited));
  // The fuzz seed with the section is a checkpoint this kgpu reads.
  auto seed = parse_checkpoint(read(std::string(KGPU_FIXTURES_DIR) + "/../fuzz/corpus/claim/checkpoint-mig.json"));
  ASSERT_TRUE(seed) << seed.error().message;
  EXPECT_EQ(seed->mig_instances.size(), 2u);
  EXPECT_EQ(seed->claims.size(), 1u);
}

}  // namespace
}  // namespace kgpu::dra
