#include "kube/api_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/safe_file.h"

namespace kgpu::kube {
namespace {

std::string env_or_empty(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

}  // namespace

Result<std::string> read_token_file(const std::string& path) {
  // The shared bounded read: regular files only, a FIFO refused without blocking, size capped.
  auto read = read_regular_file(path, kMaxTokenBytes);
  if (!read) return read.error();
  std::string text = std::move(*read);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return Error::not_found(path + " is empty");
  return text;
}

Result<ApiServer> find_api_server(const std::map<std::string, std::string>& env,
                                  const std::string& service_account_dir) {
  if (auto url = env_or_empty(env, "KGPU_KUBE_API"); !url.empty())
    return ApiServer{url, env_or_empty(env, "KGPU_KUBE_TOKEN"), "", ""};
  std::string host = env_or_empty(env, "KUBERNETES_SERVICE_HOST");
  std::string port = env_or_empty(env, "KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty())
    return Error::not_found(
        "not running in a pod (KUBERNETES_SERVICE_HOST/PORT unset) and KGPU_KUBE_API is not set");
  std::string token_file = service_account_dir + "/token";
  auto token = read_token_file(token_file);
  if (!token)
    return Error::not_found("no service account token (" + token.error().message +
                            "; is automountServiceAccountToken off?)");
  if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6 service address
  return ApiServer{"https://" + host + ":" + port, *token, service_account_dir + "/ca.crt", token_file};
}

}  // namespace kgpu::kube
