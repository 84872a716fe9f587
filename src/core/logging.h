#pragma once
// Process-wide logging set-up: one line per event, text for humans or JSON for log pipelines.
#include <string>

namespace kgpu {

struct LogOptions {
  std::string level = "info";
  std::string format = "text";  // "text" | "json"
};

void configure_logging(const LogOptions& options);

}  // namespace kgpu
