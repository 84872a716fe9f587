#pragma once
// A ResourceClaim as the DRA node plugin reads it: who it is (metadata) and what the scheduler
// allocated (status.allocation.devices). resource.k8s.io v1, v1beta2 and v1beta1 share this part of
// the object, so one parser serves every kubelet. Pure: the text comes from the API server through
// the caller, and every problem is an error value naming the field (nothing throws).
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace kgpu::dra {

// What the kubelet names in NodePrepareResources / NodeUnprepareResources (the Claim message).
struct ClaimRef {
  std::string uid;
  std::string ns;  // metadata.namespace
  std::string name;
  bool operator==(const ClaimRef&) const = default;
};

// status.allocation.devices.results[]: one allocated device.
struct AllocationResult {
  std::string request;  // "gpu" or "gpu/sub" (a subrequest of a prioritized list)
  std::string driver;
  std::string pool;
  std::string device;
  bool admin_access = false;
  std::optional<std::string> share_id;  // consumable capacity (1.34+): one share of a device
  // consumedCapacity: what the share takes of each capacity of the device (name -> amount, the
  // quantity as a whole number), as the scheduler computed it from the request and its policy.
  std::map<std::string, uint64_t> consumed_capacity{};
  bool operator==(const AllocationResult&) const = default;

  // The request without its subrequest ("gpu/sub" -> "gpu"): what Device.request_names carries.
  std::string base_request() const;
};

// status.allocation.devices.config[] with an opaque part: driver-specific parameters for some
// (or, with no requests listed, all) of the claim's requests.
struct OpaqueConfig {
  enum class Source { FromClass, FromClaim };
  Source source = Source::FromClaim;
  std::vector<std::string> requests;  // empty: every request
  std::string driver;
  nlohmann::json parameters;  // the raw object, decoded by the driver that owns it
  bool operator==(const OpaqueConfig&) const = default;

  bool applies_to(const AllocationResult& result) const;
};

struct ResourceClaim {
  std::string api_version;  // "resource.k8s.io/v1"
  ClaimRef ref;
  bool allocated = false;  // status.allocation present
  std::vector<AllocationResult> results;
  std::vector<OpaqueConfig> configs;  // opaque configs of every driver, in API order
  bool operator==(const ResourceClaim&) const = default;
};

// Kubernetes objects are at most ~1.5 MiB (the etcd request limit); anything larger is not a claim.
inline constexpr size_t kMaxClaimTextBytes = size_t{2} << 20;

// Parses a ResourceClaim (JSON, as the API server returns it). Errors are Error::invalid and name
// the field: not JSON, too large, wrong apiVersion/kind, a missing or mistyped field.
Result<ResourceClaim> parse_resource_claim(std::string_view text);

// The results this node's plugin must prepare: those of `driver` in `pool` (the node's pool), in
// API order. Results of other drivers are not ours and are skipped. Errors: the claim is not
// allocated (precondition), it has no device of `driver`, or one of `driver`'s devices lies in
// another pool (kgpu publishes one pool per node, so such a claim was allocated for another node).
Result<std::vector<AllocationResult>> results_for(const ResourceClaim& claim, std::string_view driver,
                                                  std::string_view pool);

// The opaque configs of `driver` that apply to `result`, lowest precedence first (NVIDIA's order:
// class configs below claim configs, later entries above earlier ones). The driver takes the last
// one that fits the device (prepare_claim: a config for all requests whose kind is for another
// device type is passed over; one naming the request is an error).
std::vector<const OpaqueConfig*> configs_for(const ResourceClaim& claim, std::string_view driver,
                                             const AllocationResult& result);

// `text` quoted for an error message, cut to a readable length (claim fields are outside input).
std::string quote_text(std::string_view text);

}  // namespace kgpu::dra
