#pragma once
// One nesting limit for every JSON document kgpu reads from outside (API server answers, the claim
// checkpoint, MPS claim request files, CDI specs it finds on disk). nlohmann::json parses
// iteratively but copies, compares and dumps recursively: a document nested 70,000 deep parses and
// then overflows the stack of whoever copies it. The check is a pre-scan of the bytes, run before
// the parser builds anything. Pure.
#include <cstddef>
#include <string_view>

#include "core/result.h"

namespace kgpu {

// Far above any real object (a ResourceSlice or ResourceClaim nests about 10 deep, opaque claim
// parameters a few more).
inline constexpr size_t kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text`, counting brackets outside strings (the exact
// depth of valid JSON; for invalid text a number the parser's own error will follow). Stops
// counting at `stop_after` + 1.
size_t json_nesting_depth(std::string_view text, size_t stop_after = kMaxJsonDepth);

// Error::invalid("<what> nests arrays and objects deeper than 64 levels") when it does.
Status check_json_depth(std::string_view text, std::string_view what, size_t limit = kMaxJsonDepth);

}  // namespace kgpu
