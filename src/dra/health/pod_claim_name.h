#pragma once
// The one thing device metadata needs from a ResourceClaim that the claim parser (dra/claim.h)
// leaves out: metadata.annotations["resource.kubernetes.io/pod-claim-name"], which the
// ResourceClaim controller sets on claims it makes from a template (the name the pod spec uses for
// the claim, so the container path is known before the claim exists). Pure; the text is the API
// server's answer (outside input): every problem is an error value.
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu::dra::health {

inline constexpr std::string_view kPodClaimNameAnnotation = "resource.kubernetes.io/pod-claim-name";

// The annotation's value; nullopt when the claim has none. Errors (Error::invalid): not a JSON
// object, too large or too deep (the claim parser's limits), annotations or the value not of their
// JSON type, a value that is not a DNS label (it names a folder).
Result<std::optional<std::string>> pod_claim_name(std::string_view claim_text);

}  // namespace kgpu::dra::health
