#pragma once
// The node-feature-discovery "local" feature file: `key=value` lines, sorted. Written atomically
// (core/safe_file.h: a fresh temporary file in the same folder, never following a planted link,
// then rename) and only when the content changes, so NFD never reads a half-written file and an
// unchanged plan costs no write.
#include <string>

#include "core/result.h"
#include "labels/labels.h"

namespace kgpu {

// The file content: sorted `key=value\n` lines.
std::string format_labels(const Labels& labels);

// Writes `labels` to `path` (mode 0644) unless the file already holds exactly that content.
// Returns whether it wrote.
Result<bool> write_feature_file(const std::string& path, const Labels& labels);

// Removes the file; a missing file is not an error.
Status remove_feature_file(const std::string& path);

}  // namespace kgpu
