#include "dra/claims/nvidia_claim_spec.h"

#include <yaml-cpp/yaml.h>

#include <charconv>

#include "core/json_depth.h"
#include "dra/claims/nvidia_checkpoint.h"
#include "mps/claim_request.h"

namespace kgpu::dra {

namespace {

// N of "/dev/nvidia<N>" (not nvidiactl, nvidia-uvm, nvidia-caps/...).
std::optional<int> gpu_minor(const std::string& path) {
  constexpr std::string_view head = "/dev/nvidia";
  if (!path.starts_with(head) || path.size() == head.size() || path.size() > head.size() + 6) return std::nullopt;
  int n = -1;
  const char* first = path.data() + head.size();
  const char* last = path.data() + path.size();
  auto [end, ec] = std::from_chars(first, last, n);
  if (ec != std::errc() || end != last || n < 0) return std::nullopt;
  return n;
}

}  // namespace

Result<NvidiaSpecHold> parse_nvidia_claim_spec(std::string_view text, const std::string& claim_uid) {
  // yaml-cpp parses recursively: the bracket pre-scan bounds flow-style nesting, the size limit
  // (kMaxNvidiaClaimSpecBytes) the block-style one.
  if (text.size() > kMaxNvidiaClaimSpecBytes) return Error::invalid("the CDI spec is larger than 1 MiB");
  if (auto st = check_json_depth(text, "the CDI spec"); !st) return st.error();
  NvidiaSpecHold out;
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) return Error::invalid("the CDI spec is not a mapping");
    const YAML::Node devices = root["devices"];
    if (!devices || !devices.IsSequence()) return out;
    const std::string prefix = claim_uid + "-";
    for (const auto& d : devices) {
      if (!d.IsMap()) continue;
      const YAML::Node name = d["name"];
      if (!name || !name.IsScalar()) continue;
      const std::string& n = name.Scalar();
      if (!n.starts_with(prefix) || n.size() == prefix.size()) continue;
      out.devices.push_back(n.substr(prefix.size()));
      const YAML::Node edits = d["containerEdits"];
      if (!edits || !edits.IsMap()) continue;
      const YAML::Node nodes = edits["deviceNodes"];
      if (!nodes || !nodes.IsSequence()) continue;
      for (const auto& node : nodes) {
        if (!node.IsMap()) continue;
        const YAML::Node path = node["path"];
        if (path && path.IsScalar())
          if (auto minor = gpu_minor(path.Scalar())) out.minors.insert(*minor);
      }
    }
  } catch (const std::exception& e) {
    return Error::invalid(std::string("the CDI spec is not YAML: ") + e.what());
  }
  return out;
}

std::optional<std::string> nvidia_claim_spec_uid(std::string_view file_name, const std::string& driver) {
  const std::string head = "k8s." + driver + "-claim_";
  constexpr std::string_view tail = ".yaml";
  if (!file_name.starts_with(head) || !file_name.ends_with(tail) || file_name.size() <= head.size() + tail.size())
    return std::nullopt;
  std::string uid(file_name.substr(head.size(), file_name.size() - head.size() - tail.size()));
  if (!is_safe_claim_uid(uid) || nvidia_claim_spec_file(driver, uid) != file_name) return std::nullopt;
  return uid;
}

}  // namespace kgpu::dra
