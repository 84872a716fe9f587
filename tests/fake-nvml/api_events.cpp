// Event sets: registration and the blocking wait that injected events wake.
#include <chrono>
#include <type_traits>

#include "api_helpers.h"

using namespace kgpu::fake_nvml;

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes) {
  return device_call(device, "nvmlDeviceGetSupportedEventTypes", [&](Simulator& sim, nvmlDevice_st& d) {
    if (eventTypes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    *eventTypes = sim.gpu(d).supported_events;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return system_call([&](Simulator& sim) {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *set = sim.create_set();
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set) {
  return device_call(device, "nvmlDeviceRegisterEvents", [&](Simulator& sim, nvmlDevice_st& d) {
    if (!sim.valid_set(set)) return NVML_ERROR_INVALID_ARGUMENT;
    return sim.register_events(d, eventTypes, set);
  });
}

namespace {

// Blocks on the set's condition variable (never a sleep loop) until an event, the deadline, or the
// last nvmlShutdown.
nvmlReturn_t wait_event(nvmlEventSet_t set, unsigned timeout_ms, nvmlEventData_t* out) {
  std::unique_lock lock(api_mutex());
  Simulator* sim = live_simulator();
  if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (out == nullptr || !sim->valid_set(set)) return NVML_ERROR_INVALID_ARGUMENT;
  // Tests that need a thread parked in this wait (it cannot be interrupted in the real library)
  // wait for this acknowledgement.
  if (set->pending.empty()) sim->note_waiting();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  set->cv.wait_until(lock, deadline, [&] { return !set->pending.empty() || !sim->active(); });
  if (!sim->active()) return NVML_ERROR_UNINITIALIZED;
  if (set->pending.empty()) return NVML_ERROR_TIMEOUT;
  *out = set->pending.front();
  set->pending.pop_front();
  return NVML_SUCCESS;
}

// nvmlEventData_t before the MIG instance ids were added (the unversioned nvmlEventSetWait).
struct EventDataV1 {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
};

}  // namespace

KGPU_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return wait_event(set, timeoutms, data);
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, EventDataV1* data, unsigned int timeoutms) {
  if (data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  nvmlEventData_t full{};
  nvmlReturn_t rc = wait_event(set, timeoutms, &full);
  if (rc == NVML_SUCCESS) *data = EventDataV1{full.device, full.eventType, full.eventData};
  return rc;
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return system_call([&](Simulator& sim) {
    if (!sim.valid_set(set)) return NVML_ERROR_INVALID_ARGUMENT;
    sim.free_set(set);
    return NVML_SUCCESS;
  });
}

static_assert(std::is_same_v<decltype(&nvmlDeviceGetSupportedEventTypes), nvmlDeviceGetSupportedEventTypes_fn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetCreate), nvmlEventSetCreate_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceRegisterEvents), nvmlDeviceRegisterEvents_fn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetWait_v2), nvmlEventSetWait_fn>);
static_assert(std::is_same_v<decltype(&nvmlEventSetFree), nvmlEventSetFree_fn>);
