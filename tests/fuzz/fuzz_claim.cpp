// Fuzz target: what the DRA node plugin reads from outside. Three passes per input:
//  - raw: the input as the ResourceClaim the API server returns, prepared on a fixed node (four
//    A100s, the first in MIG mode) when it parses; also as the prepared-claims checkpoint (a file
//    on the host anyone with root there may edit), as an MPS memory quantity (any form
//    resource.Quantity takes), and as the MPS claim request `kgpu mps-daemon` reads from
//    <mpsRoot>/dra-requests/;
//  - typed: the input drives edits of a valid, allocated claim (any field of the allocation or of
//    an opaque NVIDIA sharing config may get any JSON type or a tricky word), which reaches
//    prepare_claim's config, MPS and naming paths that raw mutation rarely gets to.
// Every input gives a value or an Error; a prepared claim never names a file outside the CDI
// folder, its CDI IDs always belong to the claim, and its MPS request (if any) is one the
// supervisor accepts, for a daemon whose files all lie in the claim's own folder.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_json.h"

#include "cdi/spec_writer.h"
#include "dra/claims/claim_checkpoint.h"
#include "dra/model/claim.h"
#include "dra/model/publication.h"
#include "dra/sharing/prepare.h"
#include "dra/sharing/prepare_sharing.h"
#include "mps/claim_request.h"
#include "unit/dra/synthetic_node.h"

