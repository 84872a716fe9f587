#pragma once
// Builds a CDI spec (https://github.com/cncf-tags/container-device-interface, SPEC.md) for the
// node's NVIDIA GPUs and MIG devices. Pure: the driver files come from find_driver_files().
#include <nlohmann/json.hpp>

#include "cdi/driver_files.h"
#include "config/config.h"
#include "core/inventory.h"

namespace kgpu {

// The spec follows the current CDI format (0.8.0) but declares the lowest version that has every
// feature it uses (deviceNodes.hostPath: 0.5.0), as NVIDIA's generator does: runtimes reject specs
// newer than the CDI library they vendor, and containerd 1.6/1.7 vendor 0.5.x/0.6.x.
inline constexpr const char* kCdiSpecVersion = "0.5.0";
inline constexpr const char* kCdiCurrentFormat = "0.8.0";

// kind: config.cdi_kind. Devices: one per NVIDIA GPU and per MIG device, named by the device ID
// strategy (GPU-/MIG- UUID, or "i" / "i:j"), plus "all" with every device node; per device the
// device nodes (GPU node; MIG: parent + GI/CI capability nodes). Common edits: NVIDIA_VISIBLE_DEVICES=void,
// the control nodes, read-only mounts of the driver libraries, binaries, firmware and IPC sockets,
// and createContainer hooks through config.nvidia_ctk_path (create-symlinks for libcuda.so,
// update-ldcache for the library folder). Host paths: device nodes under Config::dev_root(), files
// under nvidia_driver_root.
nlohmann::json build_cdi_spec(const Config& config, const Inventory& inventory, const DriverFiles& files);

// The common containerEdits of that spec alone, for specs built elsewhere (DRA's per-claim specs)
// that must hand containers the same driver files, control nodes and hooks.
nlohmann::json nvidia_common_cdi_edits(const Config& config, const Inventory& inventory, const DriverFiles& files);

// The IMEX channels' spec (kind "<vendor>/imex-channel", plan/imex.h): one device per channel in
// config.imex_channel_ids, named by its number, with its /dev/nvidia-caps-imex-channels node.
nlohmann::json build_imex_cdi_spec(const Config& config);

}  // namespace kgpu
