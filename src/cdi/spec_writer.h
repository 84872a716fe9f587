#pragma once
// Writing CDI specs where runtimes watch for them. Runtimes re-read the folder on every change, so
// a spec must never be seen half-written: write a temporary file (with a name runtimes ignore),
// then rename it over the old one.
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace kgpu {

// "kgpu-<vendor>-<class>.json" for kind "<vendor>/<class>". A file of that name whose "kind" maps
// back to it is one this program wrote, so a stale one (an old kind) can be removed without
// touching anyone else's files.
std::string cdi_spec_file_name(const std::string& kind);

// The spec as written (2-space JSON and a newline). Never throws: invalid UTF-8 in a string
// becomes U+FFFD.
std::string cdi_spec_text(const nlohmann::json& spec);

// Writes `spec` as <dir>/cdi_spec_file_name(kind) with mode 0644 (creating `dir` if needed; never
// through a planted link, see core/safe_file.h), then removes the other specs kgpu wrote there
// earlier: regular kgpu-*.json files holding a CDI spec whose kind maps to their name. Returns the
// written path.
Result<std::string> write_cdi_spec(const std::string& dir, const std::string& kind, const nlohmann::json& spec);

}  // namespace kgpu
