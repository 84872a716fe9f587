#pragma once
// The pure half of the slice publisher: from what one driver should publish on this node and what
// the API server holds for that node and driver, the writes that make them equal. No I/O.
//
// Rules (resource.k8s.io, see shared/reference/dra.md 3.2):
//  - nothing is written when the listed slices already carry the desired content, all at one
//    generation, with no extra slice;
//  - otherwise every desired slice is written (created or updated) at a new pool generation, higher
//    than any generation listed (and than `min_generation`), since consumers only trust the slices
//    of a pool's highest generation; slices that are not desired are deleted afterwards.
#include <cstdint>
#include <string>
#include <vector>

#include "dra/model/publication.h"
#include "dra/publish/slice_objects.h"
#include "kube/resource_slice_list.h"

namespace kgpu::dra {

struct SliceWrite {
  enum class Kind { Create, Update, Delete };
  Kind kind = Kind::Create;
  std::string name;
  std::string resource_version;  // Update and Delete: the listed one (an update sends it back)
  std::string body;              // Create and Update: the ResourceSlice as JSON text
  bool operator==(const SliceWrite&) const = default;
};

struct SliceDiff {
  // In order: deletes that free a name for a re-create (a listed slice whose immutable pool name
  // differs), then creates and updates, then deletes of slices no longer desired.
  std::vector<SliceWrite> writes;
  int64_t generation = 0;  // the pool's generation once the writes are done (the listed one when none)
};

// `desired`: nullptr when the driver publishes nothing on this node (every listed slice is deleted).
// `listed`: the API server's slices of this node and driver (as read with a field selector); taken
// by value since comparing rewrites their specs in place.
// `min_generation`: a generation this process already wrote for the pool (the new one exceeds it).
// A listed pool generation at or above this was planted (one write per nanosecond would take 146
// years to reach it): rather than write highest + 1 (overflow at 2^63-1), the pool is restarted —
// every listed slice deleted, then the desired ones created at `min_generation` + 1 (1 when none).
inline constexpr int64_t kMaxPoolGeneration = int64_t{1} << 62;

SliceDiff diff_slices(const DriverPool* desired, std::vector<kube::ListedSlice> listed, const SliceOptions& options,
                      SliceApi api, int64_t min_generation = 0);

// The name of slice `index` of a pool, as resource_slices() names it.
std::string slice_name(const SliceOptions& options, const std::string& driver, size_t index);

// `text` (a ResourceSlice from resource_slice_texts) with metadata.resourceVersion set, as an update
// must carry it.
std::string with_resource_version(const std::string& text, const std::string& resource_version);

}  // namespace kgpu::dra
