#pragma once
// XID policy: which NVIDIA XID errors take a device away, and whether it may come back. Pure
// functions over HealthConfig (config/config.h); the environment is passed in as values.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace kgpu {

// XIDs whose default action is MarkUnhealthyUntilReset: the GPU (or its memory) needs a reset or
// operator attention, so a quiet period alone must not bring it back. 48 double-bit ECC, 62 internal
// micro-controller halt, 64 ECC page-retirement/row-remap failure, 79 fallen off the bus, 94/95
// contained/uncontained ECC error, 119/120 GSP timeout/error, 140 unrecovered ECC error.
const std::vector<uint64_t>& fatal_xids();

// The action for an XID under `config`, in this order: health checks off -> Ignore; an explicit
// `xid_actions` entry; XID checks off -> Ignore; on the ignore list -> Ignore; fatal -> until reset;
// anything else -> MarkUnhealthy (recovers after the quiet period).
XidAction xid_action(const HealthConfig& config, uint64_t xid);

// Action for a double-bit ECC event (not an XID: unaffected by the XID switches and lists).
XidAction ecc_double_bit_action(const HealthConfig& config);

// "GPU has fallen off the bus" for 79; "unknown XID" for numbers not in the table.
std::string xid_meaning(uint64_t xid);
// "XID 79 (GPU has fallen off the bus)"
std::string describe_xid(uint64_t xid);
// to_string(XidAction) lives in config/config.h.

struct HealthEnvResult {
  HealthConfig config;
  std::vector<std::string> warnings;  // bad entries, each naming the variable and the value
};

// Applies DP_DISABLE_HEALTHCHECKS and DP_ENABLE_HEALTHCHECKS (nullopt = unset) onto `base`, with
// NVIDIA's meanings and the intent of the ENABLE variable (it re-enables what DISABLE turned off):
//   DISABLE  "all"           every health check off (a kill switch ENABLE does not override)
//            "xids"          XID events no longer mark devices (ECC and lost GPUs still do)
//            "<n>,<m>,..."   extra XIDs to ignore, on top of the default list
//   ENABLE   "all"|"xids"    every XID counts, even the default-ignored application XIDs
//            "<n>,<m>,..."   these XIDs count again: removed from the ignore list and, when DISABLE
//                            said "xids", the only XIDs that still count
// Values are case-insensitive, comma separated, blanks ignored; bad entries are skipped with a warning.
HealthEnvResult apply_health_env(HealthConfig base, const std::optional<std::string>& disable,
                                 const std::optional<std::string>& enable);

}  // namespace kgpu
