#include "cli/cdi_writer.h"

#include <spdlog/spdlog.h>

#include "cdi/cdi.h"

namespace kgpu::cli {

namespace {

// What the CDI spec depends on: the CDI settings and the NVIDIA devices (not their health).
std::string cdi_key(const Config& config, const Inventory& inventory) {
  std::string key = config.cdi_spec_dir + "|" + config.cdi_kind + "|" + config.nvidia_driver_root + "|" +
                    config.container_driver_root + "|" + config.dev_root() + "|" + config.nvidia_ctk_path + "|" +
                    std::to_string(static_cast<int>(config.device_id_strategy)) + "|" + inventory.driver_version;
  for (int id : config.imex_channel_ids) key += "|imex" + std::to_string(id);
  for (const auto& g : inventory.gpus) {
    if (g.vendor != Vendor::Nvidia) continue;
    key += "|" + g.uuid + "@" + std::to_string(g.index) + ":" + std::to_string(g.minor);
    for (const auto& m : g.mig_devices) key += "," + m.uuid + "@" + std::to_string(m.index);
  }
  return key;
}

}  // namespace

void CdiWriter::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan&) {
  if (!config.has_strategy(DeviceListStrategy::CdiAnnotations) && !config.has_strategy(DeviceListStrategy::CdiCri))
    return;
  auto key = cdi_key(config, inventory);
  if (last_key_ && *last_key_ == key) return;
  auto written = generate_cdi_spec(config, inventory);
  if (!written) {
    spdlog::error("cdi: cannot write the CDI spec: {}; containers using CDI names will fail to start",
                  written.error().message);
    return;
  }
  for (const auto& w : written->warnings) spdlog::warn("cdi: {}", w);
  spdlog::info("cdi: wrote {}", written->path);
  last_key_ = std::move(key);
}

}  // namespace kgpu::cli
