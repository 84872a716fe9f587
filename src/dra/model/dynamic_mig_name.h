#pragma once
// Reading a dynamic MIG device name back ("gpu-0-mig-3g40gb-9-4": parent minor, profile, profile id,
// placement start). Prepare gets the name from the claim's allocation — API server input — and
// needs the placement to create the GPU instance, as NVIDIA's driver parses its canonical name.
// Pure; an Error for anything that is not such a name.
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu::dra {

struct DynamicMigName {
  unsigned parent_minor = 0;
  std::string profile;  // as in the name: without dots ("3g40gb")
  unsigned profile_id = 0;
  unsigned placement_start = 0;
  bool operator==(const DynamicMigName&) const = default;
};

Result<DynamicMigName> parse_dynamic_mig_name(std::string_view name);

}  // namespace kgpu::dra
