#pragma once
// Names the calling thread (as `top -H`, /proc/PID/task/*/comm and debuggers show it), so an
// operator counting kgpu's threads sees what each one is for. Linux keeps 15 characters.
#include <pthread.h>

namespace kgpu {

inline void name_this_thread(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

}  // namespace kgpu
