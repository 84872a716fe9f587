#include "dra/publish/resource_api.h"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>

#include "kube/resource_slice_list.h"

namespace kgpu::dra {
namespace {

// Discovery answers and ResourceClaims are a few KiB; a claim with many results is well under this.
constexpr size_t kMaxDiscoveryBytes = 4 * 1024 * 1024;
constexpr size_t kMaxClaimBytes = 2 * 1024 * 1024;

// The start of `text`, on one line and printable, for messages.
std::string printable(const std::string& text) {
  std::string out = text.substr(0, 200);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = ' ';
  return out;
}

// The start of an error answer, for messages.
std::string excerpt(const std::string& body) { return body.empty() ? body : ": " + printable(body); }

std::string hint(int status) {
  if (status == 401) return " (the service-account token was refused: expired or revoked?)";
  if (status == 403) return " (RBAC: the service account needs get on resource.k8s.io resourceclaims)";
  return "";
}

// Namespaces and object names are DNS labels / subdomains: lower-case letters, digits, '-' and
// '.'. Anything else (a '/', '?', '%') would change the request's path, so it is refused.
bool path_safe(const std::string& text) {
  return !text.empty() && text.size() <= 253 && text != "." && text != ".." &&
         std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
         });
}

}  // namespace

Result<KubernetesVersion> parse_kubernetes_version(const std::string& body) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return Error::invalid("GET /version: the answer is not a JSON object");
  // The leading decimal digits of `text` ("34+" -> 34); nullopt when there are none.
  auto number = [](std::string_view text) -> std::optional<int> {
    int value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end == text.data()) return std::nullopt;
    return value;
  };
  auto field = [&](const char* name) { return json.contains(name) && json[name].is_string() ? json[name].get<std::string>() : ""; };
  auto major = number(field("major"));
  auto minor = number(field("minor"));
  if (major && minor) return KubernetesVersion{*major, *minor};
  std::string git = field("gitVersion");  // "v1.35.0"
  if (!git.empty() && git[0] == 'v') git.erase(0, 1);
  const size_t dot = git.find('.');
  if (dot != std::string::npos) {
    auto git_major = number(std::string_view(git).substr(0, dot));
    auto git_minor = number(std::string_view(git).substr(dot + 1));
    if (git_major && git_minor) return KubernetesVersion{*git_major, *git_minor};
  }
  return Error::invalid("GET /version: no major/minor or gitVersion in \"" + printable(body) + "\"");
}

Result<KubernetesVersion> read_kubernetes_version(const kube::ApiClient& client, std::chrono::milliseconds deadline) {
  auto answer = client.get("/version", deadline, kMaxDiscoveryBytes);
  if (!answer) return answer.error();
  if (answer->status != 200)
    return Error::unavailable("GET /version: HTTP " + std::to_string(answer->status) + hint(answer->status) +
                              excerpt(answer->body));
  return parse_kubernetes_version(answer->body);
}

Result<std::string> choose_claim_version(const std::vector<std::string>& served) {
  for (const char* version : {"v1", "v1beta2", "v1beta1"})
    if (std::find(served.begin(), served.end(), version) != served.end()) return std::string(version);
  std::string list;
  for (const auto& v : served) list += (list.empty() ? "" : ", ") + v;
  return Error::precondition("resource.k8s.io serves " + (list.empty() ? std::string("no version") : list) +
                             "; kgpu reads ResourceClaims as v1, v1beta2 or v1beta1 (Kubernetes 1.32+)");
}

Result<std::vector<std::string>> ResourceApiDiscovery::served(const kube::ApiClient& client,
                                                              std::chrono::milliseconds deadline) {
  if (auto known_now = known()) return *known_now;
  const std::string path = "/apis/resource.k8s.io";
  auto answer = client.get(path, deadline, kMaxDiscoveryBytes);
  if (!answer) return answer.error();
  if (answer->status == 404)
    return Error::unavailable("GET " + path +
                              ": HTTP 404 (resource.k8s.io is not served: is DRA enabled in this cluster?)");
  if (answer->status != 200)
    return Error::unavailable("GET " + path + ": HTTP " + std::to_string(answer->status) + hint(answer->status) +
                              excerpt(answer->body));
  auto versions = kube::parse_api_group_versions(answer->body);
  if (!versions) return Error{versions.error().code, "GET " + path + ": " + versions.error().message};
  std::lock_guard lock(mu_);
  served_ = *versions;
  return *versions;
}

std::optional<std::vector<std::string>> ResourceApiDiscovery::known() const {
  std::lock_guard lock(mu_);
  return served_;
}

ClaimReader::ClaimReader(std::shared_ptr<ResourceApiDiscovery> discovery, kube::ApiServer server,
                         kube::Interrupter& interrupter, std::chrono::milliseconds deadline)
    : discovery_(std::move(discovery)), client_(std::move(server), interrupter), deadline_(deadline) {}

Result<std::string> ClaimReader::fetch(const std::string& ns, const std::string& name) const {
  if (!path_safe(ns) || !path_safe(name))
    return Error::invalid("ResourceClaim namespace and name must be DNS names, got \"" + printable(ns) + "\" and \"" +
                          printable(name) + "\"");
  const std::string what = "GET ResourceClaim " + ns + "/" + name;
  auto served = discovery_->served(client_, deadline_);
  if (!served) return Error{served.error().code, what + ": " + served.error().message};
  auto version = choose_claim_version(*served);
  if (!version) return Error{version.error().code, what + ": " + version.error().message};
  auto answer = client_.get("/apis/resource.k8s.io/" + *version + "/namespaces/" + ns + "/resourceclaims/" + name,
                            deadline_, kMaxClaimBytes);
  if (!answer) return Error{answer.error().code, what + ": " + answer.error().message};
  if (answer->status != 200)
    return Error::unavailable(what + " (resource.k8s.io/" + *version + "): HTTP " + std::to_string(answer->status) +
                              hint(answer->status) + excerpt(answer->body));
  return std::move(answer->body);
}

}  // namespace kgpu::dra
