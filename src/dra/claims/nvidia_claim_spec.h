#pragma once
// What one of NVIDIA's DRA driver's per-claim CDI specs gives a claim's containers, read so that
// the GPUs of a claim that driver prepared stay held even when its checkpoint.json cannot be read
// (cut short, a newer version, a bad entry, a link: issue 38). Pure.
//
// NVIDIA's kubelet plugin writes "k8s.gpu.nvidia.com-claim_<uid>.yaml" in the CDI folder: kind
// "k8s.gpu.nvidia.com/claim", one device per prepared device named "<uid>-<device name>", each with
// containerEdits.deviceNodes giving the GPU's /dev/nvidia<minor> (a MIG device's too: its parent's
// node, besides its /dev/nvidia-caps). The spec is YAML (JSON is YAML too).
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace kgpu::dra {

// Far above a claim spec's size (a few KiB per device); it also bounds how deep block-style YAML
// can nest (each level one more column of indentation), as yaml-cpp parses recursively.
inline constexpr size_t kMaxNvidiaClaimSpecBytes = size_t{1} << 20;

struct NvidiaSpecHold {
  std::vector<std::string> devices;  // the device names after "<uid>-", in the spec's order
  std::set<int> minors;              // N of each device's /dev/nvidia<N> node
  bool operator==(const NvidiaSpecHold&) const = default;
};

// Error::invalid (never an exception) when the text is not YAML, nests deeper than kMaxJsonDepth
// or is not a mapping; device entries of another shape are passed over.
Result<NvidiaSpecHold> parse_nvidia_claim_spec(std::string_view text, const std::string& claim_uid);

// The claim UID in the name of one of NVIDIA's per-claim spec files of `driver`
// ("k8s.<driver>-claim_<uid>.yaml"), or nullopt for any other name (kgpu's own ".json" specs
// included) or a UID that is not a safe Kubernetes UID.
std::optional<std::string> nvidia_claim_spec_uid(std::string_view file_name, const std::string& driver);

}  // namespace kgpu::dra
