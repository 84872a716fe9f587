// Fuzz target: the kgpu_device_unhealthy series `kgpu devices --live` reads from a running
// plugin's /metrics. Any input: an error value or causes, never a crash. Then the round trip: the
// causes rendered by the registry (Metrics::render escapes the labels) parse back unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "metrics/device_causes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = kgpu::parse_device_causes(text);
  if (!parsed || parsed->empty()) return 0;
  kgpu::Metrics metrics;
  metrics.set_unhealthy_devices(*parsed);
  auto again = kgpu::parse_device_causes(metrics.render());
  if (!again || *again != *parsed) std::abort();
  return 0;
}
