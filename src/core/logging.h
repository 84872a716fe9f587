#pragma once
// Process-wide logging set-up: one line per event, text for humans or JSON for log pipelines.
// Text lines start with a UTC timestamp that says so (2026-01-02T03:04:05.678Z). JSON records carry,
// next to "msg", the fields a pipeline filters on, taken from the message: "gpu" (the GPU's UUID),
// "uuid" (the device's own: a MIG UUID for a MIG device), "xid" and "resource". A record with an
// empty message is not written.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kgpu {

struct LogOptions {
  std::string level = "info";
  std::string format = "text";  // "text" | "json"
};

void configure_logging(const LogOptions& options);

// What a log message names, for the JSON fields: the first GPU-/MIG- UUID (a replica's "::N"
// left out), the first "XID <n>", the first extended-resource name ("nvidia.com/gpu.shared").
struct LogFields {
  std::string gpu;       // "GPU-..." (empty when the message names none)
  std::string uuid;      // the first GPU- or MIG- UUID
  std::optional<uint64_t> xid;
  std::string resource;  // "<domain with a dot>/<name>"
  bool operator==(const LogFields&) const = default;
};
LogFields log_fields(std::string_view message);

}  // namespace kgpu
