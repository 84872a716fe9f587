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

// As NVIDIA's DRA driver (v25.12+) names MIG devices: "gpu-<parent minor>-mig-<profile>-<GI
// profile id>-<placement start>", the profile lower-cased without dots and with anything else
// outside [a-z0-9-] turned into '-' ("1g.10gb+me" -> "1g10gb-me"): the name says where on the GPU
// the instance sits, so it survives the GI ids a re-creation hands out. A compute instance smaller
// than its GPU instance (which NVIDIA's driver does not publish) adds "-<CI id>". Without a known
// placement (an NVML that cannot say): "-<GI id>-<CI id>" instead, unique just the same.
std::string mig_device_name(const Gpu& parent, const MigDevice& mig);

}  // namespace kgpu::dra
