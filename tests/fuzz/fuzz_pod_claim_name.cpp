// Fuzz target: the pod-claim-name annotation device metadata reads from a ResourceClaim the API
// server returns (outside input). Every input gives a value or an Error, and a value is always a
// DNS label (it becomes a folder name in the container path).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dra/model/device_names.h"
#include "dra/health/pod_claim_name.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto name = kgpu::dra::health::pod_claim_name(text);
  if (name && *name && !kgpu::dra::is_dns_label(**name)) std::abort();
  return 0;
}
