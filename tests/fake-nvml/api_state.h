// Library-wide state of the fake NVML: the reference-counted initialisation, the live simulator and
// the control channel. One mutex serialises every entry point (simple and obviously thread-safe; the
// calls are tiny), and event waits sleep on condition variables tied to it.
#pragma once
#include <mutex>

#include "simulator.h"

namespace kgpu::fake_nvml {

std::mutex& api_mutex();

// The simulator while initialised, else nullptr. Call with api_mutex() held.
Simulator* live_simulator();

nvmlReturn_t init_library(unsigned flags);
nvmlReturn_t shutdown_library();

}  // namespace kgpu::fake_nvml
