#pragma once
// What a reload changed in the effective configuration, for the log: the daemon logs every
// setting that is not at its default at start, and at a reload only the settings whose value or
// origin changed, so a reload's lines say what happened instead of repeating the whole config.
// Pure: works on the lines describe_effective_config() gives.
#include <string>
#include <vector>

#include "config/loader.h"

namespace kgpu {

// "key = value (origin)", one per setting not at its default, in describe_effective_config()'s
// order, with the key's alignment padding collapsed.
std::vector<std::string> effective_config_lines(const LoadedConfig& loaded);

// The changes from `before` to `after` (both effective_config_lines()): "key = new (origin)" with
// "(was: old value (origin))" or "(was: default)" appended, and "key back to its default (was: ...)"
// for a setting no longer set. Empty when nothing changed.
std::vector<std::string> config_line_changes(const std::vector<std::string>& before,
                                             const std::vector<std::string>& after);

}  // namespace kgpu
