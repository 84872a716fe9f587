#pragma once
// An HTTP response's head and the limits kgpu reads it under. Plain values.
#include <cstddef>
#include <map>
#include <string>

namespace kgpu::http {

// Header names are lower-case; a name that came more than once has its values joined with ", ".
using Headers = std::map<std::string, std::string>;

struct ResponseHead {
  int version_minor = 1;  // HTTP/1.<minor>
  int status = 0;
  std::string reason;
  Headers headers;
};

inline constexpr size_t kMaxHeaderBlock = 64 * 1024;  // status line + headers (+ trailers)
inline constexpr size_t kMaxChunkSizeLine = 1024;      // hex size + chunk extensions

}  // namespace kgpu::http
