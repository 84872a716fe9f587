#include "rpc/h2_io.h"

#include <sys/socket.h>

#include <cerrno>

namespace kgpu::rpc {

bool pump_output(nghttp2_session* session, int fd, PendingOutput& pending, bool& blocked) {
  for (;;) {
    if (pending.offset < pending.bytes.size()) {
      ssize_t n = ::send(fd, pending.bytes.data() + pending.offset, pending.bytes.size() - pending.offset, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
          blocked = true;
          return true;
        }
        return false;
      }
      pending.offset += static_cast<size_t>(n);
      continue;
    }
    pending.bytes.clear();
    pending.offset = 0;
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session, &data);
    if (n < 0) return false;
    if (n == 0) break;
    pending.bytes.assign(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  blocked = false;
  return true;
}

}  // namespace kgpu::rpc
