#include "server/socket_staging.h"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace kgpu::server {

Status check_socket_path(const std::string& path) {
  constexpr size_t max_len = sizeof(sockaddr_un::sun_path) - 1;  // room for the terminating NUL
  if (path.size() > max_len)
    return Error::invalid("socket path " + path + " is " + std::to_string(path.size()) +
                          " bytes long; a unix socket path may be at most " + std::to_string(max_len) +
                          " bytes: choose a shorter --kubelet-socket directory");
  return ok_status();
}

Result<SocketStaging> SocketStaging::create(const std::string& dir) {
  std::string templ = dir + "/.kgpu-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {  // mode 0700
    int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      return Error::unavailable("the device-plugin directory " + dir + " does not exist (" + std::strerror(err) +
                                "); the kubelet creates it when it starts");
    return Error::unavailable("cannot create a folder in the device-plugin directory " + dir + ": " +
                              std::strerror(err));
  }
  SocketStaging staging(buf.data());
  if (auto st = check_socket_path(staging.bind_path()); !st) return st.error();
  return staging;
}

SocketStaging::SocketStaging(SocketStaging&& other) noexcept : folder_(std::move(other.folder_)) {
  other.folder_.clear();
}

SocketStaging::~SocketStaging() {
  if (folder_.empty()) return;
  ::unlink(bind_path().c_str());
  ::rmdir(folder_.c_str());
}

Status SocketStaging::publish(const std::string& final_path) {
  const std::string bound = bind_path();
  // Only the kubelet (root) may talk to us. Nobody else can reach the socket in the 0700 folder.
  if (::chmod(bound.c_str(), 0600) != 0)
    return Error::unavailable("cannot set mode 0600 on the new socket " + bound + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(final_path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Error::unavailable("cannot create the socket " + final_path + ": a directory is in its place");
  if (::rename(bound.c_str(), final_path.c_str()) != 0)
    return Error::unavailable("cannot create the socket " + final_path + ": " + std::strerror(errno));
  return ok_status();
}

size_t shut_down_connections(const std::string& bound_path) {
  size_t count = 0;
  DIR* fds = ::opendir("/proc/self/fd");
  if (!fds) return 0;
  const int own = ::dirfd(fds);
  while (dirent* e = ::readdir(fds)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int fd = std::atoi(e->d_name);
    if (fd == own) continue;
    sockaddr_un addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 || addr.sun_family != AF_UNIX) continue;
    if (len <= offsetof(sockaddr_un, sun_path) || bound_path != addr.sun_path) continue;
    int listening = 0;
    socklen_t optlen = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0 || listening) continue;
    if (::shutdown(fd, SHUT_RDWR) == 0) ++count;
  }
  ::closedir(fds);
  return count;
}

}  // namespace kgpu::server
