#pragma once
// IMEX channels as NVIDIA's plugin hands them out (reference §1.4 and §3): `imex.channelIDs` ([] or
// [0]; --imex-channel-ids, IMEX_CHANNEL_IDS) names channels every container of every NVIDIA
// resource gets; `imex.required` (--imex-required, IMEX_REQUIRED) makes a missing channel a start-up
// error, else it is skipped with a warning. A channel is the character device
// /dev/nvidia-caps-imex-channels/channel<N>, looked up under the device root first, then at that
// path itself. Pure: the caller passes the file check.
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/result.h"

namespace kgpu {

// "/dev/nvidia-caps-imex-channels/channel<id>" (container path).
std::string imex_channel_path(int id);

// The CDI kind of IMEX channels next to the GPUs' kind: "<vendor of cdi_kind>/imex-channel", e.g.
// "k8s.device-plugin.nvidia.com/imex-channel".
std::string imex_cdi_kind(const Config& config);

struct ImexChannels {
  std::vector<int> present;           // the configured channels that exist, in config order
  std::vector<std::string> warnings;  // one per channel skipped (not required)
};

// Which configured channels exist. `is_char_device(path)` is asked for <dev root>/<channel path>,
// then for the channel path itself. A missing channel with imex.required is an Error naming it and
// every path looked at.
Result<ImexChannels> find_imex_channels(const Config& config,
                                        const std::function<bool(const std::string&)>& is_char_device);

}  // namespace kgpu
