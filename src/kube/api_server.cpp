#include "kube/api_server.h"

#include <fstream>
#include <sstream>

namespace kgpu::kube {
namespace {

std::string env_or_empty(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

std::string trimmed_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<ApiServer> find_api_server(const std::map<std::string, std::string>& env,
                                  const std::string& service_account_dir) {
  if (auto url = env_or_empty(env, "KGPU_KUBE_API"); !url.empty())
    return ApiServer{url, env_or_empty(env, "KGPU_KUBE_TOKEN"), ""};
  std::string host = env_or_empty(env, "KUBERNETES_SERVICE_HOST");
  std::string port = env_or_empty(env, "KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty())
    return Error::not_found(
        "not running in a pod (KUBERNETES_SERVICE_HOST/PORT unset) and KGPU_KUBE_API is not set");
  std::string token = trimmed_file(service_account_dir + "/token");
  if (token.empty())
    return Error::not_found("no service account token at " + service_account_dir +
                            "/token (is automountServiceAccountToken off?)");
  if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6 service address
  return ApiServer{"https://" + host + ":" + port, token, service_account_dir + "/ca.crt"};
}

}  // namespace kgpu::kube