namespace {

using nlohmann::json;

struct Node {
  kgpu::Inventory inventory = kgpu::testing::a100_node(4, 1);
  kgpu::Config config;
  kgpu::dra::DriverPool pool;
  Node() {
    config.mps_root = "/run/kgpu/mps";
    kgpu::dra::SliceOptions o;
    o.node_name = "node-1";
    pool = kgpu::dra::build_publication(inventory, o)->pools.at(0);
  }
};

const Node& node() {
  static const Node n;
  return n;
}

// What the plugin asks `kgpu mps-daemon` for must parse back as itself, and the daemon it gives
// must keep every file inside <mpsRoot>/dra/<claim UID>/.
void check_mps_request(const kgpu::MpsClaimRequest& request, const std::string& mps_root) {
  auto back = kgpu::parse_mps_claim_request(kgpu::render_mps_claim_request(request));
  if (!back || *back != request) __builtin_trap();
  const auto spec = kgpu::mps_claim_daemon_spec(mps_root, request);
  const std::string folder = mps_root + "/dra/" + request.claim_uid + "/";
  for (const auto* path : {&spec.pipe_dir, &spec.log_dir, &spec.ready_marker, &spec.failure_note})
    if (!path->starts_with(folder) || path->find("..") != std::string::npos) __builtin_trap();
}

void check(const kgpu::dra::ResourceClaim& claim) {
  (void)kgpu::dra::results_for(claim, "gpu.nvidia.com", "node-1");
  const Node& n = node();
  auto prepared = kgpu::dra::prepare_claim(claim, {n.config, n.inventory, n.pool, nullptr});
  if (!prepared) return;
  const auto& c = prepared->claim;
  if (c.cdi_spec_file.find('/') != std::string::npos) __builtin_trap();
  const std::string prefix = "k8s.gpu.nvidia.com/claim=" + claim.ref.uid + "-";
  for (const auto& d : c.devices)
    for (const auto& id : d.cdi_device_ids)
      if (!id.starts_with(prefix)) __builtin_trap();
  (void)kgpu::cdi_spec_text(prepared->cdi_spec);
  // What the store writes must read back as written.
  auto back = kgpu::dra::parse_checkpoint(kgpu::dra::checkpoint_text({"boot", {c}, {}}));
  if (!back || back->claims.size() != 1 || back->claims[0] != c) __builtin_trap();
  if (c.mps) check_mps_request(*c.mps, n.config.mps_root);
}

const char* const kWords[] = {"gpu.nvidia.com", "node-1", "gpu-1", "gpu-2", "gpu-3", "gpu-0-mig-1g5gb-7-0",
                              "FromClass", "FromClaim", "GpuConfig", "MigDeviceConfig", "TimeSlicing", "MPS",
                              "Long", "resource.nvidia.com/v1beta1", "10Gi", "1.5G", "-1", "0", "a/b", "..",
                              "GPU-00000000-0000-4000-8000-000000000001", "1", "",
                              // Quantity forms and per-device keys (issue 29, item 6).
                              "1e9", "0.5Gi", "100m", "1.5.3Gi", "1Mi", "8Ei", "1e-9", "+1", "-0", "01", "2",
                              "GPU-00000000-0000-4000-8000-000000000002", "defaultPerDevicePinnedMemoryLimit",
                              "defaultPinnedDeviceMemoryLimit", "defaultActiveThreadPercentage", "timeSlicingConfig",
                              "interval"};

json any_value(FuzzedDataProvider& in, int depth) { return kgpu::fuzz::any_json(in, depth, kWords, kgpu::fuzz::Keys::Words); }

json base_claim() {
  const json mps = {{"apiVersion", "resource.nvidia.com/v1beta1"},
                    {"kind", "GpuConfig"},
                    {"sharing",
                     {{"strategy", "MPS"},
                      {"mpsConfig",
                       {{"defaultActiveThreadPercentage", 50},
                        {"defaultPinnedDeviceMemoryLimit", "10Gi"},
                        // "0": the first (only) device of this config, by UUID order.
                        {"defaultPerDevicePinnedMemoryLimit", {{"0", "5Gi"}}}}}}}};
  const json slicing = {{"apiVersion", "resource.nvidia.com/v1beta1"},
                        {"kind", "GpuConfig"},
                        {"sharing", {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}}};
  auto result = [](const char* request, const char* device) {
    return json{{"request", request}, {"driver", "gpu.nvidia.com"}, {"pool", "node-1"}, {"device", device}};
  };
  auto config = [](const char* source, const char* request, const json& parameters) {
    return json{{"source", source},
                {"requests", json::array({request})},
                {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", parameters}}}};
  };
  json devices;
  devices["results"] = json::array({result("a", "gpu-1"), result("b/x", "gpu-2"), result("m", "gpu-0-mig-1g5gb-7-0")});
  devices["config"] = json::array({config("FromClaim", "a", mps), config("FromClass", "b", slicing)});
  json claim = {{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", "0b6f2c4e-1111-4000-8000-00000000c1a1"}}}};
  claim["status"]["allocation"]["devices"] = devices;
  return claim;
}

// Every object and array inside `j`, as JSON pointers, so an edit can land anywhere.
void pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) pointers(it.value(), at / it.key(), out);
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) pointers(j[i], at / i, out);
}

void typed(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  json claim = base_claim();
  std::vector<json::json_pointer> places;
  pointers(claim, json::json_pointer(), places);
  for (int edits = in.ConsumeIntegralInRange<int>(1, 6); edits > 0 && in.remaining_bytes() > 0; --edits) {
    const auto& at = places[in.ConsumeIntegralInRange<size_t>(1, places.size() - 1)];
    // The harness's own edits may aim through a value an earlier edit replaced; nlohmann then
    // throws, which says nothing about kgpu: skip that edit.
    try {
      if (!claim.contains(at)) continue;
      if (in.ConsumeBool()) {
        claim[at] = any_value(in, 2);
      } else {
        json& parent = claim[at.parent_pointer()];
        if (parent.is_object()) parent.erase(at.back());
      }
    } catch (const json::exception&) {
    }
  }
  const std::string text = claim.dump(-1, ' ', false, json::error_handler_t::replace);
  if (auto parsed = kgpu::dra::parse_resource_claim(text)) check(*parsed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto claim = kgpu::dra::parse_resource_claim(text)) check(*claim);
  (void)kgpu::dra::parse_checkpoint(text);
  // A quantity is a whole number of bytes within int64, and its plain digits read back as itself.
  if (auto bytes = kgpu::dra::parse_quantity_bytes(text)) {
    if (*bytes > static_cast<uint64_t>(INT64_MAX)) __builtin_trap();
    auto again = kgpu::dra::parse_quantity_bytes(std::to_string(*bytes));
    if (!again || *again != *bytes) __builtin_trap();
  }
  if (auto request = kgpu::parse_mps_claim_request(text)) check_mps_request(*request, node().config.mps_root);
  typed(data, size);
  return 0;
}
