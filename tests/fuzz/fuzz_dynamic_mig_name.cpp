// Fuzz target: a dynamic MIG device name as prepare reads it from a claim's allocation (API server
// input; issue 42). Every input gives a value or an Error, never a crash; what parses names a
// profile of lower-case letters, digits and inner hyphens, and printing it back gives the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dra/model/dynamic_mig_name.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = kgpu::dra::parse_dynamic_mig_name(text);
  if (!parsed) return 0;
  const std::string back = "gpu-" + std::to_string(parsed->parent_minor) + "-mig-" + parsed->profile + "-" +
                           std::to_string(parsed->profile_id) + "-" + std::to_string(parsed->placement_start);
  // Numbers may carry leading zeros in the input; compare without them only when there are none.
  if (back.size() == text.size() && back != text) std::abort();
  if (parsed->profile.empty()) std::abort();
  return 0;
}
