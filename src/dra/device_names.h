#pragma once
// Names the DRA API requires: device names are DNS labels (RFC 1123), driver names and slice names
// DNS subdomains. Device names follow NVIDIA's DRA driver so people reading both see the same thing.
#include <string>

#include "core/inventory.h"

namespace kgpu::dra {

bool is_dns_label(const std::string& s);      // [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63
bool is_dns_subdomain(const std::string& s);  // dot-separated DNS labels, at most 253

// "gpu-<minor>" (NVIDIA names full GPUs by device minor; the index when the minor is unknown).
std::string gpu_device_name(const Gpu& gpu);

// "gpu-<parent minor>-mig-<profile>-<GI id>-<CI id>", the profile lower-cased with everything but
// letters and digits dropped ("1g.10gb+me" -> "1g10gbme"). NVIDIA's driver ends with the GI profile
// id and placement start instead; the inventory holds the GI/CI ids, which are just as unique.
std::string mig_device_name(const Gpu& parent, const MigDevice& mig);

}  // namespace kgpu::dra
