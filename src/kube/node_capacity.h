#pragma once
// `kgpu node-capacity`: a node-level extended resource (a count nothing allocates per device:
// licences, dongles) advertised in the Node's status.capacity with a JSON Patch, as the Kubernetes
// docs' "advertise extended resources for a node" example does. The pure parts: checking the name,
// the quantity and the node name, escaping the name for a JSON Pointer, and the patch bodies.
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu::kube {

// An extended resource name as the API server accepts one in status.capacity: a domain-prefixed
// qualified name ("example.com/dongle"), the domain not kubernetes.io (or *.kubernetes.io) and the
// name not "requests."-prefixed (quota names it "requests.<name>"). Error saying what is wrong.
Status check_extended_resource_name(std::string_view name);

// A resource.Quantity an extended resource may have: a whole number, not negative, optionally
// with a decimal (k, M, G, T, P, E) or binary (Ki ... Ei) suffix, at most 2^63-1 in all.
// The canonical text is returned unchanged when valid. Error saying what is wrong.
Result<std::string> check_extended_resource_quantity(std::string_view quantity);

// A Node name (a DNS subdomain: lower-case letters, digits, '-' and '.', at most 253 characters).
Status check_node_name(std::string_view node);

// One JSON Pointer reference token (RFC 6901): '~' -> "~0", then '/' -> "~1".
std::string escape_json_pointer(std::string_view token);

// The JSON Patch (application/json-patch+json) that sets status.capacity[name] = quantity:
// [{"op":"add","path":"/status/capacity/example.com~1dongle","value":"4"}].
std::string capacity_add_patch(std::string_view name, std::string_view quantity);
// The JSON Patch that removes status.capacity[name]: [{"op":"remove","path":"..."}].
std::string capacity_remove_patch(std::string_view name);

// "NAME=QTY" split and both parts checked.
struct CapacitySetting {
  std::string name;
  std::string quantity;
};
Result<CapacitySetting> parse_capacity_setting(std::string_view text);

}  // namespace kgpu::kube
