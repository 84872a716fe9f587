#include "kube/api_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kgpu::kube {
namespace {

std::string env_or_empty(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

}  // namespace

Result<std::string> read_token_file(const std::string& path) {
  // O_NONBLOCK: a FIFO planted at the path must not hang the caller; fstat then refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Error::not_found("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error::invalid(path + " is not a regular file");
  }
  std::string text;
  char buf[4096];
  while (text.size() <= kMaxTokenBytes) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return Error::unavailable("cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (text.size() > kMaxTokenBytes)
    return Error::invalid(path + " is larger than " + std::to_string(kMaxTokenBytes) + " bytes: not a token");
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
