#include "config/config.h"

#include <algorithm>

namespace kgpu {

const char* to_string(MigStrategy s) {
  switch (s) {
    case MigStrategy::None: return "none";
    case MigStrategy::Single: return "single";
    case MigStrategy::Mixed: return "mixed";
  }
  return "unknown";
}

const char* to_string(DeviceListStrategy s) {
  switch (s) {
    case DeviceListStrategy::EnvVar: return "envvar";
    case DeviceListStrategy::VolumeMounts: return "volume-mounts";
    case DeviceListStrategy::CdiAnnotations: return "cdi-annotations";
    case DeviceListStrategy::CdiCri: return "cdi-cri";
  }
  return "unknown";
}

const char* to_string(DeviceIdStrategy s) { return s == DeviceIdStrategy::Uuid ? "uuid" : "index"; }

const char* to_string(SharedAllocationPolicy p) {
  return p == SharedAllocationPolicy::Distributed ? "distributed" : "packed";
}

const char* to_string(MigAllocationPolicy p) {
  switch (p) {
    case MigAllocationPolicy::Shared: return "shared";
    case MigAllocationPolicy::SameParent: return "same-parent";
    case MigAllocationPolicy::Spread: return "spread";
  }
  return "shared";
}

const char* to_string(XidAction a) {
  switch (a) {
    case XidAction::Ignore: return "ignore";
    case XidAction::MarkUnhealthy: return "mark-unhealthy";
    case XidAction::MarkUnhealthyUntilReset: return "mark-unhealthy-until-reset";
  }
  return "unknown";
}

bool Config::has_strategy(DeviceListStrategy s) const {
  return std::find(device_list_strategy.begin(), device_list_strategy.end(), s) !=
         device_list_strategy.end();
}

}  // namespace kgpu
