// The MIG state of a fake node kept across processes (KGPU_FAKE_NVML_MIG_STATE=<file>): a real
// driver keeps its GPU and compute instances when the process that made them dies, so a test of
// kgpu's restart after a SIGKILL needs the fake to as well. Every change of MIG mode or instances
// rewrites the file (atomically); the first nvmlInit of a process reads it back into the fleet.
// Without the variable nothing is kept, as before. Lines:
//   mode <gpu index> <NVML_DEVICE_MIG_*>
//   gi <gpu index> <GI id> <GI profile id> <placement start>
//   ci <gpu index> <GI id> <CI id> <compute slices> <compute placement> <MIG uuid>
// Also KGPU_FAKE_NVML_BLOCK_CI_CREATE=<file>: nvmlGpuInstanceCreateComputeInstance waits while
// <file> does not exist, after creating <file>.blocked, so a test can kill the caller between the
// two steps of a dynamic MIG create (it waits for .blocked, never for a time).
#pragma once
#include "fleet.h"

namespace kgpu::fake_nvml {

void save_mig_state(const Fleet& fleet);
// Replaces the MIG mode and instances of every GPU the file names; a line that does not parse is
// skipped with a message on stderr.
void load_mig_state(Fleet& fleet);
// Mixed into the serial of a run-time instance's uuid while the state is kept: the process id and
// how many times this process read the state, so no instance repeats an earlier one's uuid.
unsigned long long mig_state_salt();
// True when the process should wait at the compute-instance create gate (see above).
void wait_at_ci_create_gate();

}  // namespace kgpu::fake_nvml
