#pragma once
// Which labels a rewrite of the feature file changes, for the labeller's log line. Pure.
#include <string>
#include <vector>

#include "labels/labels.h"

namespace kgpu {

// Keys added, removed or with a new value from `before` to `after`, sorted; the timestamp label
// (nvidia.com/gfd.timestamp) is left out, since it tells nothing about the node.
std::vector<std::string> changed_label_keys(const Labels& before, const Labels& after);

}  // namespace kgpu
