#pragma once
// What the dynamic MIG GPUs of a node hold, for `kgpu devices -o dra --live` (issue 42, item 6): from
// the claim checkpoint's instance records and the published layouts, what each claim made and what
// the scheduler can still place. Pure: the caller reads the checkpoint and asks NVML for the layouts.
#include <set>
#include <string>
#include <vector>

#include "dra/claims/claim_checkpoint.h"
#include "dra/model/dynamic_mig.h"

namespace kgpu::dra {

// The MIG uuids of the instances the records say kgpu made: the daemon publishes their GPUs as
// dynamic (not as GPUs holding an operator's instances), and so does the live view.
std::set<std::string> made_mig_uuids(const std::vector<MigInstanceRecord>& records);

// One line per record ("gpu-0-mig-3g40gb-9-4: made for claim <uid>: MIG-..., GPU instance 1,
// compute instance 0, memory slices 4-7", or "being made" while only its intent is recorded), then
// one per layout: how many of its placements no record overlaps, and whether the full GPU is free.
// A record whose GPU has no layout here (the GPU is no longer dynamic) is said too.
std::vector<std::string> dynamic_mig_use(const std::vector<DynamicMigLayout>& layouts,
                                         const std::vector<MigInstanceRecord>& records);

}  // namespace kgpu::dra
