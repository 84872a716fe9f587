#pragma once
// Where a scrape's readings come from: NvmlReader in the daemon, a fake in tests.
// Used by one thread at a time (the collector's single flight).
#include <cstddef>
#include <vector>

#include "telemetry/sample.h"

namespace kgpu::telemetry {

class ReadingSource {
 public:
  virtual ~ReadingSource() = default;
  virtual void set_targets(std::vector<Target> targets) = 0;
  // Fills one Reading per target (resizing `readings`); returns the NVML calls made.
  virtual size_t read(std::vector<Reading>& readings) = 0;
};

}  // namespace kgpu::telemetry
