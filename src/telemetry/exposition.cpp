#include "telemetry/exposition.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "config/xid_policy.h"
#include "metrics/metrics.h"

namespace kgpu::telemetry {

namespace {

void label(std::string& out, const char* key, std::string_view value) {
  out += ',';
  out += key;
  out += "=\"";
  out += escape_label_value(value);
  out += '"';
}

// gpu ... Hostname, DCGM_FI_DRIVER_VERSION: the part every sample of the entity shares.
void identity_labels(std::string& out, const NodeLabels& node, const Target& t) {
  out += "gpu=\"";
  out += std::to_string(t.gpu_index);
  out += '"';
  label(out, "UUID", t.uuid);
  label(out, "pci_bus_id", t.pci_bus_id);
  label(out, "device", "nvidia" + std::to_string(t.gpu_index));
  label(out, "modelName", t.model_name);
  if (t.gpu_instance_id) {
    label(out, "GPU_I_PROFILE", t.gpu_instance_profile);
    label(out, "GPU_I_ID", std::to_string(*t.gpu_instance_id));
  }
  if (!node.hostname.empty()) label(out, "Hostname", node.hostname);
  label(out, "DCGM_FI_DRIVER_VERSION", node.driver_version);
}

void value_text(std::string& out, const FieldInfo& field, double v) {
  char buf[64];
  if (field.floating) {
    std::snprintf(buf, sizeof buf, "%f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(std::llround(v)));
  }
  out += buf;
}

}  // namespace

void render_dcgm(const NodeLabels& node, const std::vector<Target>& targets, const std::vector<Reading>& readings,
                 const std::vector<std::vector<Owner>>& owners, std::string& out) {
  static const std::vector<Owner> kNoOwner;
  // Identity labels once per entity, not once per sample.
  std::vector<std::string> identities(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) identity_labels(identities[i], node, targets[i]);

  for (size_t f = 0; f < kFieldCount; ++f) {
    const Field field = static_cast<Field>(f);
    const FieldInfo& fi = kFields[f];
    bool header = false;
    for (size_t i = 0; i < targets.size() && i < readings.size(); ++i) {
      const auto& v = readings[i][field];
      if (!v) continue;
      if (!header) {
        out += "# HELP ";
        out += fi.name;
        out += ' ';
        out += fi.help;
        out += "\n# TYPE ";
        out += fi.name;
        out += ' ';
        out += fi.type;
        out += '\n';
        header = true;
      }
      const auto& who = i < owners.size() ? owners[i] : kNoOwner;
      const size_t samples = who.empty() ? 1 : who.size();
      for (size_t s = 0; s < samples; ++s) {
        out += fi.name;
        out += '{';
        out += identities[i];
        if (!who.empty()) label(out, "container", who[s].container);
        if (field == Field::XidErrors) {
          const auto xid = static_cast<uint64_t>(*v);
          label(out, "err_code", std::to_string(xid));
          label(out, "err_msg", xid == 0 ? std::string("No Error") : xid_meaning(xid));
        }
        if (!who.empty()) {
          label(out, "namespace", who[s].pod_namespace);
          label(out, "pod", who[s].pod);
        }
        out += "} ";
        value_text(out, fi, *v);
        out += '\n';
      }
    }
  }
}

}  // namespace kgpu::telemetry
