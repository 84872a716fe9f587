#include "kube/node_capacity.h"

#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

namespace kgpu::kube {
namespace {

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

// A DNS-1123 subdomain: dot-separated labels of [a-z0-9-], each starting and ending alphanumeric.
std::string subdomain_problem(std::string_view s) {
  if (s.empty()) return "is empty";
  if (s.size() > 253) return "is longer than 253 characters";
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('.', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view label = s.substr(start, end - start);
    if (label.empty()) return "has an empty part between dots";
    if (label.size() > 63) return "has a part longer than 63 characters";
    for (char c : label)
      if (!lower_alnum(c) && c != '-')
        return std::string("holds '") + c + "' (only lower-case letters, digits, '-' and '.')";
    if (label.front() == '-' || label.back() == '-') return "has a part that starts or ends with '-'";
    start = end + 1;
  }
  return "";
}

// The name part of a qualified name: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63.
std::string name_part_problem(std::string_view s) {
  if (s.empty()) return "the part after '/' is empty";
  if (s.size() > 63) return "the part after '/' is longer than 63 characters";
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '_' && c != '.')
      return std::string("the part after '/' holds '") + c + "' (only letters, digits, '-', '_' and '.')";
  if (!alnum(s.front()) || !alnum(s.back())) return "the part after '/' must start and end with a letter or digit";
  return "";
}

std::string json_patch(const nlohmann::json& op) { return nlohmann::json::array({op}).dump(); }

}  // namespace

Status check_extended_resource_name(std::string_view name) {
  const std::string quoted = "\"" + std::string(name) + "\"";
  const auto slash = name.find('/');
  if (slash == std::string_view::npos)
    return Error::invalid("extended resource name " + quoted +
                          " needs a domain prefix, as in example.com/dongle (a name without one is a "
                          "Kubernetes-native resource)");
  const std::string_view domain = name.substr(0, slash);
  const std::string_view rest = name.substr(slash + 1);
  if (auto problem = subdomain_problem(domain); !problem.empty())
    return Error::invalid("extended resource name " + quoted + ": the domain \"" + std::string(domain) + "\" " +
                          problem);
  if (auto problem = name_part_problem(rest); !problem.empty())
    return Error::invalid("extended resource name " + quoted + ": " + problem);
  if (domain == "kubernetes.io" || (domain.size() > 14 && domain.ends_with(".kubernetes.io")))
    return Error::invalid("extended resource name " + quoted +
                          ": the kubernetes.io domain is reserved for Kubernetes' own resources; use your own "
                          "domain, as in example.com/" + std::string(rest));
  if (name.starts_with("requests."))
    return Error::invalid("extended resource name " + quoted +
                          ": must not start with \"requests.\" (resource quotas use that prefix)");
  // Quota refers to it as "requests.<name>", which must be a qualified name too.
  if (domain.size() + 9 > 253)
    return Error::invalid("extended resource name " + quoted + ": the domain is too long (\"requests.\" + domain "
                          "must fit 253 characters)");
  return ok_status();
}

Result<std::string> check_extended_resource_quantity(std::string_view quantity) {
  const std::string quoted = "\"" + std::string(quantity) + "\"";
  const std::string usage = " (an extended resource is a whole number, not negative: 4, 2k or 1Ki)";
  size_t digits = 0;
  while (digits < quantity.size() && quantity[digits] >= '0' && quantity[digits] <= '9') ++digits;
  if (digits == 0) return Error::invalid("quantity " + quoted + " is not a number" + usage);
  const std::string_view suffix = quantity.substr(digits);
  struct Multiplier {
    std::string_view suffix;
    uint64_t factor;
  };
  static constexpr Multiplier kMultipliers[] = {
      {"", 1},
      {"k", 1000ULL},
      {"M", 1000ULL * 1000},
      {"G", 1000ULL * 1000 * 1000},
      {"T", 1000ULL * 1000 * 1000 * 1000},
      {"P", 1000ULL * 1000 * 1000 * 1000 * 1000},
      {"E", 1000ULL * 1000 * 1000 * 1000 * 1000 * 1000},
      {"Ki", 1ULL << 10},
      {"Mi", 1ULL << 20},
      {"Gi", 1ULL << 30},
      {"Ti", 1ULL << 40},
      {"Pi", 1ULL << 50},
      {"Ei", 1ULL << 60},
  };
  const Multiplier* found = nullptr;
  for (const auto& m : kMultipliers)
    if (m.suffix == suffix) found = &m;
  if (!found) {
    if (suffix.starts_with(".")) return Error::invalid("quantity " + quoted + " is not whole" + usage);
    if (suffix == "m") return Error::invalid("quantity " + quoted + " is in thousandths (m)" + usage);
    return Error::invalid("quantity " + quoted + " has an unknown suffix \"" + std::string(suffix) +
                          "\" (k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi or Ei)" + usage);
  }
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    const uint64_t d = static_cast<uint64_t>(quantity[i] - '0');
    if (value > (kMax - d) / 10) return Error::invalid("quantity " + quoted + " is too large (at most 2^63-1)");
    value = value * 10 + d;
  }
  if (value != 0 && value > kMax / found->factor)
    return Error::invalid("quantity " + quoted + " is too large (at most 2^63-1)");
  return std::string(quantity);
}

Status check_node_name(std::string_view node) {
  if (auto problem = subdomain_problem(node); !problem.empty())
    return Error::invalid("node name \"" + std::string(node) + "\" " + problem);
  return ok_status();
}

std::string escape_json_pointer(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string capacity_add_patch(std::string_view name, std::string_view quantity) {
  return json_patch({{"op", "add"},
                     {"path", "/status/capacity/" + escape_json_pointer(name)},
                     {"value", std::string(quantity)}});
}

std::string capacity_remove_patch(std::string_view name) {
  return json_patch({{"op", "remove"}, {"path", "/status/capacity/" + escape_json_pointer(name)}});
}

Result<CapacitySetting> parse_capacity_setting(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos)
    return Error::invalid("\"" + std::string(text) + "\" is not NAME=QTY (as in example.com/dongle=4)");
  CapacitySetting setting{std::string(text.substr(0, eq)), ""};
  if (auto name = check_extended_resource_name(setting.name); !name) return name.error();
  auto quantity = check_extended_resource_quantity(text.substr(eq + 1));
  if (!quantity) return quantity.error();
  setting.quantity = std::move(*quantity);
  return setting;
}

}  // namespace kgpu::kube
