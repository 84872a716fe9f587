#pragma once
// Resource names: vendor defaults and the config's `resources.gpus` / `resources.mig` patterns.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"

namespace kgpu {

// Anchored wildcard match: '*' matches any run of characters (also none), everything else itself.
// Anchored on purpose: NVIDIA 0.17's unanchored match let "1g.10gb" also catch "1g.10gb+me" (#1807).
bool wildcard_match(std::string_view pattern, std::string_view text);

// The name of the first pattern matching `text`, if any.
std::optional<std::string> match_pattern(const std::vector<ResourcePattern>& patterns, std::string_view text);

// "nvidia.com/mig-<profile>" with '+' replaced by '.' ("1g.10gb+me" → "nvidia.com/mig-1g.10gb.me").
std::string mixed_mig_resource_name(std::string_view profile);

// Name for a whole NVIDIA GPU: resources.gpus patterns on the product name, then "nvidia.com/gpu".
std::string nvidia_gpu_resource_name(const Config& config, const Gpu& gpu);

// Name for a MIG device: resources.mig patterns on the profile, then the strategy's default
// ("nvidia.com/gpu" for single, mixed_mig_resource_name for mixed).
std::string mig_resource_name(const Config& config, std::string_view profile);

// Name for a non-NVIDIA device, or nullopt with the reason in *why when the backend gave too little.
std::optional<std::string> vendor_resource_name(const Gpu& gpu, std::string* why);

}  // namespace kgpu
