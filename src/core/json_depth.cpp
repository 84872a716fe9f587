#include "core/json_depth.h"

#include <string>

namespace kgpu {

size_t json_nesting_depth(std::string_view text, size_t stop_after) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > deepest) {
          deepest = depth;
          if (deepest > stop_after) return deepest;
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default: break;
    }
  }
  return deepest;
}

Status check_json_depth(std::string_view text, std::string_view what, size_t limit) {
  if (json_nesting_depth(text, limit) <= limit) return ok_status();
  return Error::invalid(std::string(what) + " nests arrays and objects deeper than " + std::to_string(limit) +
                        " levels (refused before parsing)");
}

}  // namespace kgpu
