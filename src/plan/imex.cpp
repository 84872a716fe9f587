#include "plan/imex.h"

#include "plan/nvidia_edits_nodes.h"

namespace kgpu {

std::string imex_channel_path(int id) { return "/dev/nvidia-caps-imex-channels/channel" + std::to_string(id); }

std::string imex_cdi_kind(const Config& config) {
  const auto slash = config.cdi_kind.find('/');
  return config.cdi_kind.substr(0, slash) + "/imex-channel";
}

Result<ImexChannels> find_imex_channels(const Config& config,
                                        const std::function<bool(const std::string&)>& is_char_device) {
  ImexChannels out;
  for (int id : config.imex_channel_ids) {
    const std::string path = imex_channel_path(id);
    const std::string under_root = host_path_under(config.dev_root(), path);
    if (is_char_device(under_root) || (under_root != path && is_char_device(path))) {
      out.present.push_back(id);
      continue;
    }
    std::string looked = under_root == path ? path : under_root + " or " + path;
    if (config.imex_required)
      return Error::unavailable("IMEX channel " + std::to_string(id) + " is required (imex.required) but no character "
                                "device exists at " + looked + " (is the nvidia-imex service running on this node?)");
    out.warnings.push_back("IMEX channel " + std::to_string(id) + " not found at " + looked +
                           "; containers get no IMEX channel (set imex.required to make this an error)");
  }
  return out;
}

}  // namespace kgpu
