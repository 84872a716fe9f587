#pragma once
// The little kgpu needs from the Kubernetes API: its own Node's labels and uid, from a GET of the
// Node and from the lines of a watch stream. Pure parsing, no I/O.
#include <map>
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu::kube {

struct NodeSnapshot {
  std::map<std::string, std::string> labels;
  std::string resource_version;
  std::string uid;  // metadata.uid (the DRA driver's slices name the Node as their owner by it)
  bool operator==(const NodeSnapshot&) const = default;
};

// A v1 Node object (JSON). Error when it is not JSON or not a Node.
Result<NodeSnapshot> parse_node(std::string_view json);

struct WatchEvent {
  std::string type;   // ADDED, MODIFIED, DELETED, BOOKMARK or ERROR
  NodeSnapshot node;  // empty for ERROR
  int error_code = 0; // ERROR: the Status code (410: the resource version is too old)
};

// One line of a watch stream: {"type": ..., "object": {...}}.
Result<WatchEvent> parse_watch_event(std::string_view line);

}  // namespace kgpu::kube
