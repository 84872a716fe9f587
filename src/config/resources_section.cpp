// `resources:` (gpus / mig renaming patterns; NVIDIA parses but ignores them, kgpu honours them).
// `imex:` is a plain settings section (config/settings.cpp), checked in config/checks.cpp.
#include "config/parse_context.h"
#include "config/resource_names.h"
#include "config/settings.h"

namespace kgpu::config_detail {
namespace {

void parse_patterns(const YAML::Node& node, const std::string& where, ParseContext& ctx,
                    std::vector<ResourcePattern>& out) {
  if (node.IsNull()) return;
  if (!node.IsSequence()) {
    ctx.wrong_type(node, where, "a list of {pattern, name}");
    return;
  }
  static const std::vector<std::string> known = {"pattern", "name"};
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    const std::string here = where + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) {
      ctx.wrong_type(item, here, "a mapping with pattern and name");
      continue;
    }
    ResourcePattern p;
    bool have_pattern = false, have_name = false, ok = true;
    for (const auto& entry : item) {
      const auto key_text = ctx.key(entry.first, here);
      if (!key_text) continue;
      const std::string& key = *key_text;
      if (key != "pattern" && key != "name") {
        ctx.unknown_key(entry.first, here, known);
        continue;
      }
      if (!entry.second.IsScalar() || entry.second.Scalar().empty()) {
        ctx.wrong_type(entry.second, here + "." + key, "a non-empty string");
        ok = false;
        continue;
      }
      if (key == "pattern") {
        p.pattern = entry.second.Scalar();
        have_pattern = true;
      } else {
        auto name = normalise_resource_name(entry.second.Scalar());
        if (!name) {
          ctx.error(entry.second, name.error().message);
          ok = false;
          continue;
        }
        p.name = *name;
        have_name = true;
      }
    }
    if (!ok) continue;
    if (!have_pattern) ctx.error(item, "resources must have a 'pattern' field set (" + here + ")");
    if (!have_name) ctx.error(item, "resources must have a 'name' field set (" + here + ")");
    if (have_pattern && have_name) out.push_back(std::move(p));
  }
}

}  // namespace

void parse_resources_section(const YAML::Node& node, ParseContext& ctx, Config& config) {
  if (node.IsNull()) return;
  if (!node.IsMap()) {
    ctx.wrong_type(node, "resources", "a mapping");
    return;
  }
  static const std::vector<std::string> known = {"gpus", "mig"};
  for (const auto& entry : node) {
    const auto key_text = ctx.key(entry.first, "resources");
    if (!key_text) continue;
    const std::string& key = *key_text;
    if (key == "gpus") {
      parse_patterns(entry.second, "resources.gpus", ctx, config.gpu_resources);
      ctx.set_origin("resources.gpus");
    } else if (key == "mig") {
      parse_patterns(entry.second, "resources.mig", ctx, config.mig_resources);
      ctx.set_origin("resources.mig");
    } else {
      ctx.unknown_key(entry.first, "resources", known);
    }
  }
}

}  // namespace kgpu::config_detail
