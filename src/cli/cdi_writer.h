#pragma once
#include <optional>
#include <string>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"

namespace kgpu::cli {

// Writes the CDI spec when a cdi-* device list strategy is on, at start and whenever the devices or
// the CDI settings change (health changes alone do not rewrite it).
class CdiWriter {
 public:
  void on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan);

 private:
  std::optional<std::string> last_key_;
};

}  // namespace kgpu::cli
