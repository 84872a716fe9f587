#pragma once
// What the DRA slice publisher reads from the API server: the resource.k8s.io API group's served
// versions (discovery), a ResourceSliceList (the slices of one node and driver) and the events of a
// watch of the node's slices. Pure parsing,
// no I/O. An answer with a field of the wrong type is an error as a whole: acting on part of a list
// could overwrite or delete the wrong slices.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace kgpu::kube {

struct ListedSlice {
  std::string name;              // metadata.name
  std::string resource_version;  // metadata.resourceVersion (sent back with an update)
  nlohmann::json owner_references;  // metadata.ownerReferences as received; null when absent
  std::string driver;            // spec.driver
  std::string node_name;         // spec.nodeName; empty for allNodes / nodeSelector slices
  std::string pool_name;         // spec.pool.name
  int64_t generation = 0;        // spec.pool.generation
  int64_t resource_slice_count = 0;  // spec.pool.resourceSliceCount
  nlohmann::json spec;           // the whole spec as received (an object)
};

struct SliceList {
  std::vector<ListedSlice> items;
  std::string continue_token;    // metadata.continue: non-empty when there is another page
  std::string resource_version;  // metadata.resourceVersion: where a watch of the list starts
};

// One line of a watch of ResourceSlices. For ADDED / MODIFIED / DELETED the slice is read as a
// list item is (a wrong type is an error: the watch starts again from a list); BOOKMARK carries only
// a resourceVersion, ERROR only a Status code.
struct SliceWatchEvent {
  std::string type;
  std::string resource_version;
  int error_code = 0;
  std::string driver;  // spec.driver of the slice; empty for BOOKMARK and ERROR
  std::string node_name;  // spec.nodeName of the slice; empty for BOOKMARK, ERROR and slices of no one node
};
Result<SliceWatchEvent> parse_slice_watch_event(std::string_view line);

// A ResourceSliceList (any resource.k8s.io version: only fields common to all are read).
Result<SliceList> parse_resource_slice_list(std::string_view json_text);

// The versions an APIGroup discovery answer (GET /apis/<group>) lists, e.g. {"v1", "v1beta1"}.
Result<std::vector<std::string>> parse_api_group_versions(std::string_view json_text);

}  // namespace kgpu::kube
