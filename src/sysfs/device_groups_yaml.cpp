#include "sysfs/device_groups_yaml.h"

#include <algorithm>
#include <set>
#include <string>

#include "config/config.h"  // kMaxReplicas

namespace kgpu {
namespace {

std::string at(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.is_null() || m.line < 0) return "";
  return " (line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1) + ")";
}

// Every key of `n` must be text and one of `known` ("(valid: a, b)" names them otherwise).
Status only_known_keys(const YAML::Node& n, const std::vector<std::string>& known, const std::string& where) {
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) return Error::invalid("a key in " + where + " must be text" + at(kv.first));
    const std::string key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string valid;
      for (const auto& k : known) valid += (valid.empty() ? "" : ", ") + k;
      return Error::invalid(where + ": unknown key \"" + key + "\" (valid: " + valid + ")" + at(kv.first));
    }
  }
  return ok_status();
}

// A mapping key as text. YAML allows lists and maps as keys (`{[a]: 1}`); ours never are.
Result<std::string> key_text(const YAML::Node& key, const std::string& where) {
  if (!key.IsScalar()) return Error::invalid("a key in " + where + " must be text" + at(key));
  return key.Scalar();
}

Result<std::string> scalar(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) return Error::invalid(what + " must be a string" + at(n));
  return n.Scalar();
}

Result<std::vector<std::string>> paths(const YAML::Node& n, const std::string& what) {
  if (!n.IsSequence()) return Error::invalid(what + " must be a list of paths" + at(n));
  std::vector<std::string> out;
  for (const auto& item : n) {
    auto s = scalar(item, what + " entry");
    if (!s) return s.error();
    if (s->empty() || s->front() != '/') return Error::invalid(what + " entry \"" + *s + "\" must be an absolute path" + at(item));
    out.push_back(*s);
  }
  return out;
}

bool valid_resource(const std::string& r) {
  size_t slash = r.find('/');
  return slash != std::string::npos && slash > 0 && slash + 1 < r.size() && r.find('/', slash + 1) == std::string::npos &&
         r.find(' ') == std::string::npos;
}

Result<GenericDeviceGroup> parse_group(const YAML::Node& n) {
  if (!n.IsMap()) return Error::invalid("deviceGroups entry must be a map" + at(n));
  static const std::vector<std::string> known = {"resource", "devices", "sharedDevices", "replicas",
                                                 "permissions", "mounts", "env", "sysfs"};
  GenericDeviceGroup g;
  if (auto keys = only_known_keys(n, known, "deviceGroups"); !keys) return keys.error();
  if (!n["resource"]) return Error::invalid("deviceGroups entry has no \"resource\"" + at(n));
  auto res = scalar(n["resource"], "resource");
  if (!res) return res.error();
  if (!valid_resource(*res))
    return Error::invalid("resource \"" + *res + "\" must look like <domain>/<name>" + at(n["resource"]));
  g.resource = *res;
  if (!n["devices"]) return Error::invalid("device group " + g.resource + " has no \"devices\"" + at(n));
  auto devs = paths(n["devices"], "devices");
  if (!devs) return devs.error();
  if (devs->empty()) return Error::invalid("device group " + g.resource + ": \"devices\" is empty" + at(n["devices"]));
  g.devices = std::move(*devs);
  if (n["sharedDevices"]) {
    auto shared = paths(n["sharedDevices"], "sharedDevices");
    if (!shared) return shared.error();
    g.shared_devices = std::move(*shared);
  }
  if (n["replicas"]) {
    int r = 0;
    if (!n["replicas"].IsScalar() || !YAML::convert<int>::decode(n["replicas"], r) || r < 1 || r > kMaxReplicas)
      return Error::invalid("replicas must be an integer from 1 to " + std::to_string(kMaxReplicas) +
                            at(n["replicas"]));
    g.replicas = r;
  }
  if (n["permissions"]) {
    auto p = scalar(n["permissions"], "permissions");
    if (!p) return p.error();
    if (p->empty() || p->find_first_not_of("rwm") != std::string::npos)
      return Error::invalid("permissions \"" + *p + "\" must be made of r, w, m" + at(n["permissions"]));
    g.permissions = *p;
  }
  if (n["mounts"]) {
    if (!n["mounts"].IsSequence()) return Error::invalid("mounts must be a list" + at(n["mounts"]));
    for (const auto& m : n["mounts"]) {
      if (!m.IsMap() || !m["containerPath"] || !m["hostPath"])
        return Error::invalid("each mount needs containerPath and hostPath" + at(m));
      if (auto keys = only_known_keys(m, {"containerPath", "hostPath", "readOnly"}, "deviceGroups mounts"); !keys)
        return keys.error();
      GenericMount gm;
      auto c = scalar(m["containerPath"], "containerPath");
      if (!c) return c.error();
      auto h = scalar(m["hostPath"], "hostPath");
      if (!h) return h.error();
      gm.container_path = *c;
      gm.host_path = *h;
      if (m["readOnly"] && !YAML::convert<bool>::decode(m["readOnly"], gm.read_only))
        return Error::invalid("readOnly must be true or false" + at(m["readOnly"]));
      g.mounts.push_back(std::move(gm));
    }
  }
  if (n["sysfs"]) {
    if (!n["sysfs"].IsSequence()) return Error::invalid("sysfs must be a list of {path, equals}" + at(n["sysfs"]));
    for (const auto& m : n["sysfs"]) {
      if (!m.IsMap() || !m["path"] || !m["equals"]) return Error::invalid("each sysfs match needs path and equals" + at(m));
      if (auto keys = only_known_keys(m, {"path", "equals"}, "deviceGroups sysfs"); !keys) return keys.error();
      auto p = scalar(m["path"], "sysfs path");
      if (!p) return p.error();
      auto e = scalar(m["equals"], "sysfs equals");
      if (!e) return e.error();
      if (p->empty() || p->front() != '/') return Error::invalid("sysfs path \"" + *p + "\" must be absolute (under the sysfs root)" + at(m["path"]));
      g.sysfs_matches.push_back({*p, *e});
    }
  }
  if (n["env"]) {
    if (!n["env"].IsMap()) return Error::invalid("env must be a map of NAME: value" + at(n["env"]));
    for (const auto& kv : n["env"]) {
      auto name = key_text(kv.first, "env");
      if (!name) return name.error();
      auto v = scalar(kv.second, "env value");
      if (!v) return v.error();
      g.env[*name] = *v;
    }
  }
  return g;
}

}  // namespace

Result<std::vector<GenericDeviceGroup>> parse_device_groups(const YAML::Node& node) {
  std::vector<GenericDeviceGroup> out;
  if (!node || node.IsNull()) return out;
  if (!node.IsSequence()) return Error::invalid("deviceGroups must be a list" + at(node));
  std::set<std::string> seen;
  for (const auto& item : node) {
    auto g = parse_group(item);
    if (!g) return g.error();
    if (!seen.insert(g->resource).second)
      return Error::invalid("device group " + g->resource + " is declared twice" + at(item));
    out.push_back(std::move(*g));
  }
  return out;
}

}  // namespace kgpu
