#pragma once
// What kgpu's HTTP/2 server and client share: nghttp2 header entries, and writing a session's
// output to a non-blocking socket a frame at a time, only as far as the socket takes it (so a peer
// that stops reading holds at most one frame of ours).
#include <nghttp2/nghttp2.h>

#include <cstring>
#include <string>

namespace kgpu::rpc {

// nghttp2 copies name and value when a frame is submitted, so temporaries suffice.
inline nghttp2_nv header(const char* name, const std::string& value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name)),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), std::strlen(name), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

struct PendingOutput {
  std::string bytes;  // a frame nghttp2 produced that the socket has not fully taken
  size_t offset = 0;
};

// Sends `pending`, then what `session` has queued. `blocked`: the socket is full (wait for
// POLLOUT/EPOLLOUT and call again). False on a socket or nghttp2 error.
bool pump_output(nghttp2_session* session, int fd, PendingOutput& pending, bool& blocked);

}  // namespace kgpu::rpc
