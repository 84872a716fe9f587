#pragma once
// Writing CDI specs where runtimes watch for them. Runtimes re-read the folder on every change, so
// a spec must never be seen half-written: write a temporary file (with an extension runtimes
// ignore), then rename it over the old one.
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace kgpu {

// "kgpu-<vendor>-<class>.json" for kind "<vendor>/<class>". The "kgpu-" prefix marks files this
// program owns, so stale ones (an old kind) can be removed without touching anyone else's specs.
std::string cdi_spec_file_name(const std::string& kind);

// Writes `spec` as <dir>/cdi_spec_file_name(kind) with mode 0644 (creating `dir` if needed), then
// removes every other kgpu-*.json / kgpu-*.yaml in `dir`. Returns the written path.
Result<std::string> write_cdi_spec(const std::string& dir, const std::string& kind, const nlohmann::json& spec);

}  // namespace kgpu
