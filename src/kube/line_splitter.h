#pragma once
// Splits a byte stream that arrives in arbitrary chunks (a watch response) into newline-ended
// lines. Each byte is scanned once (no quadratic rescans of a partial line), and a line longer
// than the limit is an error instead of unbounded memory. Pure, no I/O.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu::kube {

class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line_bytes) : max_line_(max_line_bytes) {}

  // Calls `on_line` for each complete line in `chunk` (without the '\n'; empty lines skipped).
  // Returns false when `on_line` asked to stop (it returned false); an Error when the pending line
  // passes the limit (the splitter is then unusable: the stream has to be dropped).
  Result<bool> feed(std::string_view chunk, const std::function<bool(std::string_view)>& on_line);

  size_t pending_bytes() const { return pending_.size(); }

 private:
  size_t max_line_;
  std::string pending_;  // the start of a line whose '\n' has not arrived yet
};

}  // namespace kgpu::kube
