// ResourceClaim parsing: only the fields the node plugin needs, each checked for its type; unknown
// fields are ignored (the API grows: tolerations, bindingConditions, consumedCapacity...).
#include "dra/model/claim.h"

#include "core/quantity.h"

#include <algorithm>

#include "core/json_depth.h"

namespace kgpu::dra {

namespace {

using nlohmann::json;

constexpr size_t kQuoteLimit = 80;

bool is_supported_api_version(const std::string& v) {
  return v == "resource.k8s.io/v1" || v == "resource.k8s.io/v1beta2" || v == "resource.k8s.io/v1beta1";
}

const char* type_name(const json& j) { return j.type_name(); }

// Reads typed members of one JSON object; the first problem wins and names the field's path.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  // nullptr when absent or null (Kubernetes writes optional fields as absent, clients may send null).
  const json* find(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  std::optional<Error> string(const char* key, std::string& out, bool required) const {
    const json* v = find(key);
    if (!v) return required ? std::optional<Error>(missing(key)) : std::nullopt;
    if (!v->is_string()) return wrong_type(key, "a string", *v);
    out = v->get_ref<const std::string&>();
    if (required && out.empty()) return Error::invalid(field(key) + " is empty");
    return std::nullopt;
  }

  std::optional<Error> boolean(const char* key, bool& out) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) return wrong_type(key, "a boolean", *v);
    out = v->get<bool>();
    return std::nullopt;
  }

  // An object or array member; `required` makes absence an error, else returns nullptr.
  Result<const json*> nested(const char* key, json::value_t type, bool required) const {
    const json* v = find(key);
    if (!v) {
      if (required) return missing(key);
      return static_cast<const json*>(nullptr);
    }
    if (v->type() != type) return wrong_type(key, type == json::value_t::array ? "an array" : "an object", *v);
    return v;
  }

  std::string field(const char* key) const { return path_ + "." + key; }

 private:
  Error missing(const char* key) const { return Error::invalid(field(key) + " is missing"); }
  Error wrong_type(const char* key, const char* expected, const json& v) const {
    return Error::invalid(field(key) + " must be " + expected + ", not " + type_name(v));
  }

  const json& object_;
  std::string path_;
};

std::string element(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

Result<AllocationResult> parse_result(const json& j, const std::string& path) {
  if (!j.is_object()) return Error::invalid(path + " must be an object, not " + type_name(j));
  ObjectReader r(j, path);
  AllocationResult out;
  std::string share;
  for (auto e : {r.string("request", out.request, true), r.string("driver", out.driver, true),
                 r.string("pool", out.pool, true), r.string("device", out.device, true),
                 r.boolean("adminAccess", out.admin_access), r.string("shareID", share, false)})
    if (e) return *e;
  if (!share.empty()) out.share_id = share;
  auto consumed = r.nested("consumedCapacity", json::value_t::object, false);
  if (!consumed) return consumed.error();
  if (*consumed)
    for (auto it = (*consumed)->begin(); it != (*consumed)->end(); ++it) {
      const std::string where = r.field("consumedCapacity") + "." + quote_text(it.key());
      if (!it->is_string()) return Error::invalid(where + " must be a quantity string, not " + type_name(*it));
      auto amount = parse_quantity_bytes(it->get_ref<const std::string&>());
      if (!amount) return Error::invalid(where + ": " + amount.error().message);
      out.consumed_capacity[it.key()] = *amount;
    }
  return out;
}

Result<OpaqueConfig> parse_config(const json& j, const std::string& path) {
  if (!j.is_object()) return Error::invalid(path + " must be an object, not " + type_name(j));
  ObjectReader r(j, path);
  OpaqueConfig out;
  std::string source;
  if (auto e = r.string("source", source, false)) return *e;
  if (source == "FromClass") out.source = OpaqueConfig::Source::FromClass;
  else if (source.empty() || source == "FromClaim") out.source = OpaqueConfig::Source::FromClaim;
  else return Error::invalid(r.field("source") + " must be FromClass or FromClaim, not " + quote_text(source));

  auto requests = r.nested("requests", json::value_t::array, false);
  if (!requests) return requests.error();
  if (*requests)
    for (size_t i = 0; i < (*requests)->size(); ++i) {
      const json& q = (**requests)[i];
      if (!q.is_string()) return Error::invalid(element(r.field("requests"), i) + " must be a string");
      out.requests.push_back(q.get<std::string>());
    }

  auto opaque = r.nested("opaque", json::value_t::object, false);
  if (!opaque) return opaque.error();
  if (!*opaque) return out;  // a config kind kgpu does not know: no driver, never applies
  ObjectReader o(**opaque, r.field("opaque"));
  if (auto e = o.string("driver", out.driver, true)) return *e;
  const json* params = o.find("parameters");
  if (!params) return Error::invalid(o.field("parameters") + " is missing");
  out.parameters = *params;
  return out;
}

template <typename T, typename Parse>
std::optional<Error> parse_list(const ObjectReader& r, const char* key, Parse parse, std::vector<T>& out) {
  auto list = r.nested(key, json::value_t::array, false);
  if (!list) return list.error();
  if (!*list) return std::nullopt;
  out.reserve((*list)->size());
  for (size_t i = 0; i < (*list)->size(); ++i) {
    auto item = parse((**list)[i], element(r.field(key), i));
    if (!item) return item.error();
    out.push_back(std::move(*item));
  }
  return std::nullopt;
}

Result<ResourceClaim> parse_object(const json& doc) {
  if (!doc.is_object()) return Error::invalid("ResourceClaim must be a JSON object, not " + std::string(type_name(doc)));
  ObjectReader top(doc, "ResourceClaim");
  ResourceClaim claim;
  if (auto e = top.string("apiVersion", claim.api_version, true)) return *e;
  if (!is_supported_api_version(claim.api_version))
    return Error::invalid("ResourceClaim apiVersion " + quote_text(claim.api_version) +
                          " is not resource.k8s.io/v1, v1beta2 or v1beta1");
  std::string kind;
  if (auto e = top.string("kind", kind, false)) return *e;
  if (!kind.empty() && kind != "ResourceClaim")
    return Error::invalid("object of kind " + quote_text(kind) + " is not a ResourceClaim");

  auto metadata = top.nested("metadata", json::value_t::object, true);
  if (!metadata) return metadata.error();
  ObjectReader meta(**metadata, "metadata");
  for (auto e : {meta.string("uid", claim.ref.uid, true), meta.string("namespace", claim.ref.ns, true),
                 meta.string("name", claim.ref.name, true)})
    if (e) return *e;

  auto status = top.nested("status", json::value_t::object, false);
  if (!status) return status.error();
  if (!*status) return claim;
  ObjectReader st(**status, "status");
  auto allocation = st.nested("allocation", json::value_t::object, false);
  if (!allocation) return allocation.error();
  if (!*allocation) return claim;
  claim.allocated = true;
  ObjectReader alloc(**allocation, "status.allocation");
  auto devices = alloc.nested("devices", json::value_t::object, false);
  if (!devices) return devices.error();
  if (!*devices) return claim;  // allocated, but nothing from any driver
  ObjectReader dev(**devices, "status.allocation.devices");
  if (auto e = parse_list(dev, "results", parse_result, claim.results)) return *e;
  if (auto e = parse_list(dev, "config", parse_config, claim.configs)) return *e;
  return claim;
}

}  // namespace

