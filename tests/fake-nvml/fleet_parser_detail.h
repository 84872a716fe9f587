// Helpers of the fleet parser: YAML nodes that remember their field path so every error can say
// "FILE:LINE:COLUMN: gpus[2].pci.bus_id: problem". Internal to the parser.
#pragma once
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kgpu::fake_nvml::detail {

struct FleetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Context {
  std::string path;
};

class Layered;

class Field {
 public:
  Field(const Context& ctx, YAML::Node node, std::string path) : ctx_(&ctx), node_(std::move(node)), path_(std::move(path)) {}

  FleetError error(const std::string& message) const {
    YAML::Mark m = node_.Mark();
    std::string where = ctx_->path;
    if (!m.is_null()) where += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
    return FleetError(where + ": " + (path_.empty() ? "(top level)" : path_) + ": " + message);
  }

  std::string str() const {
    if (!node_.IsScalar()) throw error("expected a single value");
    return node_.Scalar();
  }
  unsigned long long uint64() const {
    std::string text = str();
    int base = 10;
    const char* begin = text.c_str();
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      base = 16;
      begin += 2;
    }
    unsigned long long value = 0;
    const char* end = text.c_str() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, value, base);
    if (ec != std::errc() || ptr != end || begin == end) throw error("expected an unsigned integer, got '" + text + "'");
    return value;
  }
  unsigned uint() const {
    unsigned long long v = uint64();
    if (v > 0xFFFFFFFFULL) throw error("value too large");
    return static_cast<unsigned>(v);
  }
  int integer() const {
    std::string text = str();
    int value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) throw error("expected an integer, got '" + text + "'");
    return value;
  }
  bool boolean() const {
    std::string text = str();
    if (text == "true" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "no" || text == "off") return false;
    throw error("expected true or false, got '" + text + "'");
  }
  std::vector<Field> sequence() const {
    if (!node_.IsSequence()) throw error("expected a list");
    std::vector<Field> items;
    for (size_t i = 0; i < node_.size(); ++i)
      items.emplace_back(*ctx_, node_[i], path_ + "[" + std::to_string(i) + "]");
    return items;
  }
  std::vector<std::pair<Field, Field>> entries() const {
    if (!node_.IsMap()) throw error("expected a mapping");
    std::vector<std::pair<Field, Field>> items;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      std::string key = it->first.Scalar();
      items.emplace_back(Field(*ctx_, it->first, join(key)), Field(*ctx_, it->second, join(key)));
    }
    return items;
  }
  Layered as_map(const std::set<std::string>& keys) const;
  Layered as_map_over(const Field& defaults, const std::set<std::string>& keys) const;

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  const Context& ctx() const { return *ctx_; }
  std::string join(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  void check_keys(const std::set<std::string>& keys) const {
    if (!node_.IsMap()) throw error("expected a mapping");
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (!keys.count(key)) {
        std::string known;
        for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
        throw Field(*ctx_, it->first, join(key)).error("unknown field '" + key + "' (known: " + known + ")");
      }
    }
  }

 private:
  const Context* ctx_;
  YAML::Node node_;
  std::string path_;
};

// A mapping seen through layers (a GPU entry over `defaults`): lookups take the first layer that has
// the key, so a GPU's own values win.
class Layered {
 public:
  Layered(Field anchor, std::vector<Field> layers) : anchor_(std::move(anchor)), layers_(std::move(layers)) {}

  static Layered root(const Context& ctx, const YAML::Node& node, const std::set<std::string>& keys) {
    Field f(ctx, node, "");
    f.check_keys(keys);
    return Layered(f, {f});
  }

  std::optional<Field> get(const std::string& key) const {
    for (const auto& layer : layers_)
      if (layer.node()[key]) return Field(layer.ctx(), layer.node()[key], anchor_.join(key));
    return std::nullopt;
  }
  Field require(const std::string& key) const {
    if (auto f = get(key)) return *f;
    throw anchor_.error("missing required field '" + key + "'");
  }
  Layered child(const std::string& key, const std::set<std::string>& keys) const {
    std::vector<Field> sub;
    std::optional<Field> anchor;
    for (const auto& layer : layers_) {
      if (!layer.node()[key]) continue;
      Field f(layer.ctx(), layer.node()[key], anchor_.join(key));
      f.check_keys(keys);
      if (!anchor) anchor = f;
      sub.push_back(f);
    }
    // An absent section still reports errors at its parent's position, under its own name.
    if (!anchor) anchor = Field(anchor_.ctx(), anchor_.node(), anchor_.join(key));
    return Layered(*anchor, std::move(sub));
  }

 private:
  Field anchor_;
  std::vector<Field> layers_;
};

inline Layered Field::as_map(const std::set<std::string>& keys) const {
  check_keys(keys);
  return Layered(*this, {*this});
}

inline Layered Field::as_map_over(const Field& defaults, const std::set<std::string>& keys) const {
  check_keys(keys);
  Field d(defaults.ctx(), defaults.node(), "defaults");
  d.check_keys(keys);
  return Layered(*this, {*this, d});
}

}  // namespace kgpu::fake_nvml::detail
