// Fuzz target: NVIDIA's DRA driver's checkpoint.json, which kgpu reads at start to take over the
// claims that driver prepared (issue 29, item 10) — a file on the host that anyone with root there
// may edit, or that a crash may cut short. Each input is read three ways: as the whole file, and,
// when it is JSON, as one claim entry of the "v2" and "v1" sections and as one device entry of a
// completed claim (so mutations reach the claim and device readers without first having to build
// the file around them). Every input gives a value or an Error, never a crash or an exception;
// what parses is never nested deeper than the limit, and each adopted claim has a UID that is safe
// as a file name (its CDI spec's) and devices that name their pool and device.
// Issue 38: each input is also adopted, as checkpoint.json, by a claim store whose CDI folder holds
// NVIDIA's per-claim spec for a claim giving GPU 0 (/dev/nvidia0): whatever the file holds, a
// prepare of another claim on GPU 0 is refused (a GPU is never handed out twice).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "dra/claims/claim_store.h"
#include "dra/claims/nvidia_checkpoint.h"
#include "dra/model/publication.h"
#include "mps/claim_request.h"
#include "unit/dra/claim_test_support.h"
#include "unit/dra/synthetic_node.h"

namespace {

using nlohmann::json;

const std::string kDriver = "gpu.nvidia.com";
const std::string kUid = "0d9a4c5e-1111-4a3b-8c2d-000000000001";

void check(std::string_view text) {
  auto parsed = kgpu::dra::parse_nvidia_checkpoint(text, kDriver);
  if (!parsed) {
    if (parsed.error().message.empty()) __builtin_trap();  // errors always say what is wrong
    return;
  }
  if (kgpu::json_nesting_depth(text, size_t{1} << 30) > kgpu::kMaxJsonDepth) __builtin_trap();
  std::string last;
  for (const auto& c : parsed->claims) {
    if (!kgpu::is_safe_claim_uid(c.uid) || c.uid <= last) __builtin_trap();  // safe, sorted, unique
    last = c.uid;
    const std::string spec = kgpu::dra::nvidia_claim_spec_file(kDriver, c.uid);
    if (spec.find('/') != std::string::npos) __builtin_trap();
    for (const auto& d : c.devices)
      if (d.pool.empty() || d.device.empty()) __builtin_trap();
  }
}

// One folder per process, reused by every input: a plugin folder with checkpoint.json, and a CDI
// folder with NVIDIA's spec for kSpecUid.
struct Node {
  std::filesystem::path root;
  std::shared_ptr<kgpu::dra::NodeDevices> devices = std::make_shared<kgpu::dra::NodeDevices>();
  Node() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kgpu-fuzz-adopt-XXXXXX").string();
    root = ::mkdtemp(pattern.data());
    devices->inventory = kgpu::testing::a100_node(2, 0);
    kgpu::dra::SliceOptions o;
    o.node_name = "node-1";
    devices->pool = kgpu::dra::build_publication(devices->inventory, o)->pools.at(0);
  }
};

const std::string kSpecUid = "0d9a4c5e-2222-4a3b-8c2d-000000000002";
const std::string kOtherUid = "0d9a4c5e-3333-4a3b-8c2d-000000000003";

void adopt(std::string_view text) {
  static Node node;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::remove_all(node.root, ec);
  fs::create_directories(node.root / "plugin");
  fs::create_directories(node.root / "cdi");
  std::ofstream(node.root / "plugin" / "checkpoint.json", std::ios::binary) << text;
  std::ofstream(node.root / "cdi" / kgpu::dra::nvidia_claim_spec_file(kDriver, kSpecUid))
      << "cdiVersion: 0.5.0\nkind: k8s.gpu.nvidia.com/claim\ndevices:\n- name: " + kSpecUid +
             "-gpu-0\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n";
  const std::string other =
      kgpu::testing::claim_json(kOtherUid, {{"gpu", kgpu::testing::gpu_name(node.devices->inventory, 0)}}).dump();
  kgpu::dra::ClaimStore store({kDriver, (node.root / "plugin" / "kgpu-claims.json").string(),
                               (node.root / "cdi").string(), "boot-1"},
                              [&](const std::string&, const std::string&) { return kgpu::Result<std::string>(other); });
  store.set_devices(node.devices);
  // A claim NVIDIA's record shows only started gave no container anything: its spec goes.
  if (auto parsed = kgpu::dra::parse_nvidia_checkpoint(text, kDriver))
    for (const auto& c : parsed->claims)
      if (c.uid == kSpecUid && !c.completed) return;
  auto prepared = store.prepare({kOtherUid, "team-a", "claim-" + kOtherUid});
  if (prepared.ok()) __builtin_trap();  // GPU 0 handed out while NVIDIA's claim holds it
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  check(raw);
  adopt(raw);
  if (!kgpu::check_json_depth(raw, "input")) return 0;
  const json entry = json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (entry.is_discarded()) return 0;
  check(json{{"v2", {{"preparedClaims", {{kUid, entry}}}}}}.dump());
  check(json{{"v1", {{"preparedClaims", {{kUid, entry}}}}}}.dump());
  const json claim = {{"checkpointState", "PrepareCompleted"},
                      {"preparedDevices", {{{"devices", {entry}}, {"configState", json::object()}}}}};
  check(json{{"v2", {{"preparedClaims", {{kUid, claim}}}}}}.dump());
  return 0;
}