std::string AllocationResult::base_request() const {
  const auto slash = request.find('/');
  return slash == std::string::npos ? request : request.substr(0, slash);
}

bool OpaqueConfig::applies_to(const AllocationResult& result) const {
  if (requests.empty()) return true;
  const std::string base = result.base_request();
  return std::any_of(requests.begin(), requests.end(),
                     [&](const std::string& r) { return r == result.request || r == base; });
}

std::string quote_text(std::string_view text) {
  if (text.size() <= kQuoteLimit) return "\"" + std::string(text) + "\"";
  return "\"" + std::string(text.substr(0, kQuoteLimit)) + "...\" (" + std::to_string(text.size()) + " bytes)";
}

Result<ResourceClaim> parse_resource_claim(std::string_view text) {
  if (text.size() > kMaxClaimTextBytes)
    return Error::invalid("ResourceClaim is " + std::to_string(text.size()) + " bytes, more than the " +
                          std::to_string(kMaxClaimTextBytes) + " a Kubernetes object can be");
  // Before anything is built: opaque parameters nested 70,000 deep would overflow a later copy.
  if (auto deep = check_json_depth(text, "ResourceClaim"); !deep) return deep.error();
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error::invalid("ResourceClaim is not valid JSON");
  return parse_object(doc);
}

Result<std::vector<AllocationResult>> results_for(const ResourceClaim& claim, std::string_view driver,
                                                  std::string_view pool) {
  const std::string who = "ResourceClaim " + claim.ref.ns + "/" + claim.ref.name + " (" + claim.ref.uid + ")";
  if (!claim.allocated) return Error::precondition(who + " is not allocated");
  std::vector<AllocationResult> out;
  for (const auto& r : claim.results) {
    if (r.driver != driver) continue;
    if (r.pool != pool)
      return Error::invalid(who + ": device " + quote_text(r.device) + " of driver " + std::string(driver) +
                            " is allocated from pool " + quote_text(r.pool) + ", but this node serves pool " +
                            quote_text(pool));
    out.push_back(r);
  }
  if (out.empty()) return Error::invalid(who + " has no device allocated from driver " + std::string(driver));
  return out;
}

std::vector<const OpaqueConfig*> configs_for(const ResourceClaim& claim, std::string_view driver,
                                             const AllocationResult& result) {
  std::vector<const OpaqueConfig*> out;
  for (auto source : {OpaqueConfig::Source::FromClass, OpaqueConfig::Source::FromClaim})
    for (const auto& c : claim.configs)
      if (c.source == source && c.driver == driver && c.applies_to(result)) out.push_back(&c);
  return out;
}

}  // namespace kgpu::dra
