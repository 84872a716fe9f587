// `sharing:` — timeSlicing and mps, each a ReplicatedResources block as in NVIDIA's v1 format.
// Unlike NVIDIA's plugin, `rename` and `devices` are honoured, and replicas: 1 is accepted as
// "advertised as is" (NVIDIA demands >= 2); replicas < 1 is an error.
#include <set>
#include <unordered_set>

#include "config/parse_context.h"
#include "config/resource_names.h"
#include "config/settings.h"

namespace kgpu::config_detail {
namespace {

bool digits(const std::string& s) { return parse_uint(s).has_value(); }

// GPU index "3", MIG index "3:1", "GPU-<uuid>", "MIG-<uuid>" or legacy "MIG-GPU-<uuid>/<gi>/<ci>".
bool valid_device_reference(const std::string& s) {
  if (digits(s)) return true;
  if (auto colon = s.find(':'); colon != std::string::npos)
    return digits(s.substr(0, colon)) && digits(s.substr(colon + 1));
  return (s.starts_with("GPU-") || s.starts_with("MIG-")) && s.size() > 4;
}

std::optional<DeviceSelector> parse_devices(const YAML::Node& node, const std::string& where,
                                            ParseContext& ctx) {
  DeviceSelector selector;
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    if (text == "all") return selector;
    if (auto count = parse_uint(text)) {
      if (*count < 1) {
        ctx.error(node, "devices count for " + where + " must be at least 1, got " + text);
        return std::nullopt;
      }
      selector.value = static_cast<int>(std::min<uint64_t>(*count, 1u << 30));
      return selector;
    }
    ctx.error(node, "invalid devices value \"" + text + "\" for " + where +
                        " (valid: \"all\", a positive count, or a list of devices)");
    return std::nullopt;
  }
  if (!node.IsSequence()) {
    ctx.wrong_type(node, where + " devices", "\"all\", a count or a list");
    return std::nullopt;
  }
  std::vector<std::string> list;
  std::unordered_set<std::string> seen;  // de-duplication in O(n): lists may be long (issue 13)
  bool ok = true;
  for (const auto& item : node) {
    if (!item.IsScalar() || !valid_device_reference(item.Scalar())) {
      ctx.error(item, "unsupported device " + (item.IsScalar() ? "\"" + item.Scalar() + "\"" : "entry") +
                          " in devices of " + where +
                          " (valid: GPU index, \"i:j\" MIG index, GPU-<uuid>, MIG-<uuid>)");
      ok = false;
      continue;
    }
    if (seen.insert(item.Scalar()).second) list.push_back(item.Scalar());
  }
  if (!ok) return std::nullopt;
  if (list.empty()) {
    ctx.error(node, "devices of " + where + " is an empty list");
    return std::nullopt;
  }
  selector.value = std::move(list);
  return selector;
}

std::optional<ReplicatedResource> parse_resource(const YAML::Node& node, const std::string& where,
                                                 bool rename_by_default, ParseContext& ctx) {
  if (!node.IsMap()) {
    ctx.wrong_type(node, where, "a mapping with name and replicas");
    return std::nullopt;
  }
  static const std::vector<std::string> known = {"name", "rename", "replicas", "devices"};
  ReplicatedResource r;
  bool ok = true;
  bool have_replicas = false;
  std::optional<YAML::Node> name_node;  // optional: assigning a bound YAML::Node writes through
  for (const auto& entry : node) {
    const auto key_text = ctx.key(entry.first, where);
    if (!key_text) continue;
    const std::string& key = *key_text;
    const YAML::Node& value = entry.second;
    if (key == "name" || key == "rename") {
      if (!value.IsScalar()) {
        ctx.wrong_type(value, where + "." + key, "a string");
        ok = false;
        continue;
      }
      auto normalised = normalise_resource_name(value.Scalar());
      if (key == "rename" && value.Scalar().empty()) continue;
      if (!normalised) {
        ctx.error(value, normalised.error().message);
        ok = false;
        continue;
      }
      (key == "name" ? r.name : r.rename) = *normalised;
      if (key == "name") name_node.emplace(value);
    } else if (key == "replicas") {
      const auto n = value.IsScalar() ? parse_uint(value.Scalar()) : std::nullopt;
      const uint64_t count = n.value_or(0);
      if (value.IsScalar() && value.Scalar().starts_with("-") && parse_uint(value.Scalar().substr(1))) {
        ctx.error(value, "replicas for " + where + " must be at least 1, got " + value.Scalar());
        ok = false;
      } else if (!n) {
        ctx.wrong_type(value, where + ".replicas", "a positive integer");
        ok = false;
      } else if (count < 1) {
        ctx.error(value, "replicas for " + where + " must be at least 1, got " + value.Scalar());
        ok = false;
      } else if (count > static_cast<uint64_t>(kMaxReplicas)) {
        ctx.error(value, "replicas for " + where + " must be at most " + std::to_string(kMaxReplicas) + ", got " +
                             value.Scalar());
        ok = false;
      } else {
        r.replicas = static_cast<int>(count);
        have_replicas = true;
      }
    } else if (key == "devices") {
      if (auto devices = parse_devices(value, where, ctx)) r.devices = *devices;
      else ok = false;
    } else {
      ctx.unknown_key(entry.first, where, known);
    }
  }
  if (r.name.empty() && !name_node && ok) {
    ctx.error(node, "no resource name specified in " + where);
    ok = false;
  }
  if (!have_replicas && ok) {
    ctx.error(node, "no replicas specified for " + where);
    ok = false;
  }
  // The advertised name must be valid too: renameByDefault appends ".shared".
  if (ok && r.rename.empty() && rename_by_default && r.replicas > 1) {
    auto shared = normalise_resource_name(r.name + ".shared");
    if (!shared) {
      ctx.error(*name_node, shared.error().message + " (renameByDefault adds \".shared\")");
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return r;
}

void parse_replicated(const YAML::Node& node, const std::string& where, ParseContext& ctx,
                      ReplicatedResources& out) {
  if (!node.IsMap()) {
    ctx.wrong_type(node, where, "a mapping");
    return;
  }
  static const std::vector<std::string> known = {"renameByDefault", "failRequestsGreaterThanOne",
                                                 "resources"};
  std::optional<YAML::Node> resources_node;
  for (const auto& entry : node) {
    const auto key_text = ctx.key(entry.first, where);
    if (!key_text) continue;
    const std::string& key = *key_text;
    const YAML::Node& value = entry.second;
    if (key == "renameByDefault" || key == "failRequestsGreaterThanOne") {
      auto b = value.IsScalar() ? parse_bool(value.Scalar()) : std::nullopt;
      if (!b) {
        ctx.wrong_type(value, where + "." + key, "a boolean (true or false)");
        continue;
      }
      if (key == "renameByDefault") out.rename_by_default = *b;
      else out.fail_requests_greater_than_one = *b;
    } else if (key == "resources") {
      resources_node.emplace(value);
    } else {
      ctx.unknown_key(entry.first, where, known);
    }
  }
  if (!resources_node || resources_node->IsNull() ||
      (resources_node->IsSequence() && resources_node->size() == 0)) {
    ctx.error(resources_node ? *resources_node : node, "no resources specified in " + where);
    return;
  }
  const YAML::Node& resources = *resources_node;
  if (!resources.IsSequence()) {
    ctx.wrong_type(resources, where + ".resources", "a list");
    return;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < resources.size(); ++i) {
    const std::string item = where + ".resources[" + std::to_string(i) + "]";
    auto r = parse_resource(resources[i], item, out.rename_by_default, ctx);
    if (!r) continue;
    if (!names.insert(r->name).second) {
      ctx.error(resources[i], "resource \"" + r->name + "\" is listed more than once in " + where);
      continue;
    }
    ctx.remember(where + ".resources[" + std::to_string(out.resources.size()) + "]", resources[i]);
    out.resources.push_back(std::move(*r));
  }
}

}  // namespace

void parse_sharing_section(const YAML::Node& node, ParseContext& ctx, Config& config) {
  if (node.IsNull()) return;
  if (!node.IsMap()) {
    ctx.wrong_type(node, "sharing", "a mapping");
    return;
  }
  static const std::vector<std::string> known = {"timeSlicing", "mps"};
  for (const auto& entry : node) {
    const auto key_text = ctx.key(entry.first, "sharing");
    if (!key_text) continue;
    const std::string& key = *key_text;
    if (key == "timeSlicing") {
      if (entry.second.IsNull()) continue;
      ReplicatedResources r;
      parse_replicated(entry.second, "sharing.timeSlicing", ctx, r);
      config.time_slicing = std::move(r);
      ctx.remember("sharing.timeSlicing", entry.first);
      ctx.set_origin("sharing.timeSlicing");
    } else if (key == "mps") {
      if (entry.second.IsNull()) continue;
      ReplicatedResources r;
      parse_replicated(entry.second, "sharing.mps", ctx, r);
      config.mps = std::move(r);
      ctx.remember("sharing.mps", entry.first);
      ctx.set_origin("sharing.mps");
    } else {
      ctx.unknown_key(entry.first, "sharing", known);
    }
  }
}

}  // namespace kgpu::config_detail
