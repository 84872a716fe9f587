// Fuzz target: one nesting limit (kgpu::kMaxJsonDepth, 64) at every JSON parse of outside input
// (issue 28, item 2). The input picks a nesting depth (up to 300,000), the brackets to nest with and
// the inner value; the nest is planted where a hostile answer or file would put it — a ResourceSlice
// of another node in a list and in a watch event, a Node, a claim's opaque parameters, the
// checkpoint, NVIDIA's DRA checkpoint, an MPS claim request — and also fed raw. Every parser must
// answer with an Error for a document deeper than the limit (never crash: before the limit,
// nlohmann's recursive copies overflowed the stack), and whatever parses is never deeper than the
// limit.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json_depth.h"
#include "dra/claims/claim_checkpoint.h"
#include "dra/claims/nvidia_checkpoint.h"
#include "dra/model/claim.h"
#include "kube/node_object.h"
#include "kube/resource_slice_list.h"
#include "mps/claim_request.h"

namespace {

using kgpu::kMaxJsonDepth;

constexpr size_t kFullDepth = size_t{1} << 30;  // json_nesting_depth without its early stop

// `ok` is whether a parser accepted `text`: it may only have if `text` is within the limit.
void expect_bounded(bool ok, std::string_view text) {
  if (ok && kgpu::json_nesting_depth(text, kFullDepth) > kMaxJsonDepth) __builtin_trap();
}

void feed(const std::string& text) {
  expect_bounded(kgpu::kube::parse_resource_slice_list(text).ok(), text);
  expect_bounded(kgpu::kube::parse_slice_watch_event(text).ok(), text);
  expect_bounded(kgpu::kube::parse_api_group_versions(text).ok(), text);
  expect_bounded(kgpu::kube::parse_node(text).ok(), text);
  expect_bounded(kgpu::kube::parse_watch_event(text).ok(), text);
  expect_bounded(kgpu::dra::parse_resource_claim(text).ok(), text);
  expect_bounded(kgpu::dra::parse_checkpoint(text).ok(), text);
  expect_bounded(kgpu::dra::parse_nvidia_checkpoint(text, "gpu.nvidia.com").ok(), text);
  expect_bounded(kgpu::parse_mps_claim_request(text).ok(), text);
}

// Valid documents with a "@" where the nest goes.
const char* const kTemplates[] = {
    R"({"kind":"ResourceSliceList","items":[{"metadata":{"name":"s","resourceVersion":"1"},"spec":{"driver":"other.example.com","nodeName":"other","pool":{"name":"other","generation":1,"resourceSliceCount":1},"devices":@}}]})",
    R"({"type":"ADDED","object":{"metadata":{"name":"s","resourceVersion":"1"},"spec":{"driver":"d","pool":{"name":"p","generation":1,"resourceSliceCount":1},"devices":@}}})",
    R"({"kind":"Node","metadata":{"name":"n","resourceVersion":"1","labels":{},"x":@}})",
    R"({"type":"MODIFIED","object":{"kind":"Node","metadata":{"name":"n","resourceVersion":"1","x":@}}})",
    R"({"versions":@})",
    R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c","namespace":"ns","uid":"u"},"status":{"allocation":{"devices":{"results":[{"request":"a","driver":"gpu.nvidia.com","pool":"node-1","device":"gpu-1"}],"config":[{"source":"FromClaim","requests":["a"],"opaque":{"driver":"gpu.nvidia.com","parameters":{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","x":@}}}]}}}})",
    R"({"kind":"KgpuPreparedClaims","version":1,"bootID":"b","checksum":"fnv1a64:0","claims":@})",
    R"({"claimUID":"u","visibleDevices":@})",
    R"({"checksum":1,"v2":{"checksum":2,"preparedClaims":{"u":{"checkpointState":"PrepareCompleted","preparedDevices":@}}}})",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  feed(raw);
  FuzzedDataProvider in(data, size);
  const size_t depth = in.ConsumeBool() ? in.ConsumeIntegralInRange<size_t>(kMaxJsonDepth - 4, kMaxJsonDepth + 4)
                                        : in.ConsumeIntegralInRange<size_t>(0, 300'000);
  const std::string open = in.ConsumeBool() ? "[" : R"({"k":)";
  const std::string close = open == "[" ? "]" : "}";
  const std::string inner = in.ConsumeRandomLengthString(32);
  std::string nest;
  nest.reserve(depth * (open.size() + close.size()) + inner.size());
  for (size_t i = 0; i < depth; ++i) nest += open;
  nest += inner;
  for (size_t i = 0; i < depth; ++i) nest += close;
  for (const char* t : kTemplates) {
    std::string doc(t);
    doc.replace(doc.find('@'), 1, nest);
    feed(doc);
  }
  feed(nest);
  return 0;
}
