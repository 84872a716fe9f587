// Fuzz target: NVIDIA's DRA driver's checkpoint.json, which kgpu reads at start to take over the
// claims that driver prepared (issue 29, item 10) — a file on the host that anyone with root there
// may edit, or that a crash may cut short. Each input is read three ways: as the whole file, and,
// when it is JSON, as one claim entry of the "v2" and "v1" sections and as one device entry of a
// completed claim (so mutations reach the claim and device readers without first having to build
// the file around them). Every input gives a value or an Error, never a crash or an exception;
// what parses is never nested deeper than the limit, and each adopted claim has a UID that is safe
// as a file name (its CDI spec's) and devices that name their pool and device.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "dra/nvidia_checkpoint.h"
#include "mps/claim_request.h"

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  check(raw);
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
