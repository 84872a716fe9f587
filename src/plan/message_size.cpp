#include "plan/message_size.h"

#include <algorithm>
#include <string_view>

namespace kgpu {
namespace {

size_t varint_bytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// A length-delimited field: tag (fields 1..15 take one byte), length, payload.
size_t delimited(size_t payload) { return 1 + varint_bytes(payload) + payload; }

constexpr std::string_view kWorstHealth = "Unhealthy";

}  // namespace

size_t device_entry_bytes(size_t id_length, const std::vector<int64_t>& numa_nodes) {
  size_t device = delimited(id_length) + delimited(kWorstHealth.size());
  if (!numa_nodes.empty()) {
    size_t topology = 0;
    for (int64_t id : numa_nodes) {
      // NUMANode{int64 ID = 1}: proto3 leaves out a zero; a negative int64 takes ten bytes.
      const size_t node = id == 0 ? 0 : 1 + varint_bytes(static_cast<uint64_t>(id));
      topology += delimited(node);
    }
    device += delimited(topology);
  }
  return delimited(device);
}

size_t list_and_watch_bytes(const Resource& resource) {
  size_t total = 0;
  for (const auto& d : resource.devices) total += device_entry_bytes(d.id.size(), d.numa_nodes);
  return total;
}

size_t replicated_entries_bytes(const AdvertisedDevice& device, int replicas) {
  // Replica numbers with k digits share one entry size: count them per digit length.
  size_t total = 0;
  uint64_t low = 0, high = 10;  // numbers in [low, high) have `digits` digits
  for (size_t digits = 1; low < static_cast<uint64_t>(replicas > 0 ? replicas : 0); ++digits) {
    const uint64_t count = std::min<uint64_t>(high, static_cast<uint64_t>(replicas)) - low;
    total += count * device_entry_bytes(device.id.size() + 2 + digits, device.numa_nodes);
    low = high;
    high *= 10;
  }
  return total;
}

}  // namespace kgpu
