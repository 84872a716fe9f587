#include "dra/health/pod_claim_name.h"

#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "dra/model/claim.h"
#include "dra/model/device_names.h"

namespace kgpu::dra::health {

Result<std::optional<std::string>> pod_claim_name(std::string_view claim_text) {
  if (claim_text.size() > kMaxClaimTextBytes) return Error::invalid("ResourceClaim text is too large");
  if (auto deep = check_json_depth(claim_text, "ResourceClaim"); !deep) return deep.error();
  const auto doc = nlohmann::json::parse(claim_text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return Error::invalid("ResourceClaim is not a JSON object");
  auto meta = doc.find("metadata");
  if (meta == doc.end()) return std::optional<std::string>{};
  if (!meta->is_object()) return Error::invalid("ResourceClaim metadata is not an object");
  auto annotations = meta->find("annotations");
  if (annotations == meta->end() || annotations->is_null()) return std::optional<std::string>{};
  if (!annotations->is_object()) return Error::invalid("ResourceClaim metadata.annotations is not an object");
  auto value = annotations->find(std::string(kPodClaimNameAnnotation));
  if (value == annotations->end()) return std::optional<std::string>{};
  if (!value->is_string()) return Error::invalid("annotation " + std::string(kPodClaimNameAnnotation) + " is not a string");
  const auto& name = value->get_ref<const std::string&>();
  if (!is_dns_label(name))
    return Error::invalid("annotation " + std::string(kPodClaimNameAnnotation) + " is not a DNS label: " +
                          quote_text(name));
  return std::optional<std::string>{name};
}

}  // namespace kgpu::dra::health
